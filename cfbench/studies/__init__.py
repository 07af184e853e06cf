"""One folder per study: its prompts and parsers, design, tables, figures, ``Params`` and ``run``.

The generic layers (core, io, perturb, judges, metrics, stats) never import a study.
A new study is a new folder here with a notebook of the same name in ``notebooks/``.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["available", "load"]


def available() -> list[str]:
    """The studies in this package, by folder name."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_"))


def load(name: str) -> ModuleType:
    """Import study ``name`` (which registers its scripted test doubles)."""
    known = available()
    if name not in known:
        raise KeyError(f"unknown study {name!r} (known: {', '.join(known)})")
    return importlib.import_module(f"{__name__}.{name}")
