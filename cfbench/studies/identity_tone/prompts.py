"""The identity-tone study's prompts: career-advice tasks, output contract, lexicons, requests.

Requests: system message = cfbench's output contract (four parts, 120–150
words, structure and length only); user message = identity descriptor + the
identity-free task. The varying part (the descriptor) comes after the shared
system prefix. Replies are collected with their refusal label; a failed call
or a blank reply stays a row (``status``), never a score.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from cfbench.core.paths import package_text
from cfbench.core.errors import InputError
from cfbench.judges.base import PRESETS, GenerationConfig, Request
from cfbench.metrics.lexicon import Lexicons, lexicons_from_mapping
from cfbench.metrics.refusal import classify_refusal

from .truncation import reply_truncated

__all__ = [
    "load_prompts",
    "load_contract",
    "load_lexicons",
    "load_as_run_terms",
    "released_prompts",
    "advice_config",
    "build_advice_requests",
    "collect_responses",
    "generate_advice",
    "RESPONSE_COLUMNS",
]

RESPONSE_COLUMNS = ["variant_id", "model", "prompt_id", "identity", "text", "status", "refusal",
                    "completion_tokens", "finish_reason", "truncated", "cache_hit", "error"]


def _data(name: str) -> dict:
    text = package_text(f"studies/identity_tone/data/{name}")
    return yaml.safe_load(text)


@lru_cache(maxsize=None)
def _prompts_raw() -> tuple[str, tuple[tuple[str, str], ...]]:
    raw = _data("prompts.yaml")
    return raw["version"], tuple((p["prompt_id"], p["task"]) for p in raw["prompts"])


def load_prompts(n: int | None = None) -> pd.DataFrame:
    """cfbench's own career-advice prompts (``prompt_id``, ``task``, ``prompt_version``).

    ``n`` takes the first n in file order (a fixed, documented subset).
    """
    version, items = _prompts_raw()
    frame = pd.DataFrame(items, columns=["prompt_id", "task"])
    if n is not None:
        if not 1 <= n <= len(frame):
            raise InputError(f"n must be in 1..{len(frame)}", source="prompts.yaml", field="n")
        frame = frame.head(n)
    frame["prompt_version"] = version
    return frame.reset_index(drop=True)


@lru_cache(maxsize=None)
def load_lexicons() -> Lexicons:
    """cfbench's own tone lexicons for the described mode (18 hedging, 12 politeness,
    15 negative-tone entries, sized after seed 002's Appendix A; the entries are cfbench's)."""
    return lexicons_from_mapping(_data("lexicons.yaml"), source="cfbench/studies/identity_tone/data/lexicons.yaml")


@lru_cache(maxsize=None)
def load_as_run_terms() -> Lexicons:
    """The terms recoverable from the released seed-002 data (as-run reproduction only)."""
    return lexicons_from_mapping(_data("as_run_terms.yaml"),
                                 source="cfbench/studies/identity_tone/data/as_run_terms.yaml")


def load_contract() -> tuple[str, str]:
    """(version, text) of cfbench's output contract (the system message)."""
    raw = _data("contract.yaml")
    return str(raw["version"]), str(raw["text"])


def released_prompts(career: pd.DataFrame) -> pd.DataFrame:
    """The released dataset's prompts (``prompt_id``, ``task`` = its base prompt,
    which carries the authors' own format block); one row per prompt id."""
    for col in ("prompt_id", "base_prompt"):
        if col not in career.columns:
            raise InputError("column missing", source="released career data", field=col)
    per = career.groupby("prompt_id", sort=True)["base_prompt"].agg(lambda s: sorted(set(s)))
    bad = per[per.map(len) != 1]
    if len(bad):
        raise InputError("prompt has more than one base prompt", source="released career data",
                         record=bad.index[0], field="base_prompt")
    return pd.DataFrame({"prompt_id": per.index, "task": [v[0] for v in per],
                         "prompt_version": "amiri2026-released"})


def advice_config(*, seed: int = 0, max_tokens: int | None = None, preset: str = "seed002",
                  repeat_penalty: float | None = None) -> GenerationConfig:
    """The seed's decoding settings (T=0.2, top_p=0.9), optionally another token cap and a repeat penalty
    (honoured by the local llama.cpp backend; an API chat request never carries it)."""
    cfg = PRESETS[preset].replace(seed=seed)
    if max_tokens is not None:
        cfg = cfg.replace(max_tokens=max_tokens)
    if repeat_penalty is not None:
        cfg = cfg.replace(repeat_penalty=float(repeat_penalty))
    return cfg


def build_advice_requests(variants: pd.DataFrame, *, config: GenerationConfig,
                          system: str | None = None) -> list[Request]:
    """One request per variant row: ``request_id`` = ``variant_id``.

    ``system`` defaults to cfbench's output contract; pass ``""`` to send the
    user text alone (released prompts already carry their format block).
    """
    if system is None:
        system = load_contract()[1]
    reqs = []
    for _, row in variants.iterrows():
        if not isinstance(row["user_text"], str) or not row["user_text"].strip():
            raise InputError("user text is empty", source="variants", record=row["variant_id"], field="user_text")
        msgs = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": row["user_text"]}]
        reqs.append(Request(str(row["variant_id"]), messages=tuple(msgs), config=config))
    return reqs


def collect_responses(variants: pd.DataFrame, judgments: pd.DataFrame, *, model: str,
                      cap: int | None = None) -> pd.DataFrame:
    """Join replies to their variants; every variant keeps a row.

    ``status`` is ``ok``, ``empty`` (blank reply) or ``error`` (the call
    failed; ``error`` holds the reason); ``refusal`` is the rule-based label,
    or ``empty`` / ``error`` for those rows. ``truncated`` says whether the
    reply stopped at the token cap ``cap`` (see
    :func:`cfbench.studies.identity_tone.truncation.reply_truncated`; <NA> for
    failed calls and when it cannot be told).
    """
    j = judgments.set_index("request_id")
    rows = []
    for _, v in variants.iterrows():
        vid = v["variant_id"]
        if vid not in j.index:
            raise InputError("no judgment for this variant", source="judgments", record=vid, field="request_id")
        r = j.loc[vid]
        ok = bool(r["ok"])
        text = r["text"] if ok else None
        if ok and not isinstance(text, str):
            raise InputError(f"reply is not text ({type(text).__name__})", source="judgments", record=vid,
                             field="text")
        status = "error" if not ok else ("empty" if not text.strip() else "ok")
        refusal = status if status != "ok" else classify_refusal(text, record=vid)
        rows.append({"variant_id": vid, "model": model, "prompt_id": v["prompt_id"], "identity": v["identity"],
                     "text": text, "status": status, "refusal": refusal,
                     "completion_tokens": r.get("completion_tokens"), "finish_reason": r.get("finish_reason"),
                     "cache_hit": r.get("cache_hit"), "error": r.get("error")})
    out = pd.DataFrame(rows, columns=RESPONSE_COLUMNS)
    cut = reply_truncated(out["finish_reason"], out["completion_tokens"], cap=cap if cap is not None else 2 ** 62)
    cut[out["status"].eq("error").to_numpy()] = pd.NA
    out["truncated"] = cut.array
    return out


def generate_advice(models: Sequence[str], variants: pd.DataFrame, *, config: GenerationConfig,
                    system: str | None = None, cache=None,
                    judge_options: Mapping[str, Mapping[str, Any]] | None = None
                    ) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Run every variant on every model; returns (responses, run stats per model).

    ``judge_options`` maps a spec to backend options (e.g. ``{"local:...": {"n_threads": 1}}``);
    they are operational settings and not part of the cache key. Failed calls
    stay as ``status="error"`` rows (see :func:`collect_responses`).
    """
    from cfbench.judges.registry import get_judge
    from cfbench.judges.runner import run_requests

    requests = build_advice_requests(variants, config=config, system=system)
    frames, stats = [], {}
    for spec in models:
        options = dict((judge_options or {}).get(spec, {}))
        judge = get_judge(spec, **options) if options else spec
        try:
            result = run_requests(judge, requests, cache=cache, desc=f"advice {spec}")
        finally:
            if options:
                judge.close()
        frames.append(collect_responses(variants, result.judgments, model=spec, cap=config.max_tokens))
        stats[spec] = dict(result.stats)
    return pd.concat(frames, ignore_index=True), stats
