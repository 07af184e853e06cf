"""Extra dimension: disfluencies (fillers, repeats) cleaned (Operation 1)."""

from __future__ import annotations

from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, load_data, register
from .identify import TurnIdentification
from .turns import apply_turn_edits, clean_disfluencies

__all__ = ["DisfluencyPerturber"]


class DisfluencyPerturber(Perturber):
    """Extra dimension (not a table row): original vs disfluencies removed."""

    dimension = Dimension("disfluency", "Disfluency cleaning", "extra", "turn_transformation",
                          ("original", "cleaned"), ("original", "cleaned"), "fillers and repeats removed")

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if condition == "original":
            turns, edits = apply_turn_edits(transcript, {})
            return Variant(turns, edits=edits, operation="none")
        new = {i: clean_disfluencies(t.text) for i, t in enumerate(transcript.turns)}
        new = {i: s for i, s in new.items() if s}  # a turn that was only a filler keeps its text
        turns, edits = apply_turn_edits(transcript, new)
        if not edits:
            return Variant.not_applicable("no disfluencies found", self.dimension.operation)
        return Variant(turns, edits=edits, operation=self.dimension.operation,
                       checks={"target_turns": sorted(e["turn"] for e in edits)})


register(DisfluencyPerturber())
