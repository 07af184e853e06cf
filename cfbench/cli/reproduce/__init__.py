"""``cfbench reproduce``: run the study notebooks with papermill into ``results/<study>/<config>/``.

Each study ``S`` is ``notebooks/S.ipynb`` (a package under :mod:`cfbench.studies` with a
notebook of the same name); its parameters come from ``configs/S/<config>.yaml`` or
any YAML file (``-f``), plus ``-p name value`` overrides. The executed notebook and
everything it writes land in ``results/S/<config>/``, and only when the run
succeeds: a run executes in a staging folder beside it and replaces the previous
results at the end, so a failed run never leaves old tables looking current.

A run never overwrites a reference run: with ``-p`` overrides or a ``-f`` file (and no
``--results``) it writes to ``results/S/<name>-<hash>/``, the hash taken over the
parameters that differ. cfbench replaces or deletes only folders it made (they carry
the marker file ``.cfbench-results``); a folder without it is refused unless ``force``.
One run at a time per results folder (a lock file beside it). After papermill, the
executed notebook gets a provenance cell under its title: live or replay, commit,
machine, wall time, the response cache and the exact command.

This module is the command (:func:`add_parser`) and the Python API; the work is in

- :mod:`.config`: where notebooks and configs are, loading, overrides, parameter checks
- :mod:`.folders`: results folder names, ownership (the marker), the per-folder lock
- :mod:`.swap`: the journalled swap of staging into results and its recovery after a kill
- :mod:`.failures`: one-line failures, a full disk
- :mod:`.provenance`: ``run_info.json`` and the provenance cell
- :mod:`.leaks`: the credential check and quarantine
- :mod:`.notebook`, :mod:`.executed`: the kernel, the explorer page, the executed notebook tidied
- :mod:`.progress`: the overall ETA
- :mod:`.run`: :func:`reproduce`, and :func:`~.run.run_study` for one study
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from ...core.errors import InputError
from .config import CONFIGS, load_config, load_config_file, notebook_parameters, parse_override, project_root, studies
from .failures import DiskFull, StudyFailed
from .folders import MARKER, results_folder_name
from .provenance import provenance_markdown
from .run import reproduce

__all__ = ["CONFIGS", "studies", "reproduce", "load_config", "load_config_file", "project_root",
           "notebook_parameters", "parse_override", "provenance_markdown", "StudyFailed", "DiskFull", "MARKER",
           "results_folder_name", "add_parser"]


def _cmd(args: argparse.Namespace) -> int:
    for name, value in (("CFBENCH_CONCURRENCY", args.concurrency), ("CFBENCH_TIMEOUT_S", args.timeout_s)):
        if value is not None:  # read by every judge call of the run, notebooks' kernels included
            if not value > 0:
                raise InputError(f"must be > 0, got {value:g}", source="command line",
                                 field=name.removeprefix("CFBENCH_").lower())
            os.environ[name] = f"{value:g}"
    pairs = [parse_override(n, v) for n, v in (args.param or [])]
    twice = sorted({n for n, _ in pairs if sum(1 for m, _ in pairs if m == n) > 1})
    if twice:  # as a key repeated in a config file: which one was meant cannot be told
        raise InputError(f"given more than once: {', '.join(twice)}", source="command line", field="-p")
    overrides = dict(pairs)
    command = "cfbench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if args.argv is None else args.argv))
    info = reproduce(args.config, args.study or None, config_file=args.file, overrides=overrides or None,
                     results_dir=args.results, replay=args.replay, plan_only=args.plan_only, force=args.force,
                     command=command)
    total = sum(v["wall_s"] for v in info.values())
    for study, v in info.items():
        print(f"{study:20s} {v['config']:8s} {v['wall_s']:8.1f} s")
    print(f"{'total':29s} {total:8.1f} s")
    for study, v in info.items():
        if args.results is None and (v.get("overrides") or args.file):
            print(f"{study}: results in {args.results or 'results'}/{study}/{v['config']}/ "
                  "(its own folder: reference runs are never overwritten)")
    return 0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``reproduce`` command to ``subparsers``."""
    p = subparsers.add_parser("reproduce", help="run the study notebooks into results/<study>/<config>/")
    p.add_argument("--config", default="default", choices=["smoke", "default", "paper"],
                   help="a shipped config: configs/<study>/<config>.yaml (default: default)")
    p.add_argument("-f", "--file", metavar="FILE", help="any YAML config file instead (its name names the results folder)")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set one parameter (VALUE read as YAML: 8, 0.5, [a, b], text); repeatable")
    p.add_argument("--study", action="append", metavar="S",
                   help="a study to run (repeatable); default: every study with a notebook")
    p.add_argument("--results", default=None, metavar="DIR",
                   help="results directory (default: results; there a run with -p or -f gets its own "
                        "folder <config>-<hash>, so a reference run is never overwritten)")
    p.add_argument("--force", action="store_true",
                   help="replace a results folder that cfbench did not make (one without its marker file)")
    p.add_argument("--replay", action="store_true", help="answer every judge call from the cache; fail on a miss")
    p.add_argument("--plan-only", action="store_true",
                   help="call no model; record uncached requests for `cfbench cache export` (Batch API)")
    p.add_argument("--concurrency", type=int, metavar="N",
                   help="judge calls in flight (default: adapt to the server's latency; docs/servers.md)")
    p.add_argument("--timeout-s", type=float, metavar="S",
                   help="seconds a judge call may take from the moment it is sent (default: 600)")
    p.set_defaults(func=_cmd)
