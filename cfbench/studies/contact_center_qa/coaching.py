"""Coaching-notes judge task for the contact-center study (seed 000).

One request per kind and transcript variant, each answered as JSON:

``positives``    strengths of the agent: ``{"score": 0-100, "analysis": "..."}``
``improvement``  areas to improve:        ``{"score": 0-100, "analysis": "..."}``
                 (100 = little to improve, as in the seed's scoring guideline)
``customer``     the customer's behaviour: ``{"score": 0-100, "analysis": "..."}``
                 (100 = clear and fully cooperative; the seed's customer-behaviour notes)

The score feeds MASD (Eq. 4). Same prompt layout as :mod:`cfbench.studies.contact_center_qa.qa`
(fixed system prompt, transcript first, task last). A reply without a
readable 0-100 score is a parse failure with the raw text kept.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pandas as pd

from cfbench.core.text import json_spans
from cfbench.judges.base import GenerationConfig, Request
from cfbench.studies.contact_center_qa.prompts import json_object, load_prompt, opens_with_non_answer, strip_fences

__all__ = ["COACHING_KINDS", "coaching_json_schema", "coaching_messages", "coaching_config",
           "coaching_request", "parse_coaching", "parse_coaching_frame"]

COACHING_KINDS = ("positives", "improvement", "customer")
_PROMPT = {"positives": "coach_positives", "improvement": "coach_improvement", "customer": "coach_customer"}
# "Score: 72", "The score is 67", "score 50/100"; never a scale such as "Score (0-100)" or "0 to 100"
_SCORE_TEXT = re.compile(r"\bscore\b(?:\s+(?:is|of))?\W{0,4}(\d{1,3}(?:\.\d+)?)\b(?!\.\d)"
                         r"(?!\s*(?:-|–|to)\s*\d)\s*(%|/\s*100(?!\d))?", re.I)
#: a number written on another scale right after it: "7/10", "7 out of 10", "5 stars", "50/1000"
_OTHER_SCALE = re.compile(r"\s*(?:/\s*(?!100\b)\d+|out\s+of\s+(?!100\b)\d+|stars?\b|points?\s+out\s+of\s+(?!100\b)\d+)",
                          re.I)


def coaching_json_schema(analysis_chars: int = 200) -> dict:
    """Compact schema: score first (so a truncated analysis still leaves it), then analysis."""
    return {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 0, "maximum": 100},
            "analysis": {"type": "string", "maxLength": int(analysis_chars)},
        },
        "required": ["score", "analysis"],
        "additionalProperties": False,
    }


def coaching_messages(transcript: str, kind: str, *, fairness: bool = False) -> tuple[dict, dict]:
    """System + user messages for one coaching request about ``transcript``."""
    if kind not in COACHING_KINDS:
        raise ValueError(f"kind must be one of {COACHING_KINDS}, got {kind!r}")
    task = load_prompt(_PROMPT[kind])
    system = load_prompt("system_fair_coaching" if fairness else "system").strip()
    user = load_prompt("user_frame").format(transcript=transcript, task=task.strip())
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def coaching_config(base: GenerationConfig | None = None, *, constrained: bool = True,
                    analysis_chars: int = 200) -> GenerationConfig:
    """Generation settings; ``constrained`` adds the JSON schema (local model)."""
    base = base or GenerationConfig(temperature=0.0, max_tokens=400, seed=0)
    if constrained:
        return base.replace(json_schema=coaching_json_schema(analysis_chars),
                            max_tokens=min(base.max_tokens, 20 + analysis_chars // 2))
    return base


def coaching_request(request_id: str, transcript: str, kind: str, *, fairness: bool = False,
                     config: GenerationConfig | None = None, repeat: int = 0) -> Request:
    msgs = coaching_messages(transcript, kind, fairness=fairness)
    return Request(request_id, messages=msgs, config=config or coaching_config(), repeat=repeat)


def _outside_json(text: str, spans: list) -> str:
    """``text`` with its JSON objects (``spans``, from :func:`json_spans`) cut out: what a reply says around
    its JSON."""
    kept, last = [], 0
    for start, end, _ in spans:
        kept.append(text[last:start])
        last = end
    return " ".join(kept + [text[last:]])


def parse_coaching(text: str | None) -> dict[str, Any]:
    """Read ``{"score": N, "analysis": "..."}`` from a reply.

    Tolerates code fences, raw newlines inside strings, ``"72"`` or ``"72/100"``
    as the score, and (noted in ``parse_note``) a ``Score: 72`` line when no
    JSON object is present. A missing, non-numeric or out-of-range score gives
    ``parse_ok=False``; nothing is clipped into range. A note that opens by
    declining to assess ("I cannot assess this call", "Not enough information
    ...", "No idea") is a parse failure whatever score it carries, and so is a
    ``Score: N`` in the text around the JSON that differs from the JSON's score.

    >>> parse_coaching('{"score": 72, "analysis": "- clearer next steps"}')["score"]
    72.0
    """
    out: dict[str, Any] = {"score": math.nan, "analysis": None, "parse_ok": False,
                           "parse_error": None, "parse_note": None}
    if text is None or not str(text).strip():
        out["parse_error"] = "empty reply"
        return out
    raw = strip_fences(str(text))
    spans = json_spans(raw)
    scores = {json.dumps(v) for _, _, pairs in spans for k, v in pairs if k.strip().lower() == "score"}
    if len(scores) > 1:  # a key given twice, or two objects: which score is meant cannot be told
        out["parse_error"] = f"conflicting scores: {', '.join(sorted(scores))}"
        return out
    obj = json_object(raw)
    value: Any = None
    if obj is not None:
        lowered = {str(k).strip().lower(): v for k, v in obj.items()}
        if "score" not in lowered:
            out["parse_error"] = "JSON object has no 'score'"
            return out
        value = lowered["score"]
        analysis = lowered.get("analysis")
        if isinstance(analysis, list):
            analysis = "\n".join(map(str, analysis))
        out["analysis"] = analysis if isinstance(analysis, str) else None
    else:
        m = list(_SCORE_TEXT.finditer(raw))
        if not m:
            out["parse_error"] = "no JSON object and no score"
            return out
        if len({x.group(1) for x in m}) > 1:
            out["parse_error"] = f"conflicting scores: {', '.join(dict.fromkeys(x.group(1) for x in m))}"
            return out
        if not m[-1].group(2) and (other := _OTHER_SCALE.match(raw, m[-1].end())):
            out["parse_error"] = f"score {m[-1].group(1)} {other.group(0).strip()} is on another scale than 0-100"
            return out
        value = m[-1].group(1) + (m[-1].group(2) or "")
        out["parse_note"] = "score read from free text, not JSON"
        out["analysis"] = raw.strip()
    if isinstance(value, bool) or value is None:
        out["parse_error"] = f"score {value!r} is not a number"
        return out
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d{1,3}(?:\.\d+)?)\s*(%|/\s*100)?\s*", value)
        if not m:
            out["parse_error"] = f"score {value!r} is not a number"
            return out
        value = float(m.group(1))
    value = float(value)
    if not (0.0 <= value <= 100.0):
        out["parse_error"] = f"score {value:g} is outside 0-100"
        return out
    if obj is not None:  # a score stated in the text around the JSON must be the JSON's own
        other = sorted({x.group(1) for x in _SCORE_TEXT.finditer(_outside_json(raw, spans)) if float(x.group(1)) != value})
        if other:
            out["parse_error"] = f"conflicting scores: {value:g} in the JSON, {', '.join(other)} in the text"
            return out
    if opens_with_non_answer(out["analysis"] or ""):
        out["parse_error"] = f"non-answer: the note declines to assess ({str(out['analysis'])[:60]!r})"
        return out
    out["score"] = value
    out["parse_ok"] = True
    return out


def parse_coaching_frame(judgments: pd.DataFrame) -> pd.DataFrame:
    """Parsed columns for a judgments frame; failed calls are parse failures."""
    rows = []
    oks = judgments["ok"] if "ok" in judgments.columns else pd.Series(True, index=judgments.index)
    errs = judgments["error"] if "error" in judgments.columns else pd.Series(None, index=judgments.index)
    for text, ok, err in zip(judgments["text"], oks, errs):
        if not ok:
            rows.append({"score": math.nan, "analysis": None, "parse_ok": False,
                         "parse_error": f"call failed: {err}", "parse_note": None})
        else:
            rows.append(parse_coaching(text))
    return pd.DataFrame(rows, index=judgments.index)
