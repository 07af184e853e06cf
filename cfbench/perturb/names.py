"""Agent ethnicity / religion, name only: the agent's self-introduced name
swapped for a name from the condition's list (Operation 1)."""

from __future__ import annotations

from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, load_data, register
from .identify import TurnIdentification
from .turns import _agent_gender_for, apply_turn_edits, choose_name, name_and_gender_edits, scope_for

__all__ = ["NameSwapPerturber"]


class NameSwapPerturber(Perturber):
    """Ethnicity or religion, name only: the agent's name replaced by a name
    from the condition's list (same gender as the agent)."""

    version = 2

    def __init__(self, kind: str):
        self.kind = kind
        groups = tuple(load_data("names.yaml")[kind])
        label = "Agent Ethnicity (name-only)" if kind == "ethnicity" else "Agent Religion (name-only)"
        self.dimension = Dimension(f"{kind}_name", label, "identity", "turn_transformation", groups, groups,
                                   f"agent name replaced by a {kind}-coded name of the same gender")

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if not ident.agent_name or not ident.name_turns:
            return Variant.not_applicable("no agent name: the agent never introduces one and the record gives none", self.dimension.operation)
        gender = _agent_gender_for(seed, transcript.id, ident)
        new_name = choose_name(seed, transcript.id, self.kind, condition, gender, avoid=ident.agent_name)
        turns, edits = apply_turn_edits(transcript, name_and_gender_edits(transcript, ident, new_name, None))
        return Variant(turns, edits=edits, operation=self.dimension.operation,
                       checks={"absent_name": ident.agent_name, "target_turns": list(ident.name_turns),
                               "scope": scope_for(ident, new_name=new_name)})


register(NameSwapPerturber("ethnicity"))
register(NameSwapPerturber("religion"))
