"""Study parameters as frozen dataclasses, read from config mappings with checked names and types.

A study's ``Params`` mirrors its notebook's ``parameters`` cell field for field, so a
config file, a papermill run and a Python call all mean the same thing::

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class P:
    ...     n_items: int = 3
    ...     judges: tuple = ("scripted:yes",)
    >>> params_from_mapping(P, {"n_items": 8}).n_items
    8
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Mapping, TypeVar

from .errors import InputError
from .files import shorten

__all__ = ["params_from_mapping", "params_to_mapping", "check_floors", "check_judge_settings"]

P = TypeVar("P")

_LISTLIKE = (list, tuple)


def _expected(tp: Any) -> tuple[type, ...]:
    origin = typing.get_origin(tp) or tp
    if origin in (list, tuple, typing.Sequence):
        return _LISTLIKE
    if origin in (dict, typing.Mapping):
        return (dict,)
    if origin is float:
        return (float, int)
    if isinstance(origin, type):
        return (origin,)
    return (object,)


def params_from_mapping(cls: type[P], data: Mapping[str, Any] | None = None, *, source: str = "parameters",
                        **overrides: Any) -> P:
    """Build ``cls`` from ``data`` and ``overrides``; unknown names and wrong types are InputErrors.

    Lists are stored as tuples (the dataclass is frozen); an int is accepted for a float.
    Ranges are the study's to check (:func:`check_floors` is the run-level rule of ``cfbench reproduce``).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    values = {**(data or {}), **overrides}
    kwargs = {}
    for name, value in values.items():
        if name not in fields:
            raise InputError(f"unknown parameter (known: {', '.join(sorted(fields))})", source=source, field=name)
        ok_types = _expected(hints[name])
        bad_bool = isinstance(value, bool) and bool not in ok_types and object not in ok_types
        if not isinstance(value, ok_types) or bad_bool:
            raise InputError(f"expected {hints[name]!s}, got {type(value).__name__} {shorten(value)}", source=source,
                             field=name)
        if isinstance(value, list):
            value = tuple(value)
        if ok_types == (float, int):
            value = float(value)
        kwargs[name] = value
    return cls(**kwargs)


def check_floors(cls: type, values: Mapping[str, Any], *, source: Any = "parameters") -> None:
    """The floor of every whole-number parameter a run sets: counts, sizes and seeds are never negative,
    a count named ``n_*`` (``n_items``, ``n_boot``, ...) is at least 1, and a field's
    ``metadata={"min": m}`` sets its own floor. ``source`` is a string or ``name -> string`` (where the
    value came from). Raises :class:`InputError` naming the field."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for name, value in values.items():
        if name not in fields or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        low = _floor(fields[name], _expected(hints[name]))
        if low is not None and value < low:
            where = source(name) if callable(source) else source
            raise InputError(f"must be at least {low}, got {shorten(value)}", source=where, field=name)


def check_judge_settings(params: Any) -> None:
    """A study's operational judge settings, where it has them: ``concurrency`` a whole number >= 0 (0:
    adapt to the server), ``timeout_s`` a finite number >= 0 (0: the default) and ``temperature`` a number
    from 0 to 2 (NaN and negatives refused: a sampler would read them as greedy or fail later). Raises
    :class:`InputError` naming the field."""
    import math

    c = getattr(params, "concurrency", 0)
    if isinstance(c, bool) or not isinstance(c, int) or c < 0:
        raise InputError(f"must be a whole number >= 0 (0: adapt to the server), got {shorten(c)}",
                         source="parameters", field="concurrency")
    t = getattr(params, "timeout_s", 0.0)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise InputError(f"must be a number of seconds >= 0 (0: 600), got {shorten(t)}", source="parameters",
                         field="timeout_s")
    if hasattr(params, "temperature"):
        v = params.temperature
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0.0 <= v <= 2.0:
            raise InputError(f"must be a number from 0 to 2, got {shorten(v)}", source="parameters",
                             field="temperature")


def _floor(f: dataclasses.Field, ok_types: tuple[type, ...]) -> int | float | None:
    """The smallest value a field accepts: its ``metadata["min"]``, else 1 for an ``n_*`` count and 0
    for any other whole number; None for other types."""
    if "min" in f.metadata:
        return f.metadata["min"]
    if ok_types == (int,):
        return 1 if f.name.startswith("n_") else 0
    return None


def params_to_mapping(params: Any) -> dict[str, Any]:
    """Plain JSON-friendly mapping of a params dataclass (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(params).items()}
