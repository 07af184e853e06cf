"""Bandwagon: a note after both replies says most reviewers preferred the cued reply's slot.

Guard: texts, order, labels and ``stands_for`` unchanged; the note is exactly the registered
phrasing naming the slot the cued candidate is shown in.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .judge_cue_base import CandidateCue, CandidatePair, cue_phrases, register_cue, unchanged_problems


class BandwagonCue(CandidateCue):
    name = "bandwagon"
    version = 1
    does = "adds a note that most reviewers preferred the cued reply (by its slot letter); reply texts unchanged"
    tasks = ("pairwise",)

    def parameters(self) -> Mapping[str, Any]:
        d = cue_phrases()
        return {"note": d["bandwagon"]["note"], "phrases_version": d["version"]}

    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        note = self.parameters()["note"].format(slot=pair.slot_of(target))
        return replace(pair, note=note, cue=self.description.tag, target=target)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:
        problems = unchanged_problems(plain, cued, "texts", "order", "labels", "stands_for")
        want = self.parameters()["note"].format(slot=cued.slot_of(cued.target))
        if cued.note != want:
            problems.append(f"the note is {cued.note!r}, not the registered {want!r} "
                            f"(the cued candidate is in slot {cued.slot_of(cued.target)})")
        return problems


BANDWAGON = register_cue(BandwagonCue())
