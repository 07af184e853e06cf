"""One folder per study: its prompts and parsers, design, tables, figures, ``Params`` and ``run``.

The generic layers (core, io, perturb, judges, metrics, stats) never import a study.
A new study is a new folder here with a notebook of the same name in ``notebooks/``.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["available", "load", "explorer_pairs"]


def _plugin_studies() -> dict[str, str]:
    """Study name -> module, from the ``cfbench.studies`` entry-point group (see :mod:`cfbench.plugins`)."""
    return {name: ep.value for name, ep in _plugin_entry_points().items()}


def _plugin_entry_points() -> dict:
    from cfbench import plugins

    plugins.load_env_plugins()
    return {ep.name: ep for ep in plugins.usable_entry_points("cfbench.studies", builtin=_own())}


def _own() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_")}


def available() -> list[str]:
    """The studies in this package, by folder name, and those plugin packages add."""
    return sorted(_own() | set(_plugin_studies()))


def load(name: str) -> ModuleType:
    """Import study ``name`` (which registers its scripted test doubles). A plugin study that cannot
    be imported is disabled with one warning line and raises :class:`InputError`."""
    from cfbench import plugins
    from cfbench.core.errors import InputError

    known = available()
    if name not in known:
        raise KeyError(f"unknown study {name!r} (known: {', '.join(known)})")
    if name in _own():
        return importlib.import_module(f"{__name__}.{name}")
    ep = _plugin_entry_points()[name]
    try:
        return importlib.import_module(ep.value)
    except (Exception, SystemExit) as exc:  # a plugin's import error, even sys.exit()
        problem = f"cannot import {ep.value!r}: {' '.join(f'{type(exc).__name__}: {exc}'.split())[:300]}"
        plugins.disable(ep, problem)
        raise InputError(problem, source=f"plugin study {name}", field=name) from None


def explorer_pairs(folder: "str | os.PathLike[str]") -> Any:
    """What the study that wrote ``folder`` (``run_info.json``/``summary.json``) says about its pairs for the
    run explorer: its package's ``explorer_pairs(folder)`` (plugins included), or None when the study is
    unknown or describes no pairs (protocol: :mod:`cfbench.view.pairs`)."""
    from cfbench.view import study_of

    name = study_of(folder)
    if not name or name not in available():
        return None
    fn = getattr(load(name), "explorer_pairs", None)
    return fn(Path(folder)) if callable(fn) else None
