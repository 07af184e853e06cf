"""The two judge tasks, their prompts (files under ``data/prompts/``), strict parsers and test doubles.

*pairwise*: the conversation up to a customer turn and two candidate agent
replies; the judge answers ``A`` or ``B``. ``p_a`` is P(A) / (P(A) + P(B)) from
the first generated token's alternatives when the backend returns them (NaN
otherwise). The text is parsed strictly: ``A``/``B``, optionally written as
``Reply A`` and followed by ``.`` or ``)``, nothing else; any other reply is a
parse failure (``parse_ok=False``), never a verdict.

*pointwise*: the same conversation and one candidate reply; the judge answers
with an integer 1..10 (optionally ``/10``), nothing else.

Each task has a ``base`` prompt and a ``reworded`` prompt (same instruction in
other words): the judge's answer change under rewording is the noise reference
the cue shifts are compared with.

Scripted test doubles (``scripted:judge-bias-hash``, ``scripted:judge-bias-authority``,
``scripted:judge-bias-sampled`` - content-only, answering the other way on a seeded 20 % of draws, so
repeats differ as at a positive temperature) read the replies back out of the prompt; they exist for tests and smoke runs,
never for a notebook's headline numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from cfbench.judges.base import GenerationConfig, Request, Response
from cfbench.judges.failures import failure_kind
from cfbench.judges.scripted import register_script
from cfbench.perturb.judge_cues import CandidatePair

from .items import Item

__all__ = ["PROMPT_VERSION", "prompt_text", "render_pair", "build_request", "parse_pairwise", "parse_pointwise",
           "p_a_from_logprobs", "parse_judgments", "TASKS", "PROMPTS"]

PROMPT_VERSION = "judge-bias-v1"
TASKS = ("pairwise", "pointwise")
PROMPTS = ("base", "reworded")
_DIR = Path(__file__).resolve().parent / "data" / "prompts"
_PAIR_RE = re.compile(r"^\s*(?:reply\s+)?([AB])\s*[.)]?\s*$", re.IGNORECASE)
_SCORE_RE = re.compile(r"^\s*(10|[1-9])\s*(?:/\s*10)?\s*\.?\s*$")


@lru_cache(maxsize=None)
def prompt_text(task: str, prompt: str) -> str:
    """The template of ``task`` under ``prompt`` ("base" or "reworded")."""
    if task not in TASKS or prompt not in PROMPTS:
        raise ValueError(f"unknown task/prompt {task!r}/{prompt!r}")
    name = task if prompt == "base" else f"{task}_reworded"
    return (_DIR / f"{name}.txt").read_text(encoding="utf-8")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _conversation(item: Item) -> str:
    return "\n".join(f"{'Agent' if s == 'agent' else 'Customer'}: {_one_line(t)}" for s, t in item.context)


def render_pair(pair: CandidatePair, task: str, only: str | None = None) -> tuple[str, str]:
    """``(replies block, note)`` as shown to the judge; pointwise shows candidate ``only``."""
    def lab(key: str) -> str:
        label = pair.labels.get(key, "")
        return f" ({label})" if label else ""

    if task == "pointwise":
        return f"Reply{lab(only)}: {_one_line(pair.texts[only])}", ""
    lines = [f"Reply {slot}{lab(key)}: {_one_line(pair.texts[key])}" for slot, key in zip("AB", pair.order)]
    return "\n".join(lines), (pair.note + "\n" if pair.note else "")


def build_request(item: Item, pair: CandidatePair, *, task: str, prompt: str, condition: str, order: str,
                  temperature: float, seed: int, only: str | None = None, repeat: int = 0) -> Request:
    """One request; id ``<item_id>/<task>/<condition>/<order>`` (pointwise: order = the scored candidate).
    ``repeat`` > 0 is a repeat of the same prompt (condition ``repeat<r>``): its index is part of the cache key
    and the local backend samples it with seed ``seed + repeat``."""
    replies, note = render_pair(pair, task, only)
    body = prompt_text(task, prompt).format(conversation=_conversation(item), replies=replies, note=note)
    cfg = GenerationConfig(temperature=temperature, max_tokens=1 if task == "pairwise" else 3, seed=seed,
                           top_logprobs=5)
    return Request(f"{item.item_id}/{task}/{condition}/{order}", messages=({"role": "user", "content": body},),
                   config=cfg, repeat=repeat)


def parse_pairwise(text: Any) -> str | None:
    """``"A"``/``"B"`` for a clear answer, else None (a parse failure)."""
    if not isinstance(text, str):
        return None
    m = _PAIR_RE.match(text)
    return m.group(1).upper() if m else None


def parse_pointwise(text: Any) -> int | None:
    """An integer 1..10 for a clear score, else None (a parse failure)."""
    if not isinstance(text, str):
        return None
    m = _SCORE_RE.match(text)
    return int(m.group(1)) if m else None


def p_a_from_logprobs(top_logprobs: Any) -> float:
    """P(A) / (P(A) + P(B)) among the first token's alternatives (NaN when neither is there)."""
    if isinstance(top_logprobs, str):
        try:
            top_logprobs = json.loads(top_logprobs)
        except ValueError:
            return math.nan
    if not isinstance(top_logprobs, dict) or not top_logprobs:
        return math.nan
    pa = sum(math.exp(v) for k, v in top_logprobs.items() if k.strip().upper() == "A")
    pb = sum(math.exp(v) for k, v in top_logprobs.items() if k.strip().upper() == "B")
    return pa / (pa + pb) if pa + pb > 0 else math.nan


def parse_judgments(judgments: pd.DataFrame) -> pd.DataFrame:
    """Judgments with ``item_id, task, condition, order, answer, p_a, score, parse_ok, failure, raw``;
    ``failure`` is why an answer is missing (a kind of :data:`cfbench.judges.failures.FAILURE_KINDS`:
    timeout, refusal, unparseable, ...), None where it was read."""
    rows = []
    for r in judgments.itertuples(index=False):
        item_id, task, condition, order = str(r.request_id).rsplit("/", 3)
        raw = r.text if bool(r.ok) else None
        ans = parse_pairwise(raw) if task == "pairwise" else None
        score = parse_pointwise(raw) if task == "pointwise" else None
        ok = (ans is not None) if task == "pairwise" else (score is not None)
        rows.append({"item_id": item_id, "task": task, "condition": condition, "order": order,
                     "answer": ans, "p_a": p_a_from_logprobs(r.top_logprobs) if task == "pairwise" and ok else math.nan,
                     "score": float(score) if score is not None else math.nan, "parse_ok": ok,
                     "failure": failure_kind(None if bool(r.ok) else (r.error or "no reply"), parse_ok=ok,
                                             text=raw),
                     "raw": raw if raw is not None else f"<failed: {r.error}>"})
    return pd.DataFrame(rows)


# --- scripted test doubles -------------------------------------------------------------------------
_REPLY_LINE = re.compile(r"^Reply(?: ([AB]))?(?: \(([^)]*)\))?: (.*)$", re.MULTILINE)


def _h(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _script(follow_authority: bool, sampled: float = 0.0):
    def script(request: Request) -> Response:
        body = request.messages[-1]["content"]
        replies = _REPLY_LINE.findall(body)
        # a sampled judge: with probability `sampled` (by a hash of the prompt and the repeat index) the draw
        # goes the other way / one point up - a stand-in for sampling at a positive temperature
        coin = sampled > 0 and _h(f"{request.repeat}|{body}") < sampled
        if len(replies) == 1:  # pointwise
            _, label, text = replies[0]
            s = 1 + int(_h(text) * 9.999)
            if coin:
                s = s + 1 if s < 10 else s - 1
            if follow_authority and "supervisor" in label:
                s = min(10, s + 3)
            return Response(text=str(s), top_logprobs={str(s): math.log(0.9)}, prompt_tokens=len(body.split()),
                            completion_tokens=1)
        (_, la, ta), (_, lb, tb) = replies
        pick = "A" if _h(ta) >= _h(tb) else "B"  # content only: order, labels and notes do not matter
        if coin:
            pick = "B" if pick == "A" else "A"
        if follow_authority and ("supervisor" in la) != ("supervisor" in lb):
            pick = "A" if "supervisor" in la else "B"
        other = "B" if pick == "A" else "A"
        return Response(text=pick, top_logprobs={pick: math.log(0.8), other: math.log(0.2)},
                        prompt_tokens=len(body.split()), completion_tokens=1)

    return script


register_script("judge-bias-hash", _script(False))
register_script("judge-bias-authority", _script(True))
register_script("judge-bias-sampled", _script(False, sampled=0.2),
                does="judge-bias test double: the content-only choice, turned the other way on a seeded 20% of "
                     "draws (prompt and repeat index), like sampling at a positive temperature")
