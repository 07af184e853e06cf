"""Directness / politeness / formality / emotional labour (Operation 1).

Three ways to make the ``neutral`` and marked variants of the identified agent
turns, in order of preference:

1. a synthetic transcript is re-realized from its dialogue-act plan (exact);
2. any other transcript goes through the versioned rule transformer
   (:mod:`cfbench.perturb.style_rules`): exact by construction where a rule
   applies; turns no rule recognises stay as they are;
3. the LLM rewrite (:func:`cfbench.perturb.llm.llm_style_variants`), chosen by
   ``make_variants(rewrite=...)``, behind the same guards.

``original`` is the transcript unchanged. A transcript where no rule changes any
agent turn for a condition gets ``applicable=False`` with the reason.
"""

from __future__ import annotations

from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, register
from .identify import TurnIdentification
from .style_plan import marked_condition, render_plan
from .style_rules import restyle, rules_version, style_vocabulary
from .turns import apply_turn_edits

__all__ = ["StylePerturber"]


class StylePerturber(Perturber):
    """One style dimension: neutral / original / marked."""

    version = 2

    def __init__(self, dim: str, label: str):
        self.dim = dim
        self.marked = marked_condition(dim)
        self.dimension = Dimension(dim, label, "style", "turn_transformation", ("neutral", "original", self.marked),
                                   ("neutral", "original", self.marked),
                                   f"{dim} re-realized on the identified agent turns (plan slots for synthetic "
                                   "transcripts, the style-rule lexicon otherwise)")

    def parameters(self) -> dict[str, Any]:
        return {"style_rules_version": rules_version()}

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if condition == "original":
            turns, edits = apply_turn_edits(transcript, {})
            return Variant(turns, edits=edits, operation="none")
        level = "neutral" if condition == "neutral" else "marked"
        targets = ident.style_turns(self.dim)
        if ident.source == "plan":
            texts = render_plan(transcript.meta["plan"], transcript.meta.get("context", {}), {self.dim: level})
            turns, edits = apply_turn_edits(transcript, dict(enumerate(texts)))
            return Variant(turns, edits=edits, operation=self.dimension.operation,
                           checks={"target_turns": targets})
        new = {i: restyle(transcript.turns[i].text, self.dim, level) for i in targets
               if transcript.turns[i].speaker == "agent"}
        turns, edits = apply_turn_edits(transcript, new)
        if not edits:
            return Variant.not_applicable(f"no agent turn that a {self.dim} rule turns {condition}",
                                          self.dimension.operation)
        return Variant(turns, edits=edits, operation=self.dimension.operation, reason="style rules",
                       checks={"target_turns": targets,
                               "scope": {"swaps": [], "inserted": [],
                                         "style_vocab": sorted(style_vocabulary(self.dim))}})


for _dim, _label in (("directness", "Communicative Style"), ("politeness", "Politeness"),
                     ("formality", "Formality"), ("emotional_labor", "Emotional Labor")):
    register(StylePerturber(_dim, _label))
