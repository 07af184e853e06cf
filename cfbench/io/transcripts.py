"""Contact-center transcripts: the documented format, loaders and validation.

A transcript is one conversation between an *agent* and a *customer*.
Two on-disk forms are accepted (see ``docs/transcripts.md``):

JSONL, one transcript per line::

    {"id": "t1", "domain": "fintech", "agent_name": "Maria",
     "turns": [{"speaker": "agent", "text": "Hello, this is Maria."},
               {"speaker": "customer", "text": "Hi Maria."}],
     "labels": {"issue_resolution": "Yes"}, "meta": {}}

CSV, one row per turn, with columns ``id, turn, speaker, text`` and the
optional record-level columns ``domain, agent_name, labels, meta`` (``labels``
and ``meta`` hold JSON objects; a record-level value may be repeated on every
row of the transcript or given on one row only, but never two different values).

Every record is validated. Bad input raises :class:`cfbench.core.errors.InputError`
naming the file, the record and the field; nothing is dropped or coerced.
:func:`validate_transcripts` lists *all* problems (one per bad record) instead
of stopping at the first.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.files import jsonl_lines, read_text
from cfbench.core.render import approx_tokens
from cfbench.core.text import find_unstorable

from .headers import check_header, loads_strict

__all__ = [
    "SPEAKERS",
    "LABEL_VALUES",
    "MAX_TURNS",
    "MAX_TURN_CHARS",
    "MAX_TRANSCRIPT_CHARS",
    "Turn",
    "Transcript",
    "load_transcripts",
    "validate_transcripts",
    "transcripts_from_records",
    "save_transcripts",
    "transcripts_frame",
]

#: The two speakers a turn may have.
SPEAKERS = ("agent", "customer")
#: The values a ground-truth label may take.
LABEL_VALUES = ("Yes", "No")

#: Size limits, far above the longest call of seed 000's corpus (918 turns, ~6,460 tokens): a file
#: that breaks them is almost surely not a transcript (a pasted log, a base64 blob), and judging it
#: would cost hours and fill the cache. They are module constants: set them before loading to change them.
MAX_TURNS = 5_000
MAX_TURN_CHARS = 20_000
MAX_TRANSCRIPT_CHARS = 200_000
_TURN_NUMBER = re.compile(r"[+-]?[0-9]+")  # a CSV turn: ASCII digits, no digit separator

_RECORD_KEYS = {"id", "domain", "agent_name", "turns", "labels", "meta"}
_TURN_KEYS = {"speaker", "text"}
_CSV_REQUIRED = ("id", "turn", "speaker", "text")
_CSV_OPTIONAL = ("domain", "agent_name", "labels", "meta")


@dataclass(frozen=True)
class Turn:
    """One utterance. ``speaker`` is ``"agent"`` or ``"customer"``."""

    speaker: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"speaker": self.speaker, "text": self.text}


@dataclass(frozen=True)
class Transcript:
    """A validated conversation.

    ``labels`` maps a QA question id (see :mod:`cfbench.studies.contact_center_qa.synth.labels`) to
    ``"Yes"``/``"No"``; ``meta`` is free-form JSON (the synthetic generator
    stores its dialogue-act plan there, which lets style counterfactuals be
    re-realized exactly).
    """

    id: str
    turns: tuple[Turn, ...]
    domain: str = ""
    agent_name: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "domain": self.domain}
        if self.agent_name is not None:
            out["agent_name"] = self.agent_name
        out["turns"] = [t.to_dict() for t in self.turns]
        if self.labels:
            out["labels"] = dict(self.labels)
        out["meta"] = dict(self.meta)
        return out

    @property
    def n_turns(self) -> int:
        return len(self.turns)


# --------------------------------------------------------------------------- validation

def _err(problem: str, source: str, record: object, fld: str | None) -> InputError:
    return InputError(problem, source=source, record=record, field=fld)


def _check_str(value: Any, *, source: str, record: object, fld: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _err(f"must be a string, got {type(value).__name__}", source, record, fld)
    if not allow_empty and not value.strip():
        raise _err("is empty", source, record, fld)
    return value


def _parse_record(obj: Any, *, source: str, position: str) -> Transcript:
    """Validate one JSON-like record. ``position`` names it while its id is unknown."""
    if not isinstance(obj, Mapping):
        raise _err(f"must be a JSON object, got {type(obj).__name__}", source, position, None)
    if "id" not in obj:
        raise _err("is missing", source, position, "id")
    rid = obj["id"]
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise _err(f"must be a string or integer, got {type(rid).__name__}", source, position, "id")
    rid = str(rid)
    if not rid.strip():
        raise _err("is empty", source, position, "id")
    unknown = sorted(set(obj) - _RECORD_KEYS)
    if unknown:
        raise _err(f"unknown field(s) {unknown}; allowed: {sorted(_RECORD_KEYS)}", source, rid, unknown[0])
    if bad := find_unstorable(obj):  # a lone surrogate (JSON "\ud800") would fail far later, unnamed
        raise _err(f"{bad[1]}, which cannot be stored", source, rid, bad[0])

    domain = obj.get("domain", "")
    if domain is None:
        domain = ""
    _check_str(domain, source=source, record=rid, fld="domain", allow_empty=True)

    agent_name = obj.get("agent_name")
    if agent_name is not None:
        _check_str(agent_name, source=source, record=rid, fld="agent_name")
        agent_name = agent_name.strip()

    if "turns" not in obj:
        raise _err("is missing", source, rid, "turns")
    turns_in = obj["turns"]
    if not isinstance(turns_in, list):
        raise _err(f"must be a list, got {type(turns_in).__name__}", source, rid, "turns")
    if not turns_in:
        raise _err("is empty (a transcript needs at least one turn)", source, rid, "turns")
    turns: list[Turn] = []
    for i, t in enumerate(turns_in):
        where = f"turns[{i}]"
        if not isinstance(t, Mapping):
            raise _err(f"must be an object with speaker and text, got {type(t).__name__}", source, rid, where)
        extra = sorted(set(t) - _TURN_KEYS)
        if extra:
            raise _err(f"unknown key(s) {extra}; a turn has only speaker and text", source, rid, f"{where}.{extra[0]}")
        if "speaker" not in t or t["speaker"] is None:
            raise _err("is missing", source, rid, f"{where}.speaker")
        speaker = t["speaker"]
        if not isinstance(speaker, str) or speaker not in SPEAKERS:
            raise _err(f"unknown speaker {speaker!r}; must be one of {list(SPEAKERS)}", source, rid, f"{where}.speaker")
        if "text" not in t or t["text"] is None:
            raise _err("is missing", source, rid, f"{where}.text")
        _check_str(t["text"], source=source, record=rid, fld=f"{where}.text")
        if len(t["text"]) > MAX_TURN_CHARS:
            raise _err(f"is {len(t['text']):,} characters long; a turn may have at most {MAX_TURN_CHARS:,} "
                       "(cfbench.io.transcripts.MAX_TURN_CHARS)", source, rid, f"{where}.text")
        turns.append(Turn(speaker, t["text"]))
    if len(turns) > MAX_TURNS:
        raise _err(f"has {len(turns):,} turns; a transcript may have at most {MAX_TURNS:,} "
                   "(cfbench.io.transcripts.MAX_TURNS)", source, rid, "turns")
    total = sum(len(t.text) for t in turns)
    if total > MAX_TRANSCRIPT_CHARS:
        raise _err(f"has {total:,} characters of text; a transcript may have at most {MAX_TRANSCRIPT_CHARS:,} "
                   "(cfbench.io.transcripts.MAX_TRANSCRIPT_CHARS)", source, rid, "turns")
    if not any(t.speaker == "agent" for t in turns):
        raise _err("has no agent turn: there is no agent to evaluate", source, rid, "turns")

    labels = obj.get("labels")
    labels = {} if labels is None else labels
    if not isinstance(labels, Mapping):
        raise _err(f"must be an object of question_id -> 'Yes'/'No', got {type(labels).__name__}", source, rid, "labels")
    for q, v in labels.items():
        if not isinstance(q, str) or not q.strip():
            raise _err("has an empty question id", source, rid, "labels")
        if v not in LABEL_VALUES:
            raise _err(f"must be 'Yes' or 'No', got {v!r}", source, rid, f"labels.{q}")

    meta = obj.get("meta")
    meta = {} if meta is None else meta
    if not isinstance(meta, Mapping):
        raise _err(f"must be an object, got {type(meta).__name__}", source, rid, "meta")

    return Transcript(id=rid, turns=tuple(turns), domain=domain, agent_name=agent_name,
                      labels=dict(labels), meta=dict(meta))


def transcripts_from_records(records: Iterable[Any], *, source: str = "<records>") -> list[Transcript]:
    """Validate in-memory records (dicts in the JSONL shape) into transcripts.

    >>> ts = transcripts_from_records([{"id": "a", "turns": [{"speaker": "agent", "text": "Hi"}]}])
    >>> ts[0].turns[0].speaker
    'agent'
    """
    out: list[Transcript] = []
    seen: dict[str, str] = {}
    for n, rec in enumerate(records):
        position = f"#{n + 1}"
        t = _parse_record(rec, source=source, position=position)
        if t.id in seen:
            raise _err(f"duplicate id (first seen at {seen[t.id]})", source, t.id, "id")
        seen[t.id] = position
        out.append(t)
    return out


# --------------------------------------------------------------------------- readers

def _jsonl_records(path: Path) -> Iterable[tuple[str, Any]]:
    text = read_text(path)
    for lineno, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {lineno}", loads_strict(line, source=str(path), record=f"line {lineno}")
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON ({exc.msg} at column {exc.colno})", source=str(path),
                             record=f"line {lineno}", field="<json>") from None


def _json_cell(value: str, *, source: str, record: str, fld: str) -> Any:
    try:
        return loads_strict(value, source=source, record=record)
    except json.JSONDecodeError as exc:
        raise _err(f"must hold a JSON object ({exc.msg})", source, record, fld) from None


def _csv_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    text = read_text(path)
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # a turn may be long; never a csv.Error
    reader = csv.DictReader(io.StringIO(text, newline=""))
    cols = reader.fieldnames or []
    check_header(cols, source=str(path))  # DictReader would let a second `text` column replace the first
    missing = [c for c in _CSV_REQUIRED if c not in cols]
    if missing:
        raise InputError(f"missing column(s) {missing}; need {list(_CSV_REQUIRED)}", source=str(path),
                         record="header", field=missing[0])
    unknown = [c for c in cols if c not in _CSV_REQUIRED + _CSV_OPTIONAL]
    if unknown:
        raise InputError(f"unknown column(s) {unknown}", source=str(path), record="header", field=unknown[0])
    src = str(path)
    recs: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    positions: dict[str, list[tuple[int, int, dict]]] = {}
    for rowno, row in enumerate(reader, start=2):
        if None in row:
            raise _err("has more cells than the header", src, f"row {rowno}", "<row>")
        rid = (row.get("id") or "").strip()
        if not rid:
            raise _err("is empty", src, f"row {rowno}", "id")
        if rid not in recs:
            recs[rid] = {"id": rid}
            order.append(rid)
            positions[rid] = []
        turn_raw = (row.get("turn") or "").strip()
        if not _TURN_NUMBER.fullmatch(turn_raw):  # int() would also read "1_0" as 10 and "١" as 1
            raise _err(f"must be an integer turn number in ASCII digits, got {turn_raw!r} (row {rowno})",
                       src, rid, "turn")
        turn_no = int(turn_raw)
        positions[rid].append((turn_no, rowno, {"speaker": (row.get("speaker") or "").strip() or None,
                                                "text": row.get("text") if row.get("text") else None}))
        for col in _CSV_OPTIONAL:
            raw = row.get(col)
            if raw is None or raw == "":
                continue
            value = _json_cell(raw, source=src, record=rid, fld=col) if col in ("labels", "meta") else raw
            if col in recs[rid] and recs[rid][col] != value:
                raise _err(f"differs between rows of the same transcript (row {rowno})", src, rid, col)
            recs[rid][col] = value
    out: list[tuple[str, dict[str, Any]]] = []
    for rid in order:
        rows = positions[rid]
        nums = [n for n, _, _ in rows]
        if len(set(nums)) != len(nums):
            dup = next(n for n in nums if nums.count(n) > 1)
            raise _err(f"turn number {dup} appears twice", src, rid, "turn")
        rows.sort(key=lambda r: r[0])
        recs[rid]["turns"] = [t for _, _, t in rows]
        out.append((rid, recs[rid]))
    return out


def _records(path: Path) -> Iterable[tuple[str, Any]]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl_records(path)
    if suffix == ".csv":
        return _csv_records(path)
    raise InputError(f"unknown transcript file type {suffix!r} (use .jsonl or .csv)", source=str(path),
                     record=None, field="<path>")


def _check_exists(path: Path) -> None:
    if not path.exists():
        raise InputError("file does not exist", source=str(path), record=None, field="<path>")


def load_transcripts(path: str | os.PathLike[str]) -> list[Transcript]:
    """Load and validate transcripts from a ``.jsonl`` or ``.csv`` file.

    Raises :class:`~cfbench.core.errors.InputError` at the first bad record, naming
    the file, the record (its id, or its line/row while the id is unknown) and
    the field. Use :func:`validate_transcripts` to see every problem at once.

    >>> from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path
    >>> ts = load_transcripts(shipped_transcripts_path())   # doctest: +SKIP
    """
    p = Path(path)
    _check_exists(p)
    src = str(p)
    out: list[Transcript] = []
    seen: dict[str, str] = {}
    for position, rec in _records(p):
        t = _parse_record(rec, source=src, position=position)
        if t.id in seen:
            raise _err(f"duplicate id (first seen at {seen[t.id]})", src, t.id, "id")
        seen[t.id] = position
        out.append(t)
    if not out:
        raise InputError("contains no transcripts", source=src, record=None, field="<file>")
    return out


def validate_transcripts(path: str | os.PathLike[str]) -> list[InputError]:
    """Every problem in a transcript file, one :class:`InputError` per bad record.

    File-level problems (unreadable, not UTF-8, bad CSV header) are returned as
    a single error, since no record can be read past them; so is a file with no
    record at all (empty, or blank lines only), which :func:`load_transcripts` refuses.
    """
    p = Path(path)
    errors: list[InputError] = []
    try:
        _check_exists(p)
        items = list(_records(p)) if p.suffix.lower() == ".csv" else None
    except InputError as exc:
        return [exc]
    if items is None:
        try:
            text = read_text(p)
        except InputError as exc:
            return [exc]
        items = []
        for lineno, line in enumerate(jsonl_lines(text), start=1):
            if not line.strip():
                continue
            try:
                items.append((f"line {lineno}", loads_strict(line, source=str(p), record=f"line {lineno}")))
            except InputError as exc:
                errors.append(exc)
            except json.JSONDecodeError as exc:
                errors.append(InputError(f"is not valid JSON ({exc.msg})", source=str(p),
                                         record=f"line {lineno}", field="<json>"))
    seen: set[str] = set()
    for position, rec in items:
        try:
            t = _parse_record(rec, source=str(p), position=position)
        except InputError as exc:
            errors.append(exc)
            continue
        if t.id in seen:
            errors.append(_err("duplicate id", str(p), t.id, "id"))
        seen.add(t.id)
    if not items and not errors:  # as load_transcripts says: an empty file holds nothing to judge
        errors.append(InputError("contains no transcripts", source=str(p), record=None, field="<file>"))
    return errors


# --------------------------------------------------------------------------- writers / frames

def save_transcripts(transcripts: Sequence[Transcript], path: str | os.PathLike[str]) -> Path:
    """Write transcripts as JSONL (``.jsonl``) or the one-row-per-turn CSV (``.csv``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() == ".csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(_CSV_REQUIRED) + list(_CSV_OPTIONAL))
        for t in transcripts:
            for i, turn in enumerate(t.turns):
                first = i == 0
                w.writerow([t.id, i, turn.speaker, turn.text,
                            t.domain if first else "", (t.agent_name or "") if first else "",
                            json.dumps(dict(t.labels), ensure_ascii=False) if first and t.labels else "",
                            json.dumps(dict(t.meta), ensure_ascii=False) if first and t.meta else ""])
        p.write_text(buf.getvalue(), encoding="utf-8")
    else:
        lines = [json.dumps(t.to_dict(), ensure_ascii=False, sort_keys=False) for t in transcripts]
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p



def transcripts_frame(transcripts: Sequence[Transcript]) -> pd.DataFrame:
    """One row per transcript: id, domain, agent_name, n_turns, n_words, labels."""
    rows = []
    for t in transcripts:
        words = sum(len(x.text.split()) for x in t.turns)
        rows.append({"item_id": t.id, "domain": t.domain, "agent_name": t.agent_name,
                     "n_turns": t.n_turns, "n_words": words,
                     "approx_tokens": sum(approx_tokens(x.text) for x in t.turns),
                     **{f"label_{q}": v for q, v in t.labels.items()}})
    return pd.DataFrame(rows)
