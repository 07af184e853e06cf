"""Seeded synthetic contact-center transcripts with labels by construction.

>>> from cfbench.studies.contact_center_qa.synth import generate_transcripts
>>> ts = generate_transcripts(3, seed=0)
>>> len(ts)
3

The shipped set (``cfbench/studies/contact_center_qa/data/synthetic_transcripts.jsonl``) is
regenerated with ``python -m cfbench.studies.contact_center_qa.synth --out cfbench/studies/contact_center_qa/data``.
"""

from __future__ import annotations

from pathlib import Path

from .domains import DOMAINS
from .generator import OUTCOMES, generate_transcripts, iter_synthetic, transcript_stats, write_synthetic_set
from .labels import LABEL_MEANINGS, LABEL_QUESTIONS
from cfbench.perturb.style_plan import STYLE_DIMENSIONS, render_plan

__all__ = ["generate_transcripts", "iter_synthetic", "transcript_stats", "write_synthetic_set", "shipped_transcripts_path",
           "LABEL_QUESTIONS", "LABEL_MEANINGS", "DOMAINS", "OUTCOMES", "STYLE_DIMENSIONS", "render_plan"]


def shipped_transcripts_path() -> Path:
    """Path of the shipped synthetic set (``cfbench/studies/contact_center_qa/data/``)."""
    return Path(__file__).resolve().parents[1] / "data" / "synthetic_transcripts.jsonl"
