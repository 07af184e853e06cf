"""Agent disability (Operation 2): 1-3 turns mentioning assistive technology or
a speech characteristic, inserted where the agent starts working on the
customer's request.

Context rule: the block goes right after the first customer turn that follows
the agent's first turn and is itself followed by an agent turn that is not a
goodbye (the moment an agent would say "one moment while my screen reader
reads the details"). The template is seeded by (seed, item). The ``normal``
condition is the transcript unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, item_rng, load_data, register
from .identify import TurnIdentification
from .turns import apply_turn_edits

__all__ = ["DisabilityPerturber", "insertion_point"]

_GOODBYE = re.compile(r"(?i)\b(good ?bye|bye)\b")


def insertion_point(transcript: Transcript, *, seed: int = 0) -> int | None:
    """Index at which the inserted turns go (see the module docstring), or ``None``.

    ``seed`` is accepted for signature stability; the place is chosen by rule.
    """
    turns = transcript.turns
    first_agent = next((i for i, t in enumerate(turns) if t.speaker == "agent"), None)
    if first_agent is None:
        return None
    for i in range(first_agent + 1, len(turns) - 1):
        if turns[i].speaker == "customer" and turns[i + 1].speaker == "agent" \
                and not _GOODBYE.search(turns[i + 1].text) and i + 1 < len(turns) - 1:
            return i + 1
    return None


class DisabilityPerturber(Perturber):
    """Disability: 1-3 inserted turns mentioning assistive technology or a speech characteristic."""

    version = 2
    dimension = Dimension("disability", "Agent Disability", "identity", "context_injection",
                          ("normal", "disabled"), ("normal", "disabled"),
                          "inserted agent turn(s) mentioning assistive technology or a speech characteristic, "
                          "where the agent starts on the customer's request")

    def parameters(self) -> dict[str, Any]:
        return {"disability_version": load_data("disability.yaml")["version"]}

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        if condition == "normal":
            turns, edits = apply_turn_edits(transcript, {})
            return Variant(turns, edits=edits, operation="none")
        at = insertion_point(transcript, seed=seed)
        if at is None:
            return Variant.not_applicable("no customer request followed by an agent turn to insert after",
                                          self.dimension.operation)
        templates = load_data("disability.yaml")["templates"]
        rng = item_rng(seed, transcript.id, "disability_template")
        block: list[dict[str, Any]] = templates[int(rng.integers(len(templates)))]
        turns = [t.to_dict() for t in transcript.turns]
        new_turns = turns[:at] + [dict(b) for b in block] + turns[at:]
        edits = [{"turn": at + k, "op": "insert", "speaker": b["speaker"], "before": "", "after": b["text"]}
                 for k, b in enumerate(block)]
        return Variant(new_turns, edits=edits, operation=self.dimension.operation,
                       checks={"target_turns": [], "inserted": len(block), "scope": {"swaps": [], "inserted": []}})


register(DisabilityPerturber())
