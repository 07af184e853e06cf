"""Run the study notebooks with papermill: ``cfbench reproduce``.

Each study is ``notebooks/<study>.ipynb`` with its parameters in
``configs/<study>/<config>.yaml``; the executed notebook and everything it
writes land in ``results/<study>/<config>/``.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterable

from .errors import InputError
from .io._text import read_yaml
from ._secrets import scrub_secrets

__all__ = ["STUDIES", "CONFIGS", "reproduce", "load_config", "project_root"]

STUDIES = ("shopflow", "identity_tone", "contact_center_qa")
CONFIGS = ("smoke", "default", "paper")

# Parameter names that must never carry a value: keys come from the environment only.
_SECRET_NAME = re.compile(r"(^|[_-])(api[_-]?key|key|token|secret|password|passwd)$", re.IGNORECASE)


def project_root() -> Path:
    """The checkout holding ``notebooks/`` and ``configs/`` (cwd first, then the source tree)."""
    for candidate in (Path.cwd(), Path(__file__).resolve().parents[1]):
        if (candidate / "notebooks").is_dir() and (candidate / "configs").is_dir():
            return candidate
    raise FileNotFoundError("cannot find notebooks/ and configs/; run from the cfbench checkout")


def load_config(study: str, config: str, *, root: Path | None = None) -> dict[str, Any]:
    """Parameters of one study under one config, validated."""
    root = root or project_root()
    path = root / "configs" / study / f"{config}.yaml"
    if not path.is_file():
        raise InputError(f"no such config file (configs exist for: {', '.join(CONFIGS)})", source=str(path))
    params = read_yaml(path)
    if params is None:
        raise InputError("config is empty; it must set the notebook's parameters (an empty config would "
                         "silently run the notebook's own defaults under this config's name)", source=str(path))
    if not isinstance(params, dict):
        raise InputError(f"must be a mapping of parameter names to values, got {type(params).__name__}",
                         source=str(path))
    for name in params:
        if not isinstance(name, str):
            raise InputError("parameter names must be strings", source=str(path), field=str(name))
        if _SECRET_NAME.search(name):
            raise InputError("looks like a secret; keys and tokens come from environment variables only, "
                             "never from parameters (papermill writes parameters into the executed notebook)",
                             source=str(path), field=name)
    notebook = root / "notebooks" / f"{study}.ipynb"
    if notebook.is_file():
        _check_against_notebook(params, notebook, source=str(path))
    return params


_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict}


def notebook_parameters(notebook: Path) -> dict[str, type | None]:
    """Names declared in a notebook's ``parameters`` cell and their types (from the
    annotation, else from the literal default; None when neither tells)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells:
        raise InputError("has no cell tagged 'parameters'", source=str(notebook))
    declared: dict[str, type | None] = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = node.annotation.id if isinstance(node.annotation, ast.Name) else None
            declared[node.target.id] = _TYPES.get(ann or "")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    try:
                        value = ast.literal_eval(node.value)
                    except ValueError:
                        value = None
                    declared[target.id] = None if value is None else type(value)
    return declared


def _check_against_notebook(params: dict[str, Any], notebook: Path, *, source: str) -> None:
    """Every config parameter must be declared in the notebook's ``parameters`` cell, with the
    declared type (an int is accepted where a float is declared)."""
    declared = notebook_parameters(notebook)
    for name, value in params.items():
        if name not in declared:
            raise InputError(f"{notebook.name} declares no parameter {name!r} (declared: "
                             f"{', '.join(sorted(declared))})", source=source, field=name)
        expected = declared[name]
        if expected is None or value is None:
            continue
        ok = isinstance(value, expected) and not (expected is not bool and isinstance(value, bool))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise InputError(f"expected {expected.__name__} (as declared in {notebook.name}), got "
                             f"{type(value).__name__} {value!r}", source=source, field=name)


def reproduce(config: str = "default", studies: Iterable[str] | None = None, *,
              results_dir: str | os.PathLike[str] = "results", replay: bool = False,
              plan_only: bool = False, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """Execute the study notebooks for ``config``; returns run info per study.

    ``replay`` answers every judge call from the cache (a miss fails); ``plan_only``
    calls no model and records the uncached requests for ``cfbench cache export``.
    """
    import papermill as pm

    root = root or project_root()
    studies = list(studies or STUDIES)
    for s in studies:
        if s not in STUDIES:
            raise ValueError(f"unknown study {s!r} (known: {', '.join(STUDIES)})")
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r} (known: {', '.join(CONFIGS)})")
    saved_mode = os.environ.get("CFBENCH_MODE")
    if replay and plan_only:
        raise ValueError("replay and plan_only exclude each other")
    if replay or plan_only:  # read by run_requests in the notebook kernels
        os.environ["CFBENCH_MODE"] = "replay" if replay else "plan"
    info: dict[str, dict[str, Any]] = {}
    try:
        for study in studies:
            info[study] = _run_study(pm, root, study, config, results_dir, replay)
    finally:
        if saved_mode is None:
            os.environ.pop("CFBENCH_MODE", None)
        else:
            os.environ["CFBENCH_MODE"] = saved_mode
    return info


def _run_study(pm: Any, root: Path, study: str, config: str, results_dir: str | os.PathLike[str],
               replay: bool) -> dict[str, Any]:
    """Execute one study notebook; returns its run info (also written to run_info.json)."""
    params = load_config(study, config, root=root)
    out_dir = Path(results_dir) / study / config
    out_abs = out_dir if out_dir.is_absolute() else root / out_dir
    out_abs.mkdir(parents=True, exist_ok=True)
    params = {**params, "output_dir": str(out_dir), "config_name": config}
    print(f"[cfbench] {study} / {config} -> {out_dir}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    pm.execute_notebook(
        str(root / "notebooks" / f"{study}.ipynb"),
        str(out_abs / f"{study}.ipynb"),
        parameters=params,
        cwd=str(root),
        progress_bar=True,
        stderr_file=sys.stderr,  # the kernel's own progress bars (judge calls) show live in the terminal
        kernel_name="python3",
    )
    wall = time.perf_counter() - t0
    _assert_no_secrets(out_abs)
    info = {
        "study": study, "config": config, "wall_s": round(wall, 1),
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "replay": replay,
    }
    (out_abs / "run_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    print(f"[cfbench] {study} / {config}: done in {wall:.0f} s", file=sys.stderr, flush=True)
    return info


def _assert_no_secrets(directory: Path) -> None:
    """Fail loudly if the value of a secret env var reached a run's outputs."""
    for path in directory.rglob("*"):
        if path.is_file() and path.suffix in {".ipynb", ".json", ".csv", ".txt", ".md", ".log"}:
            text = path.read_text(encoding="utf-8", errors="replace")
            if scrub_secrets(text) != text:
                raise RuntimeError(f"a secret from the environment was written to {path}; refusing to keep it")
