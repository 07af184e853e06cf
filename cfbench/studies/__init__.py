"""One folder per study: its prompts and parsers, design, tables, figures, ``Params`` and ``run``.

The generic layers (core, io, perturb, judges, metrics, stats) never import a study.
A new study is a new folder here with a notebook of the same name in ``notebooks/``.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["available", "load"]


def _plugin_studies() -> dict[str, str]:
    """Study name -> module, from the ``cfbench.studies`` entry-point group (see :mod:`cfbench.plugins`)."""
    from cfbench import plugins

    plugins.load_env_plugins()
    return {ep.name: ep.value for ep in plugins.entry_points_of("cfbench.studies")}


def available() -> list[str]:
    """The studies in this package, by folder name, and those plugin packages add."""
    own = {m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_")}
    return sorted(own | set(_plugin_studies()))


def load(name: str) -> ModuleType:
    """Import study ``name`` (which registers its scripted test doubles)."""
    known = available()
    if name not in known:
        raise KeyError(f"unknown study {name!r} (known: {', '.join(known)})")
    own = {m.name for m in pkgutil.iter_modules(__path__) if m.ispkg}
    return importlib.import_module(f"{__name__}.{name}" if name in own else _plugin_studies()[name])
