"""LLM helpers of the contact-center perturbers: turn identification, style
rewriting and semantic-equivalence validation (request builders and parsers).

Prompts live in ``cfbench/data/perturb/prompts/``. Each prompt keeps the fixed
instructions in the system message and the varying text last, so a local
backend reuses its KV cache across requests. All three tasks reply with one
JSON object (constrained decoding where the backend supports it); a reply
that does not meet the contract is a parse failure (``parse_ok=False`` and
an error message), never a default answer.

Scripted doubles (unit tests and smoke runs only):

``perturb-identify``         the name after "this is" in turn 1, nothing else
``perturb-rewrite``          the target line with a style tag prepended
``perturb-rewrite-flaky``    first attempt changes a number (fails the guards), later attempts as above
``perturb-validate``         always equivalent
``perturb-validate-reject``  never equivalent
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Mapping, Sequence

import yaml

from cfbench.core.paths import package_text
from cfbench.judges.base import GenerationConfig, Request
from cfbench.judges.scripted import register_script

__all__ = [
    "IDENTIFY_SCHEMA", "REWRITE_SCHEMA", "VALIDATE_SCHEMA", "IDENTIFY_LIST_KEYS",
    "load_perturb_prompt", "style_description", "identify_request", "parse_identify",
    "rewrite_request", "parse_rewrite", "validate_request", "parse_validate", "numbered_transcript",
]

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

def identify_request(request_id: str, turns: Sequence[Mapping[str, str]], *,
                     config: GenerationConfig | None = None) -> Request:
    cfg = config or GenerationConfig(temperature=0.0, max_tokens=400, seed=0, json_schema=IDENTIFY_SCHEMA)
    return Request(request_id, ({"role": "system", "content": load_perturb_prompt("identify_system.txt")},
                                {"role": "user", "content": numbered_transcript(turns)}), config=cfg)


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

def rewrite_request(request_id: str, *, dimension: str, condition: str, target: str, left: str = "",
                    right: str = "", attempt: int = 0, seed: int = 0,
                    config: GenerationConfig | None = None) -> Request:
    """Ask for one agent line in the style of ``dimension``/``condition``.

    Attempt 0 decodes greedily; later attempts sample (temperature 0.7, seed
    ``seed + attempt``) and carry ``repeat=attempt`` so they are separate cache entries.
    """
    if config is None:
        config = GenerationConfig(temperature=0.0 if attempt == 0 else 0.7, max_tokens=160,
                                  seed=seed + attempt, json_schema=REWRITE_SCHEMA)
    user = load_perturb_prompt("rewrite_user.txt").format(
        style_name=f"{dimension.replace('_', ' ')}: {condition}",
        style_description=style_description(dimension, condition),
        left=left or "(none)", right=right or "(none)", target=target)
    return Request(request_id, ({"role": "system", "content": load_perturb_prompt("rewrite_system.txt")},
                                {"role": "user", "content": user}), config=config, repeat=attempt)


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
    return {"parse_ok": True, "parse_error": None, "text": v}


# --------------------------------------------------------------------------- validate

def validate_request(request_id: str, original: str, variant: str, *, attempt: int = 0,
                     config: GenerationConfig | None = None) -> Request:
    cfg = config or GenerationConfig(temperature=0.0, max_tokens=80, seed=0, json_schema=VALIDATE_SCHEMA)
    user = load_perturb_prompt("validate_user.txt").format(original=original, variant=variant)
    return Request(request_id, ({"role": "system", "content": load_perturb_prompt("validate_system.txt")},
                                {"role": "user", "content": user}), config=cfg, repeat=attempt)


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


# --------------------------------------------------------------------------- scripted doubles

def _user(request: Request) -> str:
    return next((m["content"] for m in reversed(request.messages) if m["role"] == "user"), "")


def _target_line(request: Request) -> tuple[str, str]:
    user = _user(request)
    m = re.search(r"^Target line \(Agent\): (.*)$", user, flags=re.M)
    style = re.search(r"^Style to produce: ([^-]+?) --", user, flags=re.M)
    return (m.group(1) if m else ""), (style.group(1).strip() if style else "")


def _scripted_rewrite(request: Request) -> str:
    target, style = _target_line(request)
    return json.dumps({"trans_turn": f"[{style}] {target}"})


def _scripted_rewrite_flaky(request: Request) -> str:
    if request.repeat == 0:
        target, _ = _target_line(request)
        return json.dumps({"trans_turn": f"{target} Ref 999."})
    return _scripted_rewrite(request)


def _scripted_identify(request: Request) -> str:
    obj: dict[str, Any] = {k: "" for k in _IDENTIFY_STR_KEYS}
    obj.update({k: [] for k in IDENTIFY_LIST_KEYS})
    obj["agent_pronouns"] = []
    m = re.search(r"^\[1\] Agent: .*?\bthis is (\w+)", _user(request), flags=re.M | re.I)
    if m:
        obj["agent_name"] = m.group(1)
        obj["name_turns"] = [1]
    return json.dumps(obj)


register_script("perturb-identify", _scripted_identify)
register_script("perturb-rewrite", _scripted_rewrite)
register_script("perturb-rewrite-flaky", _scripted_rewrite_flaky)
register_script("perturb-validate", lambda r: json.dumps({"equivalent": True, "reason": "same facts and outcome"}))
register_script("perturb-validate-reject", lambda r: json.dumps({"equivalent": False, "reason": "outcome differs"}))
