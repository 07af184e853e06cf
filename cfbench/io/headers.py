"""Header and key checks shared by the loaders: a name given twice is an error, never "first wins".

A CSV whose header names a column twice (two ``text`` columns) would otherwise load with one
of them silently replacing the other (``csv.DictReader`` keeps the last, pandas renames the
second ``text.1``); a JSON object with a key twice keeps the last value in ``json.loads``.
Both are one-line :class:`~cfbench.core.errors.InputError` naming the file, the record and the
field.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..core.errors import InputError

__all__ = ["check_header", "loads_strict"]


def check_header(names: Sequence[Any], *, source: str, record: str = "header") -> None:
    """Raise when a header names a column twice (after trimming spaces; blank cells are ignored)."""
    seen: dict[str, int] = {}
    for pos, raw in enumerate(names, start=1):
        if raw is None:
            continue
        name = str(raw).strip()
        if not name:
            continue
        if name in seen:
            raise InputError(f"column named twice in the header (columns {seen[name]} and {pos})",
                             source=source, record=record, field=name)
        seen[name] = pos


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def loads_strict(text: str, *, source: str, record: str) -> Any:
    """``json.loads`` that rejects an object holding the same key twice (one-line InputError);
    other JSON errors propagate as :class:`json.JSONDecodeError` for the caller to word."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise InputError("key appears twice in one JSON object", source=source, record=record,
                         field=exc.key) from None
