"""Cues for judge-bias audits: perturbers that act on the *candidate replies* a judge compares.

The transcript perturbers (:mod:`cfbench.perturb.base`) rewrite turns of one
transcript; a judge-bias cue instead changes how two candidate replies are
presented (their order, a label beside one, a note after both, filler appended
to one). That does not fit ``Perturber.perturb(transcript, ident, ...)``, so
this module is the minimal base for them. It reuses the frozen
:class:`~cfbench.perturb.base.Description` (``name@version`` plus the
parameters that shape the output, data-file version included), so a cued item
records which code and phrasing made it, as a transcript variant does.

A :class:`CandidatePair` is the uncued presentation: ``texts`` maps each
candidate key (e.g. ``"real"``, ``"alt"``) to its reply, ``order`` lists the
keys in slot order (slot A first). A cue returns a new pair with the change
applied to ``target`` (the *cued* candidate), ``cue`` recording what was
done and, where the cue makes a candidate signal something (an agent identity),
``stands_for`` saying what. Cues never touch the conversation context.

Every cue has a guard: :meth:`CandidateCue.guard` lists what a cued pair changed
beyond the cue's claim (reply texts are compared byte for byte with the uncued
pair; labels, notes, sign-offs must be exactly the registered phrasings), and
:meth:`CandidateCue.apply` raises :class:`CueGuardError` (one line) when the list
is not empty. :mod:`cfbench.perturb.judge_cue_review` makes cued pairs into
variant rows for the review page and Table 9.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .base import Description, load_data

__all__ = ["CandidatePair", "CandidateCue", "CueGuardError", "register_cue", "get_cue", "cues", "cue_phrases",
           "SLOTS", "content_guard", "unchanged_problems"]

SLOTS = ("A", "B")


@dataclass(frozen=True)
class CandidatePair:
    """Two candidate replies as shown to a judge (``order[0]`` is Reply A)."""

    texts: Mapping[str, str]
    order: tuple[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)  # key -> label shown beside the reply
    note: str = ""  # a line shown after both replies
    cue: str = "none"  # name@version of the cue applied ("none" for the plain pair)
    target: str = ""  # the cued candidate's key ("" when no cue)
    #: key -> what the cue makes that candidate stand for (e.g. the agent identity a sign-off signals)
    stands_for: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.order) != 2 or set(self.order) != set(self.texts):
            raise ValueError(f"order {self.order} must list the two candidate keys {sorted(self.texts)}")

    def slot_of(self, key: str) -> str:
        return SLOTS[self.order.index(key)]

    def key_in(self, slot: str) -> str:
        return self.order[SLOTS.index(slot)]

    def swapped(self) -> "CandidatePair":
        return replace(self, order=(self.order[1], self.order[0]))


class CueGuardError(ValueError):
    """A cued pair changed more (or other) than its cue claims; the message is one line."""


class CandidateCue:
    """Base class: subclasses set ``name``, ``version``, ``does`` and implement :meth:`make` (the change)
    and :meth:`guard_problems` (what the change may not do).

    :meth:`apply` is ``make`` followed by :meth:`check`: a cued pair that fails its guard raises
    :class:`CueGuardError` instead of reaching a judge. :meth:`guard` returns the problems as a list
    (empty = the cued pair changed only what the cue claims); the review frame
    (:func:`cfbench.perturb.judge_cue_review.cue_variants`) records them as the guard's verdict.
    """

    name: str = ""
    version: int = 1
    does: str = ""
    #: tasks the cue applies to ("pairwise", "pointwise")
    tasks: tuple[str, ...] = ("pairwise", "pointwise")

    def parameters(self) -> Mapping[str, Any]:
        return {}

    @property
    def description(self) -> Description:
        return Description(name=self.name, version=self.version, does=self.does,
                           parameters=tuple(sorted((k, _frozen(v)) for k, v in self.parameters().items())))

    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:  # pragma: no cover - interface
        """The cued pair, unchecked."""
        raise NotImplementedError

    def apply(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        """The cued pair; raises :class:`CueGuardError` when it fails the cue's guard."""
        self._check_target(pair, target)
        cued = self.make(pair, target, seed=seed, item_id=item_id)
        self.check(pair, cued, seed=seed, item_id=item_id)
        return cued

    def guard(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
              item_id: str = "") -> list[str]:
        """Why ``cued`` is not ``plain`` changed by this cue alone (empty = it is).

        Common to every cue: the same candidate keys, the cue's ``name@version`` and a target that
        is one of the candidates. ``seed`` (with ``item_id``), when given, lets a seeded cue also
        check that its choice is the one that seed makes.
        """
        problems: list[str] = []
        if set(cued.texts) != set(plain.texts):
            problems.append(f"candidate keys changed ({sorted(plain.texts)} -> {sorted(cued.texts)})")
            return problems
        if cued.cue != self.description.tag:
            problems.append(f"cue recorded as {cued.cue!r}, not {self.description.tag!r}")
        if cued.target not in plain.texts:
            problems.append(f"target {cued.target!r} is not a candidate ({sorted(plain.texts)})")
            return problems
        return problems + self.guard_problems(plain, cued, seed=seed, item_id=item_id)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError

    def check(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None, item_id: str = "") -> None:
        """Raise :class:`CueGuardError` (one line: cue, item, first problem, how many more) when the guard fails."""
        problems = self.guard(plain, cued, seed=seed, item_id=item_id)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            where = f" on {item_id}" if item_id else ""
            raise CueGuardError(" ".join(f"cue {self.name}{where} fails its guard: {problems[0]}{more}".split()))

    def _check_target(self, pair: CandidatePair, target: str) -> None:
        if target not in pair.texts:
            raise ValueError(f"cue {self.name}: target {target!r} is not a candidate ({sorted(pair.texts)})")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def unchanged_problems(plain: CandidatePair, cued: CandidatePair, *fields: str) -> list[str]:
    """What changed among ``fields`` ("texts", "order", "labels", "note", "stands_for") between the two
    presentations; reply texts are compared byte for byte."""
    out = []
    for f in fields:
        a, b = getattr(plain, f), getattr(cued, f)
        if f == "texts":
            for k in plain.texts:
                if cued.texts.get(k) != plain.texts[k]:
                    out.append(f"the text of candidate {k!r} changed")
        elif f == "order":
            if tuple(a) != tuple(b):
                out.append(f"the order changed ({tuple(a)} -> {tuple(b)})")
        elif f in ("labels", "stands_for"):
            if dict(a) != dict(b):
                out.append(f"{f} changed ({dict(a)} -> {dict(b)})")
        elif a != b:
            out.append(f"{f} changed ({a!r} -> {b!r})")
    return out


def _frozen(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


_CUES: dict[str, CandidateCue] = {}


def register_cue(cue: CandidateCue) -> CandidateCue:
    if not cue.name:
        raise ValueError("a cue needs a name")
    _CUES[cue.name] = cue
    return cue


def get_cue(name: str) -> CandidateCue:
    if name not in _CUES:
        raise KeyError(f"unknown judge-bias cue {name!r}; known: {sorted(_CUES)}")
    return _CUES[name]


def cues() -> dict[str, CandidateCue]:
    """Cue name -> registered cue (a copy); importing :mod:`cfbench.perturb.judge_cues` registers all."""
    return dict(_CUES)


def cue_phrases() -> dict[str, Any]:
    """The phrasing file ``cfbench/data/perturb/judge_cues.yaml`` (cached)."""
    return load_data("judge_cues.yaml")


# --- the content guard used by the verbosity cue -------------------------------------------------

#: verbs that commit the service side to an action or an outcome
COMMITMENT_WORDS = frozenset("""will shall guarantee guaranteed promise promised refund refunded credit credited
    send sent book booked cancel cancelled canceled schedule scheduled confirm confirmed arrange arranged
    replace replaced ship shipped deliver delivered waive waived reserve reserved order ordered
    transfer transferred call email update updated fix fixed resolve resolved""".split())
_WORD = re.compile(r"[A-Za-z']+")


def content_guard(added: str) -> list[str]:
    """Why ``added`` (text appended to a reply) might carry content; empty when it adds none.

    Flags: any digit; a capitalised word that does not start a sentence (a likely
    named entity; "I" is allowed); a commitment verb from :data:`COMMITMENT_WORDS`.
    """
    problems = []
    if any(ch.isdigit() for ch in added):
        problems.append("adds a digit")
    for sentence in re.split(r"(?<=[.!?])\s+", added.strip()):
        words = _WORD.findall(sentence)
        for w in words[1:]:
            if w[0].isupper() and w not in ("I", "I'm", "I'll", "I've", "I'd"):
                problems.append(f"adds a capitalised word {w!r} (possible name)")
    for w in _WORD.findall(added.lower()):
        if w in COMMITMENT_WORDS or w.endswith("'ll"):
            problems.append(f"adds a commitment word {w!r}")
    return problems
