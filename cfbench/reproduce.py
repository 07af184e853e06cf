"""Run the study notebooks with papermill: ``cfbench reproduce``.

Each study ``S`` is ``notebooks/S.ipynb`` (a package under :mod:`cfbench.studies` with a
notebook of the same name); its parameters come from ``configs/S/<config>.yaml`` or
any YAML file (``-f``), plus ``-p name value`` overrides. The executed notebook and
everything it writes land in ``results/S/<config>/`` — and only when the run
succeeds: a run executes in a staging folder beside it and replaces the previous
results at the end, so a failed run never leaves old tables looking current.

A run never overwrites a reference run: with ``-p`` overrides or a ``-f`` file (and no
``--results``) it writes to ``results/S/<name>-<hash>/``, the hash taken over the
parameters that differ. cfbench replaces or deletes only folders it made (they carry
the marker file ``.cfbench-results``); a folder without it is refused unless ``force``.
One run at a time per results folder (a lock file beside it). After papermill, the
executed notebook gets a provenance cell under its title: live or replay, commit,
machine, wall time, the response cache and the exact command.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import datetime
import hashlib
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
from .core.files import load_yaml_text, read_yaml, shorten
from .core.secrets import SecretLeakError, locate_secret_leaks, note_unsearched, scrub
from .core.text import for_terminal, md_code, md_safe, md_text
from .executed import tidy_executed

__all__ = ["CONFIGS", "studies", "reproduce", "load_config", "load_config_file", "project_root",
           "notebook_parameters", "StudyFailed", "MARKER", "results_folder_name"]

#: The file cfbench writes into every results folder it makes; only such folders are replaced or deleted
#: (the same name as :data:`cfbench.report.MARKER`, kept here so the command line does not import pandas).
MARKER = ".cfbench-results"

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


def study_files(study: str, root: Path | None = None) -> tuple[Path, Path]:
    """``(notebook, configs folder)`` of a study.

    cfbench's own studies: ``notebooks/<study>.ipynb`` and ``configs/<study>/``. A study a plugin
    package adds (entry-point group ``cfbench.studies``) ships both beside its module:
    ``<module folder>/<study>.ipynb`` and ``<module folder>/configs/<config>.yaml``.
    """
    root = root or project_root()
    own = root / "notebooks" / f"{study}.ipynb", root / "configs" / study
    if own[0].is_file():
        return own
    from .studies import _plugin_studies

    module = _plugin_studies().get(study)
    if module:
        import importlib.util

        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            here = Path(spec.origin).parent
            return here / f"{study}.ipynb", here / "configs"
    return own


def studies(root: Path | None = None) -> list[str]:
    """The studies that can run: a study package (cfbench's own or a plugin's) whose notebook exists."""
    from .studies import available

    root = root or project_root()
    return [s for s in available() if study_files(s, root)[0].is_file()]


def load_config(study: str, config: str, *, root: Path | None = None) -> dict[str, Any]:
    """Parameters of one study under one shipped config, validated."""
    root = root or project_root()
    path = study_files(study, root)[1] / f"{config}.yaml"
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
    overridden = set(overrides or {})

    def source(name: object) -> str:  # a -p value is reported as coming from -p, not from the file
        return f"-p {name}" if name in overridden else str(path)

    for name in params:
        if not isinstance(name, str):
            raise InputError("parameter names must be strings", source=str(path), field=str(name))
        if _SECRET_NAME.search(name):
            raise InputError("looks like a secret; keys and tokens come from environment variables only, "
                             "never from parameters (papermill writes parameters into the executed notebook)",
                             source=source(name), field=name)
        if name in _RUNNER_PARAMS:
            raise InputError("is set by cfbench reproduce, not by a config", source=source(name), field=name)
    notebook = study_files(study, root)[0]
    if notebook.is_file():
        _check_against_notebook(params, notebook, source=source)
    return params


def _check_against_study(params: dict[str, Any], study: str, *, source: Any) -> None:
    """Values the study's own ``Params.from_config`` rejects, and counts below their floor (``n_items 0``;
    :func:`cfbench.core.params.check_floors`), fail here before any notebook runs, naming the field and
    where its value came from."""
    try:
        from .studies import load

        module = load(study)
    except Exception:  # a study that cannot be imported fails in its notebook, with its own message
        return
    from_config = getattr(getattr(module, "Params", None), "from_config", None)
    if from_config is None:
        return
    known = {k: v for k, v in params.items() if k not in _RUNNER_PARAMS}
    try:
        from_config(known)
    except InputError as exc:
        if exc.field is None:
            raise
        raise InputError(exc.problem, source=source(exc.field), record=exc.record, field=exc.field) from None
    if dataclasses.is_dataclass(module.Params):
        from .core.params import check_floors

        check_floors(module.Params, known, source=source)


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


def _check_against_notebook(params: dict[str, Any], notebook: Path, *, source: Any) -> None:
    """Every config parameter must be declared in the notebook's ``parameters`` cell, with the
    declared type (an int is accepted where a float is declared)."""
    if isinstance(source, str):
        source = (lambda text: lambda name: text)(source)
    declared = notebook_parameters(notebook)
    for name, value in params.items():
        if name not in declared:
            raise InputError(f"{notebook.name} declares no parameter {name!r} (declared: "
                             f"{', '.join(sorted(declared))})", source=source(name), field=name)
        expected = declared[name]
        if expected is None or value is None:
            continue
        ok = isinstance(value, expected) and not (expected is not bool and isinstance(value, bool))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise InputError(f"expected {expected.__name__} (as declared in {notebook.name}), got "
                             f"{type(value).__name__} {shorten(value)}", source=source(name), field=name)


def parse_override(name: str, raw: str) -> tuple[str, Any]:
    """A ``-p name value`` pair: the value is read as YAML (``8`` is an int, ``[a, b]`` a list, ``x`` a string)."""
    import yaml

    try:
        value = load_yaml_text(raw)
    except InputError as exc:  # an alias or a repeated key
        raise InputError(exc.problem, source=f"-p {name}", field=name) from None
    except yaml.YAMLError:
        value = raw
    return name, value


@dataclass(frozen=True)
class _Run:
    study: str
    config: str  # the results folder's name (the config, the file's stem, or either with a hash)
    params: dict[str, Any]
    label: str = ""  # the config or file as given (for the provenance cell)
    overrides: tuple = ()  # (name, value) pairs from -p


def results_folder_name(base: str, overrides: Mapping[str, Any] | None = None,
                        file_params: Mapping[str, Any] | None = None) -> str:
    """``base`` (a shipped config, or a file's stem) plus ``-<8 hex>`` when the run is not a shipped
    config as it is: the hash covers the file's parameters (``-f``) and the overrides (``-p``), so
    the same variation always lands in the same folder and never in a reference run's."""
    if not overrides and file_params is None:
        return base
    blob = json.dumps({"file": file_params, "overrides": dict(overrides or {})}, sort_keys=True, default=str)
    return f"{base}-{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:8]}"


def _check_name(name: str, *, source: str) -> None:
    """A results folder name must be one plain path component (``..yaml`` has the stem ``.``)."""
    if (not name or name in (".", "..") or name.startswith(".") or "/" in name or "\\" in name
            or name.endswith((".failed", ".staging", ".lock"))):
        raise InputError(f"cannot name a results folder {name!r}; rename the file (a plain name such as "
                         "my-config.yaml)", source=source)


def _check_results_dir(results_dir: Path) -> None:
    text = str(results_dir)
    resolved = results_dir.resolve()
    if resolved == Path(resolved.anchor):
        raise InputError("is the filesystem root; give a folder for the results", source=f"--results {text}")
    if results_dir.exists() and not results_dir.is_dir():
        raise InputError("is a file, not a folder", source=f"--results {text}")
    for parent in resolved.parents:  # mkdir under a file would raise NotADirectoryError later
        if parent.exists() and not parent.is_dir():
            raise InputError(f"{parent} is a file, not a folder", source=f"--results {text}")


def _check_config_file(config_file: Path) -> None:
    if config_file.is_dir():
        raise InputError("is a folder; -f takes a YAML file", source=f"-f {config_file}")
    if not config_file.exists():
        raise InputError("no such file", source=f"-f {config_file}")


def reproduce(config: str = "default", studies_: Iterable[str] | None = None, *,
              config_file: str | os.PathLike[str] | None = None,
              overrides: Mapping[str, Any] | None = None,
              results_dir: str | os.PathLike[str] | None = None, replay: bool = False,
              plan_only: bool = False, root: Path | None = None, force: bool = False,
              command: str | None = None) -> dict[str, dict[str, Any]]:
    """Execute the study notebooks; returns run info per study.

    ``config`` names a shipped config; ``config_file`` any YAML file (its stem names the
    results folder); ``overrides`` replace single parameters. Without ``results_dir`` the
    results go to ``results/`` and a run with ``overrides`` or a ``config_file`` to its own
    folder ``<name>-<hash>`` (:func:`results_folder_name`); with ``results_dir`` to
    ``<results_dir>/<study>/<name>``. ``replay`` answers every judge call from the cache (a miss
    fails); ``plan_only`` calls no model and records the uncached requests for a Batch-API
    export. ``force`` replaces a results folder cfbench did not make. Raises
    :class:`StudyFailed` for the first study whose notebook raises (studies before it keep
    their new results).
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
    separate = results_dir is None  # the default place: variations never land in a reference folder
    results = Path("results" if results_dir is None else results_dir)
    _check_results_dir(results)
    if config_file is not None:
        _check_config_file(Path(config_file))
        _check_name(Path(config_file).stem, source=f"-f {config_file}")
    runs = []
    for s in chosen:  # validate every config before running anything
        if config_file is not None:
            name = Path(config_file).stem
            params = load_config_file(config_file, s, root=root, overrides=overrides)
            file_params = read_yaml(Path(config_file))
            label = f"-f {_shown_path(config_file)}"
        else:
            name = config
            params = load_config(s, config, root=root)
            if overrides:
                params = load_config_file(study_files(s, root)[1] / f"{config}.yaml", s, root=root,
                                          overrides=overrides)
            file_params = None
            label = f"--config {config}"
        overridden = set(overrides or {})
        _check_against_study(params, s, source=lambda n: f"-p {n}" if n in overridden else
                             str(config_file if config_file is not None else study_files(s, root)[1] / f"{config}.yaml"))
        if separate:
            name = results_folder_name(name, overrides, file_params)
        base_params = file_params if config_file is not None else load_config(s, config, root=root)
        runs.append(_Run(s, name, _absolute_paths(params), label, _differing(overrides, base_params or {})))
    base = results.resolve()
    with contextlib.ExitStack() as locks:
        for run in runs:  # every folder is checked and locked before the first notebook starts
            _check_ours(base / run.study / run.config, force=force)
            locks.enter_context(_FolderLock(base / run.study / run.config))
        saved_mode = os.environ.get("CFBENCH_MODE")
        if replay or plan_only:  # read by run_requests in the notebook kernels
            os.environ["CFBENCH_MODE"] = "replay" if replay else "plan"
        mode = "replay" if replay else ("plan" if plan_only else "live")
        info: dict[str, dict[str, Any]] = {}
        progress = _Overall([_estimate_seconds(root, results, r, replay or plan_only) for r in runs])
        try:
            for k, run in enumerate(runs):
                with progress.study(k, run.study):
                    info[run.study] = _run_study(pm, root, run, results, mode, force=force, command=command)
        finally:
            progress.close()
            if saved_mode is None:
                os.environ.pop("CFBENCH_MODE", None)
            else:
                os.environ["CFBENCH_MODE"] = saved_mode
    return info


def _is_ours(folder: Path, config: str | None = None) -> bool:
    """A folder cfbench made for this study and config: it holds the marker and, when it has a
    ``run_info.json``, that file names the study it sits under and ``config`` (default: the folder's
    own name); a folder written before the marker existed counts when its ``run_info.json`` does.
    A marker alone in another study's results (reached through a link, or copied) is not ours."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    info = folder / "run_info.json"
    try:
        data = json.loads(info.read_text(encoding="utf-8")) if info.is_file() else None
    except (OSError, ValueError):
        return False
    named = (isinstance(data, dict) and data.get("study") == folder.parent.name
             and data.get("config") == (config or folder.name))
    if (folder / MARKER).is_file():
        return data is None or named
    return named


def _check_ours(final: Path, *, force: bool) -> None:
    """Refuse, in one line, a results folder cfbench would replace but did not make."""
    for path in (final, final.parent):
        if path.is_symlink():
            what = "results folder" if path == final else "study folder"
            raise InputError(f"is a symbolic link; cfbench replaces a {what}'s contents by renaming and never "
                             "follows a link out of the results folder given (point --results at the real "
                             "folder, or remove the link)", source=str(path))
        if path.exists() and not path.is_dir():
            raise InputError("is a file, not a results folder; move it or choose another --results",
                             source=str(path))
    if final.exists() and not force and not _is_ours(final):
        raise InputError(f"exists and was not made by cfbench (no {MARKER} in it); nothing was changed - "
                         "choose another --results, or pass --force to replace it", source=str(final))


class _FolderLock:
    """One run at a time per results folder: ``.<name>.lock`` beside it, held with ``flock``.
    A second run refuses at once in one line; it never touches the first run's staging."""

    def __init__(self, final: Path):
        self.final = final
        self.path = final.parent / f".{final.name}.lock"
        self.fd: int | None = None

    def __enter__(self) -> "_FolderLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    holder = os.read(fd, 200).decode("utf-8", "replace").strip()
                finally:
                    os.close(fd)
                raise InputError(f"another cfbench run is writing these results ({holder or 'pid unknown'}); "
                                 "wait for it to finish, or choose another --results", source=str(self.final)) from None
            try:  # the file may have been removed by the previous holder between open and flock
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, started {_utc_now()}".encode())
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(self.fd)
            self.fd = None


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


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


def _relative_to(folder: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The absolute ``*_path`` parameters rewritten relative to the folder the notebook runs in.

    The staging folder and the final results folder are siblings, so the path stays right after the
    swap, and no path of this machine enters the executed notebook or its ``summary.json``. A path on
    another drive (no relative form) stays absolute.
    """
    def rel(v: str) -> str:
        try:
            return os.path.relpath(v, folder)
        except ValueError:
            return v
    return {k: (rel(v) if k.endswith("_path") and isinstance(v, str) and os.path.isabs(v) else v)
            for k, v in params.items()}


def _differing(overrides: Mapping[str, Any] | None, base: Mapping[str, Any]) -> tuple:
    """The ``-p`` overrides whose value differs from the config's own (the rest change nothing)."""
    missing = object()
    return tuple((k, v) for k, v in (overrides or {}).items() if base.get(k, missing) != v)


def _new_folder(parent: Path, prefix: str) -> Path:
    """A fresh folder of this run (unique name, marker inside): nothing another run owns is reused."""
    import tempfile

    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        folder.chmod(0o755)
        (folder / MARKER).write_text("written by cfbench reproduce; cfbench replaces or deletes only folders "
                                     "holding this file\n", encoding="utf-8")
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)  # a full disk: no folder without its marker left behind
        raise
    return folder


def _remove_ours(folder: Path, config: str | None = None) -> None:
    """Delete a folder only if cfbench made it (for ``config``; never follows a link)."""
    if _is_ours(folder, config):
        shutil.rmtree(folder, ignore_errors=True)


# -- the results swap ---------------------------------------------------------------------------
# A finished staging folder replaces the results in five steps: write the journal
# ``.<config>.swap`` (the staging and old folders' names), rename the results to ``.<config>.old-X``,
# rename the staging folder to the results, delete the old folder, delete the journal. The journal
# is written only once the staging folder is complete, so after a kill at any step
# :func:`_recover_swap` (the next run's first step, under the folder lock) can finish the swap or
# undo it: the results folder ends up holding the old or the new results, complete, and nothing
# of the swap is left beside it.

def _swap_journal(final: Path) -> Path:
    return final.parent / f".{final.name}.swap"


def _crash_point(step: str) -> None:
    """Between two steps of the swap (a no-op; tests make it raise to stand for a kill -9 there)."""


def _swap_in(staging: Path, final: Path) -> None:
    """Replace ``final`` by the complete folder ``staging`` (see the comment above)."""
    import secrets

    journal = _swap_journal(final)
    old = final.parent / f".{final.name}.old-{secrets.token_hex(4)}"  # a fresh name: never another's
    tmp = journal.with_name(journal.name + ".tmp")
    try:
        tmp.write_text(json.dumps({"staging": staging.name, "old": old.name}) + "\n", encoding="utf-8")
        os.replace(tmp, journal)
    except OSError:
        tmp.unlink(missing_ok=True)  # nothing has moved yet
        raise
    _crash_point("journal written")
    if final.exists():
        final.rename(old)
    _crash_point("old results moved aside")
    staging.rename(final)
    _crash_point("new results in place")
    shutil.rmtree(old, ignore_errors=True)
    _crash_point("old results deleted")
    journal.unlink()


def _journal_names(final: Path) -> dict[str, Path]:
    """The staging and old folders a swap journal names (only names this swap could have made)."""
    journal = _swap_journal(final)
    try:
        data = json.loads(journal.read_text(encoding="utf-8")) if journal.is_file() else {}
    except (OSError, ValueError):
        data = {}
    pattern = re.compile(rf"\.{re.escape(final.name)}\.(staging|old)-[A-Za-z0-9_]+")
    out = {}
    for key in ("staging", "old"):
        name = data.get(key) if isinstance(data, dict) else None
        if isinstance(name, str) and pattern.fullmatch(name):
            out[key] = final.parent / name
    return out


def _recover_swap(final: Path) -> None:
    """Finish or undo a swap a killed run left half done; says what it did in one line."""
    journal = _swap_journal(final)
    named = _journal_names(final)
    olds = [p for p in final.parent.glob(f".{final.name}.old-*") if p.is_dir() and not p.is_symlink()]
    if not olds and not journal.exists() and not journal.with_name(journal.name + ".tmp").exists():
        return
    done, changed = "removed the leftovers of an interrupted results swap", False
    if not final.exists() and not final.is_symlink():
        new = named.get("staging")
        if new is not None and new.is_dir() and not new.is_symlink() and (new / "run_info.json").is_file():
            new.rename(final)  # the journal is written only after the staging folder is complete
            done, changed = "finished an interrupted results swap (the new results are in place)", True
        else:
            mine = [p for p in olds if p == named.get("old") or _is_ours(p, final.name)]
            if mine:
                max(mine, key=lambda p: p.stat().st_mtime).rename(final)
                done, changed = "undid an interrupted results swap (the previous results are back in place)", True
    leftovers = [p for p in olds if p.exists() and (p == named.get("old") or _is_ours(p, final.name))]
    new = named.get("staging")
    if new is not None and new.is_dir() and not new.is_symlink() and _is_ours(new, final.name):
        leftovers.append(new)  # the swap never started: the results in place stay
    for p in leftovers:
        shutil.rmtree(p, ignore_errors=True)
    for leftover in (journal, journal.with_name(journal.name + ".tmp")):
        if leftover.exists() or leftover.is_symlink():
            leftover.unlink()
            changed = True
    if changed or leftovers:
        print(f"[cfbench] {final}: {done}", file=sys.stderr, flush=True)


# -- a full disk -------------------------------------------------------------------------------

class DiskFull(StudyFailed):
    """The disk filled up while a run wrote its results; the run's own folders were removed."""

    def __init__(self, study: str, where: Path, removed: list[str]):
        self.study, self.where, self.cause = study, where, "no space left on device"
        RuntimeError.__init__(self, f"study {study} failed: no space left on device under {where}; cfbench removed "
                              f"its own folders of this run ({', '.join(removed) or 'none'}) to free the space; "
                              "previous results left untouched")


def _is_disk_full(exc: BaseException | None) -> bool:
    """An OSError ENOSPC/EDQUOT anywhere in the chain, or a notebook cell that raised one."""
    import errno

    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = f"{getattr(exc, 'ename', '')} {getattr(exc, 'evalue', '')}"
        if "No space left on device" in text or "Disk quota exceeded" in text:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _free_space_if_full(exc: BaseException, run: _Run, *folders: Path) -> None:
    """When ``exc`` is a full disk: delete ``folders`` (this run's staging folder, the config's failed
    folder: cfbench's own; a notebook written on a full disk is truncated anyway) and raise
    :class:`DiskFull`, one line."""
    if not _is_disk_full(exc):
        return
    removed = []
    for folder in folders:
        if _is_ours(folder, run.config):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    raise DiskFull(run.study, folders[-1].parent, removed) from None


def _staging_folder(final: Path, failed: Path, run: _Run) -> Path:
    """This run's staging folder; on a full disk the config's old failed folder (cfbench's own) is
    removed and the folder made again, and a disk still full is one line (:class:`DiskFull`)."""
    try:
        return _new_folder(final.parent, f".{run.config}.staging-")
    except OSError as exc:
        if not _is_disk_full(exc) or not _is_ours(failed, run.config):
            _free_space_if_full(exc, run, failed)
            raise
        shutil.rmtree(failed, ignore_errors=True)
        print(f"[cfbench] {run.study} / {run.config}: the disk is full; removed {failed.name} (a failed run's "
              "folder) to make room", file=sys.stderr, flush=True)
    try:
        return _new_folder(final.parent, f".{run.config}.staging-")
    except OSError as exc:
        _free_space_if_full(exc, run, failed)
        raise


def _run_study(pm: Any, root: Path, run: _Run, results_dir: Path, mode: str, *, force: bool = False,
               command: str | None = None) -> dict[str, Any]:
    """Execute one study notebook in a staging folder; on success it replaces ``results/<study>/<config>``."""
    base = results_dir.resolve()  # relative to where the user stands, never to the package
    final = base / run.study / run.config
    failed = base / run.study / f"{run.config}.failed"
    cache = _cache_state()  # a corrupt cache fails here, in one line, before any folder is made
    _recover_swap(final)  # a swap a killed run left half done: finished or undone before anything else
    for stale in final.parent.glob(f".{run.config}.staging-*"):  # left by a killed run: this run holds the lock
        _remove_ours(stale, run.config)
    staging = _staging_folder(final, failed, run)
    # The notebook runs inside the staging folder and writes to ".": no machine path enters its parameters.
    params = {**_relative_to(staging, run.params), "output_dir": ".", "config_name": run.config}
    print(for_terminal(f"[cfbench] {run.study} / {run.config} -> {results_dir / run.study / run.config}"),
          file=sys.stderr, flush=True)
    started = _utc_now()
    t0 = time.perf_counter()
    km = _kernel_manager()
    try:
        pm.execute_notebook(
            str(study_files(run.study, root)[0]),
            str(staging / f"{run.study}.ipynb"),
            parameters=params,
            cwd=str(staging),
            progress_bar=True,
            stderr_file=sys.stderr,  # the kernel's own progress bars (judge calls) show live in the terminal
            kernel_name="python3",  # the interpreter running cfbench, whether or not "cfbench" is registered
            km=km,
        )
    except Exception as exc:  # papermill's execution error, or a kernel that died
        _shutdown(km)
        _free_space_if_full(exc, run, staging, failed)  # a full disk: this run's folders go, one line
        with contextlib.suppress(OSError, ValueError):  # the failed notebook is read too: tidy it alike
            tidy_executed(staging / f"{run.study}.ipynb", study=run.study, config=run.config)
        leaked = _leak_check(staging, run)  # a failed run's folder is kept: it is checked like results
        if leaked:
            raise SecretLeakError(f"{run.study} failed ({_one_line(exc)[:200]}); {leaked}") from exc
        where = staging
        if not failed.exists() or _is_ours(failed, run.config):
            _remove_ours(failed, run.config)
            if not failed.exists():
                staging.rename(failed)
                where = failed
        raise StudyFailed(run.study, where / f"{run.study}.ipynb", _one_line(exc)) from exc
    _shutdown(km)
    wall = time.perf_counter() - t0
    tidy_executed(staging / f"{run.study}.ipynb", study=run.study, config=run.config)
    info = {
        "study": run.study, "config": run.config, "wall_s": round(wall, 1),
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "replay": mode == "replay",
        "mode": mode, "config_source": run.label, "overrides": dict(run.overrides),
        "commit": _git_commit(root), "cpu_model": _cpu_model(), "started": started, "finished": _utc_now(),
        "cache": cache, "command": _portable_command(command) if command else _command(run),
        "plugins": _plugin_packages(),
        "note": _run_note(),
    }
    if mode == "live":  # which server answered (a replay or a plan asks none)
        from .judges.server_info import server_provenance, server_specs

        info["servers"] = server_provenance(server_specs(params))
    try:
        _write_provenance(staging / f"{run.study}.ipynb", info)
        (staging / "run_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        _write_view_page(staging, run)
    except OSError as exc:
        _free_space_if_full(exc, run, staging, failed)
        raise
    leaked = _leak_check(staging, run)  # after the last file is written, before anything is swapped
    if leaked:
        raise SecretLeakError(f"{run.study}: {leaked}")
    try:
        _check_ours(final, force=force)  # still ours (or forced) at the swap
        _swap_in(staging, final)
    except OSError as exc:
        _free_space_if_full(exc, run, staging, failed)
        raise
    _remove_ours(failed, run.config)
    print(for_terminal(f"[cfbench] {run.study} / {run.config}: done in {wall:.0f} s"), file=sys.stderr, flush=True)
    return info


def _plugin_packages() -> list[dict[str, Any]]:
    """The plugin packages installed or imported, with versions (:func:`cfbench.plugins.packages`)."""
    from . import plugins

    try:
        return plugins.packages()
    except Exception as exc:  # noqa: BLE001 - the run record names the problem instead
        return [{"error": " ".join(f"{type(exc).__name__}: {exc}".split())[:200]}]


def _shown_path(path: str | os.PathLike[str]) -> str:
    """A path as the provenance shows it: relative to the working folder when under it, else its name
    (no machine's folders in an executed notebook)."""
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return p.name


def _portable_command(command: str) -> str:
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return " ".join(shlex.quote(_shown_path(w) if os.path.isabs(w) else w) for w in words)


def _command(run: _Run) -> str:
    parts = ["cfbench reproduce", run.label, f"--study {run.study}"]
    parts += [f"-p {k} {json.dumps(v) if not isinstance(v, str) else v}" for k, v in run.overrides]
    return " ".join(parts)


def _cache_state() -> dict[str, Any]:
    """Which response cache the run uses and how many replies it held before (0: it started empty)."""
    from .judges.cache import ResponseCache, default_cache_path

    path = default_cache_path()
    shown = "$CFBENCH_CACHE_DIR/" + path.name if os.environ.get("CFBENCH_CACHE_DIR") else \
        str(path).replace(str(Path.home()), "~", 1)
    rows = 0
    if path.is_file():
        cache = ResponseCache(path, read_only=True)
        try:
            rows = len(cache)
        finally:
            cache.close()
    return {"file": shown, "replies_before": rows, "started_empty": rows == 0}


def _git_commit(root: Path) -> dict[str, Any] | None:
    """The checkout's commit and whether tracked files had uncommitted changes (None outside git).

    ``results/`` is left out of that check: it holds what runs write (a run of several studies replaces
    the committed results of the first before the second starts), not the code that produced them.
    """
    import subprocess

    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=20, check=True).stdout.strip()
        if not top or Path(top).resolve() != root.resolve():  # an installed copy inside some other repository
            return None
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=20, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)results"],
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"sha": sha, "dirty": bool(dirty)} if sha else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _server_line(srv: Mapping[str, Any]) -> str:
    """One provenance line for a judge server (see :mod:`cfbench.judges.server_info`)."""
    def code(value: Any) -> str:  # server-supplied text inside a code span: no backtick, no line break
        return "`" + " ".join(str(value).replace("`", "'").split()) + "`"

    if srv.get("error"):
        return f"{code(srv.get('judge'))} could not be asked: {code(srv['error'])}"
    served = ", ".join(code(m) for m in srv.get("served_models") or ()) or "none listed"
    extra = "".join(f"; {k} {code(srv[k])}" for k in ("server", "version") if srv.get(k))
    return (f"{code(srv.get('base_url'))} (model {code(srv.get('model'))}; serves {served}{extra}; "
            f"client {code(srv.get('client'))})")


def _run_note() -> str:
    """``$CFBENCH_RUN_NOTE`` (how the run was set up, in the runner's words: "fresh clone, empty cache"),
    one line, scrubbed of credentials, at most 300 characters; "" when unset."""
    note = " ".join(os.environ.get("CFBENCH_RUN_NOTE", "").split())
    return scrub(note)[:300]


def provenance_markdown(info: Mapping[str, Any]) -> str:
    """The provenance cell of an executed notebook, from its ``run_info.json`` fields."""
    mode = info.get("mode", "replay" if info.get("replay") else "live")
    what = {"live": "**live run**: every judge call was made by this run, except replies already in the cache "
                    "below",
            "replay": "**replay**: every judge reply was read from the response cache below; no model was called "
                      "by this run, so its wall time says nothing of a live run",
            "plan": "**plan only**: no model was called; uncached requests were recorded for a Batch-API export"}
    commit = info.get("commit")
    commit_txt = (f"`{commit['sha'][:12]}`" + (" with uncommitted changes to tracked files" if commit["dirty"]
                                                 else " (clean)")) if commit else "unknown (not a git checkout)"
    cache = info.get("cache") or {}
    cache_txt = (f"{md_code(cache.get('file'))}, " + ("empty at the start" if cache.get("started_empty") else
                                               f"{cache.get('replies_before', 0):,} replies in it at the start"))
    overrides = info.get("overrides") or {}
    over_txt = ", ".join(md_code(f"{k} = {v!r}") for k, v in overrides.items()) or "none"
    wall = float(info.get("wall_s") or 0)
    folder = f"{info.get('study')}/{info.get('config')}"
    lines = [
        "### How this notebook was produced",
        "",
        f"- {what.get(mode, mode)}",
        f"- command: {md_code(info.get('command', ''))}; results folder {md_code(folder)}",
        f"- config: {md_text(info.get('config_source', ''))}; overrides: {over_txt}",
        f"- commit: {commit_txt}",
        f"- machine: {md_text(info.get('cpu_model') or '?')}, {info.get('cpus')} cores, {info.get('machine')}, "
        f"Python {info.get('python')}",
        f"- wall time: {wall:,.0f} s ({wall / 60:.1f} min), {info.get('started')} to {info.get('finished')}",
        f"- response cache: {cache_txt}",
        *[f"- judge server: {_server_line(srv)}" for srv in info.get("servers") or ()],
        *([f"- note: {md_text(info['note'])}"] if info.get("note") else []),
        "",
        "_Written by `cfbench reproduce` after the notebook ran; `run_info.json` beside it holds the same._",
    ]
    return md_safe("\n".join(lines))  # names from outside (config files, overrides) hold no live markup


def _write_provenance(notebook: Path, info: Mapping[str, Any]) -> None:
    """Insert the provenance cell right after the title cell of the executed notebook."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    cells[:] = [c for c in cells if "provenance" not in c.get("metadata", {}).get("tags", [])]
    at = 1 if cells and cells[0].get("cell_type") == "markdown" else 0
    cell = {"cell_type": "markdown", "id": "cfbench-provenance", "metadata": {"tags": ["provenance"]},
            "source": provenance_markdown(info).splitlines(keepends=True)}
    cells.insert(at, cell)
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


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


def _write_view_page(folder: Path, run: _Run) -> None:
    """The run explorer page (``view.html``) of a finished run, provenance from its ``run_info.json``.
    A streamed run's page is built from its ``view_preview/`` folder (the first transcripts).
    A page that cannot be built costs one warning line, never the run."""
    try:
        import shutil

        from .studies import explorer_pairs
        from .view import write_view

        src, title = folder, f"{run.study} / {run.config}"  # the final name (``folder`` may be the staging one)
        preview = folder / "view_preview"
        if (preview / "rows.parquet").is_file():  # a streamed run: the page of its first transcripts (the
            src = preview  # whole design's rows.parquet would be read into memory: GBs at paper scale)
            title += " (the first transcripts of a streamed run)"
            if (folder / "run_info.json").is_file():
                shutil.copyfile(folder / "run_info.json", preview / "run_info.json")
        write_view(src, folder / "view.html", title=title, pairs=explorer_pairs(src))
    except Exception as exc:  # noqa: BLE001 - the results stand without their page
        message = for_terminal(scrub(" ".join(f"{type(exc).__name__}: {exc}".split())))[:300]
        print(f"[cfbench] warning: {run.study} / {for_terminal(run.config)}: view.html not written ({message}); "
              f"the results are complete, run `cfbench view` on the folder to retry", file=sys.stderr, flush=True)


def _leak_check(folder: Path, run: _Run) -> str | None:
    """Check every file a run leaves behind (its staging folder, whether it succeeded or failed) and the
    response cache for a credential from the environment. On a hit the folder is moved aside whole to
    ``<config>.quarantined-<UTC time>`` (readable by its owner only; nothing is deleted), the cache rows
    holding it are removed, and the one-line reason is returned: which files, where in each, never the
    credential. None when nothing leaked."""
    note_unsearched()  # a placeholder key is said once and not hunted (it would match ordinary words)
    files = [f"{Path(p).relative_to(folder)} ({where})" for p, where in locate_secret_leaks(folder)]
    leaks = files + [f"the response cache ({hit})" for hit in _cache_leaks()]
    if not leaks:
        return None
    removed = _remove_cache_leaks()
    shown = ", ".join(leaks[:5]) + (f" and {len(leaks) - 5} more" if len(leaks) > 5 else "")
    import secrets

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = folder.parent / f"{run.config}.quarantined-{stamp}"
    if aside.exists():
        aside = folder.parent / f"{run.config}.quarantined-{stamp}-{secrets.token_hex(3)}"
    folder.rename(aside)
    for sub in [aside, *aside.rglob("*")]:
        if sub.is_dir() and not sub.is_symlink():
            sub.chmod(0o700)
    try:
        shown_aside = str(aside.relative_to(Path.cwd().resolve()))
    except ValueError:
        shown_aside = str(aside)
    kept = (f"the run's outputs were moved aside to {shown_aside} (readable by you only; look at the "
            "files named, then delete the folder)")
    return (f"a credential from the environment was written to {shown}; {kept}, and {len(removed)} cache "
            "row(s) holding it removed (previous results left untouched)")


def _remove_cache_leaks() -> list[str]:
    """Delete the response-cache rows that hold a credential; their names."""
    from .judges.cache import ResponseCache, default_cache_path, remove_leaking_rows

    path = default_cache_path()
    return remove_leaking_rows(ResponseCache(path)) if path.is_file() else []


def _cache_leaks() -> list[str]:
    """The response cache, checked like the results (its pending prompts are compressed on disk)."""
    from .judges.cache import ResponseCache, default_cache_path

    path = default_cache_path()
    return ResponseCache(path, read_only=True).find_secret_leaks() if path.is_file() else []


def _one_line(exc: BaseException) -> str:
    """``ExceptionName: message`` from a papermill execution error (the notebook's own exception)."""
    ename = getattr(exc, "ename", None) or type(exc).__name__
    evalue = getattr(exc, "evalue", None)
    if evalue is None:
        evalue = str(exc)
    text = " ".join(str(evalue).split())
    cell = getattr(exc, "exec_count", None)
    where = f" in cell [{cell}]" if cell else ""
    return f"{ename}{where}: {scrub(text)[:500]}"  # a notebook's error may quote a key (a URL holding one)
