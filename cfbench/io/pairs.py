"""Matched-pair frames for routing audits.

A matched pair is one case written in several *variants* (e.g. a formal and a
conversational wording of the same facts). Reviewers agreed that every
variant of a pair deserves the same outcome, so the expected outcome is a
property of the pair, not of the row.

The tidy frame has one row per (pair, variant):

==================  ======  ==================================================
column              dtype   meaning
==================  ======  ==================================================
``pair_id``         str     the pair's id (unique per pair)
``variant``         str     the wording condition / audit slice
``expected_ready``  bool    reviewers say the reply may be auto-served
``channel``         str     e.g. ``chat`` / ``email``
``evidence_passed`` bool    the evidence gate passed (default ``True``)
``score``           float   judge score in [0, 1] (NaN until judged)
==================  ======  ==================================================

Further columns (request and reply text, notes, ...) are carried along
unchanged. Files are CSV (text cells, parsed field by field) or JSONL (typed
values: a JSON string where a number or boolean belongs is an error). Every
problem raises :class:`cfbench.core.errors.InputError` naming the record and
the field; nothing is dropped or coerced silently. Validation works on whole
columns, so 200,000 rows take about a second.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.files import jsonl_lines, read_text

from .headers import loads_strict

__all__ = ["PAIR_COLUMNS", "load_pairs", "validate_pairs", "pairs_from_records"]

#: Columns every validated pair frame has, in this order (extra columns follow).
PAIR_COLUMNS = ["pair_id", "variant", "expected_ready", "channel", "evidence_passed", "score"]

_REQUIRED = ("pair_id", "variant", "expected_ready", "channel")
_LABELS = ("pair_id", "variant", "channel")
#: Largest CSV cell accepted (characters); far above any reply text.
_MAX_CELL = 64 * 1024 * 1024
_TEXT_BOOL = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


class _Refs:
    """How rows are named in errors: ``row i`` until labels are known, then the pair, then pair/variant."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame

    def pair(self, i: int) -> str:
        pid = self.frame["pair_id"].iat[i] if "pair_id" in self.frame else None
        return pid if isinstance(pid, str) and pid.strip() else f"row {i + 1}"

    def row(self, i: int) -> str:
        return f"{self.frame['pair_id'].iat[i]}/{self.frame['variant'].iat[i]}"


def _is_missing(col: pd.Series) -> np.ndarray:
    return col.isna().to_numpy()


def _is_str(col: pd.Series) -> np.ndarray:
    return col.map(type).eq(str).to_numpy()


class _Unhashable:
    """Stands in for a JSON list or object in a field (unhashable, so pandas cannot factorize it): no check
    accepts it, and the error shows the value itself, taken from the column."""

    __slots__ = ()


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of a column's values, a list or object from JSON counted as a value no check accepts."""
    try:
        return pd.factorize(values, use_na_sentinel=False)
    except TypeError:  # unhashable: each such cell becomes its own stand-in
        swapped = np.empty(len(values), dtype=object)  # filled cell by cell: np.array would nest equal lists
        swapped[:] = [_Unhashable() if isinstance(v, (list, dict)) else v for v in values]
        return pd.factorize(swapped, use_na_sentinel=False)


def _bad_values(col: pd.Series, is_ok) -> np.ndarray:
    """Rows whose value fails ``is_ok``, testing each distinct value once (labels repeat a lot)."""
    values = col.to_numpy(dtype=object)
    codes, uniques = _factorize(values)
    bad_unique = np.fromiter((not is_ok(u) for u in uniques), bool, len(uniques))
    return bad_unique[codes]


def _good_label(v: object) -> bool:
    return type(v) is str and v != "" and v == v.strip()


def _check_labels(frame: pd.DataFrame, refs: _Refs, source: str) -> None:
    for name in _LABELS:
        col = frame[name]
        i = _first(_bad_values(col, _good_label))
        if i is not None:
            v = col.iat[i]
            problem = (f"{v!r} has leading or trailing whitespace" if isinstance(v, str) and v.strip()
                       else f"expected a non-empty string, got {v!r}")
            raise InputError(problem, source=source, record=refs.pair(i), field=name)


def _to_bool(col: pd.Series, *, text: bool, refs: _Refs, source: str, field: str) -> np.ndarray:
    values = col.to_numpy(dtype=object)
    codes, uniques = _factorize(values)
    if text:
        mapped = [_TEXT_BOOL.get(u.strip().lower()) if type(u) is str else None for u in uniques]
    else:  # JSON: true/false (0/1 tolerated), never a string
        mapped = [u if type(u) is bool else (bool(u) if type(u) is int and u in (0, 1) else None) for u in uniques]
    bad = np.array([m is None for m in mapped], dtype=bool)[codes]
    i = _first(bad)
    if i is not None:
        raise InputError(f"expected a boolean (true/false), got {values[i]!r}", source=source,
                         record=refs.row(i), field=field)
    return np.array([bool(m) for m in mapped], dtype=bool)[codes]


def _score_problem(v: Any, *, text: bool) -> str | None:
    if v is None:
        return "score is missing"
    if isinstance(v, bool):
        return f"expected a number in [0, 1], got the boolean {v!r}"
    if isinstance(v, str):
        if not text:
            return f"expected a number in [0, 1], got the string {v!r} (write the number without quotes)"
        if not v.strip():
            return "score is empty"
        try:
            v = float(v)
        except ValueError:
            return f"expected a number in [0, 1], got {v!r}"
    if not isinstance(v, (int, float, np.integer, np.floating)):
        return f"expected a number in [0, 1], got {v!r}"
    number = float(v)
    if math.isnan(number):
        return "score is NaN"
    if not 0.0 <= number <= 1.0:
        return f"score {number!r} is outside [0, 1]"
    return None


def _to_score(col: pd.Series, *, text: bool, refs: _Refs, source: str, field: str) -> np.ndarray:
    """Scores as floats in [0, 1]; the fast path is one vectorized check, the slow one finds the culprit."""
    values = col.to_numpy(dtype=object)
    if text:
        numbers = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)  # CSV cells are all strings
        ok = (numbers >= 0.0) & (numbers <= 1.0)  # NaN, "nan", "inf" and non-numbers all fail
    else:
        kinds = col.map(type)
        numeric = kinds.isin([int, float]).to_numpy()
        numbers = np.where(numeric, values, np.nan).astype(float)
        ok = numeric & (numbers >= 0.0) & (numbers <= 1.0)
    i = _first(~ok)
    if i is not None:
        problem = _score_problem(values[i], text=text) or f"expected a number in [0, 1], got {values[i]!r}"
        raise InputError(problem, source=source, record=refs.row(i), field=field)
    return numbers


def _typed_frame(frame: pd.DataFrame, *, source: str, text: bool, score_column: str | None,
                 present: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Check and convert the raw columns of ``frame`` (text cells from CSV, or JSON values)."""
    if frame.empty:
        raise InputError("no records", source=source)
    refs = _Refs(frame)
    for name in _REQUIRED:
        if name not in frame.columns:
            raise InputError("missing", source=source, record=refs.pair(0), field=name)
        empty = _is_missing(frame[name]) | (frame[name].to_numpy(dtype=object) == "")
        if present is not None and name in present:
            empty |= ~present[name]
        i = _first(empty)
        if i is not None:
            raise InputError("missing", source=source, record=refs.pair(i), field=name)
    _check_labels(frame, refs, source)
    out = frame.copy()
    out["expected_ready"] = _to_bool(frame["expected_ready"], text=text, refs=refs, source=source,
                                     field="expected_ready")
    if "evidence_passed" in frame.columns:
        ev = frame["evidence_passed"]
        i = _first(_is_missing(ev) | (ev.to_numpy(dtype=object) == ""))
        if i is not None:
            raise InputError("empty; write true or false (or leave the column out)", source=source,
                             record=refs.row(i), field="evidence_passed")
        out["evidence_passed"] = _to_bool(ev, text=text, refs=refs, source=source, field="evidence_passed")
    else:
        out["evidence_passed"] = True
    if score_column is None:
        out["score"] = math.nan
    else:
        if score_column not in frame.columns:
            raise InputError("missing", source=source, record=refs.row(0), field=score_column)
        col = frame[score_column]
        if present is not None and score_column in present:
            i = _first(~present[score_column])
            if i is not None:
                raise InputError("missing", source=source, record=refs.row(i), field=score_column)
        out["score"] = _to_score(col, text=text, refs=refs, source=source, field=score_column)
        if score_column != "score":
            out = out.drop(columns=[score_column])
    return out


def pairs_from_records(records: Iterable[dict[str, Any]], *, source: str = "<records>",
                       score_column: str | None = "score", variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Build and validate a pair frame from dict records (one per pair × variant), with JSON typing.

    ``score_column`` names the field holding the judge score (it becomes
    ``score``; a field of the records named ``score`` is then not in the frame,
    and the records are not changed); ``None`` means the pairs are not scored
    yet (``score`` is NaN).
    ``variants`` fixes the expected set of variants; by default it is every
    variant that appears, and each pair must have all of them.

    >>> recs = [{"pair_id": "a", "variant": v, "expected_ready": True, "channel": "chat", "score": s}
    ...         for v, s in (("formal", 0.9), ("casual", 0.6))]
    >>> pairs_from_records(recs)["score"].tolist()
    [0.9, 0.6]
    """
    records = list(records)
    for i, rec in enumerate(records, start=1):
        if not isinstance(rec, dict):
            raise InputError(f"expected an object, got {type(rec).__name__}", source=source, record=f"row {i}")
    if not records:
        raise InputError("no records", source=source)
    frame = pd.DataFrame.from_records(records)
    keys = set(_REQUIRED) | ({score_column} if score_column else set())
    present = {k: np.fromiter((k in r for r in records), bool, len(records)) for k in keys if k in frame.columns}
    typed = _typed_frame(frame, source=source, text=False, score_column=score_column, present=present)
    return validate_pairs(typed, source=source, variants=variants, require_score=score_column is not None)


def _scores_ok(values: pd.Series) -> np.ndarray:
    if values.dtype.kind == "f":
        x = values.to_numpy(dtype=float)
        return (x >= 0.0) & (x <= 1.0)
    return np.fromiter((_score_problem(v, text=False) is None for v in values.to_numpy(dtype=object)), bool,
                       len(values))


def validate_pairs(frame: pd.DataFrame, *, source: str = "<frame>", variants: Sequence[str] | None = None,
                   require_score: bool = True) -> pd.DataFrame:
    """Check the matched-pair invariants and return the frame in canonical column order.

    - no duplicate (pair_id, variant) rows;
    - every pair has every variant (``variants`` or all variants seen);
    - all variants of a pair share ``expected_ready`` and ``channel``;
    - scores are numbers in [0, 1] when ``require_score``.
    """
    missing_cols = [c for c in PAIR_COLUMNS if c not in frame.columns]
    if missing_cols:
        raise InputError(f"missing column(s) {missing_cols}", source=source, field=missing_cols[0])
    frame = frame.reset_index(drop=True)
    dup = frame.duplicated(["pair_id", "variant"], keep="first").to_numpy()
    i = _first(dup)
    if i is not None:
        raise InputError(f"duplicate row for variant {frame['variant'].iat[i]!r}", source=source,
                         record=frame["pair_id"].iat[i], field="variant")
    expected = list(variants) if variants is not None else list(dict.fromkeys(frame["variant"]))
    if len(expected) < 2:
        raise InputError(f"a matched-pair audit needs at least two variants, found {expected}",
                         source=source, field="variant")
    unknown_rows = ~frame["variant"].isin(expected).to_numpy()
    i = _first(unknown_rows)
    if i is not None:
        raise InputError(f"unexpected variant {frame['variant'].iat[i]!r} (expected one of {expected})",
                         source=source, record=frame["pair_id"].iat[i], field="variant")
    g = frame.groupby("pair_id", sort=False)
    n_var = g["variant"].nunique()
    n_ready = g["expected_ready"].nunique()
    n_chan = g["channel"].nunique()
    bad = (n_var < len(expected)) | (n_ready > 1) | (n_chan > 1)
    if bad.any():
        pid = bad.index[np.flatnonzero(bad.to_numpy())[0]]
        group = frame[frame["pair_id"] == pid]
        if n_var[pid] < len(expected):
            absent = [v for v in expected if v not in set(group["variant"])]
            raise InputError(f"pair lacks variant(s) {absent}", source=source, record=pid, field="variant")
        fld = "expected_ready" if n_ready[pid] > 1 else "channel"
        detail = ", ".join(f"{v}={x!r}" for v, x in zip(group["variant"], group[fld]))
        raise InputError(f"variants of one pair disagree ({detail})", source=source, record=pid, field=fld)
    if require_score:
        i = _first(~_scores_ok(frame["score"]))
        if i is not None:
            problem = _score_problem(frame["score"].iat[i], text=False) or "expected a number in [0, 1]"
            raise InputError(problem, source=source,
                             record=f"{frame['pair_id'].iat[i]}/{frame['variant'].iat[i]}", field="score")
    extra = [c for c in frame.columns if c not in PAIR_COLUMNS]
    out = frame[PAIR_COLUMNS + extra].copy()
    out["expected_ready"] = out["expected_ready"].astype(bool)
    out["evidence_passed"] = out["evidence_passed"].astype(bool)
    out["score"] = out["score"].astype(float)
    return out


def _read_csv(text: str, source: str) -> pd.DataFrame:
    """CSV text as a frame of strings: a duplicated header or a row of the wrong length is an error."""
    if csv.field_size_limit() < _MAX_CELL:
        csv.field_size_limit(_MAX_CELL)  # the default 128 KiB would reject a long reply text
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file (expected a header row and one row per pair variant)", source=source) from None
    names = [h.strip() for h in header]
    seen: dict[str, int] = {}
    for pos, name in enumerate(names, start=1):
        if not name:
            raise InputError(f"header column {pos} has no name", source=source, record="line 1", field="<header>")
        if name in seen:
            raise InputError(f"column named twice in the header (columns {seen[name]} and {pos})",
                             source=source, record="line 1", field=name)
        seen[name] = pos
    rows = []
    try:
        for row in reader:
            if not row:
                continue  # a blank line holds no record
            if len(row) != len(names):
                where = f"line {reader.line_num}"
                ids = [row[names.index(k)] for k in ("pair_id", "variant") if k in names and names.index(k) < len(row)]
                record = f"{'/'.join(ids)} ({where})" if ids else where
                raise InputError(f"row has {len(row)} fields, the header has {len(names)}", source=source,
                                 record=record, field="<row>")
            rows.append(row)
    except csv.Error as exc:
        raise InputError(f"is not valid CSV ({exc})", source=source, record=f"line {reader.line_num}",
                         field="<csv>") from None
    if not rows:
        raise InputError("no records (only a header)", source=source)
    return pd.DataFrame(rows, columns=names, dtype=object)


def _read_jsonl(text: str, source: str) -> list[Any]:
    """One JSON value per line; blank lines and invalid JSON are errors naming the line. Each line is parsed
    on its own (the whole file joined into one array once let a record split over two lines and two records
    on one line pass as valid)."""
    lines = jsonl_lines(text)
    records = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            raise InputError("blank line", source=source, record=f"line {lineno}")
        try:
            records.append(loads_strict(line, source=source, record=f"line {lineno}"))
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", source=source, record=f"line {lineno}") from None
    return records


def load_pairs(path: str | Path, *, score_column: str | None = "score",
               variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Load a matched-pair file (``.csv`` or ``.jsonl``) into a validated tidy frame.

    ``score_column`` names the judge's score field, which becomes ``score``: with
    ``score_column="candidate_score"`` a file's own ``score`` field is not in the frame
    (the file is not changed); ``None`` loads unscored pairs (``score`` NaN).

    CSV cells are text parsed field by field (``"0.7x"`` or an empty score is
    an error, not a NaN); a duplicated header name or a row with a different
    number of fields than the header is an error naming the line. JSONL holds
    one JSON object per line with typed values; blank lines are not allowed.

    >>> from cfbench.studies.shopflow import shipped                     # doctest: +SKIP
    >>> load_pairs(shipped("seed_observations.csv")).groupby("variant").size().tolist()  # doctest: +SKIP
    [10, 10]
    """
    path = Path(path)
    source = str(path)
    if not path.exists():
        raise InputError("file not found", source=source)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        text = read_text(path)
        if not text.strip():
            raise InputError("empty file (expected a header row and one row per pair variant)", source=source)
        frame = _read_csv(text, source)
        typed = _typed_frame(frame, source=source, text=True, score_column=score_column)
        return validate_pairs(typed, source=source, variants=variants, require_score=score_column is not None)
    if suffix in (".jsonl", ".ndjson"):
        records = _read_jsonl(read_text(path), source)
        return pairs_from_records(records, source=source, score_column=score_column, variants=variants)
    raise InputError(f"unsupported file type {suffix!r} (use .csv or .jsonl)", source=source)
