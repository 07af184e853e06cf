"""Auto-QA judge task for the contact-center study (seed 000).

A judge reads one call transcript (optionally with a metadata header) and
answers one rubric question Yes/No with a confidence 0-100.

Three output contracts, all parsed by :func:`parse_qa`:

``free``     the seed's free-text contract: evidences, synthesis,
             ``Confidence: N`` and ``Hence, the final answer is: Yes|No``
``json``     JSON-constrained decoding (for the local model):
             ``{"answer": "Yes"|"No", "confidence": 0-100[, "evidence": "..."]}``
``compact``  answer first, then the confidence (``Yes 85``), so the first
             generated token carries P(Yes)

A reply whose answer cannot be read is a parse failure: ``parse_ok=False``
with the raw text kept by the caller; it is never turned into "No".

Prompt layout (see ``data/prompts/README.md`` in this package): fixed system
prompt, then the user message with the transcript first and the question
last, so every question about one variant reuses the transcript's KV cache.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.judges.base import GenerationConfig, Request, yes_probability
from cfbench.studies.contact_center_qa.prompts import (RUBRIC_COLUMNS, format_transcript, json_object,
                                                       load_prompt, load_rubric, non_answer_phrase, strip_fences)

__all__ = [
    "QA_MODES",
    "RUBRIC_COLUMNS",  # re-exported from .prompts
    "load_rubric",
    "load_prompt",
    "format_transcript",
    "qa_json_schema",
    "qa_messages",
    "qa_config",
    "qa_request",
    "parse_qa",
    "parse_qa_frame",
]

QA_MODES = ("free", "json", "compact")


# ----------------------------------------------------------------------------- requests

def qa_json_schema(evidence_chars: int = 0) -> dict:
    """JSON schema of the constrained mode; ``evidence_chars`` > 0 adds a short quote."""
    props: dict[str, Any] = {
        "answer": {"type": "string", "enum": ["Yes", "No"]},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
    }
    required = ["answer", "confidence"]
    if evidence_chars > 0:
        props["evidence"] = {"type": "string", "maxLength": int(evidence_chars)}
        required.append("evidence")
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


def _question_block(question: Mapping[str, Any], paraphrase: int | None) -> tuple[str, str]:
    text = question["text"]
    if paraphrase is not None and paraphrase >= 0:
        paras = list(question.get("paraphrases") or [])
        if paraphrase >= len(paras):
            raise InputError(f"question has {len(paras)} paraphrases, asked for #{paraphrase}",
                             record=question.get("question_id"), field="paraphrases")
        text = paras[paraphrase]
    criteria = "\n".join(f"- {c}" for c in question["criteria"])
    return text, criteria


def qa_messages(transcript: str, question: Mapping[str, Any], *, mode: str = "json",
                fairness: bool = False, evidence_chars: int = 0,
                paraphrase: int | None = None) -> tuple[dict, dict]:
    """System + user messages asking ``question`` (a rubric row) about ``transcript``."""
    if mode not in QA_MODES:
        raise ValueError(f"mode must be one of {QA_MODES}, got {mode!r}")
    qtext, criteria = _question_block(question, paraphrase)
    if mode == "free":
        task = load_prompt("qa_free").format(question=qtext, criteria=criteria)
    elif mode == "json":
        shape = '{"answer": "Yes" or "No", "confidence": whole number 0-100 for how sure you are'
        shape += ', "evidence": a short quote from the call}' if evidence_chars > 0 else "}"
        task = load_prompt("qa_json").format(question=qtext, criteria=criteria, shape=shape)
    else:
        task = load_prompt("qa_compact").format(question=qtext, criteria=criteria)
    system = load_prompt("system_fair_qa" if fairness else "system").strip()
    user = load_prompt("user_frame").format(transcript=transcript, task=task.strip())
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def qa_config(mode: str, base: GenerationConfig | None = None, *, evidence_chars: int = 0,
              top_logprobs: int = 5) -> GenerationConfig:
    """Generation settings for a mode: JSON schema for ``json``, short budgets."""
    base = base or GenerationConfig(temperature=0.0, max_tokens=600, seed=0)
    if mode == "json":
        return base.replace(json_schema=qa_json_schema(evidence_chars),
                            max_tokens=min(base.max_tokens, 24 + evidence_chars // 2),
                            top_logprobs=top_logprobs)
    if mode == "compact":
        return base.replace(max_tokens=min(base.max_tokens, 10), top_logprobs=top_logprobs)
    return base.replace(top_logprobs=top_logprobs)


def qa_request(request_id: str, transcript: str, question: Mapping[str, Any], *,
               mode: str = "json", fairness: bool = False, evidence_chars: int = 0,
               config: GenerationConfig | None = None, repeat: int = 0,
               paraphrase: int | None = None) -> Request:
    """One :class:`Request` for an Auto-QA judgment."""
    msgs = qa_messages(transcript, question, mode=mode, fairness=fairness,
                       evidence_chars=evidence_chars, paraphrase=paraphrase)
    cfg = config if config is not None else qa_config(mode, evidence_chars=evidence_chars)
    return Request(request_id, messages=msgs, config=cfg, repeat=repeat)


# ----------------------------------------------------------------------------- parsing

_EMPH = re.compile(r"[*_`#]+")
_NOT_BOTH = r"\b(?![-'’]\w)(?!\s*(?:/|or|and)\s*(?:yes|no)\b)"
_FINAL = re.compile(r"final\s+answer\s*(?:is|would\s+be|:)?\s*[:\-=]?\s*\(?\"?'?(yes|no)" + _NOT_BOTH, re.I)
_ANSWER_LINE = re.compile(r"(?:^|\n)\s*(?:\d\.\s*)?answer\s*(?:[:\-=]\s*|\n\s*)\"?'?(yes|no)" + _NOT_BOTH, re.I)
_LEADING = re.compile(r"^\s*[\"'(\[]?\s*(yes|no)" + _NOT_BOTH, re.I)
# A "-" right before a digit is a sign, not a separator: "Yes -20" must not read as confidence 20.
_CONF = re.compile(r"confidence(?:\s+score)?(?:\s+level)?\s*(?:is|of|:|=|-(?!\d))?\s*[:=]?\s*"
                   r"(-?\d{1,3}(?:\.\d+)?)\s*(%|/\s*100|out of 100)?", re.I)
_NUMBER_AFTER_ANSWER = re.compile(r"^\s*[\"'(\[]?\s*(?:yes|no)\b(?:[\s,;:|()\"'\]]|-(?!\d))*"
                                  r"(?:confidence\s*[:=]?\s*)?(-?\d{1,3}(?:\.\d+)?)\s*(%)?", re.I)
# after a verdict: a question mark withdraws it; "No" followed by a word is a phrase ("No idea", "No way to
# tell", "No comment"), not the answer No
_QUESTIONED = re.compile(r"[\s\"'’)\]]*\?")
_NO_PHRASE = re.compile(r"[ \t]+[a-z]", re.I)
_SECTION = re.compile(r"(evidences?|synthesis)\s*:\s*(.*?)(?=\n\s*(?:evidences?|synthesis|confidence|"
                      r"hence|final answer)\b|\Z)", re.I | re.S)


def _empty_result() -> dict[str, Any]:
    return {"answer": None, "answer_yes": math.nan, "confidence": math.nan, "evidence": None,
            "synthesis": None, "parse_ok": False, "parse_error": None, "parse_note": None,
            "p_yes": math.nan}


def _confidence_value(raw: str, unit: str | None) -> tuple[float, str | None]:
    value = float(raw)
    if value < 0:
        return math.nan, f"confidence {raw} is below 0"
    if "." in raw and value <= 1.0 and not unit:
        return math.nan, f"confidence {raw} looks like a fraction, not a 0-100 number"
    if value > 100:
        return math.nan, f"confidence {raw} is above 100"
    return value, None


def _set_confidence(out: dict, notes: list[str], raw: str, unit: str | None) -> None:
    value, note = _confidence_value(raw, unit)
    out["confidence"] = value
    if note:
        notes.append(note)


def _answer_from_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, str):
        m = re.fullmatch(r"\s*[*_\"']*\s*(yes|no)\s*[.!*_\"']*\s*", value, re.I)
        if m:
            return m.group(1).capitalize()
    return None


def parse_qa(text: str | None, top_logprobs: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Read an Auto-QA reply in any of the three contracts.

    Returns ``answer`` ("Yes"/"No"/None), ``answer_yes`` (1.0/0.0/NaN),
    ``confidence`` (0-100 or NaN), ``evidence``, ``synthesis``, ``parse_ok``,
    ``parse_error`` (why parsing failed), ``parse_note`` (what was missing
    from an otherwise readable reply, e.g. no confidence) and ``p_yes`` (from first-token logprobs, NaN when absent).
    An unreadable or ambiguous answer gives ``parse_ok=False``, never "No".

    >>> parse_qa("Confidence: 80\\nHence, the final answer is: **Yes**.")["answer"]
    'Yes'
    >>> parse_qa("I cannot tell from this call.")["parse_ok"]
    False
    """
    out = _empty_result()
    # first-token logprobs carry P(Yes) only when the reply starts with the answer
    # (compact contract); in JSON mode the first token is "{" and P(Yes) stays NaN
    if top_logprobs and text is not None and _LEADING.match(str(text)):
        out["p_yes"] = yes_probability(top_logprobs)
    if text is None or not str(text).strip():
        out["parse_error"] = "empty reply"
        return out
    raw = str(text)
    notes: list[str] = []

    obj = json_object(strip_fences(raw)) if "{" in raw else None
    if obj is not None:
        lowered = {str(k).strip().lower(): v for k, v in obj.items()}
        ans_key = next((k for k in ("answer", "final_answer", "final answer", "verdict") if k in lowered), None)
        if ans_key is not None:
            answer = _answer_from_value(lowered[ans_key])
            if answer is None:
                out["parse_error"] = f"JSON answer {lowered[ans_key]!r} is not Yes/No"
                return out
            out["answer"] = answer
            conf = lowered.get("confidence")
            if isinstance(conf, bool):
                conf = None
            if isinstance(conf, (int, float)):
                conf = str(conf)
            if isinstance(conf, str):
                m = re.fullmatch(r"\s*(\d{1,3}(?:\.\d+)?)\s*(%|/\s*100)?\s*", conf)
                if m:
                    _set_confidence(out, notes, m.group(1), m.group(2))
                else:
                    notes.append(f"confidence {conf!r} is not a number")
            elif conf is None:
                notes.append("no confidence")
            ev = lowered.get("evidence", lowered.get("evidences"))
            out["evidence"] = ev if isinstance(ev, str) else (json.dumps(ev) if ev is not None else None)
            syn = lowered.get("synthesis", lowered.get("rationale"))
            out["synthesis"] = syn if isinstance(syn, str) else None
            return _finish(out, notes)

    clean = _EMPH.sub("", strip_fences(raw))
    found = list(_FINAL.finditer(clean)) or list(_ANSWER_LINE.finditer(clean))
    if len({m.group(1).lower() for m in found}) > 1:
        # several "final answer" statements that disagree: take the last one only
        # when the reply explicitly concludes with it, else it is ambiguous
        if len(clean[found[-1].end():].strip()) > 80:
            out["parse_error"] = "conflicting final answers"
            return out
    verdict = found[-1] if found else _LEADING.match(clean)
    if verdict is None:
        out["parse_error"] = "no final Yes/No answer found"
        return out
    out["answer"] = verdict.group(1).capitalize()
    number = _NUMBER_AFTER_ANSWER.match(clean) if not found else None
    withdrawn = _withdrawn(clean, verdict, out["answer"], stated_confidence=number is not None)
    if withdrawn:
        out["answer"] = None
        out["parse_error"] = f"non-answer: {withdrawn}"
        return out
    if number:
        _set_confidence(out, notes, number.group(1), number.group(2))

    confs = list(_CONF.finditer(clean))
    if confs:
        _set_confidence(out, notes, confs[-1].group(1), confs[-1].group(2))
    elif math.isnan(out["confidence"]):
        notes.append("no confidence")
    for m in _SECTION.finditer(clean):
        key = "evidence" if m.group(1).lower().startswith("evidence") else "synthesis"
        if out[key] is None:
            out[key] = m.group(2).strip() or None
    return _finish(out, notes)


def _withdrawn(clean: str, verdict: re.Match, answer: str, *, stated_confidence: bool) -> str | None:
    """Why the Yes/No found at ``verdict`` is not an answer, or None when it stands.

    A question mark right after it, "No" opening a phrase ("No idea", "No way to tell"),
    or - for an answer at the start of the reply with no confidence number after it -
    a non-answer phrase in the rest of its line ("No, I can't tell from the call").
    """
    after = clean[verdict.end():]
    if _QUESTIONED.match(after):
        return "the answer is a question"
    if answer == "No" and _NO_PHRASE.match(after):
        return f"'No' opens a phrase ({(verdict.group(1) + after.split(chr(10))[0])[:40]!r}), not an answer"
    if not stated_confidence:
        phrase = non_answer_phrase(after.split("\n", 1)[0])
        if phrase:
            return f"the verdict is withdrawn ({phrase!r})"
    return None


def _finish(out: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    out["answer_yes"] = 1.0 if out["answer"] == "Yes" else 0.0
    out["parse_ok"] = True
    out["parse_note"] = "; ".join(notes) if notes else None
    return out


def parse_qa_frame(judgments: pd.DataFrame) -> pd.DataFrame:
    """Parsed columns for a judgments frame (``text``, ``top_logprobs``, ``ok``).

    Failed calls (``ok`` False) get ``parse_ok=False`` with the call error as
    ``parse_error``; their raw text stays in the judgments frame.
    """
    rows = []
    has_lp = "top_logprobs" in judgments.columns
    for text, ok, err, lp in zip(judgments["text"],
                                 judgments.get("ok", pd.Series(True, index=judgments.index)),
                                 judgments.get("error", pd.Series(None, index=judgments.index)),
                                 judgments["top_logprobs"] if has_lp else [None] * len(judgments)):
        if not ok:
            r = _empty_result()
            r["parse_error"] = f"call failed: {err}"
            rows.append(r)
            continue
        if isinstance(lp, str):
            lp = json.loads(lp) if lp else None
        rows.append(parse_qa(text, lp if isinstance(lp, Mapping) else None))
    return pd.DataFrame(rows, index=judgments.index)
