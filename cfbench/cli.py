"""The cfbench command line.

  cfbench reproduce [--config smoke|default|paper | -f FILE] [-p NAME VALUE ...] [--study S ...]
                    [--replay | --plan-only] [--results DIR] [--force] [--concurrency N] [--timeout-s S]
  cfbench judges [--check SPEC]
  cfbench batch plan|submit|status|collect ...   paper scale through a Batch API (see cfbench batch -h)
  cfbench cache stats|vacuum|export|import ...    the response cache
  cfbench variants FILE --out DIR [--dimensions ...] [--decisions reviewed.csv]
                               variants.parquet + a review.html to accept/reject them by hand
  cfbench variants FILE --out DIR --cues all   the judge-bias cues on candidate reply pairs (STAR folder or
                               your pairs), each through its guard, in the same review page and Table 9
  cfbench model install        assemble and verify the embedded judge's GGUF
  cfbench view RESULTS_DIR [--out FILE]   one self-contained HTML page to browse a run's pairs

Bad input is reported in one line (exit status 2); --debug shows the traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from .core.errors import InputError
from .core.text import for_terminal
from .judges.cache import CacheLockedError
from .reproduce import StudyFailed

__all__ = ["main"]


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import reproduce

    from .reproduce import parse_override

    import os

    for name, value in (("CFBENCH_CONCURRENCY", args.concurrency), ("CFBENCH_TIMEOUT_S", args.timeout_s)):
        if value is not None:  # read by every judge call of the run, notebooks' kernels included
            if not value > 0:
                raise InputError(f"must be > 0, got {value:g}", source="command line",
                                 field=name.removeprefix("CFBENCH_").lower())
            os.environ[name] = f"{value:g}"
    overrides = dict(parse_override(n, v) for n, v in (args.param or []))
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


def _cmd_judges(args: argparse.Namespace) -> int:
    from .judges import GenerationConfig, Request, run_requests, usable_backends

    from .judges.registry import listing
    from .studies import available, load

    for study in available():  # a study registers its scripted judges when imported
        try:
            load(study)
        except InputError:  # a plugin study that cannot be imported: disabled, one warning line
            continue
    for line in listing(usable_backends()):
        print(line)
    if args.check:
        req = Request("check", ({"role": "user", "content": "Is the sky blue on a clear day? Answer Yes or No."},),
                      GenerationConfig(max_tokens=3, top_logprobs=5))
        res = run_requests(args.check, [req], cache=False, progress=False)
        row = res.judgments.iloc[0]
        print(for_terminal(f"{args.check}: ok={row.ok} text={row.text!r} error={row.error}"))  # server text: inert
        return 0 if row.ok else 1
    return 0


def _study_requests(args: argparse.Namespace):
    """``cfbench batch plan --study S -f CONFIG``: the study's requests, streamed (``iter_requests(params)``)."""
    from .core.errors import InputError
    from .reproduce import load_config_file
    from .studies import load

    module = load(args.study)
    iter_requests = getattr(module, "iter_requests", None)
    if iter_requests is None:
        raise InputError("this study does not stream its requests yet; pass --requests instead",
                         source="--study", field=args.study)
    if not args.config_file:
        raise InputError("--study needs -f CONFIG", source="--study", field=args.study)
    from .judges.registry import canonical_spec
    from .reproduce import parse_override

    overrides = dict(parse_override(n, v) for n, v in (getattr(args, "param", None) or []))
    params = module.Params.from_config(load_config_file(args.config_file, args.study, overrides=overrides or None),
                                       source=args.config_file)
    configured = {canonical_spec(j) for j in getattr(params, "judges", ()) or ()}
    if configured and canonical_spec(args.judge) not in configured:
        print(f"cfbench: note: --judge {args.judge} is not one of the config's judges "
              f"({', '.join(sorted(configured))}); planning the config's requests for it anyway", file=sys.stderr)
    return iter_requests(params)


def _cmd_model(args: argparse.Namespace) -> int:
    from .judges.local import ensure_embedded_model

    path = ensure_embedded_model(progress=True)
    print(path)
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    from .studies import explorer_pairs
    from .view import write_view

    path = write_view(args.results_dir, args.out, pairs=explorer_pairs(args.results_dir))
    print(f"{path} ({path.stat().st_size:,} bytes); open it in a browser (no server needed)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cfbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    parser.add_argument("--plugin", action="append", metavar="MODULE",
                        help="import a plugin module first (repeatable, anywhere on the line; docs/extending.md)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("reproduce", help="run the study notebooks into results/<study>/<config>/")
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
    p.set_defaults(func=_cmd_reproduce)

    p = sub.add_parser("judges", help="list judge backends and whether each is usable here")
    p.add_argument("--check", metavar="SPEC", help="make one real call to SPEC")
    p.set_defaults(func=_cmd_judges)

    from .batch_cli import add_parser as add_batch_parser

    add_batch_parser(sub, study_requests=_study_requests)

    from .variants_cli import add_parser as add_variants_parser

    add_variants_parser(sub)

    p = sub.add_parser("model", help="the embedded judge's model file")
    p.add_argument("action", choices=["install"])
    p.set_defaults(func=_cmd_model)

    p = sub.add_parser("view", help="write a self-contained HTML page to browse a results folder's pairs")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a study's results folder, e.g. results/shopflow/default")
    p.add_argument("--out", metavar="FILE", help="where to write the page (default: RESULTS_DIR/view.html)")
    p.set_defaults(func=_cmd_view)

    from . import plugins

    modules, argv = plugins.split_plugin_args(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if modules:
        try:
            plugins.use(modules)
        except InputError as exc:
            print(f"cfbench: error: {for_terminal(' '.join(str(exc).split()))}", file=sys.stderr)
            return 2
    args.argv = argv
    if args.debug:
        return args.func(args)
    try:
        return args.func(args)
    except (InputError, StudyFailed, CacheLockedError, FileNotFoundError, ValueError, KeyError) as exc:
        message = " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())
        print(f"cfbench: error: {for_terminal(message)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
