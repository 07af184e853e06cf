"""Dialogue-act plans: how a synthetic turn is assembled from pieces.

A synthetic transcript keeps, in ``meta["plan"]``, one entry per turn::

    {"act": "greet", "pieces": [
        {"kind": "slot", "dim": "formality", "slot": "greeting", "choice": 1},
        {"kind": "text", "text": "This is Maria at Ledgerly."},
        {"kind": "slot", "dim": "directness", "slot": "offer", "choice": 0}]}

Piece kinds: ``text`` (content, never changed by a style counterfactual),
``slot`` (a style slot of one dimension; ``choice`` indexes its ``base``
realizations), ``filler`` (a disfluency), ``agent_ref`` (customer words that
refer to the agent in the third person). The turn text is the non-empty
pieces joined by single spaces. Re-rendering the plan with one dimension set
to ``neutral`` or its marked level gives that style counterfactual.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Sequence

import yaml

from cfbench.core.paths import package_text

__all__ = ["style_slots", "STYLE_DIMENSIONS", "marked_condition", "render_piece", "render_turn",
           "render_plan"]

#: The four style dimensions realized through slots.
STYLE_DIMENSIONS = ("directness", "politeness", "formality", "emotional_labor")


@functools.lru_cache(maxsize=1)
def style_slots() -> dict[str, Any]:
    """The parsed ``cfbench/data/perturb/style_slots.yaml``."""
    text = package_text("data/perturb/style_slots.yaml")
    return yaml.safe_load(text)


def marked_condition(dim: str) -> str:
    """The marked condition id of a style dimension (e.g. ``"polite"``)."""
    return style_slots()["dimensions"][dim]["marked_condition"]


def render_piece(piece: Mapping[str, Any], context: Mapping[str, str],
                 levels: Mapping[str, str] | None = None) -> str:
    """Text of one piece. ``levels`` maps a style dimension to ``"neutral"`` or
    ``"marked"``; dimensions not in it keep their original (base) choice."""
    kind = piece["kind"]
    if kind != "slot":
        return piece["text"]
    dim, slot = piece["dim"], piece["slot"]
    spec = style_slots()["dimensions"][dim]["slots"][slot]
    level = (levels or {}).get(dim)
    if level is None:
        template = spec["base"][piece["choice"]]
    elif level in ("neutral", "marked"):
        template = spec[level]
    else:
        raise ValueError(f"style level must be 'neutral' or 'marked', got {level!r}")
    return template.format(**context)


def render_turn(plan_turn: Mapping[str, Any], context: Mapping[str, str],
                levels: Mapping[str, str] | None = None) -> str:
    parts = [render_piece(p, context, levels) for p in plan_turn["pieces"]]
    return " ".join(p for p in parts if p)


def render_plan(plan: Sequence[Mapping[str, Any]], context: Mapping[str, str],
                levels: Mapping[str, str] | None = None) -> list[str]:
    """Texts of all turns of a plan under the given style levels."""
    return [render_turn(t, context, levels) for t in plan]
