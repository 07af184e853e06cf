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
import sys
from types import ModuleType

from ..core.errors import InputError
from ..core.text import for_terminal
from ..judges.cache import CacheLockedError
from .reproduce import StudyFailed

__all__ = ["main"]

# One module per command, each with ``add_parser(subparsers)`` and its handler; ``reproduce`` is a
# package (the command in its __init__, the machinery in its modules). The docstring above is the
# text of ``cfbench --help``.


def _commands() -> list[ModuleType]:
    """The command modules, in the order ``cfbench --help`` lists them; each has ``add_parser(subparsers)``."""
    from . import batch, cache, judges, model, reproduce, variants, view

    return [reproduce, judges, batch, cache, variants, model, view]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cfbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    parser.add_argument("--plugin", action="append", metavar="MODULE",
                        help="import a plugin module first (repeatable, anywhere on the line; docs/extending.md)")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _commands():
        command.add_parser(sub)

    from .. import plugins

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
