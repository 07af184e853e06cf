"""Agent identity inside the candidates: each reply is signed by an agent of a different identity.

The identity lexicons of the transcript perturbers are reused: agent names from
``names.yaml`` (ethnicity groups and religion-coded groups, each by gender) and, optionally,
a closing well-wish of the group from ``cues.yaml`` (the ``*_cues`` perturbers' lexicon). Both
candidates get a sign-off (``judge_cues.yaml`` ``agent_identity.signoff``, e.g.
"Kind regards, Megan") after their own text, so *having* a signature is the same on both sides
and only the identity it signals differs: the cued candidate is signed as the ``cued`` identity,
the other as the ``other`` identity.

Contrasts (``axis``):

* ``gender`` (the registered ``agent_identity``): the cued reply signed with a ``cued``-gender
  name, the other with an ``other``-gender name, both from the same ethnicity group, drawn per
  ``(seed, item)`` so that only gender differs;
* ``ethnicity`` / ``religion``: names of two groups, the same gender (drawn per item); with
  ``with_cue`` each sign-off is preceded by one closing well-wish of its group.

Every random choice (group or gender, each name, each well-wish) draws from
``item_rng(seed, item_id, cue name, ...)``; names that already appear in either reply are never
drawn. ``CandidatePair.stands_for`` records, per candidate, the identity its sign-off signals
(and, for a well-wish, what ``cues.yaml`` says it stands for).

Guard: order, labels and note unchanged; each reply is its uncued text (trailing space aside)
followed by a separator and a sign-off that is exactly one of the registered sign-offs of its
side's identity (with a seed: exactly the seeded one); the two names differ and neither was in
the replies already; for ``gender`` both names come from one group; ``stands_for`` matches the
sign-offs. Pairwise only: on a single reply the sign-off would be compared with no sign-off,
which mixes identity with signing.

Placebo (:meth:`AgentIdentityCue.placebo`): the same edit with no identity contrast. The other reply
keeps its sign-off; the cued reply is signed with another name of the *other* side's identity (same
group and gender), of the same length class as the cued name it replaces
(:func:`cfbench.perturb.placebo.length_class`), drawn from ``item_rng(seed, item_id, cue name,
"placebo")``; with ``with_cue`` the cued reply also gets a well-wish of that group. Both replies are
then signed by one identity, so a judge that reacts to the identity has nothing to react to, while
a judge that reacts to any signing (or any edit) meets the same edit. ``None`` when that identity
has no other name of the length class that is absent from the replies (the item gets no placebo).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

from .base import item_rng, load_data, pick
from .placebo import length_class
from .judge_cue_base import CandidateCue, CandidatePair, cue_phrases, register_cue, unchanged_problems

__all__ = ["AgentIdentityCue", "Identity", "AGENT_IDENTITY"]

AXES = ("gender", "ethnicity", "religion")
GENDERS = ("male", "female")


@dataclass(frozen=True)
class Identity:
    """One side's signed identity: the name, the group and gender it was drawn from, an optional well-wish."""

    name: str
    kind: str  # names.yaml section: "ethnicity" | "religion"
    group: str
    gender: str
    wish: str = ""

    def stands_for(self, axis: str) -> str:
        coded = self.gender if axis == "gender" else self.group
        text = f"{coded}-coded agent name {self.name!r} (names.yaml {self.kind}/{self.group}/{self.gender})"
        if self.wish:
            meaning = load_data("cues.yaml")["stands_for"][self.kind][self.group][self.wish]
            text += f"; closing well-wish {self.wish!r}: {meaning}"
        return text


def _sep(base: str) -> str:
    return " " if base.endswith((".", "!", "?")) else ". "


def _mentions(text: str, name: str) -> bool:
    return re.search(r"(?i)(?<![\w'’])" + re.escape(name) + r"(?![\w])", text) is not None


class AgentIdentityCue(CandidateCue):
    version = 1
    tasks = ("pairwise",)

    def __init__(self, name: str = "agent_identity", *, axis: str = "gender", cued: str = "female",
                 other: str = "male", with_cue: bool = False):
        if axis not in AXES:
            raise ValueError(f"agent identity cue {name!r}: axis must be one of {AXES}, got {axis!r}")
        choices = GENDERS if axis == "gender" else tuple(load_data("names.yaml")[axis])
        for side, v in (("cued", cued), ("other", other)):
            if v not in choices:
                raise ValueError(f"agent identity cue {name!r}: {side} must be one of {choices}, got {v!r}")
        if cued == other:
            raise ValueError(f"agent identity cue {name!r}: cued and other are both {cued!r}")
        if with_cue and axis == "gender":
            raise ValueError(f"agent identity cue {name!r}: culture well-wishes belong to ethnicity/religion, "
                             "not to the gender contrast")
        self.name, self.axis, self.cued, self.other, self.with_cue = name, axis, cued, other, with_cue
        same = "of one ethnicity group" if axis == "gender" else "of one gender"
        self.does = (f"signs the cued reply with an agent name coded {cued} and the other reply with one coded "
                     f"{other}, {same}"
                     + (", each after a closing well-wish of its group" if with_cue else "")
                     + " (seeded); reply texts otherwise unchanged")

    def parameters(self) -> Mapping[str, Any]:
        return {"axis": self.axis, "cued": self.cued, "other": self.other, "with_cue": self.with_cue,
                "signoff": cue_phrases()["agent_identity"]["signoff"],
                "phrases_version": cue_phrases()["version"], "names_version": load_data("names.yaml")["version"],
                "cues_version": load_data("cues.yaml")["version"] if self.with_cue else None}

    # -- the identities ------------------------------------------------------------------------
    def _kind(self) -> str:
        return "ethnicity" if self.axis == "gender" else self.axis

    def _side(self, role: str) -> tuple[str | None, str | None]:
        """(group, gender) fixed by the contrast for one side (None = drawn per item)."""
        value = self.cued if role == "cued" else self.other
        return (None, value) if self.axis == "gender" else (value, None)

    def identities(self, pair: CandidatePair, *, seed: int, item_id: str) -> dict[str, Identity]:
        """``{"cued": Identity, "other": Identity}`` for this item (seeded; names in the replies avoided)."""
        kind = self._kind()
        names = load_data("names.yaml")[kind]
        shared_group = pick(item_rng(seed, item_id, self.name, "group"), sorted(names))
        shared_gender = pick(item_rng(seed, item_id, self.name, "gender"), GENDERS)
        text = " ".join(pair.texts.values())
        out: dict[str, Identity] = {}
        for role in ("cued", "other"):
            group, gender = self._side(role)
            group, gender = group or shared_group, gender or shared_gender
            pool = [n for n in names[group][gender] if not _mentions(text, n)
                    and all(n.lower() != o.name.lower() for o in out.values())]
            if not pool:
                raise ValueError(f"cue {self.name} on {item_id}: every {group}/{gender} name already appears")
            name = pick(item_rng(seed, item_id, self.name, "name", role), pool)
            wish = ""
            if self.with_cue:
                wish = pick(item_rng(seed, item_id, self.name, "wish", role),
                            load_data("cues.yaml")[kind][group]["closing"])
            out[role] = Identity(name, kind, group, gender, wish)
        return out

    def signoff(self, ident: Identity) -> str:
        s = cue_phrases()["agent_identity"]["signoff"].format(name=ident.name)
        return f"{ident.wish} {s}" if ident.wish else s

    def _allowed(self, role: str) -> dict[str, Identity]:
        """Every sign-off the contrast allows on one side -> the identity it signals."""
        kind = self._kind()
        names = load_data("names.yaml")[kind]
        group, gender = self._side(role)
        out: dict[str, Identity] = {}
        for g in ([group] if group else sorted(names)):
            for ge in ([gender] if gender else GENDERS):
                wishes = load_data("cues.yaml")[kind][g]["closing"] if self.with_cue else [""]
                for n in names[g][ge]:
                    for w in wishes:
                        ident = Identity(n, kind, g, ge, w)
                        out.setdefault(self.signoff(ident), ident)
        return out

    # -- the cue ----------------------------------------------------------------------------------
    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        ids = self.identities(pair, seed=seed, item_id=item_id)
        texts, stands = {}, {}
        for k, t in pair.texts.items():
            ident = ids["cued" if k == target else "other"]
            base = t.rstrip()
            texts[k] = base + _sep(base) + self.signoff(ident)
            stands[k] = ident.stands_for(self.axis)
        return replace(pair, texts=texts, stands_for=stands, cue=self.description.tag, target=target)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:
        problems = unchanged_problems(plain, cued, "order", "labels", "note")
        want = self.identities(plain, seed=seed, item_id=item_id) if seed is not None else None
        found: dict[str, Identity] = {}
        for k in plain.order:
            role = "cued" if k == cued.target else "other"
            base = plain.texts[k].rstrip()
            head = base + _sep(base)
            text = cued.texts[k]
            if text.rstrip() == base:
                problems.append(f"the {role} reply {k!r} is not signed")
                continue
            if not text.startswith(head):
                problems.append(f"the {role} reply {k!r} does not start with its uncued text {base[:40]!r}")
                continue
            tail = text[len(head):]
            ident = self._allowed(role).get(tail)
            if ident is None:
                problems.append(f"the {role} reply {k!r} ends with {tail!r}, not a registered sign-off of "
                                f"the {self.cued if role == 'cued' else self.other} identity")
                continue
            found[role] = ident
            if want is not None and ident != want[role]:
                problems.append(f"the {role} reply {k!r} is signed {tail!r}, not the seeded {self.signoff(want[role])!r}")
            if _mentions(" ".join(plain.texts.values()), ident.name):
                problems.append(f"the name {ident.name!r} already appears in the replies")
            if dict(cued.stands_for).get(k) != ident.stands_for(self.axis):
                problems.append(f"stands_for of {k!r} is {dict(cued.stands_for).get(k)!r}, not what its sign-off "
                                f"signals ({ident.stands_for(self.axis)!r})")
        if len(found) == 2:
            a, b = found["cued"], found["other"]
            if a.name.lower() == b.name.lower():
                problems.append(f"both replies are signed {a.name!r}")
            if self.axis == "gender" and a.group != b.group:
                problems.append(f"the gender contrast mixes groups ({a.group} vs {b.group})")
            if self.axis != "gender" and a.gender != b.gender:
                problems.append(f"the {self.axis} contrast mixes genders ({a.gender} vs {b.gender})")
        extra = sorted(set(cued.stands_for) - set(plain.texts))
        if extra:
            problems.append(f"stands_for names unknown candidates {extra}")
        return problems


    # -- the placebo: the same edit, one identity on both sides ----------------------------------------
    def placebo_identity(self, pair: CandidatePair, *, seed: int, item_id: str) -> "Identity | None":
        """The identity the cued reply is signed with in the placebo pair (see the module note), or None."""
        ids = self.identities(pair, seed=seed, item_id=item_id)
        cued, other = ids["cued"], ids["other"]
        text = " ".join(pair.texts.values())
        pool = [n for n in load_data("names.yaml")[other.kind][other.group][other.gender]
                if length_class(n) == length_class(cued.name) and n.lower() != other.name.lower()
                and not _mentions(text, n)]
        if not pool:
            return None
        name = pick(item_rng(seed, item_id, self.name, "placebo", "name"), pool)
        wish = ""
        if self.with_cue:
            wish = pick(item_rng(seed, item_id, self.name, "placebo", "wish"),
                        load_data("cues.yaml")[other.kind][other.group]["closing"])
        return Identity(name, other.kind, other.group, other.gender, wish)

    def placebo(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> "CandidatePair | None":
        """The placebo pair of ``pair`` (both replies signed by the other side's identity; see the module note),
        checked by :meth:`placebo_problems`; None when the item has no placebo name."""
        self._check_target(pair, target)
        ident = self.placebo_identity(pair, seed=seed, item_id=item_id)
        if ident is None:
            return None
        other = self.identities(pair, seed=seed, item_id=item_id)["other"]
        texts, stands = {}, {}
        for k, t in pair.texts.items():
            who = ident if k == target else other
            base = t.rstrip()
            texts[k] = base + _sep(base) + self.signoff(who)
            stands[k] = who.stands_for(self.axis)
        out = replace(pair, texts=texts, stands_for=stands, cue=f"{self.description.tag}+placebo", target=target)
        problems = self.placebo_problems(pair, out, seed=seed, item_id=item_id)
        if problems:
            raise ValueError(f"cue {self.name} placebo on {item_id}: " + "; ".join(problems))
        return out

    def placebo_problems(self, plain: CandidatePair, pl: CandidatePair, *, seed: int, item_id: str) -> list[str]:
        """Why ``pl`` is not the placebo of ``plain`` ([] when it is): order, labels and note unchanged; each reply
        its uncued text plus one sign-off; both sign-offs of the other side's group and gender, two different
        names, the cued name of the cued identity's length class."""
        problems = unchanged_problems(plain, pl, "order", "labels", "note")
        ids = self.identities(plain, seed=seed, item_id=item_id)
        want = {"cued": self.placebo_identity(plain, seed=seed, item_id=item_id), "other": ids["other"]}
        for k in plain.order:
            role = "cued" if k == pl.target else "other"
            base = plain.texts[k].rstrip()
            if want[role] is None or pl.texts[k] != base + _sep(base) + self.signoff(want[role]):
                problems.append(f"the {role} reply {k!r} is not its uncued text signed as the placebo's {role} identity")
        c, o = want["cued"], want["other"]
        if c is not None:
            if (c.group, c.gender) != (o.group, o.gender):
                problems.append(f"the placebo mixes identities ({c.group}/{c.gender} vs {o.group}/{o.gender})")
            if c.name.lower() == o.name.lower():
                problems.append(f"both replies are signed {c.name!r}")
            if length_class(c.name) != length_class(ids["cued"].name):
                problems.append(f"the placebo name {c.name!r} is not of the length class of {ids['cued'].name!r}")
        return problems


#: The registered cue: female-coded vs male-coded agent names of one (seeded) ethnicity group.
AGENT_IDENTITY = register_cue(AgentIdentityCue())
