"""Where the STAR dialogues are for the judge-bias tests: ``../shared`` beside the repo, else $CFBENCH_STAR_DIR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from star_util import STAR_DIR


def star_dir() -> Path:
    for p in (STAR_DIR, Path(os.environ.get("CFBENCH_STAR_DIR", "/nonexistent"))):
        if p.is_dir():
            return p
    pytest.skip(f"STAR dialogues not found at {STAR_DIR} nor $CFBENCH_STAR_DIR (the project does not commit them)")
