"""``cfbench view RESULTS_DIR [--out FILE]``: one self-contained HTML page to browse a run's pairs."""

from __future__ import annotations

import argparse

__all__ = ["add_parser"]


def _cmd(args: argparse.Namespace) -> int:
    from ..studies import explorer_pairs
    from ..view import write_view

    path = write_view(args.results_dir, args.out, pairs=explorer_pairs(args.results_dir))
    print(f"{path} ({path.stat().st_size:,} bytes); open it in a browser (no server needed)")
    return 0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``view`` command to ``subparsers``."""
    p = subparsers.add_parser("view", help="write a self-contained HTML page to browse a results folder's pairs")
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a study's results folder, e.g. results/shopflow/default")
    p.add_argument("--out", metavar="FILE", help="where to write the page (default: RESULTS_DIR/view.html)")
    p.set_defaults(func=_cmd)
