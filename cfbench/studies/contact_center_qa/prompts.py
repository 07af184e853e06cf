"""Shared pieces of the contact-center tasks: data files, the rubric, transcript rendering, reply JSON.

Both task modules (:mod:`.qa`, :mod:`.coaching`) and the scripted test doubles
(:mod:`.scripted`) import from here; nothing here imports them, so the task
modules do not import each other.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pandas as pd
import yaml

from cfbench.core.errors import InputError
from cfbench.core.files import read_yaml
from cfbench.core.render import render_transcript as format_transcript

__all__ = ["DATA_DIR", "RUBRIC_COLUMNS", "load_prompt", "load_rubric", "format_transcript", "json_object",
           "strip_fences", "prompt_parts", "NON_ANSWER", "non_answer_phrase", "opens_with_non_answer",
           "EVIDENCE_CONTRACT_LINE", "asks_for_evidence"]

DATA_DIR = Path(__file__).resolve().parent / "data"
RUBRIC_COLUMNS = ["question_id", "category", "type", "yes_means", "text", "criteria", "paraphrases"]
_SHIPPED_RUBRIC = "cfbench/studies/contact_center_qa/data/rubric.yaml"


def _data_text(*parts: str) -> str:
    return DATA_DIR.joinpath(*parts).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """Text of the shipped prompt file ``data/prompts/<name>.txt``."""
    try:
        return _data_text("prompts", f"{name}.txt")
    except FileNotFoundError:
        raise InputError("no such prompt file", source="contact_center_qa/data/prompts", record=name,
                         field="name") from None


def load_rubric(path: str | None = None) -> pd.DataFrame:
    """The Auto-QA rubric as a frame (one row per question, ``RUBRIC_COLUMNS``).

    ``path`` reads a user rubric in the same YAML layout; by default the
    shipped ``data/rubric.yaml``. The rubric version is in
    ``frame.attrs["version"]``.

    >>> r = load_rubric()
    >>> len(r), int((r["type"] == "objective").sum())
    (30, 10)
    """
    source = path or _SHIPPED_RUBRIC
    data = read_yaml(path) if path else yaml.safe_load(_data_text("rubric.yaml"))
    if not isinstance(data, dict) or "questions" not in data:
        raise InputError("rubric must be a mapping with a 'questions' list", source=source,
                         field="questions")
    categories = data.get("categories") or {}
    rows, seen = [], set()
    for i, q in enumerate(data["questions"]):
        qid = q.get("id") if isinstance(q, dict) else None
        rec = qid if qid else f"#{i}"
        if not qid or not isinstance(qid, str):
            raise InputError("missing question id", source=source, record=rec, field="id")
        if qid in seen:
            raise InputError("duplicate question id", source=source, record=qid, field="id")
        seen.add(qid)
        _check_question(q, qid, source, categories)
        rows.append({
            "question_id": qid, "category": q["category"], "type": q["type"],
            "yes_means": q.get("yes_means", "good"), "text": q["text"].strip(),
            "criteria": [str(c).strip() for c in q["criteria"]],
            "paraphrases": [str(p).strip() for p in q.get("paraphrases") or []],
        })
    frame = pd.DataFrame(rows, columns=RUBRIC_COLUMNS)
    frame.attrs["version"] = data.get("version")
    frame.attrs["name"] = data.get("name")
    return frame


def _check_question(q: dict, qid: str, source: str, categories: dict) -> None:
    for fld in ("category", "type", "text", "criteria"):
        if not q.get(fld):
            raise InputError("missing or empty", source=source, record=qid, field=fld)
    for fld in ("category", "type", "text"):
        if not isinstance(q[fld], str):
            raise InputError(f"must be text, got {type(q[fld]).__name__}", source=source, record=qid, field=fld)
    for fld in ("criteria", "paraphrases"):
        items = q.get(fld) or []
        if not isinstance(items, list) or not all(isinstance(c, str) and c.strip() for c in items):
            raise InputError("must be a list of non-empty strings", source=source, record=qid, field=fld)
    if q["type"] not in ("subjective", "objective"):
        raise InputError(f"must be subjective or objective, got {q['type']!r}", source=source,
                         record=qid, field="type")
    if categories and q["category"] not in categories:
        raise InputError(f"unknown category {q['category']!r}", source=source, record=qid,
                         field="category")
    if q.get("yes_means", "good") not in ("good", "bad"):
        raise InputError("must be good or bad", source=source, record=qid, field="yes_means")


_FENCE = re.compile(r"```(?:json|JSON)?")


def strip_fences(text: str) -> str:
    """``text`` without Markdown code-fence markers (```` ``` ```` and ```` ```json ````)."""
    return _FENCE.sub("", text)


def json_object(text: str) -> dict | None:
    """The first balanced ``{...}`` in ``text`` that parses as a JSON object, else None.

    Raw newlines inside strings are tolerated (``strict=False``); a balanced
    span that does not parse is skipped and the search goes on from the next ``{``.

    >>> json_object('Sure: {"score": 7, "analysis": "ok"} done')
    {'score': 7, 'analysis': 'ok'}
    """
    start = text.find("{")
    while start != -1:
        depth = 0
        for j in range(start, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[start:j + 1], strict=False)
                    except json.JSONDecodeError:
                        break
                    if isinstance(obj, dict):
                        return obj
                    break
        start = text.find("{", start + 1)
    return None


#: a line only the answer / rationale / evidence contract (``qa_evidence.txt``) contains
EVIDENCE_CONTRACT_LINE = "Yes or No (this word alone on the first line)"


def asks_for_evidence(task: str) -> bool:
    """True when a task block asks for the answer / rationale / evidence reply (``qa_evidence.txt``)."""
    return EVIDENCE_CONTRACT_LINE in task


def prompt_parts(messages) -> tuple[str, str, str, bool]:
    """(transcript, task, user message, fairness system prompt?) of a request's messages."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = next((m["content"] for m in reversed(list(messages)) if m["role"] == "user"), "")
    transcript = user.split("<<<", 1)[-1].split(">>>", 1)[0]
    task = user.split(">>>", 1)[-1]
    fair = "even-handed" in system
    return transcript, task, user, fair


# ----------------------------------------------------------------------------- non-answers

_CANT = r"(?:can[’']?t|cannot|can not|could not|couldn[’']?t|unable to|not able to|am unable to)"
_JUDGE_VERBS = r"(?:tell|say|determine|decide|judge|know|answer|assess|evaluate|rate|score|be (?:certain|sure))"
#: phrases that withdraw a verdict or a score ("No idea", "can't tell", "N/A", "not enough information
#: to decide", refusals to judge); used on the words around a stated value, never on a whole rationale
NON_ANSWER = re.compile(
    r"(?:\bno (?:idea|clue|comment)\b|\bno way to (?:know|tell|say|judge)\b|\bnot sure\b|\bunsure\b"
    rf"|\b{_CANT}\s+(?:really\s+)?{_JUDGE_VERBS}\b|\b(?:not enough|insufficient)\s+(?:information|evidence|context|"
    rf"detail)s?\s+(?:to|for)\s+(?:\w+\s+)?{_JUDGE_VERBS}|\bhard to (?:say|tell)\b|\bimpossible to (?:say|tell|"
    r"determine)\b|\bi (?:do not|don[’']?t) know\b|\bunclear\b|\bunknown\b|\bundetermined\b|\bn/a\b"
    r"|\bnot applicable\b|\bit depends\b|\bi[’']?m sorry\b|\bas an ai\b)", re.I)
#: a note or analysis that opens by declining to assess ("I cannot assess...", "Not enough information...")
_OPENING_NON_ANSWER = re.compile(
    r"\s*[-*•]?\s*(?:(?:there (?:is|are)|it[’']?s|it is|i am|i[’']?m|i)\s+)?"
    rf"(?:no (?:idea|clue|comment)|not sure|unsure|{_CANT}\s+{_JUDGE_VERBS}|(?:not enough|insufficient)\s+"
    r"(?:information|evidence|context|detail)|n/a\b|unknown|unclear|undetermined|sorry)", re.I)


def non_answer_phrase(text: str) -> str | None:
    """The first phrase of ``text`` that withdraws an answer (see :data:`NON_ANSWER`), else None.

    >>> non_answer_phrase("No, I can't tell from the transcript.")
    "can't tell"
    >>> non_answer_phrase("No, the agent never confirmed the fix.") is None
    True
    """
    m = NON_ANSWER.search(text or "")
    return m.group(0) if m else None


def opens_with_non_answer(text: str) -> bool:
    """True when ``text`` (a note, an analysis) begins by declining to answer or assess.

    >>> opens_with_non_answer("I cannot assess this call."), opens_with_non_answer("- The agent said 'I can't tell'")
    (True, False)
    """
    return bool(_OPENING_NON_ANSWER.match(text or ""))
