"""LLM tasks of the contact-center perturbers: turn identification, style
rewriting and semantic-equivalence validation -- the prompts (as plain chat
message lists) and the reply parsers. No judge code is imported here: the
caller supplies a *judge callable* (:data:`Complete`) that maps a batch of
message lists to reply texts (``None`` for a failed call), e.g. one built on
``cfbench.judges.run_requests`` by the study.

Prompts live in ``cfbench/data/perturb/prompts/``. Each keeps the fixed
instructions in the system message and the varying text last, so a local
backend reuses its KV cache. Each task replies with one JSON object (the
``*_SCHEMA`` constants are there for constrained decoding); a reply that does
not meet the contract is a parse failure (``parse_ok=False`` with the error),
never a default answer: non-answers ("not sure", "N/A", refusals, empty) fail.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Mapping, Sequence

import yaml

from typing import Callable, Optional

from cfbench.core.paths import package_text

__all__ = [
    "IDENTIFY_SCHEMA", "REWRITE_SCHEMA", "VALIDATE_SCHEMA", "IDENTIFY_LIST_KEYS",
    "load_perturb_prompt", "style_description", "identify_messages", "parse_identify",
    "rewrite_messages", "parse_rewrite", "validate_messages", "parse_validate", "numbered_transcript",
    "Messages", "Complete",
]

#: One chat: ``[{"role": "system", "content": ...}, {"role": "user", "content": ...}]``.
Messages = list[dict[str, str]]
#: A judge callable: a batch of chats in, one reply text (or ``None`` for a failed call) per chat out.
Complete = Callable[[Sequence[Messages]], Sequence[Optional[str]]]

IDENTIFY_LIST_KEYS = ("name_turns", "gender_turns", "race_turns", "religion_turns", "politeness_turns",
                      "formality_turns", "directness_turns", "emotional_labor_turns")
_IDENTIFY_STR_KEYS = ("agent_name", "agent_gender", "agent_race", "agent_religion")

IDENTIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{k: {"type": "string"} for k in _IDENTIFY_STR_KEYS},
        **{k: {"type": "array", "items": {"type": "integer"}} for k in IDENTIFY_LIST_KEYS},
        "agent_pronouns": {"type": "array", "items": {"type": "string"}},
    },
    "required": list(_IDENTIFY_STR_KEYS) + list(IDENTIFY_LIST_KEYS) + ["agent_pronouns"],
}
REWRITE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"trans_turn": {"type": "string"}},
                                  "required": ["trans_turn"]}
VALIDATE_SCHEMA: dict[str, Any] = {"type": "object",
                                   "properties": {"equivalent": {"type": "boolean"}, "reason": {"type": "string"}},
                                   "required": ["equivalent", "reason"]}


@lru_cache(maxsize=None)
def load_perturb_prompt(name: str) -> str:
    """Text of ``cfbench/data/perturb/prompts/<name>``."""
    return package_text(f"data/perturb/prompts/{name}")


def style_description(dimension: str, condition: str) -> str:
    levels = yaml.safe_load(load_perturb_prompt("style_levels.yaml"))
    try:
        return levels[dimension][condition]
    except KeyError:
        raise KeyError(f"no rewrite description for {dimension}/{condition}") from None


def numbered_transcript(turns: Sequence[Mapping[str, str]]) -> str:
    """``[1] Agent: ...`` lines (1-based, as the identify prompt says)."""
    return "\n".join(f"[{i + 1}] {t['speaker'].capitalize()}: {t['text']}" for i, t in enumerate(turns))


def _json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    if not isinstance(text, str) or not text.strip():
        return None, "empty reply"
    s = text.strip()
    s = re.sub(r"^```(?:json)?\s*|\s*```$", "", s)
    start, end = s.find("{"), s.rfind("}")
    if start < 0 or end <= start:
        return None, "no JSON object in reply"
    try:
        obj = json.loads(s[start:end + 1])
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg})"
    if not isinstance(obj, dict):
        return None, "reply is not a JSON object"
    return obj, None


# --------------------------------------------------------------------------- identify

def identify_messages(turns: Sequence[Mapping[str, str]]) -> Messages:
    """The identification chat for one transcript (turns numbered from 1)."""
    return [{"role": "system", "content": load_perturb_prompt("identify_system.txt")},
            {"role": "user", "content": numbered_transcript(turns)}]


def parse_identify(text: str, n_turns: int) -> dict[str, Any]:
    """Parse an identification reply; turn numbers are converted to 0-based.

    Returns ``{"parse_ok", "parse_error", "identification"}`` where
    ``identification`` has the seed's keys (0-based turns) or is None.
    """
    obj, err = _json_object(text)
    if obj is None:
        return {"parse_ok": False, "parse_error": err, "identification": None}
    missing = [k for k in (*_IDENTIFY_STR_KEYS, *IDENTIFY_LIST_KEYS) if k not in obj]
    if len(missing) == len(_IDENTIFY_STR_KEYS) + len(IDENTIFY_LIST_KEYS):
        return {"parse_ok": False, "parse_error": "reply has none of the contract's keys", "identification": None}
    out: dict[str, Any] = {}
    for k in _IDENTIFY_STR_KEYS:
        v = obj.get(k, "")
        if v is None:
            v = ""
        if not isinstance(v, str):
            return {"parse_ok": False, "parse_error": f"{k} is not a string", "identification": None}
        out[k] = v.strip()
    for k in IDENTIFY_LIST_KEYS:
        v = obj.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return {"parse_ok": False, "parse_error": f"{k} is not a list of integers", "identification": None}
        bad = [x for x in v if not 1 <= x <= n_turns]
        if bad:
            return {"parse_ok": False, "parse_error": f"{k} has turn numbers outside 1..{n_turns}: {bad}",
                    "identification": None}
        out[k] = [x - 1 for x in v]
    pron = obj.get("agent_pronouns", [])
    if not isinstance(pron, list) or not all(isinstance(x, str) for x in pron):
        return {"parse_ok": False, "parse_error": "agent_pronouns is not a list of strings", "identification": None}
    if len(pron) != len(out["gender_turns"]):
        return {"parse_ok": False, "parse_error": "agent_pronouns and gender_turns differ in length",
                "identification": None}
    out["agent_pronouns"] = pron
    return {"parse_ok": True, "parse_error": None, "identification": out}


# --------------------------------------------------------------------------- rewrite

def rewrite_messages(*, dimension: str, condition: str, target: str, left: str = "", right: str = "",
                     attempt: int = 0) -> Messages:
    """The chat asking for one agent line in the style of ``dimension``/``condition``.

    A later ``attempt`` (after a rejected one) says so in the system message, which
    also makes it a separate cache entry for a caching judge.
    """
    user = load_perturb_prompt("rewrite_user.txt").format(
        style_name=f"{dimension.replace('_', ' ')}: {condition}",
        style_description=style_description(dimension, condition),
        left=left or "(none)", right=right or "(none)", target=target)
    system = load_perturb_prompt("rewrite_system.txt")
    if attempt:
        system += (f"\n\nAttempt {attempt + 1}: an earlier rewrite of this line was rejected; "
                   "write a different one that keeps every fact.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_rewrite(text: str) -> dict[str, Any]:
    """``{"parse_ok", "parse_error", "text"}`` from a ``{"trans_turn": ...}`` reply."""
    obj, err = _json_object(text)
    if obj is None:
        return {"parse_ok": False, "parse_error": err, "text": None}
    v = obj.get("trans_turn")
    if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str):
        v = v[0]
    if not isinstance(v, str) or not v.strip():
        return {"parse_ok": False, "parse_error": "trans_turn missing or empty", "text": None}
    v = re.sub(r"^\s*(agent|customer)\s*:\s*", "", v.strip(), flags=re.I)
    if _NON_ANSWER.fullmatch(v):
        return {"parse_ok": False, "parse_error": f"trans_turn is a non-answer ({v[:40]!r})", "text": None}
    return {"parse_ok": True, "parse_error": None, "text": v}


#: Replies that state nothing (or refuse): parse failures, never a rewrite.
_NON_ANSWER = re.compile(r"(?i)^\W*(?:n/?a|none|null|unknown|unclear|no idea|not sure|i'?m not sure|can'?t tell|"
                         r"cannot tell|as an ai\b.*|i(?:'?m sorry,? (?:but )?i)? (?:can'?t|cannot|won'?t|will not) "
                         r"(?:help|assist|rewrite|do|comply)(?: (?:with )?(?:that|this|it))?)\W*$")


# --------------------------------------------------------------------------- validate

def validate_messages(original: str, variant: str) -> Messages:
    """The chat asking whether ``variant`` keeps the meaning of ``original`` (rendered transcripts)."""
    user = load_perturb_prompt("validate_user.txt").format(original=original, variant=variant)
    return [{"role": "system", "content": load_perturb_prompt("validate_system.txt")},
            {"role": "user", "content": user}]


def parse_validate(text: str) -> dict[str, Any]:
    """``{"parse_ok", "parse_error", "equivalent", "reason"}``; ``equivalent`` must be a JSON boolean."""
    obj, err = _json_object(text)
    if obj is None:
        return {"parse_ok": False, "parse_error": err, "equivalent": None, "reason": None}
    eq = obj.get("equivalent")
    if not isinstance(eq, bool):
        return {"parse_ok": False, "parse_error": "equivalent is not true/false", "equivalent": None,
                "reason": None}
    reason = obj.get("reason")
    return {"parse_ok": True, "parse_error": None, "equivalent": eq,
            "reason": reason if isinstance(reason, str) else ""}
