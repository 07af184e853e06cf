"""Where cfbench keeps its per-user files (no imports from the rest of the package)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """``$CFBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/cfbench`` (default ``~/.cache/cfbench``)."""
    if os.environ.get("CFBENCH_CACHE_DIR"):
        return Path(os.environ["CFBENCH_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cfbench"
