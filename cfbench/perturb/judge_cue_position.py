"""Position swap: the two candidates change slots (Reply A <-> Reply B); nothing else changes.

Guard: the reply texts, labels, note and ``stands_for`` are those of the uncued pair, the same two
keys are shown, and the cued candidate is in slot A.
"""

from __future__ import annotations

from dataclasses import replace

from .judge_cue_base import CandidateCue, CandidatePair, register_cue, unchanged_problems


class PositionCue(CandidateCue):
    name = "position"
    version = 1
    does = "shows the two candidate replies in the other order; the cued candidate moves to slot A"
    tasks = ("pairwise",)

    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        other = next(k for k in pair.order if k != target)
        return replace(pair, order=(target, other), cue=self.description.tag, target=target)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:
        problems = unchanged_problems(plain, cued, "texts", "labels", "note", "stands_for")
        if set(cued.order) != set(plain.order):
            problems.append(f"the slots show {cued.order}, not the candidates {plain.order}")
        elif cued.order[0] != cued.target:
            problems.append(f"the cued candidate {cued.target!r} is in slot {cued.slot_of(cued.target)}, not A")
        return problems


POSITION = register_cue(PositionCue())
