"""``cfbench cache …``: the response cache (stats, vacuum, Batch-API export and import).

Commands::

    cfbench cache stats [--path PATH]
    cfbench cache vacuum [--drop-pending] [--drop-failures] [--path PATH]
    cfbench cache export --judge SPEC --out FILE [--path PATH]
    cfbench cache import --judge SPEC FILE [--path PATH]      (FILE before or after --judge)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..core.errors import InputError

__all__ = ["add_parser", "open_cache"]


def open_cache(path: str | None, *, read_only: bool = False):  # noqa: ANN201
    """The response cache at ``path`` (None: the default one)."""
    from ..judges import ResponseCache

    return ResponseCache(path, read_only=read_only)


def _print(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def _cmd_stats(args: argparse.Namespace) -> int:
    from ..judges.cache import default_cache_path

    path = Path(args.path) if args.path else default_cache_path()
    _print(open_cache(str(path), read_only=path.is_file()).stats())
    return 0


def _cmd_vacuum(args: argparse.Namespace) -> int:
    _print(open_cache(args.path).vacuum(drop_pending=args.drop_pending, drop_failures=args.drop_failures))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from ..judges.batch import export_batch

    cache = open_cache(args.path)
    n = export_batch(cache, args.judge, Path(args.out), force=args.force)
    print(f"wrote {n} pending requests to {args.out}")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from ..judges.batch import import_batch_counts

    if not Path(args.file).exists():
        raise InputError("no such Batch-API output file", source=args.file)
    cache = open_cache(args.path)
    c = import_batch_counts(cache, args.judge, Path(args.file))
    print(f"imported {c['ok']} replies into {cache.path}; {c['failed']} lines were failures (recorded, not cached)")
    if c["refused"] or c["duplicate"] or c["conflict"]:
        print(f"{c['refused']} line(s) refused (custom_id not among this cache's requests for the judge, e.g. "
              f"{', '.join(c['refused_ids']) or '-'}); {c['duplicate']} duplicate line(s) counted once; "
              f"{c['conflict']} custom_id(s) answered differently twice (recorded as conflicts, not cached)")
    return 0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``cache`` command to ``subparsers``."""
    cache = subparsers.add_parser("cache", help="response cache: stats, vacuum, Batch-API export/import")
    actions = cache.add_subparsers(dest="cache_action", required=True, metavar="{stats,vacuum,export,import}")
    path_help = "cache file (default: $CFBENCH_CACHE_DIR/responses.sqlite)"

    p = actions.add_parser("stats", help="entries, pending requests, failures, bytes per entry")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_stats)

    p = actions.add_parser("vacuum", help="drop answered pending rows (and optionally all) and compact the file")
    p.add_argument("--drop-pending", action="store_true", help="also forget every unanswered request")
    p.add_argument("--drop-failures", action="store_true", help="also forget recorded failures")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_vacuum)

    p = actions.add_parser("export", help="write pending requests as one Batch input file")
    p.add_argument("--judge", required=True, help="openai:<model>[@base_url]")
    p.add_argument("--out", required=True, help="the Batch input JSONL to write (refused if it exists)")
    p.add_argument("--force", action="store_true", help="replace an existing --out")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_export)

    p = actions.add_parser("import", help="store a Batch output file's replies (failures recorded, not cached)")
    p.add_argument("file", help="the Batch-API output JSONL")
    p.add_argument("--judge", required=True, help="the judge spec the batch ran")
    p.add_argument("--path", default=None, help=path_help)
    p.set_defaults(func=_cmd_import)
