"""Plugins: dimensions, judge backends and studies shipped in another package.

Three ways in, all seen by ``cfbench variants``, ``cfbench reproduce``, the
notebooks, :func:`audit` and the review page (docs/extending.md):

* **Entry points** in the plugin package's ``pyproject.toml``, discovered on
  first use of a registry (no cfbench file edited)::

      [project.entry-points."cfbench.perturbers"]
      age_cue = "mypkg.dims:AGE_CUE"        # a Perturber (instance or class) or a module that registers

      [project.entry-points."cfbench.judges"]
      myapi = "mypkg.judge:MyJudge"         # backend name -> factory(model, **options) -> Judge

      [project.entry-points."cfbench.studies"]
      my_study = "mypkg.my_study"           # study name -> its package (Params, run, ...)

* ``--plugin MODULE`` on the command line (repeatable, anywhere in the line),
  imported before the command runs;
* ``plugins: [MODULE, ...]`` in a config file (or ``-p plugins [MODULE]``).

A module named by the flag or the config key is also put in the environment
variable ``CFBENCH_PLUGINS`` (comma-separated), so a notebook kernel that
``cfbench reproduce`` starts imports it too.

This module imports nothing from cfbench but :mod:`cfbench.core`; each registry
asks it for its group (:func:`entry_points_of`) and registers what it finds.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib import metadata
from types import ModuleType
from typing import Any, Iterable, Sequence

from cfbench.core.errors import InputError

__all__ = ["GROUPS", "ENV_VAR", "entry_points_of", "load_entry_point", "use", "load_env_plugins",
           "split_plugin_args", "loaded"]

#: Entry-point groups cfbench reads.
GROUPS = ("cfbench.perturbers", "cfbench.judges", "cfbench.studies")
#: Environment variable listing plugin modules (comma-separated) for child processes.
ENV_VAR = "CFBENCH_PLUGINS"

_IMPORTED: dict[str, ModuleType] = {}


def entry_points_of(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of ``group``, sorted by name (nothing is imported)."""
    if group not in GROUPS:
        raise ValueError(f"unknown cfbench entry-point group {group!r} (known: {', '.join(GROUPS)})")
    eps = metadata.entry_points()
    selected = eps.select(group=group) if hasattr(eps, "select") else eps.get(group, [])  # type: ignore[attr-defined]
    return sorted(selected, key=lambda ep: (ep.name, ep.value))


def load_entry_point(ep: metadata.EntryPoint) -> Any:
    """Import what ``ep`` names; a failure is one line naming the distribution, group and entry point."""
    try:
        return ep.load()
    except Exception as exc:  # an import error of any kind inside a plugin
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        raise InputError(f"cannot load {ep.value!r}: {type(exc).__name__}: {exc}",
                         source=f"plugin package {dist}", record=ep.group, field=ep.name) from exc


def _import(module: str, *, source: str) -> ModuleType:
    if not isinstance(module, str) or not module.strip() or any(c.isspace() for c in module.strip()):
        raise InputError(f"a plugin must be a module name such as mypkg.dims, got {module!r}",
                         source=source, field="plugins")
    module = module.strip()
    if module in _IMPORTED:
        return _IMPORTED[module]
    try:
        mod = importlib.import_module(module)
    except Exception as exc:
        raise InputError(f"cannot import plugin {module!r}: {type(exc).__name__}: {exc}", source=source,
                         field="plugins") from exc
    _IMPORTED[module] = mod
    return mod


def use(modules: Iterable[str], *, source: str = "--plugin") -> list[ModuleType]:
    """Import plugin ``modules`` now and name them in ``CFBENCH_PLUGINS`` for child processes."""
    if isinstance(modules, str):
        modules = [modules]
    if not isinstance(modules, (list, tuple)):
        raise InputError(f"must be a list of module names, got {type(modules).__name__}", source=source,
                         field="plugins")
    out = [_import(m, source=source) for m in modules]
    names = [n for n in os.environ.get(ENV_VAR, "").split(",") if n.strip()]
    for m in modules:
        if m.strip() not in names:
            names.append(m.strip())
    if names:
        os.environ[ENV_VAR] = ",".join(names)
    return out


def load_env_plugins() -> list[ModuleType]:
    """Import the modules ``CFBENCH_PLUGINS`` names (a notebook kernel started by ``cfbench reproduce``)."""
    names = [n.strip() for n in os.environ.get(ENV_VAR, "").split(",") if n.strip()]
    return [_import(n, source=f"environment variable {ENV_VAR}") for n in names]


def loaded() -> list[str]:
    """Plugin modules imported through :func:`use` or ``CFBENCH_PLUGINS``, in order."""
    return list(_IMPORTED)


def split_plugin_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(modules, rest)``: every ``--plugin MODULE`` / ``--plugin=MODULE`` taken out of ``argv``."""
    modules: list[str] = []
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--plugin":
            if i + 1 >= len(args):
                raise InputError("--plugin needs a module name", source="command line", field="--plugin")
            modules.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--plugin="):
            modules.append(a.split("=", 1)[1])
        else:
            rest.append(a)
        i += 1
    return modules, rest


if __name__ == "__main__":  # pragma: no cover
    for g in GROUPS:
        for ep in entry_points_of(g):
            print(f"{g:20s} {ep.name:20s} {ep.value}")
    sys.exit(0)
