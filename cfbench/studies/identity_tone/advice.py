"""Identity-conditioned career advice (seed 002): the assistant task.

Requests: system message = cfbench's output contract (four parts, 120–150
words); user message = identity descriptor + the identity-free task. The
varying part (the descriptor) comes after the shared system prefix.

This module also registers ``scripted:identity-advice``, a deterministic test
double that writes varied contract-shaped advice (for unit tests and smoke
runs only; never a source of reported numbers).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from cfbench.core.paths import package_text
from cfbench.core.errors import InputError
from cfbench.judges.base import PRESETS, GenerationConfig, Request, Response
from cfbench.judges.scripted import register_script
from cfbench.core.seeding import unit_interval as stable_unit
from cfbench.metrics.refusal import classify_refusal

__all__ = [
    "load_prompts",
    "load_contract",
    "released_prompts",
    "advice_config",
    "build_advice_requests",
    "collect_responses",
    "generate_advice",
    "RESPONSE_COLUMNS",
]

RESPONSE_COLUMNS = ["variant_id", "model", "prompt_id", "identity", "text", "status", "refusal",
                    "completion_tokens", "cache_hit", "error"]


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


def advice_config(*, seed: int = 0, max_tokens: int | None = None, preset: str = "seed002") -> GenerationConfig:
    """The seed's decoding settings (T=0.2, top_p=0.9), optionally a lower token cap."""
    cfg = PRESETS[preset].replace(seed=seed)
    if max_tokens is not None:
        cfg = cfg.replace(max_tokens=max_tokens)
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


def collect_responses(variants: pd.DataFrame, judgments: pd.DataFrame, *, model: str) -> pd.DataFrame:
    """Join replies to their variants; every variant keeps a row.

    ``status`` is ``ok``, ``empty`` (blank reply) or ``error`` (the call
    failed; ``error`` holds the reason); ``refusal`` is the rule-based label,
    or ``empty`` / ``error`` for those rows.
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
                     "completion_tokens": r.get("completion_tokens"), "cache_hit": r.get("cache_hit"),
                     "error": r.get("error")})
    return pd.DataFrame(rows, columns=RESPONSE_COLUMNS)


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
        frames.append(collect_responses(variants, result.judgments, model=spec))
        stats[spec] = dict(result.stats)
    return pd.concat(frames, ignore_index=True), stats


# --------------------------------------------------------------------------- scripted double

_ACTIONS = [
    "Write down three results you delivered this quarter with numbers attached.",
    "Book a short check-in with your manager and bring an agenda.",
    "Ask a trusted colleague which of your strengths they notice most.",
    "Pick one recurring meeting where you could share a brief update.",
    "Block thirty minutes each morning for the task that matters most.",
    "Keep a running list of questions to raise at the right moment.",
    "Offer to help on a cross-team task that is visible but contained.",
    "Review the job description of the role you want and note the gaps.",
]
_PHRASES = [
    "\"Could we spend ten minutes on my priorities for next month?\"",
    "\"I would appreciate your view on where I can add the most value.\"",
    "\"Here is what I delivered and what I plan to take on next.\"",
    "\"I suggest we agree on one measurable goal for this project.\"",
    "\"Thank you for the feedback; here is how I will act on it.\"",
    "\"Please let me know if this plan matches your expectations.\"",
]
_MISTAKES = [
    "Waiting for others to notice your work instead of reporting it plainly.",
    "Agreeing to every request, which can simply spread your effort too thin.",
    "Treating feedback as a verdict rather than as information you might use.",
    "Bringing problems without a proposed next step.",
]
_DAYS = [
    "List your recent results.", "Draft a one-paragraph summary.", "Share it with a peer for comments.",
    "Schedule the conversation.", "Hold the conversation and take notes.", "Send a short follow-up email.",
    "Reflect on what worked and adjust.",
]


def _pick(bank: Sequence[str], k: int, *parts: object) -> list[str]:
    order = sorted(range(len(bank)), key=lambda i: stable_unit(*parts, i))
    return [bank[i] for i in order[:k]]


def _identity_advice(request: Request) -> Response:
    user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    key = (request.request_id, user, request.config.seed)
    lines = ["1) Three actions:"] + [f"- {a}" for a in _pick(_ACTIONS, 3, *key, "a")]
    lines += ["2) Two phrases:"] + [f"- {p}" for p in _pick(_PHRASES, 2, *key, "p")]
    lines += ["3) One mistake:", f"- {_pick(_MISTAKES, 1, *key, 'm')[0]}"]
    lines += ["4) Plan:"] + [f"- Day {i + 1}: {d}" for i, d in enumerate(_pick(_DAYS, 3, *key, "d"))]
    text = "\n".join(lines)
    u = stable_unit(*key, "extra")
    if u < 0.04:  # a rare disclaimer, so smoke runs exercise the partial-refusal path
        text = "I am not a certified career coach, but here is some general guidance.\n" + text
    elif u < 0.5:
        text += "\nThis may take a few weeks, and results often depend on timing."
    return Response(text=text, prompt_tokens=sum(len(m["content"].split()) for m in request.messages),
                    completion_tokens=len(text.split()), finish_reason="stop")


register_script("identity-advice", _identity_advice)
