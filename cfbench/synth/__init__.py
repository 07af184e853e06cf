"""Seeded synthetic contact-center transcripts with labels by construction.

>>> from cfbench.synth import generate_transcripts
>>> ts = generate_transcripts(3, seed=0)
>>> len(ts)
3

The shipped set (``data/contact_center/synthetic_transcripts.jsonl``) is
regenerated with ``python -m cfbench.synth --out data/contact_center``.
"""

from __future__ import annotations

from pathlib import Path

from .domains import DOMAINS
from .generator import OUTCOMES, generate_transcripts, transcript_stats, write_synthetic_set
from .labels import LABEL_MEANINGS, LABEL_QUESTIONS
from .plan import STYLE_DIMENSIONS, render_plan

__all__ = ["generate_transcripts", "transcript_stats", "write_synthetic_set", "shipped_transcripts_path",
           "LABEL_QUESTIONS", "LABEL_MEANINGS", "DOMAINS", "OUTCOMES", "STYLE_DIMENSIONS", "render_plan"]


def shipped_transcripts_path() -> Path:
    """Path of the shipped synthetic set in a source checkout (``data/contact_center/``)."""
    return Path(__file__).resolve().parents[2] / "data" / "contact_center" / "synthetic_transcripts.jsonl"
