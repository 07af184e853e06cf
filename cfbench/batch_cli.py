"""``cfbench batch …`` and ``cfbench cache …``: the Batch-API lifecycle and the response cache.

Wire into the main parser with :func:`add_parser`::

    sub = parser.add_subparsers(dest="command")
    batch_cli.add_parser(sub)                       # adds "batch" and "cache"

Commands::

    cfbench batch plan --requests REQS --judge SPEC --out DIR [--cache PATH]
    cfbench batch plan --study S -f CONFIG [-p NAME VALUE ...] --judge SPEC --out DIR [--cache PATH]
    cfbench batch submit --dir DIR
    cfbench batch status --dir DIR
    cfbench batch collect --dir DIR [--cache PATH]
    cfbench cache stats [--path PATH]
    cfbench cache vacuum [--drop-pending] [--drop-failures] [--path PATH]
    cfbench cache export --judge SPEC --out FILE [--path PATH]
    cfbench cache import --judge SPEC FILE [--path PATH]      (FILE before or after --judge)

``REQS`` is a JSONL file of requests (``{"request_id", "messages", "config", "repeat"}``
per line) or ``package.module:function``, a function returning an iterable of
:class:`cfbench.judges.Request` (a study's request generator); ``--study``/``-f``
is wired by ``cli.py`` through the ``study_requests`` hook of :func:`add_parser` and streams
the study's ``iter_requests(params)`` (one transcript, prompt or pair at a time).
Each handler returns the exit status; bad input raises :class:`InputError`, which
the main CLI prints as one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any, Callable, Iterable

from .core.errors import InputError

__all__ = ["add_parser", "load_requests"]

StudyRequests = Callable[[argparse.Namespace], Iterable[Any]]


def load_requests(source: str) -> Iterable[Any]:
    """Requests from a JSONL path or from ``module:function`` (called with no arguments)."""
    from .judges.batch import read_requests_jsonl

    path = Path(source)
    if path.exists() or source.endswith((".jsonl", ".json")):
        if not path.exists():
            raise InputError("no such requests file", source=source)
        return read_requests_jsonl(path)
    module_name, sep, attr = source.partition(":")
    if not sep or not attr:
        raise InputError("--requests must be a JSONL file or package.module:function", source=source)
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot load the request generator ({exc})", source=source) from None
    return fn()


def _cache(path: str | None):  # noqa: ANN202
    from .judges import ResponseCache

    return ResponseCache(path)


def _print(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def _cmd_plan(args: argparse.Namespace, study_requests: StudyRequests | None) -> int:
    from .judges.batch import plan_batch

    if args.requests:
        requests = load_requests(args.requests)
    elif study_requests is not None and getattr(args, "study", None):
        requests = study_requests(args)
    else:
        raise InputError("batch plan needs --requests (or --study with a config)")
    manifest = plan_batch(requests, args.judge, args.out, cache=_cache(args.cache), max_requests=args.max_requests,
                          max_bytes=args.max_bytes, progress=not args.quiet)
    print(f"planned {manifest['n_planned']:,} requests in {len(manifest['shards'])} shard(s) under {args.out} "
          f"({manifest['n_seen']:,} seen, {manifest['n_cached']:,} already cached, "
          f"{manifest['n_duplicate']:,} duplicates)")
    return 0


def _shard_lines(manifest: dict[str, Any]) -> None:
    for s in manifest["shards"]:
        extra = f" ok={s['n_ok']} failed={s['n_failed']}" if s.get("collected") else ""
        print(f"{s['file']}: {s['count']:,} requests, {s['bytes']:,} bytes, batch {s.get('batch_id') or '-'} "
              f"status {s.get('status') or 'not submitted'}{extra}")


def _cmd_submit(args: argparse.Namespace) -> int:
    from .judges.batch import submit_batch

    _shard_lines(submit_batch(args.dir))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from .judges.batch import batch_status

    _shard_lines(batch_status(args.dir))
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from .judges.batch import collect_batch

    manifest = collect_batch(args.dir, cache=_cache(args.cache))
    _shard_lines(manifest)
    waiting = [s["file"] for s in manifest["shards"] if not s.get("collected")]
    if waiting:
        print(f"{len(waiting)} shard(s) not finished yet; run `cfbench batch collect --dir {args.dir}` again later")
    return 0


def _cmd_cache_stats(args: argparse.Namespace) -> int:
    _print(_cache(args.path).stats())
    return 0


def _cmd_cache_vacuum(args: argparse.Namespace) -> int:
    _print(_cache(args.path).vacuum(drop_pending=args.drop_pending, drop_failures=args.drop_failures))
    return 0


def _cmd_cache_export(args: argparse.Namespace) -> int:
    from .judges.batch import export_batch

    cache = _cache(args.path)
    n = export_batch(cache, args.judge, Path(args.out))
    print(f"wrote {n} pending requests to {args.out}")
    return 0


def _cmd_cache_import(args: argparse.Namespace) -> int:
    from .judges.batch import import_batch

    if not Path(args.file).exists():
        raise InputError("no such Batch-API output file", source=args.file)
    cache = _cache(args.path)
    n, bad = import_batch(cache, args.judge, Path(args.file))
    print(f"imported {n} replies into {cache.path}; {bad} lines were failures (recorded, not cached)")
    return 0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]", *,
               study_requests: StudyRequests | None = None) -> None:
    """Add the ``batch`` and ``cache`` commands to ``subparsers``.

    ``study_requests(args)``, when given, turns ``--study S -f CONFIG`` (added by the caller to the
    ``batch plan`` parser through ``args``) into an iterable of requests.
    """
    from .judges.batch import MAX_SHARD_BYTES, MAX_SHARD_REQUESTS

    batch = subparsers.add_parser("batch", help="paper scale through a Batch API: plan, submit, status, collect")
    steps = batch.add_subparsers(dest="batch_action", required=True, metavar="{plan,submit,status,collect}")

    p = steps.add_parser("plan", help="stream requests into Batch-API JSONL shards and a manifest")
    p.add_argument("--requests", help="JSONL file of requests, or package.module:function returning them")
    if study_requests is not None:
        p.add_argument("--study", help="a study whose requests to plan (with -f CONFIG)")
        p.add_argument("-f", "--config-file", dest="config_file", help="the study's config file")
        p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                       help="with --study: set one parameter of the config (VALUE read as YAML); repeatable")
    p.add_argument("--judge", required=True, help="openai:<model>[@base_url]")
    p.add_argument("--out", required=True, help="folder for the shards and manifest.json")
    p.add_argument("--cache", default=None, help="skip requests cached here (default: the default cache)")
    p.add_argument("--max-requests", type=int, default=MAX_SHARD_REQUESTS, help="lines per shard at most")
    p.add_argument("--max-bytes", type=int, default=MAX_SHARD_BYTES, help="bytes per shard at most")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=lambda a: _cmd_plan(a, study_requests))

    for name, fn, text in (("submit", _cmd_submit, "upload the shards and create the batches (resumable)"),
                           ("status", _cmd_status, "poll the batches and record their state"),
                           ("collect", _cmd_collect, "download finished results into the cache (resumable)")):
        p = steps.add_parser(name, help=text)
        p.add_argument("--dir", required=True, help="the folder `batch plan` wrote")
        if name == "collect":
            p.add_argument("--cache", default=None, help="cache file (default: the default cache)")
        p.set_defaults(func=fn)

    cache = subparsers.add_parser("cache", help="response cache: stats, vacuum, Batch-API export/import")
    actions = cache.add_subparsers(dest="cache_action", required=True, metavar="{stats,vacuum,export,import}")
    path_help = "cache file (default: $CFBENCH_CACHE_DIR/responses.sqlite)"

    p = actions.add_parser("stats", help="entries, pending requests, failures, bytes per entry")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_cache_stats)

    p = actions.add_parser("vacuum", help="drop answered pending rows (and optionally all) and compact the file")
    p.add_argument("--drop-pending", action="store_true", help="also forget every unanswered request")
    p.add_argument("--drop-failures", action="store_true", help="also forget recorded failures")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_cache_vacuum)

    p = actions.add_parser("export", help="write pending requests as one Batch input file")
    p.add_argument("--judge", required=True, help="openai:<model>[@base_url]")
    p.add_argument("--out", required=True, help="the Batch input JSONL to write")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_cache_export)

    p = actions.add_parser("import", help="store a Batch output file's replies (failures recorded, not cached)")
    p.add_argument("file", help="the Batch-API output JSONL")
    p.add_argument("--judge", required=True, help="the judge spec the batch ran")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_cache_import)
