"""One entry point for transcripts in any format cfbench reads.

>>> from cfbench.io.dialogues import load_dialogues    # doctest: +SKIP
>>> calls = load_dialogues("my_calls.jsonl")           # JSONL/CSV (docs/transcripts.md)  # doctest: +SKIP
>>> star = load_dialogues("STAR/dialogues/")           # a folder (or file) of STAR dialogues  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path

from .star import load_star
from .transcripts import Transcript, load_transcripts

__all__ = ["load_dialogues"]


def load_dialogues(path: str | os.PathLike[str]) -> list[Transcript]:
    """Transcripts from a JSONL/CSV file, a STAR ``*.json`` dialogue, or a folder of STAR dialogues.

    STAR dialogues without a single turn are left out with a warning naming them
    (:func:`cfbench.io.star.load_star` with ``skip_empty=True``); every other
    problem is an :class:`~cfbench.core.errors.InputError` naming the record and field.
    """
    p = Path(path)
    if p.is_dir() or p.suffix.lower() == ".json":
        return load_star(p, skip_empty=True)
    return load_transcripts(p)
