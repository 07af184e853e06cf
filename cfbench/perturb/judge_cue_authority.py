"""Authority: the cued reply is labelled as approved by a senior supervisor."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .judge_cue_base import CandidateCue, CandidatePair, cue_phrases, register_cue


class AuthorityCue(CandidateCue):
    name = "authority"
    version = 1
    does = "adds a label saying a senior supervisor approved the cued reply; reply texts unchanged"

    def parameters(self) -> Mapping[str, Any]:
        d = cue_phrases()
        return {"label": d["authority"]["label"], "phrases_version": d["version"]}

    def apply(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        labels = dict(pair.labels)
        labels[target] = self.parameters()["label"]
        return replace(pair, labels=labels, cue=self.description.tag, target=target)


AUTHORITY = register_cue(AuthorityCue())
