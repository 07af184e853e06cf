"""Verbosity padding: content-free courtesy sentences appended to the cued reply.

The sentences come from ``judge_cues.yaml``; which ones is a seeded choice per
``(seed, item)``. Every padded reply passes :func:`content_guard` on the added
text (no digit, no capitalised word inside a sentence, no commitment verb); a
padding that fails raises instead of being shown to a judge.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .base import item_rng
from .judge_cue_base import CandidateCue, CandidatePair, content_guard, cue_phrases, register_cue


class VerbosityCue(CandidateCue):
    name = "verbosity"
    version = 1
    does = "appends content-free courtesy sentences (seeded choice) to the cued reply; guarded against new content"

    def parameters(self) -> Mapping[str, Any]:
        d = cue_phrases()
        return {"sentences": tuple(d["verbosity"]["sentences"]), "n_sentences": int(d["verbosity"]["n_sentences"]),
                "phrases_version": d["version"]}

    def padding(self, seed: int, item_id: str) -> str:
        p = self.parameters()
        rng = item_rng(seed, item_id, self.name)
        idx = rng.choice(len(p["sentences"]), size=p["n_sentences"], replace=False)
        added = " ".join(p["sentences"][int(i)] for i in sorted(idx))
        problems = content_guard(added)
        if problems:
            raise ValueError(f"verbosity padding for {item_id} fails the content guard: {'; '.join(problems)}")
        return added

    def apply(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        texts = dict(pair.texts)
        base = texts[target].rstrip()
        sep = " " if base.endswith((".", "!", "?")) else ". "
        texts[target] = base + sep + self.padding(seed, item_id)
        return replace(pair, texts=texts, cue=self.description.tag, target=target)


VERBOSITY = register_cue(VerbosityCue())
