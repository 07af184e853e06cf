"""Verbosity padding: content-free courtesy sentences appended to the cued reply.

The sentences come from ``judge_cues.yaml``; which ones is a seeded choice per
``(seed, item)``. Guard: the other reply, the order, labels, note and ``stands_for`` are
unchanged; the cued reply is its uncued text (byte for byte, trailing space aside) followed by a
separator and ``n_sentences`` distinct registered sentences in file order (with a seed: exactly the
ones that seed picks); the added text passes :func:`content_guard` (no digit, no capitalised word
inside a sentence, no commitment verb). A padding that fails raises instead of being shown to a judge.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .base import item_rng
from .judge_cue_base import CandidateCue, CandidatePair, content_guard, cue_phrases, register_cue, unchanged_problems


def _sep(base: str) -> str:
    return " " if base.endswith((".", "!", "?")) else ". "


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

    def make(self, pair: CandidatePair, target: str, *, seed: int = 0, item_id: str = "") -> CandidatePair:
        self._check_target(pair, target)
        texts = dict(pair.texts)
        base = texts[target].rstrip()
        texts[target] = base + _sep(base) + self.padding(seed, item_id)
        return replace(pair, texts=texts, cue=self.description.tag, target=target)

    def guard_problems(self, plain: CandidatePair, cued: CandidatePair, *, seed: int | None = None,
                       item_id: str = "") -> list[str]:
        problems = unchanged_problems(plain, cued, "order", "labels", "note", "stands_for")
        t = cued.target
        problems += [f"the text of the other candidate {k!r} changed" for k in plain.texts
                     if k != t and cued.texts[k] != plain.texts[k]]
        base = plain.texts[t].rstrip()
        head = base + _sep(base)
        text = cued.texts[t]
        if not text.startswith(head):
            return problems + [f"the cued reply does not start with its uncued text {base[:40]!r}"]
        added = text[len(head):]
        p = self.parameters()
        sentences = p["sentences"]
        if seed is not None:
            try:
                want = self.padding(seed, item_id)
            except ValueError as exc:
                return problems + [str(exc)]
            if added != want:
                problems.append(f"the padding {added!r} is not the one seed {seed} picks for {item_id!r} ({want!r})")
        else:
            from itertools import combinations

            allowed = {" ".join(c) for c in combinations(sentences, p["n_sentences"])}
            if added not in allowed:
                problems.append(f"the padding {added!r} is not {p['n_sentences']} registered sentences in file order")
        problems += [f"the padding {x}" for x in content_guard(added)]
        return problems


VERBOSITY = register_cue(VerbosityCue())
