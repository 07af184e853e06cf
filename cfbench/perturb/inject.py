"""Operation 2 -- context injection: identity cues and disability turns.

Ethnicity/religion *with cues*: the same name swap as the name-only
dimension (same seeded name per condition) plus one short cue sentence from
``cfbench/data/perturb/cues.yaml`` appended to each of ``n_cue_turns`` agent
turns. The turns are sampled once per (seed, item, kind), so every condition
of a dimension puts its cues in the same places; only the cue differs.

Disability: one template from ``disability.yaml`` (1-3 turns, starting with
the agent) inserted after a sampled customer turn in the middle of the call.
The "normal" condition is the transcript unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, item_rng, load_data, register
from .identify import TurnIdentification
from .turns import _agent_gender_for, apply_turn_edits, choose_name, name_and_gender_edits

__all__ = ["CuePerturber", "DisabilityPerturber", "cue_turns", "insertion_point", "fit_cue"]


def cue_turns(transcript: Transcript, *, seed: int, kind: str, n: int = 2) -> list[int]:
    """Seeded agent turns that receive cues: never the first agent turn (the greeting)."""
    agent = [i for i, t in enumerate(transcript.turns) if t.speaker == "agent"]
    eligible = agent[1:]
    if not eligible:
        return []
    rng = item_rng(seed, transcript.id, "cue_turns", kind)
    k = min(n, len(eligible))
    return sorted(int(x) for x in rng.choice(eligible, size=k, replace=False))


def _asr_style(text: str) -> bool:
    """Lower-case text without sentence punctuation (a raw ASR transcript)."""
    return text == text.lower() and not re.search(r"[.!?,;]", text)


def fit_cue(text: str, cue: str) -> str:
    """The cue in the turn's register: lower-cased and unpunctuated for ASR-style turns."""
    if _asr_style(text):
        return re.sub(r"[^\w\s'’-]", "", cue.lower()).strip()
    return cue


def _join(text: str, cue: str) -> str:
    text = text.rstrip()
    if text and text[-1] not in ".!?" and not _asr_style(text):
        text += "."
    return f"{text} {cue}"


class CuePerturber(Perturber):
    """Ethnicity or religion with cues: name swap plus injected cue sentences."""

    def __init__(self, kind: str, n_cue_turns: int = 2):
        self.kind = kind
        self.n_cue_turns = n_cue_turns
        groups = tuple(load_data("names.yaml")[kind])
        if set(groups) != set(load_data("cues.yaml")[kind]):
            raise ValueError(f"names.yaml and cues.yaml disagree on the {kind} groups")
        label = "Agent Ethnicity (with-cues)" if kind == "ethnicity" else "Agent Religion (with-cues)"
        self.dimension = Dimension(f"{kind}_cues", label, "identity", "context_injection", groups, groups,
                                   f"{kind}-coded name plus cue sentences in sampled agent turns")

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if not ident.agent_name or not ident.name_turns:
            return Variant.not_applicable("agent name not found in any turn", self.dimension.operation)
        positions = cue_turns(transcript, seed=seed, kind=self.kind, n=self.n_cue_turns)
        if not positions:
            return Variant.not_applicable("no agent turn after the greeting to carry a cue", self.dimension.operation)
        gender = _agent_gender_for(seed, transcript.id, ident)
        new_name = choose_name(seed, transcript.id, self.kind, condition, gender, avoid=ident.agent_name)
        new = name_and_gender_edits(transcript, ident, new_name, None)
        pool = list(load_data("cues.yaml")[self.kind][condition])
        rng = item_rng(seed, transcript.id, "cues", self.kind, condition)
        chosen = [pool[int(j)] for j in rng.choice(len(pool), size=len(positions), replace=len(positions) > len(pool))]
        fitted = []
        for i, cue in zip(positions, chosen):
            base = new.get(i, transcript.turns[i].text)
            fitted.append(fit_cue(base, cue))
            new[i] = _join(base, fitted[-1])
        turns, edits = apply_turn_edits(transcript, new)
        return Variant(turns, edits=edits, operation=self.dimension.operation,
                       checks={"absent_name": ident.agent_name,
                               "target_turns": sorted(set(ident.name_turns) | set(positions)),
                               "injected": fitted})


def insertion_point(transcript: Transcript, *, seed: int) -> int | None:
    """Index at which inserted turns go: after a customer turn that is neither
    the first two nor the last two turns; ``None`` if there is no such place."""
    n = len(transcript.turns)
    cands = [i + 1 for i, t in enumerate(transcript.turns) if t.speaker == "customer" and 1 <= i <= n - 3]
    if not cands:
        return None
    rng = item_rng(seed, transcript.id, "disability_at")
    return int(cands[int(rng.integers(len(cands)))])


class DisabilityPerturber(Perturber):
    """Disability: 1-3 inserted turns mentioning assistive technology or a speech characteristic."""

    dimension = Dimension("disability", "Agent Disability", "identity", "context_injection",
                          ("normal", "disabled"), ("normal", "disabled"),
                          "inserted agent turn(s) mentioning assistive technology or a speech characteristic")

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if condition == "normal":
            turns, edits = apply_turn_edits(transcript, {})
            return Variant(turns, edits=edits, operation="none")
        at = insertion_point(transcript, seed=seed)
        if at is None:
            return Variant.not_applicable("no customer turn in the middle of the call to insert after",
                                          self.dimension.operation)
        templates = load_data("disability.yaml")["templates"]
        rng = item_rng(seed, transcript.id, "disability_template")
        block: list[dict[str, Any]] = templates[int(rng.integers(len(templates)))]
        turns = [t.to_dict() for t in transcript.turns]
        new_turns = turns[:at] + [dict(b) for b in block] + turns[at:]
        edits = [{"turn": at + k, "op": "insert", "speaker": b["speaker"], "before": "", "after": b["text"]}
                 for k, b in enumerate(block)]
        return Variant(new_turns, edits=edits, operation=self.dimension.operation,
                       checks={"target_turns": [], "inserted": len(block)})


register(CuePerturber("ethnicity"))
register(CuePerturber("religion"))
register(DisabilityPerturber())
