"""Source attribution: the cued reply is labelled as written by a human agent, the other by an AI assistant.

For a single reply (pointwise) only the cued label is shown. Guard: texts, order, note and
``stands_for`` unchanged; the cued candidate carries exactly the registered human label and the
other exactly the registered AI label.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .judge_cue_base import CandidateCue, CandidatePair, cue_phrases, register_cue, unchanged_problems


class SourceCue(CandidateCue):
    name = "source"
    version = 1
    does = ("labels the cued reply as written by a human agent and the other as written by an AI assistant; "
            "reply texts unchanged")

    def parameters(self) -> Mapping[str, Any]:
        d = cue_phrases()
        return {"cued_label": d["source"]["cued_label"], "other_label": d["source"]["other_label"],
                "phrases_version": d["version"]}

    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        p = self.parameters()
        labels = {k: (p["cued_label"] if k == target else p["other_label"]) for k in pair.texts}
        return replace(pair, labels=labels, cue=self.description.tag, target=target)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:
        problems = unchanged_problems(plain, cued, "texts", "order", "note", "stands_for")
        p = self.parameters()
        want = {k: (p["cued_label"] if k == cued.target else p["other_label"]) for k in plain.texts}
        got = dict(cued.labels)
        for k in sorted(set(want) | set(got)):
            if want.get(k) != got.get(k):
                who = "cued" if k == cued.target else "other"
                problems.append(f"the {who} candidate {k!r} is labelled {got.get(k, '')!r}, not the registered "
                                f"{want.get(k, '')!r}")
        return problems


SOURCE = register_cue(SourceCue())
