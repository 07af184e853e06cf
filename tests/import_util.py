"""Reading imports from source with ``ast``: shared by the layering tests."""

from __future__ import annotations

import ast


def from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` names; a relative one is resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))
