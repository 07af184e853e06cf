"""Agent gender: the name (if the agent gives one) and the agent-directed
gendered words swapped to a male or a female version (Operation 1)."""

from __future__ import annotations

from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, load_data, register
from .identify import TurnIdentification
from .turns import apply_turn_edits, choose_group, choose_name, name_and_gender_edits, scope_for

__all__ = ["GenderPerturber"]


class GenderPerturber(Perturber):
    """Gender: a male and a female name from one ethnicity group, with the
    agent-referring pronouns and honorifics swapped to match."""

    version = 2

    dimension = Dimension("gender", "Agent Gender", "identity", "turn_transformation",
                          ("male", "female"), ("male", "female"),
                          "name and agent-referring pronouns/honorifics swapped")

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if not ident.name_turns and not ident.gender_words:
            return Variant.not_applicable("no agent name and no gendered word addressed to the agent",
                                          self.dimension.operation)
        group = choose_group(seed, transcript.id, "ethnicity", ident)
        new_name = choose_name(seed, transcript.id, "ethnicity", group, condition, avoid=ident.agent_name) \
            if ident.name_turns else None
        turns, edits = apply_turn_edits(transcript, name_and_gender_edits(transcript, ident, new_name, condition))
        return Variant(turns, edits=edits, operation=self.dimension.operation,
                       checks={"absent_name": ident.agent_name if new_name else "",
                               "target_turns": _targets(ident),
                               "scope": scope_for(ident, new_name=new_name, gender=True)})


def _targets(ident: TurnIdentification) -> list[int]:
    return sorted(set(ident.name_turns) | {w["turn"] for w in ident.gender_words})



register(GenderPerturber())
