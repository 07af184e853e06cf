"""Position swap: the two candidates change slots (Reply A <-> Reply B); nothing else changes."""

from __future__ import annotations

from dataclasses import replace

from .judge_cue_base import CandidateCue, CandidatePair, register_cue


class PositionCue(CandidateCue):
    name = "position"
    version = 1
    does = "shows the two candidate replies in the other order; the cued candidate moves to slot A"
    tasks = ("pairwise",)

    def apply(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        other = next(k for k in pair.order if k != target)
        return replace(pair, order=(target, other), cue=self.description.tag, target=target)


POSITION = register_cue(PositionCue())
