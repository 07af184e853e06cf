"""Where the shared STAR dialogues are (``../shared/data/star`` beside the repo), for the perturb tests."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import pytest

STAR_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "star" / "dialogues"


def need_star() -> Path:
    if not STAR_DIR.is_dir():
        pytest.skip(f"STAR dialogues not found at {STAR_DIR} (the project does not commit them)")
    return STAR_DIR


@functools.lru_cache(maxsize=None)
def star(limit: int | None = None):
    from cfbench.io.star import load_star

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tuple(load_star(need_star(), limit=limit, skip_empty=True))
