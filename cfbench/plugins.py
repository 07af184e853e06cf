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
asks it for its group (:func:`usable_entry_points`, :func:`load_entry_points`) and
registers what it finds.

Each entry point stands alone: one that cannot be imported (an error, even ``sys.exit``
at import) is disabled with one warning line naming its package, and the others work.
A name that is already cfbench's own (a built-in dimension, backend or study), or that
two plugin packages both define, is refused the same way: neither plugin is used under
that name, so which one would have won never depends on install order.
:func:`packages` lists the installed plugin packages and their versions for the run record.
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
           "split_plugin_args", "loaded", "usable_entry_points", "load_entry_points", "disable", "disabled",
           "packages"]

#: Entry-point groups cfbench reads.
GROUPS = ("cfbench.perturbers", "cfbench.judges", "cfbench.studies")
#: Environment variable listing plugin modules (comma-separated) for child processes.
ENV_VAR = "CFBENCH_PLUGINS"

_IMPORTED: dict[str, ModuleType] = {}
_DISABLED: dict[tuple[str, str, str, str], str] = {}  # (group, name, value, package) -> why, warned once


def entry_points_of(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of ``group``, sorted by name (nothing is imported)."""
    if group not in GROUPS:
        raise ValueError(f"unknown cfbench entry-point group {group!r} (known: {', '.join(GROUPS)})")
    eps = metadata.entry_points()
    selected = eps.select(group=group) if hasattr(eps, "select") else eps.get(group, [])  # type: ignore[attr-defined]
    return sorted(selected, key=lambda ep: (ep.name, ep.value))


def _dist(ep: metadata.EntryPoint) -> str:
    return getattr(getattr(ep, "dist", None), "name", None) or "?"


def _short(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def load_entry_point(ep: metadata.EntryPoint) -> Any:
    """Import what ``ep`` names; a failure (``sys.exit`` at import included) is one line naming the
    distribution, group and entry point."""
    try:
        return ep.load()
    except (Exception, SystemExit) as exc:  # an import error of any kind inside a plugin
        raise InputError(f"cannot load {ep.value!r}: {_short(exc)}", source=f"plugin package {_dist(ep)}",
                         record=ep.group, field=ep.name) from None


def disable(ep: metadata.EntryPoint, problem: str) -> None:
    """Leave ``ep`` out of its registry, with one warning line (once per process)."""
    key = (ep.group, ep.name, ep.value, _dist(ep))
    if key in _DISABLED:
        return
    _DISABLED[key] = problem
    text = " ".join(str(problem).split())[:400]
    print(f"[cfbench] warning: plugin package {_dist(ep)}: entry point {ep.name!r} ({ep.group}) disabled: {text}",
          file=sys.stderr, flush=True)


def disabled() -> dict[tuple[str, str, str, str], str]:
    """``(group, name, value, package) -> why`` of every entry point left out in this process."""
    return dict(_DISABLED)


def usable_entry_points(group: str, *, builtin: Iterable[str] = ()) -> list[metadata.EntryPoint]:
    """The entry points of ``group`` whose name neither is a ``builtin`` one nor is defined by two
    plugin packages (each refused one goes through :func:`disable`; nothing is imported)."""
    builtin = set(builtin)
    by_name: dict[str, list[metadata.EntryPoint]] = {}
    for ep in entry_points_of(group):
        same = by_name.setdefault(ep.name, [])
        if not any(o.value == ep.value and _dist(o) == _dist(ep) for o in same):  # one package seen twice
            same.append(ep)
    out = []
    for name, eps in by_name.items():
        if name in builtin:
            for ep in eps:
                disable(ep, f"{name!r} is a built-in name of cfbench and is not replaced; give it another name")
        elif len(eps) > 1:
            for ep in eps:
                others = ", ".join(f"{_dist(o)} ({o.value})" for o in eps if o is not ep)
                disable(ep, f"{name!r} is also defined by {others}; neither is used until one is renamed")
        else:
            out.append(eps[0])
    return out


def load_entry_points(group: str, *, builtin: Iterable[str] = ()) -> list[tuple[metadata.EntryPoint, Any]]:
    """``(entry point, loaded object)`` of every usable entry point of ``group`` that imports; one
    that does not is disabled with its reason (the others still load)."""
    out = []
    for ep in usable_entry_points(group, builtin=builtin):
        try:
            out.append((ep, load_entry_point(ep)))
        except InputError as exc:
            disable(ep, exc.problem)
    return out


def packages() -> list[dict[str, Any]]:
    """The installed packages that declare cfbench entry points, and the distributions of the modules
    imported through ``--plugin``/``plugins:``/``CFBENCH_PLUGINS``: name, version, entry points (and
    which were disabled) and modules, for ``run_info.json``."""
    found: dict[str, dict[str, Any]] = {}
    for group in GROUPS:
        for ep in entry_points_of(group):
            dist = getattr(ep, "dist", None)
            entry = found.setdefault(_dist(ep), {"package": _dist(ep), "version": getattr(dist, "version", None),
                                                 "entry_points": [], "modules": []})
            tag = f"{group}:{ep.name}"
            if (group, ep.name, ep.value, _dist(ep)) in _DISABLED:
                tag += " (disabled)"
            if tag not in entry["entry_points"]:
                entry["entry_points"].append(tag)
    try:
        owners = metadata.packages_distributions()
    except Exception:  # noqa: BLE001 - a broken install must not stop the run record
        owners = {}
    for module in loaded():
        names = owners.get(module.split(".")[0]) or [f"(module {module.split('.')[0]})"]
        for name in names:
            try:
                version = metadata.version(name)
            except Exception:  # noqa: BLE001 - a module outside any installed distribution
                version = None
            entry = found.setdefault(name, {"package": name, "version": version, "entry_points": [], "modules": []})
            if module not in entry["modules"]:
                entry["modules"].append(module)
    return sorted(found.values(), key=lambda e: e["package"])


def _import(module: str, *, source: str) -> ModuleType:
    if not isinstance(module, str) or not module.strip() or any(c.isspace() for c in module.strip()):
        raise InputError(f"a plugin must be a module name such as mypkg.dims, got {module!r}",
                         source=source, field="plugins")
    module = module.strip()
    if module in _IMPORTED:
        return _IMPORTED[module]
    try:
        mod = importlib.import_module(module)
    except (Exception, SystemExit) as exc:  # sys.exit() in a plugin must not end cfbench with status 0
        raise InputError(f"cannot import plugin {module!r}: {_short(exc)}", source=source,
                         field="plugins") from None
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
