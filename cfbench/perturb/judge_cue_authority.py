"""Authority: the cued reply is labelled as approved by a senior supervisor.

Guard: texts, order, note and ``stands_for`` unchanged; the labels are the uncued labels plus
exactly one, on the cued candidate, equal to the registered phrasing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .judge_cue_base import CandidateCue, CandidatePair, cue_phrases, register_cue, unchanged_problems


class AuthorityCue(CandidateCue):
    name = "authority"
    version = 1
    does = "adds a label saying a senior supervisor approved the cued reply; reply texts unchanged"

    def parameters(self) -> Mapping[str, Any]:
        d = cue_phrases()
        return {"label": d["authority"]["label"], "phrases_version": d["version"]}

    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        labels = dict(pair.labels)
        labels[target] = self.parameters()["label"]
        return replace(pair, labels=labels, cue=self.description.tag, target=target)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:
        problems = unchanged_problems(plain, cued, "texts", "order", "note", "stands_for")
        label = self.parameters()["label"]
        want = {**dict(plain.labels), cued.target: label}
        got = dict(cued.labels)
        if got.get(cued.target) != label:
            problems.append(f"the cued candidate's label is {got.get(cued.target, '')!r}, not the registered {label!r}")
        for k in sorted(set(want) | set(got)):
            if k != cued.target and want.get(k) != got.get(k):
                problems.append(f"the label of the other candidate {k!r} changed ({want.get(k)!r} -> {got.get(k)!r})")
        return problems


AUTHORITY = register_cue(AuthorityCue())
