"""``cfbench batch …``: paper scale through a Batch API (plan, submit, status, collect, cancel, retry, import).

Commands::

    cfbench batch plan --requests REQS --judge SPEC --out DIR [--cache PATH] [--flat] [--force] [--prices FILE]
    cfbench batch plan --study S -f CONFIG [-p NAME VALUE ...] --judge SPEC --out DIR [--cache PATH]
    cfbench batch submit --dir DIR [--max-active N [--wait]]
    cfbench batch status --dir DIR
    cfbench batch collect --dir DIR [--cache PATH]
    cfbench batch cancel --dir DIR
    cfbench batch retry --dir DIR [--cache PATH] [--include-permanent] [--no-submit] [--max-active N [--wait]]
    cfbench batch import --dir DIR OUTPUT [OUTPUT ...] [--shard FILE] [--cache PATH]

``REQS`` is a JSONL file of requests (``{"request_id", "messages", "config", "repeat"}``
per line) or ``package.module:function``, a function returning an iterable of
:class:`cfbench.judges.Request` (a study's request generator); ``--study S -f CONFIG``
streams the study's ``iter_requests(params)`` (one transcript, prompt or pair at a time), the
config read and checked as ``cfbench reproduce`` reads it.
``batch plan --out DIR`` writes the plan into ``DIR/<judge>/`` (``--flat``: into ``DIR`` itself);
the other steps take either that folder or ``DIR`` (then every plan folder under it). A folder
holding another plan (another judge, another requests source) is refused unless ``--force``, and only
files a manifest lists are ever removed.
Each handler returns the exit status; bad input raises :class:`InputError`, which
the main CLI prints as one line. The response cache's own commands are :mod:`cfbench.cli.cache`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from ..core.errors import InputError
from ..core.text import for_terminal
from .cache import open_cache

__all__ = ["add_parser", "load_requests"]


def load_requests(source: str) -> Iterable[Any]:
    """Requests from a JSONL path or from ``module:function`` (called with no arguments)."""
    from ..judges.batch import read_requests_jsonl

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


def _source(args: argparse.Namespace) -> dict[str, Any]:
    """What is being planned, recorded in the manifest (a folder holding another source is refused)."""
    if args.requests:
        path = Path(args.requests)
        return {"requests": str(path.resolve()) if path.exists() else args.requests}
    return {"study": args.study, "config": str(Path(args.config_file).resolve()) if args.config_file else None,
            "params": sorted([list(p) for p in (getattr(args, "param", None) or [])])}


def _money(cost: dict[str, Any] | None) -> str:
    if not cost or cost.get("total_usd") is None:
        return (cost or {}).get("note", "no price")
    return f"${cost['total_usd']:,.2f}"


def _study_requests(args: argparse.Namespace) -> Iterable[Any]:
    """``cfbench batch plan --study S -f CONFIG``: the study's requests, streamed (``iter_requests(params)``)."""
    from ..studies import load
    from .reproduce.config import load_config_file

    module = load(args.study)
    iter_requests = getattr(module, "iter_requests", None)
    if iter_requests is None:
        raise InputError("this study does not stream its requests yet; pass --requests instead",
                         source="--study", field=args.study)
    if not args.config_file:
        raise InputError("--study needs -f CONFIG", source="--study", field=args.study)
    from ..judges.registry import canonical_spec
    from .reproduce.config import parse_override

    overrides = dict(parse_override(n, v) for n, v in (getattr(args, "param", None) or []))
    params = module.Params.from_config(load_config_file(args.config_file, args.study, overrides=overrides or None),
                                       source=args.config_file)
    configured = {canonical_spec(j) for j in getattr(params, "judges", ()) or ()}
    if configured and canonical_spec(args.judge) not in configured:
        print(f"cfbench: note: --judge {args.judge} is not one of the config's judges "
              f"({', '.join(sorted(configured))}); planning the config's requests for it anyway", file=sys.stderr)
    return iter_requests(params)


def _cmd_plan(args: argparse.Namespace) -> int:
    from ..judges.batch import judge_slug, plan_batch
    from ..judges.pricing import load_prices
    from ..judges.registry import canonical_spec

    if not args.requests and not getattr(args, "study", None):
        raise InputError("batch plan needs --requests (or --study with a config)")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError("--out must be a folder, not a file", source=str(out))
    if not args.flat:
        out = out / judge_slug(canonical_spec(args.judge))
    prices = load_prices(args.prices)
    requests = load_requests(args.requests) if args.requests else _study_requests(args)
    manifest = plan_batch(requests, args.judge, out, cache=open_cache(args.cache), max_requests=args.max_requests,
                          max_bytes=args.max_bytes, progress=not args.quiet, source=_source(args), force=args.force,
                          prices=prices, token_sample=args.token_sample)
    print(f"planned {manifest['n_planned']:,} requests in {len(manifest['shards'])} shard(s) under {out} "
          f"({manifest['n_seen']:,} seen, {manifest['n_cached']:,} already cached, "
          f"{manifest['n_duplicate']:,} duplicates)")
    _print_cost(manifest)
    return 0


def _print_cost(manifest: dict[str, Any]) -> None:
    tok, cost = manifest.get("tokens") or {}, manifest.get("cost") or {}
    if not tok:
        return
    print(f"{manifest['judge']}: {tok['n_requests']:,} requests, {tok['prompt_tokens']:,} prompt tokens "
          f"({tok['method']}), at most {tok['max_output_tokens']:,} output tokens")
    if cost.get("total_usd") is None:
        print(f"estimated cost: unknown - {cost.get('note')}")
    else:
        print(f"estimated cost through the Batch API ({cost['priced_as']}: ${cost['usd_per_1m_input']}/"
              f"${cost['usd_per_1m_output']} per 1M in/out, {cost['batch_discount']:.0%} batch discount, prices as "
              f"of {cost.get('as_of')}): input ${cost['input_usd']:,.2f} + output at most ${cost['output_usd']:,.2f}"
              f" = at most ${cost['total_usd']:,.2f}")


def _shard_lines(manifest: dict[str, Any], folder: Path | None = None) -> None:
    if folder is not None:
        print(f"== {folder} ({manifest['judge']})")
    for s in manifest["shards"]:
        extra = ""
        if s.get("collected"):
            extra = f" ok={s['n_ok']} failed={s['n_failed']}"
            for name in ("n_missing", "n_refused", "n_duplicate", "n_conflict"):
                if s.get(name):
                    extra += f" {name[2:]}={s[name]}"
        print(f"{s['file']}: {s.get('count', 0):,} requests, {s.get('bytes', 0):,} bytes, "
              f"batch {s.get('batch_id') or '-'} status {s.get('status') or 'not submitted'}{extra}")
        for e in s.get("errors") or ():
            print(for_terminal(f"  batch error {e.get('code')}: {e.get('message')}"))
        if s.get("submit_error"):
            e = s["submit_error"]
            print(for_terminal(f"  not created ({e.get('status')}): {e.get('message')}"))
    usage = manifest.get("usage")
    if usage and usage.get("n_replies"):
        print(f"collected {usage['n_replies']:,} replies: {usage['prompt_tokens']:,} prompt + "
              f"{usage['completion_tokens']:,} completion tokens, cost {_money(manifest.get('collected_cost'))}")


def _each_plan(args: argparse.Namespace, step: Callable[[Path], dict[str, Any]]) -> list[dict[str, Any]]:
    from ..judges.batch import plan_dirs

    done = []
    for folder in plan_dirs(args.dir):
        manifest = step(folder)
        _shard_lines(manifest, folder)
        done.append(manifest)
    return done


def _cmd_submit(args: argparse.Namespace) -> int:
    from ..judges.batch import submit_batch

    _each_plan(args, lambda d: submit_batch(d, max_active=args.max_active, wait=args.wait, log=print))
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from ..judges.batch import batch_status

    for manifest in _each_plan(args, batch_status):
        if not any(s.get("batch_id") for s in manifest["shards"]):
            _print_cost(manifest)  # nothing sent yet: what sending it would cost
    return 0


def _cmd_cancel(args: argparse.Namespace) -> int:
    from ..judges.batch import cancel_batch

    _each_plan(args, cancel_batch)
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from ..judges.batch import collect_batch

    cache = open_cache(args.cache)
    for manifest in _each_plan(args, lambda d: collect_batch(d, cache=cache)):
        waiting = [s["file"] for s in manifest["shards"] if not s.get("collected")]
        if waiting:
            print(f"{len(waiting)} shard(s) not finished yet; run `cfbench batch collect --dir {args.dir}` again later")
    return 0


def _cmd_retry(args: argparse.Namespace) -> int:
    from ..judges.batch import plan_dirs, read_manifest, retry_batch

    cache = open_cache(args.cache)
    for folder in plan_dirs(args.dir):
        info = retry_batch(folder, cache=cache, include_permanent=args.include_permanent,
                           submit=not args.no_submit, max_active=args.max_active, wait=args.wait, log=print)
        print(f"== {folder}: retry round {info['round']}: re-sending {info['n_resent']:,} request(s) in "
              f"{len(info['shards'])} new shard(s)")
        if info["n_permanent"]:
            print(f"{info['n_permanent']:,} permanent failure(s) not re-sent (listed in "
                  f"{folder / info['permanent_file']}; --include-permanent sends them too)")
        _shard_lines(read_manifest(folder))
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from ..judges.batch import import_outputs

    manifest = import_outputs(args.dir, args.outputs, cache=open_cache(args.cache), shard=args.shard)
    _shard_lines(manifest, Path(args.dir))
    return 0


def _cmd_sequential(args: argparse.Namespace) -> int:
    """``cfbench batch sequential --study S -f CONFIG --out DIR``: the study's sequential audit with each wave
    sent as a Batch-API job (the study's ``run_batch(params, out, ...)``); the same command resumes it."""
    from ..judges.cache import ResponseCache
    from ..studies import load
    from .reproduce.config import load_config_file, parse_override

    module = load(args.study)
    run_batch = getattr(module, "run_batch", None)
    if run_batch is None:
        raise InputError("this study has no Batch-API sequential audit (it exports no run_batch)",
                         source="--study", field=args.study)
    overrides = dict(parse_override(n, v) for n, v in (args.param or []))
    overrides.setdefault("sequential", True)
    params = module.Params.from_config(load_config_file(args.config_file, args.study, overrides=overrides),
                                       source=args.config_file)
    result = run_batch(params, args.out, cache=ResponseCache(args.cache) if args.cache else None,
                       poll_s=args.poll, log=print, progress=not args.quiet)
    tables = getattr(result, "tables", {})  # the study's cells table (ShopFlow prefixes its part: judged_...)
    table = next((t for name, t in tables.items() if name.endswith("sequential_cells")), None)
    if table is not None and len(table):
        print(table.to_string(index=False))
    return 0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``batch`` command to ``subparsers``."""
    from ..judges.batch import MAX_SHARD_BYTES, MAX_SHARD_REQUESTS

    batch = subparsers.add_parser("batch", help="paper scale through a Batch API: plan, submit, status, collect")
    steps = batch.add_subparsers(dest="batch_action", required=True,
                                 metavar="{plan,sequential,submit,status,collect,cancel,retry,import}")

    p = steps.add_parser("plan", help="stream requests into Batch-API JSONL shards and a manifest")
    p.add_argument("--requests", help="JSONL file of requests, or package.module:function returning them")
    p.add_argument("--study", help="a study whose requests to plan (with -f CONFIG)")
    p.add_argument("-f", "--config-file", dest="config_file", help="the study's config file")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="with --study: set one parameter of the config (VALUE read as YAML); repeatable")
    p.add_argument("--judge", required=True, help="openai:<model>[@base_url]")
    p.add_argument("--out", required=True, help="folder; the plan goes into OUT/<judge>/ (see --flat)")
    p.add_argument("--flat", action="store_true", help="write the plan into OUT itself, not OUT/<judge>/")
    p.add_argument("--force", action="store_true",
                   help="replace another plan (another judge or source) in the folder; removes only its listed files")
    p.add_argument("--prices", default=None,
                   help="YAML price table whose entries replace the shipped ones (also $CFBENCH_PRICES)")
    p.add_argument("--token-sample", type=int, default=1,
                   help="count prompt tokens on 1 request in N and scale by characters (default 1: every one)")
    p.add_argument("--cache", default=None, help="skip requests cached here (default: the default cache)")
    p.add_argument("--max-requests", type=int, default=MAX_SHARD_REQUESTS, help="lines per shard at most")
    p.add_argument("--max-bytes", type=int, default=MAX_SHARD_BYTES, help="bytes per shard at most")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_plan)

    p = steps.add_parser("sequential", help="a study's sequential audit, each wave one Batch-API job (resumable)")
    p.add_argument("--study", required=True, help="the study (it must export run_batch)")
    p.add_argument("-f", "--config-file", dest="config_file", required=True, help="the study's config file")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set one parameter of the config (VALUE read as YAML); repeatable; sequential is set true")
    p.add_argument("--out", required=True, help="the run folder; it holds the wave manifest (run again to resume)")
    p.add_argument("--cache", default=None, help="cache file the replies go into (default: the default cache)")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between status polls of a wave's jobs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sequential)

    for name, fn, text in (("submit", _cmd_submit, "upload the shards and create the batches (resumable)"),
                           ("status", _cmd_status, "poll the batches and record their state and errors"),
                           ("collect", _cmd_collect, "download finished results into the cache (resumable)"),
                           ("cancel", _cmd_cancel, "cancel the plan's unfinished batches"),
                           ("retry", _cmd_retry, "re-submit only the failed or missing requests, without re-planning"),
                           ("import", _cmd_import, "import output files of a plan's shards run elsewhere (vLLM)")):
        p = steps.add_parser(name, help=text)
        p.add_argument("--dir", required=True, help="the folder `batch plan` wrote (or its parent)")
        if name in ("collect", "retry", "import"):
            p.add_argument("--cache", default=None, help="cache file (default: the default cache)")
        if name in ("submit", "retry"):
            p.add_argument("--max-active", type=int, default=None,
                           help="at most N batches in progress at once; the rest wait (see --wait)")
            p.add_argument("--wait", action="store_true",
                           help="with --max-active or a queue limit: poll with back-off until all are created")
        if name == "retry":
            p.add_argument("--include-permanent", action="store_true",
                           help="also re-send requests that failed with a permanent (4xx) error")
            p.add_argument("--no-submit", action="store_true",
                           help="write the retry shards only (to run them elsewhere, e.g. vLLM's run-batch)")
        if name == "import":
            p.add_argument("outputs", nargs="+", help="output JSONL files (shard-NNNNN.<anything>.jsonl)")
            p.add_argument("--shard", default=None, help="the shard file the outputs answer (when not in their name)")
        p.set_defaults(func=fn)
