"""``cfbench judges [--check SPEC]``: the judge backends and whether each is usable here."""

from __future__ import annotations

import argparse

from ..core.errors import InputError
from ..core.text import for_terminal

__all__ = ["add_parser"]


def _cmd(args: argparse.Namespace) -> int:
    from ..judges import GenerationConfig, Request, run_requests, usable_backends
    from ..judges.registry import listing
    from ..studies import available, load

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


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``judges`` command to ``subparsers``."""
    p = subparsers.add_parser("judges", help="list judge backends and whether each is usable here")
    p.add_argument("--check", metavar="SPEC", help="make one real call to SPEC")
    p.set_defaults(func=_cmd)
