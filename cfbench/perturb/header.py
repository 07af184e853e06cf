"""Operation 3 -- metadata header prepended to the transcript.

The turns are never changed; the variant carries a ``header`` string
(``cfbench/data/perturb/metadata_headers.yaml``): past performance (5 trends),
agent profile (4), customer profile (4), priming from past coaching notes (5),
contextual metadata (3 kinds). Where a condition has several templates or
fillers, the choice is seeded by (seed, item, dimension, condition).
"""

from __future__ import annotations

import string

from cfbench.io.transcripts import Transcript

from .base import Dimension, Perturber, Variant, item_rng, load_data, pick, register
from .identify import TurnIdentification
from .turns import apply_turn_edits

__all__ = ["HeaderPerturber", "header_text"]

_LABELS = {
    "past_performance": "Past Performance",
    "agent_profile": "Agent Profile",
    "customer_profile": "Customer Profile",
    "priming": "Priming / Coaching Notes",
    "contextual_metadata": "Contextual Metadata",
}


def header_text(dimension: str, condition: str, *, seed: int, item_id: str) -> str:
    """The header for one (dimension, condition), seeded per item.

    >>> header_text("agent_profile", "trainee_2w", seed=0, item_id="x").splitlines()[1]
    '- Agent role: Trainee. Time in role: 2 weeks.'
    """
    data = load_data("metadata_headers.yaml")
    templates = data["dimensions"][dimension][condition]
    rng = item_rng(seed, item_id, "header", dimension, condition)
    template = pick(rng, templates)
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    fill = {f: pick(rng, data["fillers"][f]) for f in sorted(fields)}
    return f"{data['title']}:\n- {template.format(**fill)}"


class HeaderPerturber(Perturber):
    """One metadata dimension: a header prepended, the turns unchanged."""

    def parameters(self) -> dict:
        return {"headers_version": load_data("metadata_headers.yaml").get("version", 1)}

    def __init__(self, dim: str):
        conds = tuple(load_data("metadata_headers.yaml")["dimensions"][dim])
        self.dimension = Dimension(dim, _LABELS[dim], "context", "metadata_header", conds, conds,
                                   "metadata header prepended; turns unchanged")

    def perturb(self, transcript: Transcript, ident: TurnIdentification, condition: str, *, seed: int) -> Variant:
        turns, edits = apply_turn_edits(transcript, {})
        header = header_text(self.dimension.id, condition, seed=seed, item_id=transcript.id)
        return Variant(turns, header=header, edits=edits, operation=self.dimension.operation,
                       checks={"target_turns": [], "scope": {"swaps": [], "inserted": []}})


for _dim in _LABELS:
    register(HeaderPerturber(_dim))
