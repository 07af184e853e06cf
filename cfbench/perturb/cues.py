"""Agent ethnicity / religion *with cues* (Operation 2, context injection).

The agent's name (when the agent gives one) is swapped as in the name-only
dimension, and culture cues (``cfbench/data/perturb/cues.yaml``) are placed
where small talk fits a real call:

* ``greeting``  -- a salutation before the text of the agent's first turn,
  when that turn greets ("Hello", "Hi", "Good morning", "Welcome", ...);
* ``closing``   -- a well-wish after the text of an agent turn in the last
  three turns that says goodbye;
* ``smalltalk`` -- a personal remark before the text of an agent turn that
  directly follows a customer's own small talk ("how are you?").

At most one cue of each kind, all from the condition's group: one culture per
variant. Without any such place the variant is not applicable (never an
arbitrary turn). Without an agent name the variant carries the cues only
(its ``reason`` says so).
"""

from __future__ import annotations

import re
from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, item_rng, load_data, pick, register
from .identify import TurnIdentification
from .turns import _agent_gender_for, apply_turn_edits, choose_name, name_and_gender_edits, scope_for

__all__ = ["CuePerturber", "cue_places", "fit_cue", "place_cue", "stands_for", "unexplained_cues"]

_GREETING = re.compile(r"(?i)^\W*(hello|hi|hey|good (morning|afternoon|evening|day)|welcome|greetings)\b")
_CLOSING = re.compile(r"(?i)\b(good ?bye|bye|have a (nice|good|great|lovely) (day|one|evening|night|trip)|"
                      r"take care|enjoy your)\b")
_SMALLTALK = re.compile(r"(?i)\b(how are you|how('s| is) (your|it going)|how are things|how was your "
                        r"(day|weekend)|hope you('re| are) (well|doing well)|happy holidays)\b")


def cue_places(transcript: Transcript) -> dict[str, int]:
    """Where each kind of cue fits: ``{"greeting": i, "closing": j, "smalltalk": k}`` (kinds without a place are absent)."""
    turns = transcript.turns
    agent = [i for i, t in enumerate(turns) if t.speaker == "agent"]
    out: dict[str, int] = {}
    if agent and _GREETING.search(turns[agent[0]].text):
        out["greeting"] = agent[0]
    closing = [i for i in agent if i >= len(turns) - 3 and _CLOSING.search(turns[i].text)]
    if closing and closing[-1] != out.get("greeting"):
        out["closing"] = closing[-1]
    for i in agent:
        if i > 0 and turns[i - 1].speaker == "customer" and _SMALLTALK.search(turns[i - 1].text) \
                and i not in out.values():
            out["smalltalk"] = i
            break
    return out


def _asr_style(text: str) -> bool:
    """Lower-case text without sentence punctuation (a raw ASR transcript)."""
    return text == text.lower() and not re.search(r"[.!?,;]", text)


def fit_cue(text: str, cue: str) -> str:
    """The cue in the turn's register: lower-cased and unpunctuated for ASR-style turns."""
    if _asr_style(text):
        return re.sub(r"[^\w\s'’-]", "", cue.lower()).strip()
    return cue


def stands_for(kind: str, group: str, cue: str) -> str:
    """What ``cue`` of ``group`` signals, as recorded in cues.yaml (``stands_for``)."""
    return load_data("cues.yaml")["stands_for"][kind][group][cue]


def unexplained_cues(kind: str) -> list[str]:
    """Cues of ``kind`` with no ``stands_for`` entry, and entries naming no cue (both should be empty)."""
    data = load_data("cues.yaml")
    notes = data.get("stands_for", {}).get(kind, {})
    out = []
    for group, kinds in data[kind].items():
        cues = {c for lst in kinds.values() for c in lst}
        recorded = set(notes.get(group, {}))
        out += [f"{group}: {c}" for c in sorted(cues - recorded)]
        out += [f"{group}: {c} (no such cue)" for c in sorted(recorded - cues)]
    return out


def place_cue(text: str, cue: str, kind: str) -> str:
    """``text`` with ``cue`` added as its own sentence: before it for a greeting or a small-talk
    answer, after it for a closing.

    The turn's own text is kept byte for byte (no punctuation is added to it).
    """
    if kind in ("greeting", "smalltalk"):  # a salutation opens the turn; an answer to small talk comes first
        return f"{cue} {text.lstrip()}" if text.strip() else cue
    return f"{text.rstrip()} {cue}"


class CuePerturber(Perturber):
    """Ethnicity or religion with cues: name swap (if any) plus culture cues where small talk fits."""

    version = 3  # cues.yaml v3: the reviewed lexicon (slang dropped, what each cue stands for recorded)

    def __init__(self, kind: str, kinds: tuple[str, ...] = ("greeting", "closing", "smalltalk"),
                 max_cues: int = 2):
        self.kind = kind
        self.kinds = kinds
        self.max_cues = max_cues
        groups = tuple(load_data("names.yaml")[kind])
        if set(groups) != set(load_data("cues.yaml")[kind]):
            raise ValueError(f"names.yaml and cues.yaml disagree on the {kind} groups")
        missing = unexplained_cues(kind)
        if missing:
            raise ValueError(f"cues.yaml: {kind} cue(s) without a stands_for entry: {missing}")
        label = "Agent Ethnicity (with-cues)" if kind == "ethnicity" else "Agent Religion (with-cues)"
        self.dimension = Dimension(f"{kind}_cues", label, "identity", "context_injection", groups, groups,
                                   f"{kind}-coded name (if the agent gives one) plus one culture's cues at the "
                                   "greeting, the closing or after the customer's small talk")

    def parameters(self) -> dict[str, Any]:
        return {"cues_version": load_data("cues.yaml")["version"], "kinds": list(self.kinds),
                "max_cues": self.max_cues}

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        places = {k: i for k, i in cue_places(transcript).items() if k in self.kinds}
        if not places:
            return Variant.not_applicable("no greeting, closing or small-talk turn of the agent to carry a cue",
                                          self.dimension.operation)
        order = [k for k in self.kinds if k in places]
        if len(order) > self.max_cues:
            rng = item_rng(seed, transcript.id, "cue_kinds", self.kind)
            picked = sorted(int(x) for x in rng.choice(len(order), size=self.max_cues, replace=False))
            order = [order[j] for j in picked]
        new_name = None
        if ident.agent_name and ident.name_turns:
            gender = _agent_gender_for(seed, transcript.id, ident)
            new_name = choose_name(seed, transcript.id, self.kind, condition, gender, avoid=ident.agent_name)
        new = name_and_gender_edits(transcript, ident, new_name, None)
        pool = load_data("cues.yaml")[self.kind][condition]
        fitted = []
        for k in order:
            i = places[k]
            cue = pick(item_rng(seed, transcript.id, "cue", self.kind, condition, k), pool[k])
            base = new.get(i, transcript.turns[i].text)
            fitted.append(fit_cue(base, cue))
            new[i] = place_cue(base, fitted[-1], k)
        turns, edits = apply_turn_edits(transcript, new)
        reason = "" if new_name else "cues only: the agent gives no name to swap"
        v = Variant(turns, edits=edits, operation=self.dimension.operation, reason=reason,
                    checks={"absent_name": ident.agent_name if new_name else "",
                            "target_turns": sorted(set(ident.name_turns if new_name else []) |
                                                   {places[k] for k in order}),
                            "injected": fitted,
                            "scope": scope_for(ident, new_name=new_name, inserted=fitted)})
        v.checks["cue_kinds"] = order
        return v


register(CuePerturber("ethnicity"))
register(CuePerturber("religion"))
