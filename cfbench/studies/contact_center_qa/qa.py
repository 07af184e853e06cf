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
``evidence`` the fairness arm's answer / rationale / evidence reply (seed 000,
             F.3), parsed by :func:`parse_qa_evidence`: the bare answer word
             alone on the first line (so the first token still carries P(Yes)),
             then ``Confidence: N``, ``Rationale: ...`` and ``Evidence:`` with one
             ``- Speaker: "verbatim words"`` line per quote, or ``Evidence: none``

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
from cfbench.core.text import contradicting_verdict, json_values
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
    "parse_qa_evidence",
    "quote_in_transcript",
    "EVIDENCE_COLUMNS",
]

QA_MODES = ("free", "json", "compact", "evidence")
#: what :func:`parse_qa_evidence` adds to :func:`parse_qa`'s fields (NaN/None for the other contracts)
EVIDENCE_COLUMNS = ("rationale", "evidence_status", "evidence_quotes", "n_quotes", "n_quotes_found",
                    "evidence_found", "evidence_rule_violated")


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
    elif mode == "evidence":
        task = load_prompt("qa_evidence").format(question=qtext, criteria=criteria)
    else:
        task = load_prompt("qa_compact").format(question=qtext, criteria=criteria)
    system = load_prompt("system_fair_qa" if fairness else "system").strip()
    user = load_prompt("user_frame").format(transcript=transcript, task=task.strip())
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


#: generation budget of the ``evidence`` contract (answer, confidence, one sentence, up to three quotes)
EVIDENCE_MAX_TOKENS = 200


def qa_config(mode: str, base: GenerationConfig | None = None, *, evidence_chars: int = 0,
              top_logprobs: int = 5) -> GenerationConfig:
    """Generation settings for a mode: JSON schema for ``json``, short budgets.

    A reasoning-model ``base`` (``reasoning_effort`` set) keeps its own output cap, which
    covers the hidden reasoning as well, and asks for no logprobs (those models return none,
    so P(Yes) stays NaN for them).
    """
    base = base or GenerationConfig(temperature=0.0, max_tokens=600, seed=0)
    if base.reasoning_effort is not None:
        return base.replace(json_schema=qa_json_schema(evidence_chars)) if mode == "json" else base
    if mode == "json":
        return base.replace(json_schema=qa_json_schema(evidence_chars),
                            max_tokens=min(base.max_tokens, 24 + evidence_chars // 2),
                            top_logprobs=top_logprobs)
    if mode == "compact":
        return base.replace(max_tokens=min(base.max_tokens, 10), top_logprobs=top_logprobs)
    if mode == "evidence":
        # answer, confidence, one sentence and up to three short quotes
        return base.replace(max_tokens=min(base.max_tokens, EVIDENCE_MAX_TOKENS), top_logprobs=top_logprobs)
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
    out = _parse_qa(text)
    # first-token logprobs carry P(Yes) only when the reply starts with the answer
    # (compact contract); in JSON mode the first token is "{" and P(Yes) stays NaN. A reply
    # without a verdict (a parse failure, a withdrawn answer) carries no P(Yes) either.
    if out["parse_ok"] and top_logprobs and text is not None and _LEADING.match(str(text)):
        out["p_yes"] = yes_probability(top_logprobs)
    return out


#: the keys a JSON reply may give its answer under
_ANSWER_KEYS = ("answer", "final_answer", "final answer", "verdict")


def _json_answer_clash(raw: str) -> str | None:
    """Two different Yes / No answers among the reply's JSON objects (a key repeated, two answer keys, two
    objects), or a key given twice with different values: what clashes, else None."""
    seen: dict[str, Any] = {}
    for pairs in json_values(raw):
        keys: dict[str, Any] = {}
        for k, v in pairs:
            key = k.strip().lower()
            if key in keys and keys[key] != v:
                return f"key {k!r} given twice ({keys[key]!r}, {v!r})"
            keys[key] = v
            if key in _ANSWER_KEYS and isinstance(v, str) and v.strip().lower().strip(".!") in ("yes", "no"):
                seen.setdefault(v.strip().lower().strip(".!"), f"{k}: {v}")
    return " and ".join(seen.values()) if len(seen) > 1 else None


def _parse_qa(text: str | None) -> dict[str, Any]:
    out = _empty_result()
    if text is None or not str(text).strip():
        out["parse_error"] = "empty reply"
        return out
    raw = str(text)
    notes: list[str] = []

    if "{" in raw and (clash := _json_answer_clash(raw)):
        out["parse_error"] = f"conflicting answers: {clash}"
        return out
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
            for m in list(_FINAL.finditer(raw)) + list(_ANSWER_LINE.finditer(raw)):  # a stated answer beside it
                if m.group(1).capitalize() != answer:
                    out["answer"] = None
                    out["parse_error"] = f"conflicting answers: JSON {answer}, text {m.group(0).strip()!r}"
                    return out
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
    other = contradicting_verdict(clean[verdict.end():], out["answer"])
    if other is None and found and (lead := _LEADING.match(clean)) and lead.end() <= found[0].start() \
            and lead.group(1).capitalize() != out["answer"] and len(found) == 1:
        other = lead.group(0).strip()  # "Yes ... Answer: No" (one stated answer against the opening word)
    if other is not None:
        out["answer"] = None
        out["parse_error"] = f"conflicting answers: {verdict.group(0).strip()!r} and {other!r}"
        return out
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


# ----------------------------------------------------------------------------- answer / rationale / evidence

_BARE_ANSWER = re.compile(r"\s*(?:\d[.)]\s*)?(?:answer\s*[:\-=]\s*)?(yes|no)\s*[.!]?\s*", re.I)
_MARKER = re.compile(r"\s*(?:\d[.)]\s*)?(confidence|rationale|evidences?)\s*(?:\(.*?\))?\s*:\s*(.*)", re.I)
_QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d|\u201e([^\u201c\u201d]+)[\u201c\u201d]|\u00ab([^\u00bb]+)\u00bb')
_NONE_EVIDENCE = re.compile(r"\s*[-*\u2022]?\s*[(\[]?\s*(?:none|no evidence|no supporting (?:line|utterance|evidence)s?"
                            r"|nothing|n/?a)\b", re.I)
_SPEAKER_TAG = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])?\s*(?:\[?(?:turn\s*)?\d+\]?\s*[:.-]?\s*)?(?:agent|customer)\s*:\s*", re.I)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")
_ELLIPSIS = re.compile(r"\.\.\.+|\u2026|\[\.\.\.\]")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
#: a quote (or each ellipsis-separated piece of it) must have this many characters of letters/digits
MIN_QUOTE_CHARS = 4


def _norm(text: str) -> str:
    """Case-folded letters and digits separated by single spaces (quotes, dashes, punctuation dropped)."""
    import unicodedata

    t = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'").replace("'", "")
    return " ".join(_NON_ALNUM.sub(" ", t).split())


def quote_in_transcript(quote: str, transcript: str) -> bool:
    """True when ``quote`` occurs in ``transcript`` up to case, punctuation, quote style and spacing.

    A quote shortened with an ellipsis matches when every piece occurs, in order;
    a piece under :data:`MIN_QUOTE_CHARS` letters/digits does not count as evidence.

    >>> t = "Agent: I\u2019ve reset your password, you can log in now.\\nCustomer: Thanks!"
    >>> quote_in_transcript("agent: i've RESET your password", t), quote_in_transcript("I fixed it", t)
    (True, False)
    """
    hay = f" {_norm(transcript)} "
    pieces = [_norm(p) for p in _ELLIPSIS.split(quote)]
    pieces = [p for p in pieces if p]
    if not pieces or any(len(p.replace(" ", "")) < MIN_QUOTE_CHARS for p in pieces):
        return False
    pos = 0
    for p in pieces:
        at = hay.find(f" {p} ", pos)
        if at < 0:
            return False
        pos = at + len(p) + 1
    return True


def _quotes_of(item: str) -> list[str]:
    """The quoted spans of one evidence line; an unquoted line counts as one quote without its speaker tag."""
    spans = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(item)]
    if spans:
        return [sp.strip() for sp in spans if sp.strip()]
    bare = _SPEAKER_TAG.sub("", _BULLET.sub("", item)).strip()
    return [bare] if bare else []


def _empty_evidence_result() -> dict[str, Any]:
    return _empty_result() | {"rationale": None, "evidence_status": "unparsed", "evidence_quotes": None,
                              "n_quotes": math.nan, "n_quotes_found": math.nan, "evidence_found": None,
                              "evidence_rule_violated": None}


def parse_qa_evidence(text: str | None, transcript: str | None,
                      top_logprobs: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Read a reply in the ``evidence`` contract and check its quotes against ``transcript``.

    The answer is the one line that is a bare ``Yes``/``No`` (optionally ``Answer: Yes``);
    none, two that disagree, or a line such as "No idea" / "Yes?" is a parse failure
    (``parse_ok=False``), never a guessed answer. Besides :func:`parse_qa`'s fields
    (``evidence`` = the raw evidence section, ``synthesis`` = the rationale):

    ``rationale``             the ``Rationale:`` text (None when missing; noted)
    ``evidence_status``       ``quoted`` (at least one quote), ``none`` (declared
                              "Evidence: none"), ``missing`` (no evidence section) or
                              ``unparsed`` (the answer could not be read)
    ``evidence_quotes``       JSON list of the quotes as written
    ``n_quotes``, ``n_quotes_found``  how many quotes, how many occur in the transcript
    ``evidence_found``        True when every quote occurs in the transcript, False
                              when one does not, None without quotes or transcript
    ``evidence_rule_violated``  the seed's "no evidence means No" as a check: True for a
                              Yes with no quote found in the transcript (declared none,
                              missing, or only quotes that are not in it); False otherwise
                              (None when the answer could not be read)

    The answer is never rewritten by the rule: the tables use it as the judge gave it
    and report the checks beside it.

    >>> r = parse_qa_evidence('Yes\\nConfidence: 90\\nRationale: Refund confirmed.\\nEvidence:\\n'
    ...                       '- Agent: "your refund is issued"', "Agent: Your refund is issued.")
    >>> r["answer"], r["evidence_found"], r["evidence_rule_violated"]
    ('Yes', True, False)
    >>> parse_qa_evidence("No idea\\nEvidence: none", "Agent: Hi.")["parse_ok"]
    False
    """
    out = _parse_qa_evidence(text, transcript)
    if out["parse_ok"] and top_logprobs and text is not None and _LEADING.match(str(text)):
        out["p_yes"] = yes_probability(top_logprobs)  # no verdict, no P(Yes)
    return out


def _parse_qa_evidence(text: str | None, transcript: str | None) -> dict[str, Any]:
    out = _empty_evidence_result()
    if text is None or not str(text).strip():
        out["parse_error"] = "empty reply"
        return out
    lines = _EMPH.sub("", strip_fences(str(text))).splitlines()
    answers = [(i, m.group(1).capitalize()) for i, ln in enumerate(lines)
               if (m := _BARE_ANSWER.fullmatch(ln))]
    if not answers:
        first = next((ln.strip() for ln in lines if ln.strip()), "")
        out["parse_error"] = f"no line is a bare Yes or No (first line: {first[:40]!r})"
        return out
    if len({a for _, a in answers}) > 1:
        out["parse_error"] = "conflicting answers: " + ", ".join(a for _, a in answers)
        return out
    stated = [m for m in _FINAL.finditer("\n".join(lines)) if m.group(1).capitalize() != answers[0][1]]
    if stated:  # a "Final answer: No" elsewhere (in a section) against the bare line
        out["parse_error"] = f"conflicting answers: {answers[0][1]}, {stated[0].group(0).strip()!r}"
        return out
    out["answer"] = answers[0][1]
    notes: list[str] = []
    first_nonempty = next(i for i, ln in enumerate(lines) if ln.strip())
    if answers[0][0] != first_nonempty:
        notes.append("the answer is not on the first line")

    sections: dict[str, list[str]] = {}
    current = None
    for i, ln in enumerate(lines):
        if any(i == j for j, _ in answers):
            current = None
            continue
        m = _MARKER.fullmatch(ln)
        if m:
            current = m.group(1).lower().rstrip("s")
            if current in sections:
                notes.append(f"{current} given twice; the first is used")
                current = "_dup"
            sections.setdefault(current, [])
            if m.group(2).strip():
                sections[current].append(m.group(2).strip())
        elif current is not None and ln.strip():
            sections[current].append(ln.strip())

    conf_lines = sections.get("confidence") or []
    cm = re.fullmatch(r"\s*(-?\d{1,3}(?:\.\d+)?)\s*(%|/\s*100|out of 100)?\s*\.?\s*", conf_lines[0]) if conf_lines else None
    if cm:
        _set_confidence(out, notes, cm.group(1), cm.group(2))
    else:
        notes.append("no confidence" if not conf_lines else f"confidence {conf_lines[0][:20]!r} is not a number")
    rationale = " ".join(sections.get("rationale") or []) or None
    out["rationale"] = out["synthesis"] = rationale
    if rationale is None:
        notes.append("no rationale")

    ev_lines = sections.get("evidence")
    if ev_lines is None or not ev_lines:
        out["evidence_status"] = "missing"
        notes.append("no evidence section")
        quotes: list[str] = []
    elif len(ev_lines) == 1 and _NONE_EVIDENCE.match(ev_lines[0]) and not _QUOTED.search(ev_lines[0]):
        out["evidence_status"] = "none"
        out["evidence"] = ev_lines[0]
        quotes = []
    else:
        out["evidence"] = "\n".join(ev_lines)
        quotes = [q for item in ev_lines if not _NONE_EVIDENCE.match(item) or _QUOTED.search(item)
                  for q in _quotes_of(item)]
        out["evidence_status"] = "quoted" if quotes else "none"
    out["evidence_quotes"] = json.dumps(quotes, ensure_ascii=False)
    out["n_quotes"] = float(len(quotes))
    if transcript is not None:
        found = sum(quote_in_transcript(q, transcript) for q in quotes)
        out["n_quotes_found"] = float(found)
        out["evidence_found"] = (found == len(quotes)) if quotes else None
        if quotes and found < len(quotes):
            notes.append(f"{len(quotes) - found} of {len(quotes)} quotes not in the transcript")
        out["evidence_rule_violated"] = out["answer"] == "Yes" and found == 0
    else:
        notes.append("no transcript to check the quotes against")
        out["evidence_rule_violated"] = out["answer"] == "Yes" and not quotes
    return _finish(out, notes)


def parse_qa_frame(judgments: pd.DataFrame, *, transcripts: "pd.Series | None" = None,
                   evidence: "pd.Series | None" = None) -> pd.DataFrame:
    """Parsed columns for a judgments frame (``text``, ``top_logprobs``, ``ok``).

    ``evidence`` (bool per row, same index) marks replies in the ``evidence``
    contract, read by :func:`parse_qa_evidence` against ``transcripts`` (text
    per row); the others are read by :func:`parse_qa`.
    Failed calls (``ok`` False) get ``parse_ok=False`` with the call error as
    ``parse_error``; their raw text stays in the judgments frame.
    """
    is_ev = (evidence.reindex(judgments.index).fillna(False).astype(bool).tolist() if evidence is not None
             else [False] * len(judgments))
    texts = (transcripts.reindex(judgments.index).tolist() if transcripts is not None
             else [None] * len(judgments))
    rows = []
    has_lp = "top_logprobs" in judgments.columns
    for text, ok, err, lp in zip(judgments["text"],
                                 judgments.get("ok", pd.Series(True, index=judgments.index)),
                                 judgments.get("error", pd.Series(None, index=judgments.index)),
                                 judgments["top_logprobs"] if has_lp else [None] * len(judgments)):
        ev, transcript = is_ev[len(rows)], texts[len(rows)]
        if not ok:
            r = _empty_evidence_result() if ev else _empty_result()
            r["parse_error"] = f"call failed: {err}"
            rows.append(r)
            continue
        if isinstance(lp, str):
            lp = json.loads(lp) if lp else None
        lp = lp if isinstance(lp, Mapping) else None
        rows.append(parse_qa_evidence(text, transcript, lp) if ev else parse_qa(text, lp))
    return pd.DataFrame(rows, index=judgments.index)
