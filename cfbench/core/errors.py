"""Errors for bad input: each names the record and the field."""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad input, reported as ``<source>: record <id>: field <name>: <problem>``.

    ``source`` is a file path or a short description of where the data came from,
    ``record`` the record's id (or line/row number when it has none) and
    ``field`` the offending field. All three stay available as attributes.
    """

    def __init__(self, problem: str, *, source: str | None = None, record: object = None,
                 field: str | None = None):
        self.problem = problem
        self.source = source
        self.record = record
        self.field = field
        parts = []
        if source:
            parts.append(str(source))
        if record is not None:
            parts.append(f"record {record!r}")
        if field:
            parts.append(f"field {field!r}")
        parts.append(problem)
        super().__init__(": ".join(parts))
