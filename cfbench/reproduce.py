"""Run the study notebooks with papermill: ``cfbench reproduce``.

Each study ``S`` is ``notebooks/S.ipynb`` (a package under :mod:`cfbench.studies` with a
notebook of the same name); its parameters come from ``configs/S/<config>.yaml`` or
any YAML file (``-f``), plus ``-p name value`` overrides. The executed notebook and
everything it writes land in ``results/S/<config>/`` — and only when the run
succeeds: a run executes in a staging folder beside it and replaces the previous
results at the end, so a failed run never leaves old tables looking current.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .core.errors import InputError
from .core.files import read_yaml
from .core.secrets import find_secret_leaks

__all__ = ["CONFIGS", "studies", "reproduce", "load_config", "load_config_file", "project_root",
           "notebook_parameters", "StudyFailed"]

#: The configs shipped for every study (any other YAML file runs with ``config_file``).
CONFIGS = ("smoke", "default", "paper")

# Parameter names that must never carry a value: keys come from the environment only.
_SECRET_NAME = re.compile(r"(^|[_-])(api[_-]?key|key|token|secret|password|passwd)$", re.IGNORECASE)
# Parameters the runner sets itself.
_RUNNER_PARAMS = ("output_dir", "config_name")


class StudyFailed(RuntimeError):
    """A study notebook raised; the message is one line and names where the failed notebook is."""

    def __init__(self, study: str, where: Path, cause: str):
        self.study, self.where, self.cause = study, where, cause
        super().__init__(f"study {study} failed: {cause} (executed notebook: {where}; "
                         "previous results left untouched)")


def project_root() -> Path:
    """Where this cfbench's ``notebooks/`` and ``configs/`` are: inside the installed package
    (a wheel ships them as ``cfbench/notebooks``, ``cfbench/configs``), else the checkout it runs from."""
    here = Path(__file__).resolve().parent
    for candidate in (here, here.parent):
        if (candidate / "notebooks").is_dir() and (candidate / "configs").is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the study notebooks and configs beside {here}; reinstall cfbench")


def studies(root: Path | None = None) -> list[str]:
    """The studies that can run: a package under ``cfbench.studies`` with ``notebooks/<name>.ipynb``."""
    from .studies import available

    root = root or project_root()
    return [s for s in available() if (root / "notebooks" / f"{s}.ipynb").is_file()]


def load_config(study: str, config: str, *, root: Path | None = None) -> dict[str, Any]:
    """Parameters of one study under one shipped config, validated."""
    root = root or project_root()
    path = root / "configs" / study / f"{config}.yaml"
    if not path.is_file():
        raise InputError(f"no such config file (configs exist for: {', '.join(CONFIGS)})", source=str(path))
    return load_config_file(path, study, root=root)


def load_config_file(path: str | os.PathLike[str], study: str, *, root: Path | None = None,
                     overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Parameters from any YAML file (plus ``overrides``), checked against the study notebook."""
    root = root or project_root()
    path = Path(path)
    params = read_yaml(path)
    if params is None:
        raise InputError("config is empty; it must set the notebook's parameters (an empty config would "
                         "silently run the notebook's own defaults under this config's name)", source=str(path))
    if not isinstance(params, dict):
        raise InputError(f"must be a mapping of parameter names to values, got {type(params).__name__}",
                         source=str(path))
    params = {**params, **(overrides or {})}
    if "plugins" in params:  # modules to import first (cfbench.plugins); not a notebook parameter
        from .plugins import use

        value = params.pop("plugins")
        use([value] if isinstance(value, str) else list(value or ()), source=str(path))
    for name in params:
        if not isinstance(name, str):
            raise InputError("parameter names must be strings", source=str(path), field=str(name))
        if _SECRET_NAME.search(name):
            raise InputError("looks like a secret; keys and tokens come from environment variables only, "
                             "never from parameters (papermill writes parameters into the executed notebook)",
                             source=str(path), field=name)
        if name in _RUNNER_PARAMS:
            raise InputError("is set by cfbench reproduce, not by a config", source=str(path), field=name)
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


def parse_override(name: str, raw: str) -> tuple[str, Any]:
    """A ``-p name value`` pair: the value is read as YAML (``8`` is an int, ``[a, b]`` a list, ``x`` a string)."""
    import yaml

    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    return name, value


@dataclass(frozen=True)
class _Run:
    study: str
    config: str
    params: dict[str, Any]


def reproduce(config: str = "default", studies_: Iterable[str] | None = None, *,
              config_file: str | os.PathLike[str] | None = None,
              overrides: Mapping[str, Any] | None = None,
              results_dir: str | os.PathLike[str] = "results", replay: bool = False,
              plan_only: bool = False, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """Execute the study notebooks; returns run info per study.

    ``config`` names a shipped config; ``config_file`` any YAML file (its stem names the
    results folder); ``overrides`` replace single parameters. ``replay`` answers every judge
    call from the cache (a miss fails); ``plan_only`` calls no model and records the
    uncached requests for a Batch-API export. Raises :class:`StudyFailed` for the first
    study whose notebook raises (studies before it keep their new results).
    """
    import papermill as pm

    root = root or project_root()
    known = studies(root)
    chosen = list(studies_ or known)
    for s in chosen:
        if s not in known:
            raise InputError(f"unknown study (known: {', '.join(known)})", source="--study", field=s)
    if config_file is None and config not in CONFIGS:
        raise InputError(f"unknown config (shipped: {', '.join(CONFIGS)}; or pass a file with -f)",
                         source="--config", field=config)
    if replay and plan_only:
        raise ValueError("replay and plan_only exclude each other")
    runs = []
    for s in chosen:  # validate every config before running anything
        if config_file is not None:
            name = Path(config_file).stem
            params = load_config_file(config_file, s, root=root, overrides=overrides)
        else:
            name = config
            params = load_config(s, config, root=root)
            if overrides:
                params = load_config_file(root / "configs" / s / f"{config}.yaml", s, root=root,
                                          overrides=overrides)
        runs.append(_Run(s, name, _absolute_paths(params)))
    saved_mode = os.environ.get("CFBENCH_MODE")
    if replay or plan_only:  # read by run_requests in the notebook kernels
        os.environ["CFBENCH_MODE"] = "replay" if replay else "plan"
    info: dict[str, dict[str, Any]] = {}
    progress = _Overall([_estimate_seconds(root, Path(results_dir), r, replay or plan_only) for r in runs])
    try:
        for k, run in enumerate(runs):
            with progress.study(k, run.study):
                info[run.study] = _run_study(pm, root, run, Path(results_dir), replay)
    finally:
        progress.close()
        if saved_mode is None:
            os.environ.pop("CFBENCH_MODE", None)
        else:
            os.environ["CFBENCH_MODE"] = saved_mode
    return info


def _estimate_seconds(root: Path, results_dir: Path, run: _Run, cached: bool) -> float | None:
    """Expected wall time of one study: the study's own dry-run estimate (``estimate_seconds(params)``),
    else the last live run of the same study and config (``run_info.json``), else unknown."""
    if cached:
        return 30.0
    from .studies import load

    estimate = getattr(load(run.study), "estimate_seconds", None)
    if estimate is not None:
        try:
            return float(estimate(run.params))
        except Exception:  # an estimate must never stop a run
            pass
    info = results_dir.resolve() / run.study / run.config / "run_info.json"
    if info.is_file():
        last = json.loads(info.read_text(encoding="utf-8"))
        if last.get("replay") or "live_run" in last:  # a replay's seconds say nothing of a live run
            last = last.get("live_run") or {}
        return float(last.get("wall_s") or 0) or None
    return None


class _Overall:
    """One overall progress line over the studies, printed (not redrawn) so it never fights the
    judge's own progress bar on the terminal: at each study's start and end and every minute."""

    def __init__(self, estimates: list[float | None]):
        import threading

        self.estimates = estimates
        self.total = sum(e or 0 for e in estimates)
        self.known = all(e is not None for e in estimates)
        self.done_s = 0.0
        self.current: tuple[int, str, float] | None = None
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _line(self) -> str:
        from tqdm import tqdm

        n_done = sum(e or 0 for e in self.estimates[: self.current[0]]) if self.current else self.total
        if self.current:
            k, _, started = self.current
            n_done += min(time.monotonic() - started, 0.99 * (self.estimates[k] or 0))
        elapsed = time.monotonic() - self.t0
        if not self.known or self.total <= 0:
            return f"[cfbench] overall: {elapsed / 60:.1f} min elapsed (no estimate for every study)"
        meter = tqdm.format_meter(round(n_done), round(self.total), elapsed, ncols=80, unit="s",
                                  prefix="[cfbench] overall")
        eta = time.strftime("%H:%M", time.localtime(time.time() + max(self.total - n_done, 0)))
        return f"{meter} (estimate; ETA {eta})"

    def _tick(self) -> None:
        while not self._stop.wait(60):
            if self.current:
                print(self._line(), file=sys.stderr, flush=True)

    def study(self, k: int, name: str):
        import contextlib

        @contextlib.contextmanager
        def running():
            est = self.estimates[k]
            print(f"[cfbench] study {k + 1}/{len(self.estimates)}: {name}, expected "
                  f"{'%.0f min' % (est / 60) if est else 'unknown time'}", file=sys.stderr, flush=True)
            self.current = (k, name, time.monotonic())
            print(self._line(), file=sys.stderr, flush=True)
            try:
                yield
            finally:
                self.current = (k + 1, name, time.monotonic()) if k + 1 < len(self.estimates) else None

        return running()

    def close(self) -> None:
        self._stop.set()


def _absolute_paths(params: dict[str, Any]) -> dict[str, Any]:
    """``*_path`` parameters given relative to where the user stands (the notebook runs elsewhere).

    A ``name:...`` source that is not a file (``synthetic:seed=1``; a scheme of two or more
    letters, so a Windows drive letter is still a path) is left as it is.
    """
    return {k: (str(Path(v).resolve()) if k.endswith("_path") and isinstance(v, str) and v
                and not _SOURCE_SCHEME.match(v) else v)
            for k, v in params.items()}


_SOURCE_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9_]+:(?![/\\])")


def _run_study(pm: Any, root: Path, run: _Run, results_dir: Path, replay: bool) -> dict[str, Any]:
    """Execute one study notebook in a staging folder; on success it replaces ``results/<study>/<config>``."""
    base = results_dir.resolve()  # relative to where the user stands, never to the package
    final = base / run.study / run.config
    staging = base / run.study / f".{run.config}.staging"
    failed = base / run.study / f"{run.config}.failed"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    # The notebook runs inside the staging folder and writes to ".": no machine path enters its parameters.
    params = {**run.params, "output_dir": ".", "config_name": run.config}
    print(f"[cfbench] {run.study} / {run.config} -> {results_dir / run.study / run.config}", file=sys.stderr,
          flush=True)
    t0 = time.perf_counter()
    km = _kernel_manager()
    try:
        pm.execute_notebook(
            str(root / "notebooks" / f"{run.study}.ipynb"),
            str(staging / f"{run.study}.ipynb"),
            parameters=params,
            cwd=str(staging),
            progress_bar=True,
            stderr_file=sys.stderr,  # the kernel's own progress bars (judge calls) show live in the terminal
            kernel_name="python3",
            km=km,
        )
    except Exception as exc:  # papermill's execution error, or a kernel that died
        _shutdown(km)
        shutil.rmtree(failed, ignore_errors=True)
        staging.rename(failed)
        raise StudyFailed(run.study, failed / f"{run.study}.ipynb", _one_line(exc)) from exc
    _shutdown(km)
    wall = time.perf_counter() - t0
    _portable_paths(staging / f"{run.study}.ipynb", run)
    leaks = find_secret_leaks(staging) + _cache_leaks()
    if leaks:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"a secret from the environment was written to {', '.join(leaks)}; "
                           "the run's outputs were deleted")
    info = {
        "study": run.study, "config": run.config, "wall_s": round(wall, 1),
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "replay": replay,
    }
    (staging / "run_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    old = base / run.study / f".{run.config}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(failed, ignore_errors=True)
    print(f"[cfbench] {run.study} / {run.config}: done in {wall:.0f} s", file=sys.stderr, flush=True)
    return info


def _kernel_manager() -> Any:
    """A kernel on IPC sockets (local only, no plain-TCP ports; ipykernel warns about those), in a
    short temporary folder: a socket path must stay under ~100 characters."""
    import tempfile

    from jupyter_client import KernelManager

    return KernelManager(kernel_name="python3", transport="ipc",
                         ip=str(Path(tempfile.mkdtemp(prefix="cfbench-")) / "k"))


def _shutdown(km: Any) -> None:
    if km.has_kernel:
        km.shutdown_kernel(now=False)
    shutil.rmtree(Path(km.ip).parent, ignore_errors=True)


def _portable_paths(notebook: Path, run: _Run) -> None:
    """papermill records the absolute input and output paths in the executed notebook; keep the
    project-relative ones instead, so a committed notebook holds no machine's paths."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    meta = nb.get("metadata", {}).get("papermill", {})
    meta["input_path"] = f"notebooks/{run.study}.ipynb"
    meta["output_path"] = f"results/{run.study}/{run.config}/{run.study}.ipynb"
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _cache_leaks() -> list[str]:
    """The response cache, checked like the results (its pending prompts are compressed on disk)."""
    from .judges.cache import ResponseCache, default_cache_path

    path = default_cache_path()
    return ResponseCache(path).find_secret_leaks() if path.is_file() else []


def _one_line(exc: BaseException) -> str:
    """``ExceptionName: message`` from a papermill execution error (the notebook's own exception)."""
    ename = getattr(exc, "ename", None) or type(exc).__name__
    evalue = getattr(exc, "evalue", None)
    if evalue is None:
        evalue = str(exc)
    text = " ".join(str(evalue).split())
    cell = getattr(exc, "exec_count", None)
    where = f" in cell [{cell}]" if cell else ""
    return f"{ename}{where}: {text[:500]}"
