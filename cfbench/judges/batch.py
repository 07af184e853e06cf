"""OpenAI Batch-API round trip for the response cache.

Paper-scale runs can go through the Batch API: a dry run records the pending
requests, :func:`export_batch` writes them as Batch input JSONL (``custom_id``
is the cache key), and :func:`import_batch` stores the Batch output lines as
ordinary cache entries, after which the study runs in replay mode.
"""

from __future__ import annotations

import json
from pathlib import Path

from .base import GenerationConfig, Response
from .cache import ResponseCache
from .registry import parse_spec

__all__ = ["export_batch", "import_batch"]


def export_batch(cache: ResponseCache, judge: str, out: Path) -> int:
    backend, model = parse_spec(judge)
    if backend != "openai":
        raise ValueError(f"Batch-API export is for openai:* judges, got {judge!r}")
    model = model.partition("@")[0]
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for key, _, payload in cache.pending(judge):
            cfg = GenerationConfig(**{**payload["config"], "stop": tuple(payload["config"]["stop"])})
            body = {"model": model, "messages": payload["messages"], **cfg.chat_params()}
            line = {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    return n


def import_batch(cache: ResponseCache, judge: str, path: Path) -> tuple[int, int]:
    """Store successful Batch output lines; returns (imported, errors)."""
    ok = bad = 0
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            key = item["custom_id"]
            resp = item.get("response") or {}
            if item.get("error") or resp.get("status_code", 200) != 200:
                bad += 1
                continue
            body = resp["body"]
            choice = body["choices"][0]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"{path}: line {lineno}: not a Batch-API output line ({exc})") from None
        top = None
        lp = choice.get("logprobs") or {}
        if lp.get("content"):
            top = {alt["token"]: alt["logprob"] for alt in lp["content"][0].get("top_logprobs", [])}
        usage = body.get("usage") or {}
        cache.put(key, judge, Response(text=choice["message"]["content"] or "", top_logprobs=top,
                                       prompt_tokens=usage.get("prompt_tokens"),
                                       completion_tokens=usage.get("completion_tokens"),
                                       finish_reason=choice.get("finish_reason")))
        ok += 1
    return ok, bad
