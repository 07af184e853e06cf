"""``reproduce()``: every chosen study's notebook run into its results folder, one after another.

All configs are checked and all folders locked before the first notebook starts. Each study's
notebook executes in a staging folder beside its results (:func:`run_study`); only a run that
finishes, records its provenance and passes the leak check replaces the previous results (the
journalled swap of :mod:`.swap`), so a failed run never leaves old tables looking current.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from ...core.errors import InputError
from ...core.files import read_yaml
from ...core.secrets import SecretLeakError
from ...core.text import for_terminal
from . import notebook
from .config import (CONFIGS, Run, absolute_paths, check_against_study, differing, load_config, load_config_file,
                     project_root, relative_to, studies, study_files)
from .executed import tidy_executed
from .failures import StudyFailed, free_space_if_full, one_line, staging_folder
from .folders import (FolderLock, check_config_file, check_name, check_ours, check_results_dir, is_ours,
                      remove_ours, results_folder_name, utc_now)
from .leaks import leak_check
from .progress import Overall, estimate_seconds
from .provenance import cache_state, run_info, shown_path, write_provenance
from .swap import recover_swap, swap_in

__all__ = ["reproduce", "run_study"]


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
    check_results_dir(results)
    if config_file is not None:
        check_config_file(Path(config_file))
        check_name(Path(config_file).stem, source=f"-f {config_file}")
    runs = [_configured_run(s, config, config_file, overrides, root=root, separate=separate)
            for s in chosen]  # every config validated before anything runs
    base = results.resolve()
    with contextlib.ExitStack() as locks:
        for run in runs:  # every folder is checked and locked before the first notebook starts
            check_ours(base / run.study / run.config, force=force)
            locks.enter_context(FolderLock(base / run.study / run.config))
        saved_mode = os.environ.get("CFBENCH_MODE")
        if replay or plan_only:  # read by run_requests in the notebook kernels
            os.environ["CFBENCH_MODE"] = "replay" if replay else "plan"
        mode = "replay" if replay else ("plan" if plan_only else "live")
        info: dict[str, dict[str, Any]] = {}
        progress = Overall([estimate_seconds(root, results, r, replay or plan_only) for r in runs])
        try:
            for k, run in enumerate(runs):
                with progress.study(k, run.study):
                    info[run.study] = run_study(pm, root, run, results, mode, force=force, command=command)
        finally:
            progress.close()
            if saved_mode is None:
                os.environ.pop("CFBENCH_MODE", None)
            else:
                os.environ["CFBENCH_MODE"] = saved_mode
    return info


def _configured_run(study: str, config: str, config_file: str | os.PathLike[str] | None,
                    overrides: Mapping[str, Any] | None, *, root: Path, separate: bool) -> Run:
    """Study ``study``'s run: its parameters read and checked, its results folder named."""
    if config_file is not None:
        name = Path(config_file).stem
        params = load_config_file(config_file, study, root=root, overrides=overrides)
        file_params = read_yaml(Path(config_file))
        label = f"-f {shown_path(config_file)}"
    else:
        name = config
        params = load_config(study, config, root=root)
        if overrides:
            params = load_config_file(study_files(study, root)[1] / f"{config}.yaml", study, root=root,
                                      overrides=overrides)
        file_params = None
        label = f"--config {config}"
    overridden = set(overrides or {})
    where = config_file if config_file is not None else study_files(study, root)[1] / f"{config}.yaml"
    check_against_study(params, study, source=lambda n: f"-p {n}" if n in overridden else str(where))
    if separate:
        name = results_folder_name(name, overrides, file_params)
    base_params = file_params if config_file is not None else load_config(study, config, root=root)
    return Run(study, name, absolute_paths(params), label, differing(overrides, base_params or {}))


def run_study(pm: Any, root: Path, run: Run, results_dir: Path, mode: str, *, force: bool = False,
              command: str | None = None) -> dict[str, Any]:
    """Execute one study notebook in a staging folder; on success it replaces ``results/<study>/<config>``."""
    base = results_dir.resolve()  # relative to where the user stands, never to the package
    final = base / run.study / run.config
    failed = base / run.study / f"{run.config}.failed"
    cache = cache_state()  # a corrupt cache fails here, in one line, before any folder is made
    recover_swap(final)  # a swap a killed run left half done: finished or undone before anything else
    for stale in final.parent.glob(f".{run.config}.staging-*"):  # left by a killed run: this run holds the lock
        remove_ours(stale, run.config)
    staging = staging_folder(final, failed, run)
    # The notebook runs inside the staging folder and writes to ".": no machine path enters its parameters.
    params = {**relative_to(staging, run.params), "output_dir": ".", "config_name": run.config}
    print(for_terminal(f"[cfbench] {run.study} / {run.config} -> {results_dir / run.study / run.config}"),
          file=sys.stderr, flush=True)
    started = utc_now()
    t0 = time.perf_counter()
    km = notebook.kernel_manager()
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
        notebook.shutdown(km)
        free_space_if_full(exc, run, staging, failed)  # a full disk: this run's folders go, one line
        with contextlib.suppress(OSError, ValueError):  # the failed notebook is read too: tidy it alike
            tidy_executed(staging / f"{run.study}.ipynb", study=run.study, config=run.config, root=root)
        leaked = leak_check(staging, run)  # a failed run's folder is kept: it is checked like results
        if leaked:
            raise SecretLeakError(f"{run.study} failed ({one_line(exc)[:200]}); {leaked}") from exc
        where = staging
        if not failed.exists() or is_ours(failed, run.config):
            remove_ours(failed, run.config)
            if not failed.exists():
                staging.rename(failed)
                where = failed
        raise StudyFailed(run.study, where / f"{run.study}.ipynb", one_line(exc)) from exc
    notebook.shutdown(km)
    wall = time.perf_counter() - t0
    tidy_executed(staging / f"{run.study}.ipynb", study=run.study, config=run.config, root=root)
    info = run_info(run, root=root, mode=mode, params=params, wall=wall, started=started, cache=cache,
                    command=command)
    try:
        write_provenance(staging / f"{run.study}.ipynb", info)
        (staging / "run_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        notebook.write_view_page(staging, run)
    except OSError as exc:
        free_space_if_full(exc, run, staging, failed)
        raise
    leaked = leak_check(staging, run)  # after the last file is written, before anything is swapped
    if leaked:
        raise SecretLeakError(f"{run.study}: {leaked}")
    try:
        check_ours(final, force=force)  # still ours (or forced) at the swap
        swap_in(staging, final)
    except OSError as exc:
        free_space_if_full(exc, run, staging, failed)
        raise
    remove_ours(failed, run.config)
    print(for_terminal(f"[cfbench] {run.study} / {run.config}: done in {wall:.0f} s"), file=sys.stderr, flush=True)
    return info
