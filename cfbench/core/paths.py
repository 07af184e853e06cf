"""Where cfbench keeps its per-user files (no imports from the rest of the package)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["RESULTS_MARKER", "cache_dir", "package_file", "package_text"]

#: The file cfbench writes into every results folder it makes (``cfbench reproduce``, a notebook run by
#: hand); cfbench replaces or deletes only folders holding it.
RESULTS_MARKER = ".cfbench-results"


def cache_dir() -> Path:
    """``$CFBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/cfbench`` (default ``~/.cache/cfbench``)."""
    if os.environ.get("CFBENCH_CACHE_DIR"):
        return Path(os.environ["CFBENCH_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cfbench"


def package_file(relpath: str):
    """A file shipped inside the cfbench package, by its path below ``cfbench/`` (a Traversable)."""
    from importlib import resources

    return resources.files("cfbench").joinpath(relpath)


def package_text(relpath: str) -> str:
    """The UTF-8 text of a file shipped inside the cfbench package (see :func:`package_file`)."""
    return package_file(relpath).read_text(encoding="utf-8")
