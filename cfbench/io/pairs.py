"""Matched-pair frames for routing audits (ShopFlow, seed 001).

A matched pair is one customer case written in several *variants* (e.g. a
formal and a conversational wording of the same facts). Reviewers agreed
that every variant of a pair deserves the same route, so the expected
outcome is a property of the pair, not of the row.

The tidy frame has one row per (pair, variant):

=================  ======  ==================================================
column             dtype   meaning
=================  ======  ==================================================
``pair_id``        str     the pair's id (unique per pair)
``variant``        str     the wording condition / audit slice
``expected_ready`` bool    reviewers say the reply may be auto-served
``channel``        str     e.g. ``chat`` / ``email``
``evidence_passed`` bool   the evidence gate passed (default ``True``)
``score``          float   judge score in [0, 1] (absent until judged)
=================  ======  ==================================================

Further columns (request and reply text, notes, ...) are carried along
unchanged. Files are CSV or JSONL with one record per (pair, variant).
Every problem raises :class:`cfbench.core.errors.InputError` naming the pair and
the field; nothing is dropped or coerced silently.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.files import read_text

__all__ = [
    "PAIR_COLUMNS",
    "load_pairs",
    "validate_pairs",
    "pairs_from_records",
]

#: Columns every validated pair frame has, in this order (extra columns follow).
PAIR_COLUMNS = ["pair_id", "variant", "expected_ready", "channel", "evidence_passed", "score"]

_REQUIRED = ("pair_id", "variant", "expected_ready", "channel")
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def _as_bool(value: Any, *, source: str, record: object, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int,)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise InputError(f"expected a boolean (true/false), got {value!r}",
                     source=source, record=record, field=field)


def _as_score(value: Any, *, source: str, record: object, field: str) -> float:
    if isinstance(value, bool):
        raise InputError(f"expected a number in [0, 1], got the boolean {value!r}",
                         source=source, record=record, field=field)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise InputError("score is empty", source=source, record=record, field=field)
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"expected a number in [0, 1], got {value!r}",
                             source=source, record=record, field=field) from None
    if value is None:
        raise InputError("score is missing", source=source, record=record, field=field)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"expected a number in [0, 1], got {value!r}",
                         source=source, record=record, field=field) from None
    if math.isnan(number):
        raise InputError("score is NaN", source=source, record=record, field=field)
    if not 0.0 <= number <= 1.0:
        raise InputError(f"score {number!r} is outside [0, 1]",
                         source=source, record=record, field=field)
    return number


def _as_label(value: Any, *, source: str, record: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected a non-empty string, got {value!r}",
                         source=source, record=record, field=field)
    if value != value.strip():
        raise InputError(f"{value!r} has leading or trailing whitespace",
                         source=source, record=record, field=field)
    return value


def pairs_from_records(
    records: Iterable[dict[str, Any]],
    *,
    source: str = "<records>",
    score_column: str | None = "score",
    variants: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Build and validate a pair frame from dict records (one per pair × variant).

    ``score_column`` names the field holding the judge score (it becomes
    ``score``); ``None`` means the pairs are not scored yet (``score`` is NaN).
    ``variants`` fixes the expected set of variants; by default it is every
    variant that appears in the records, and each pair must have all of them.
    """
    rows: list[dict[str, Any]] = []
    for i, rec in enumerate(records, start=1):
        if not isinstance(rec, dict):
            raise InputError(f"expected an object, got {type(rec).__name__}", source=source,
                             record=f"row {i}")
        pid = rec.get("pair_id")
        ref = pid if isinstance(pid, str) and pid.strip() else f"row {i}"
        for name in _REQUIRED:
            if name not in rec or rec[name] is None or (isinstance(rec[name], float) and math.isnan(rec[name])):
                raise InputError("missing", source=source, record=ref, field=name)
        row = dict(rec)
        row["pair_id"] = _as_label(rec["pair_id"], source=source, record=ref, field="pair_id")
        row["variant"] = _as_label(rec["variant"], source=source, record=ref, field="variant")
        row["channel"] = _as_label(rec["channel"], source=source, record=ref, field="channel")
        ref = f"{row['pair_id']}/{row['variant']}"
        row["expected_ready"] = _as_bool(rec["expected_ready"], source=source, record=ref,
                                         field="expected_ready")
        ev = rec.get("evidence_passed", True)
        if ev is None or (isinstance(ev, str) and not ev.strip()):
            raise InputError("empty; write true or false (or leave the column out)",
                             source=source, record=ref, field="evidence_passed")
        row["evidence_passed"] = _as_bool(ev, source=source, record=ref, field="evidence_passed")
        if score_column is None:
            row["score"] = math.nan
        else:
            if score_column not in rec:
                raise InputError("missing", source=source, record=ref, field=score_column)
            row["score"] = _as_score(rec[score_column], source=source, record=ref, field=score_column)
        rows.append(row)
    if not rows:
        raise InputError("no records", source=source)
    frame = pd.DataFrame(rows)
    if score_column not in (None, "score") and score_column in frame.columns:
        frame = frame.drop(columns=[score_column])
    return validate_pairs(frame, source=source, variants=variants, require_score=score_column is not None)


def validate_pairs(
    frame: pd.DataFrame,
    *,
    source: str = "<frame>",
    variants: Sequence[str] | None = None,
    require_score: bool = True,
) -> pd.DataFrame:
    """Check the matched-pair invariants and return the frame in canonical column order.

    - no duplicate (pair_id, variant) rows;
    - every pair has every variant (``variants`` or all variants seen);
    - all variants of a pair share ``expected_ready`` and ``channel``;
    - scores are finite and in [0, 1] when ``require_score``.
    """
    missing_cols = [c for c in PAIR_COLUMNS if c not in frame.columns]
    if missing_cols:
        raise InputError(f"missing column(s) {missing_cols}", source=source, field=missing_cols[0])
    dup = frame.duplicated(["pair_id", "variant"], keep="first")
    if dup.any():
        row = frame.loc[dup].iloc[0]
        raise InputError(f"duplicate row for variant {row['variant']!r}", source=source,
                         record=row["pair_id"], field="variant")
    expected_variants = list(variants) if variants is not None else list(dict.fromkeys(frame["variant"]))
    if len(expected_variants) < 2:
        raise InputError(f"a matched-pair audit needs at least two variants, found {expected_variants}",
                         source=source, field="variant")
    unknown = sorted(set(frame["variant"]) - set(expected_variants))
    if unknown:
        pid = frame.loc[frame["variant"].isin(unknown), "pair_id"].iloc[0]
        raise InputError(f"unexpected variant {unknown[0]!r} (expected one of {expected_variants})",
                         source=source, record=pid, field="variant")
    for pid, group in frame.groupby("pair_id", sort=False):
        have = set(group["variant"])
        absent = [v for v in expected_variants if v not in have]
        if absent:
            raise InputError(f"pair lacks variant(s) {absent}", source=source, record=pid, field="variant")
        for field in ("expected_ready", "channel"):
            values = group[field].tolist()
            if len(set(values)) > 1:
                detail = ", ".join(f"{v}={x!r}" for v, x in zip(group["variant"], values))
                raise InputError(f"variants of one pair disagree ({detail})", source=source,
                                 record=pid, field=field)
    if require_score:
        for _, row in frame.iterrows():
            _as_score(row["score"], source=source, record=f"{row['pair_id']}/{row['variant']}", field="score")
    extra = [c for c in frame.columns if c not in PAIR_COLUMNS]
    out = frame[PAIR_COLUMNS + extra].reset_index(drop=True)
    out["expected_ready"] = out["expected_ready"].astype(bool)
    out["evidence_passed"] = out["evidence_passed"].astype(bool)
    out["score"] = out["score"].astype(float)
    return out


def load_pairs(
    path: str | Path,
    *,
    score_column: str | None = "score",
    variants: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Load a matched-pair file (``.csv`` or ``.jsonl``) into a validated tidy frame.

    CSV cells are read as text and parsed field by field (so ``"0.7x"`` or an
    empty score is an error, not a NaN). JSONL holds one JSON object per line;
    blank lines are not allowed.

    >>> frame = load_pairs("seed_observations.csv")   # doctest: +SKIP
    >>> frame.groupby("variant").size().tolist()                     # doctest: +SKIP
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
        table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        records = table.to_dict(orient="records")
        for rec in records:  # an absent optional column stays absent; an empty cell is an error
            for key, value in list(rec.items()):
                if value == "" and key in _REQUIRED:
                    rec[key] = None
    elif suffix in (".jsonl", ".ndjson"):
        records = []
        for lineno, line in enumerate(read_text(path).splitlines(), start=1):
            if not line.strip():
                raise InputError("blank line", source=source, record=f"line {lineno}")
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", source=source,
                                 record=f"line {lineno}") from None
    else:
        raise InputError(f"unsupported file type {suffix!r} (use .csv or .jsonl)", source=source)
    return pairs_from_records(records, source=source, score_column=score_column, variants=variants)
