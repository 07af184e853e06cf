"""Bandwagon: a note after both replies says most reviewers preferred the cued reply's slot."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .judge_cue_base import CandidateCue, CandidatePair, cue_phrases, register_cue


class BandwagonCue(CandidateCue):
    name = "bandwagon"
    version = 1
    does = "adds a note that most reviewers preferred the cued reply (by its slot letter); reply texts unchanged"
    tasks = ("pairwise",)

    def parameters(self) -> Mapping[str, Any]:
        d = cue_phrases()
        return {"note": d["bandwagon"]["note"], "phrases_version": d["version"]}

    def apply(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        note = self.parameters()["note"].format(slot=pair.slot_of(target))
        return replace(pair, note=note, cue=self.description.tag, target=target)


BANDWAGON = register_cue(BandwagonCue())
