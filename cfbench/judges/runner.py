"""Run many requests against one judge: cached, deduplicated, retried, bounded.

:func:`run_requests` is the one entry point studies use. For each request it

1. computes the cache key and reads every cached reply first;
2. merges identical requests (same key) so each distinct call is made once;
3. orders the remaining calls by the judge's ``order_key`` (the local backend
   groups prompts sharing a prefix so llama.cpp reuses its KV cache);
4. calls the judge with at most ``concurrency`` calls in flight, retrying
   transient failures (at most ``max_attempts`` attempts, exponential backoff
   with seeded jitter, honouring a server's Retry-After);
5. stores each success in the cache the moment it arrives (errors are never
   cached), so a killed run resumes where it stopped.

Failures are logged with their reason and returned as rows with ``ok=False``;
they are excluded from metrics downstream and counted in the run's
non-completion rate.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import pandas as pd
from tqdm import tqdm

from ..core.secrets import scrub_secrets
from ..core.schema import JUDGMENT_COLUMNS
from .base import Judge, JudgeError, Request, Response, RetryableError
from .cache import ResponseCache
from .registry import canonical_spec, get_judge

__all__ = ["run_requests", "arun_requests", "plan_requests", "RunResult", "CacheMissError", "judge_for"]

log = logging.getLogger("cfbench.judges")

CacheArg = ResponseCache | str | Path | None | Literal[False]


class CacheMissError(RuntimeError):
    """Replay mode needed a reply the cache does not hold."""


@dataclass
class RunResult:
    """Rows (one per request, in the order given) and the run's tallies."""

    judgments: pd.DataFrame
    stats: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        s = self.stats
        return (f"RunResult({s.get('judge')}: {s.get('n_requests')} requests, {s.get('n_unique')} unique, "
                f"{s.get('n_cached')} cached, {s.get('n_called')} called, {s.get('n_failed')} failed)")


_JUDGES: dict[str, Judge] = {}
_HAS_TIMEOUT_CM = hasattr(asyncio, "timeout")  # Python >= 3.11


def judge_for(spec: str) -> Judge:
    """The judge a spec names, built once per process (models load once)."""
    if spec not in _JUDGES:
        _JUDGES[spec] = get_judge(spec)
    return _JUDGES[spec]


def _resolve_cache(cache: CacheArg) -> ResponseCache | None:
    if cache is False:
        return None
    if isinstance(cache, ResponseCache):
        return cache
    return ResponseCache(cache)  # None -> default path


def _spec_of(judge: Judge | str) -> str:
    if isinstance(judge, str):
        return canonical_spec(judge)
    if not judge.spec:
        raise ValueError(f"{judge!r} has no spec; build judges with cfbench.judges.get_judge")
    return judge.spec


def plan_requests(judge: Judge | str, requests: Iterable[Request], *, cache: CacheArg = None,
                  remember: bool = True) -> dict[str, int]:
    """Dry run: how many calls a run would make and how many are already cached.

    With ``remember=True`` the uncached requests are recorded in the cache file
    so ``cfbench cache export`` can write them as a Batch-API file.
    """
    spec = _spec_of(judge)
    requests = list(requests)
    store = _resolve_cache(cache)
    keys = {r.cache_key(spec): r for r in requests}
    cached = set(store.get_many(keys)) if store is not None else set()
    if store is not None and remember:
        store.remember_requests(spec, [r for k, r in keys.items() if k not in cached])
    return {
        "n_requests": len(requests),
        "n_unique": len(keys),
        "n_cached": len(cached),
        "n_to_call": len(keys) - len(cached),
    }


def run_requests(judge: Judge | str, requests: Iterable[Request], *, cache: CacheArg = None,
                 mode: Literal["live", "replay", "plan"] | None = None, concurrency: int | None = None,
                 max_attempts: int = 3, timeout_s: float | None = 600.0, backoff_s: float = 1.0,
                 backoff_max_s: float = 60.0, jitter_seed: int = 0,
                 price_table: Mapping[str, tuple[float, float]] | None = None,
                 desc: str | None = None, progress: bool = True) -> RunResult:
    """Run ``requests`` on ``judge`` (a spec string or a built :class:`Judge`).

    Parameters
    ----------
    cache : ResponseCache, path, None or False
        Where replies are cached; ``None`` is the default file
        (``$CFBENCH_CACHE_DIR/responses.sqlite``), ``False`` disables caching.
    mode : "live", "replay" or "plan", optional
        ``replay`` never calls a model and raises :class:`CacheMissError` on any miss;
        ``plan`` never calls a model either: it records the uncached requests for
        ``cfbench cache export`` and returns them as not run.
        Defaults to ``$CFBENCH_MODE`` or ``"live"`` (``cfbench reproduce --replay`` sets it).
    concurrency : int, optional
        Calls in flight at once; defaults to the backend's ``max_concurrency``.
    max_attempts : int
        Attempts per call for transient errors (429, 5xx, timeouts); at most 3 by default.
    backoff_s, backoff_max_s : float
        Exponential backoff (with seeded jitter) between attempts, capped at ``backoff_max_s``.
        A server's Retry-After is honoured up to ``backoff_max_s``; a longer one fails the
        call at once with the wait in its reason, rather than stalling the run.
    price_table : mapping, optional
        ``{spec: (usd_per_1M_prompt_tokens, usd_per_1M_completion_tokens)}`` for a cost estimate.

    Returns
    -------
    RunResult
        ``judgments`` has :data:`cfbench.core.schema.JUDGMENT_COLUMNS`, one row per request in order.

    Examples
    --------
    >>> from cfbench.judges import Request, run_requests
    >>> r = run_requests("scripted:yes", [Request("a", ({"role": "user", "content": "ok?"},))], cache=False,
    ...                  progress=False)
    >>> r.judgments.loc[0, "text"]
    'Yes'
    """
    coro = arun_requests(judge, requests, cache=cache, mode=mode, concurrency=concurrency,
                         max_attempts=max_attempts, timeout_s=timeout_s, backoff_s=backoff_s,
                         backoff_max_s=backoff_max_s, jitter_seed=jitter_seed, price_table=price_table,
                         desc=desc, progress=progress)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Inside a running loop (Jupyter, papermill): run on a private loop in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def arun_requests(judge: Judge | str, requests: Iterable[Request], *, cache: CacheArg = None,
                        mode: Literal["live", "replay", "plan"] | None = None, concurrency: int | None = None,
                        max_attempts: int = 3, timeout_s: float | None = 600.0, backoff_s: float = 1.0,
                        backoff_max_s: float = 60.0, jitter_seed: int = 0,
                        price_table: Mapping[str, tuple[float, float]] | None = None,
                        desc: str | None = None, progress: bool = True) -> RunResult:
    """Async form of :func:`run_requests` (same arguments)."""
    if mode is None:
        mode = os.environ.get("CFBENCH_MODE", "live")  # type: ignore[assignment]
    if mode not in ("live", "replay", "plan"):
        raise ValueError(f"mode must be 'live', 'replay' or 'plan', got {mode!r}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    spec = _spec_of(judge)
    requests = list(requests)
    ids = [r.request_id for r in requests]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"request_id {dup!r} appears more than once in one run")
    t_start = time.perf_counter()
    store = _resolve_cache(cache)
    keys = [r.cache_key(spec) for r in requests]
    unique: dict[str, Request] = {}
    for k, r in zip(keys, requests):
        unique.setdefault(k, r)
    hits = store.get_many(unique) if store is not None else {}
    todo = [k for k in unique if k not in hits]

    if mode == "replay" and todo:
        missing = [unique[k].request_id for k in todo]
        raise CacheMissError(
            f"replay mode: {len(todo)} of {len(unique)} distinct requests for {spec} are not in the cache "
            f"({store.path if store else 'no cache'}); first missing: {missing[:5]}"
        )

    outcomes: dict[str, tuple[Response | None, float | None, str | None]] = {
        k: (resp, lat, None) for k, (resp, lat) in hits.items()
    }
    if store is not None and todo:
        # remembered until answered, so `cfbench cache export` can send them through a Batch API
        store.remember_requests(spec, [unique[k] for k in todo])
    if mode == "plan":
        for k in todo:
            outcomes[k] = (None, None, "not run: plan mode (recorded for `cfbench cache export`)")
        todo = []
    n_called = 0
    if todo:
        built = judge if isinstance(judge, Judge) else judge_for(spec)
        todo.sort(key=lambda k: built.order_key(unique[k]))
        limit = concurrency or built.max_concurrency
        sem = asyncio.Semaphore(max(1, limit))
        rng = random.Random(jitter_seed)
        bar = tqdm(total=len(todo), desc=desc or spec, disable=not progress, mininterval=1.0,
                   unit="call", dynamic_ncols=True)

        async def call(key: str) -> None:
            req = unique[key]
            reason = "not attempted"
            async with sem:
                for attempt in range(1, max_attempts + 1):
                    t0 = time.perf_counter()
                    try:
                        if timeout_s is None:
                            resp = await built.acomplete(req)
                        elif _HAS_TIMEOUT_CM:  # no extra task per call, unlike wait_for
                            async with asyncio.timeout(timeout_s):
                                resp = await built.acomplete(req)
                        else:  # pragma: no cover - Python 3.10
                            resp = await asyncio.wait_for(built.acomplete(req), timeout_s)
                    except (RetryableError, asyncio.TimeoutError) as exc:
                        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                        if attempt == max_attempts:
                            break
                        retry_after = getattr(exc, "retry_after", None)
                        if retry_after is not None and retry_after > backoff_max_s:
                            reason += (f" (the server asked to wait {retry_after:g} s, more than "
                                       f"backoff_max_s={backoff_max_s:g} s: not retried)")
                            break
                        delay = (retry_after if retry_after is not None
                                 else min(backoff_max_s, backoff_s * 2 ** (attempt - 1)) * (0.5 + rng.random()))
                        await asyncio.sleep(delay)
                        continue
                    except JudgeError as exc:
                        reason = f"{type(exc).__name__}: {exc}"
                        break
                    except Exception as exc:  # a backend bug or an unexpected SDK error: record, don't crash
                        reason = f"{type(exc).__name__}: {exc}"
                        break
                    latency = time.perf_counter() - t0
                    if store is not None:
                        store.put(key, spec, resp, latency)
                    outcomes[key] = (resp, latency, None)
                    bar.update(1)
                    return
            reason = scrub_secrets(reason)
            log.warning("request %s on %s failed after %d attempt(s): %s", req.request_id, spec, attempt, reason)
            outcomes[key] = (None, None, reason)
            bar.update(1)

        try:
            await asyncio.gather(*(call(k) for k in todo))
        finally:
            bar.close()
            await built.arelease()
        n_called = len(todo)

    rows = []
    for req, key in zip(requests, keys):
        resp, lat, err = outcomes[key]
        rows.append({
            "request_id": req.request_id,
            "judge": spec,
            "repeat": req.repeat,
            "key": key,
            "text": resp.text if resp else None,
            "top_logprobs": json.dumps(resp.top_logprobs) if resp and resp.top_logprobs else None,
            "prompt_tokens": resp.prompt_tokens if resp else None,
            "completion_tokens": resp.completion_tokens if resp else None,
            "prompt_tokens_evaluated": resp.prompt_tokens_evaluated if resp else None,
            "latency_s": lat,
            "cache_hit": key in hits,
            "error": err,
            "ok": err is None,
        })
    frame = pd.DataFrame(rows, columns=JUDGMENT_COLUMNS)
    for col in ("prompt_tokens", "completion_tokens", "prompt_tokens_evaluated"):
        frame[col] = frame[col].astype("Int64")

    fresh = [outcomes[k] for k in todo]
    n_failed = sum(1 for _, _, e in outcomes.values() if e is not None)
    ptok = sum((r.prompt_tokens or 0) for r, _, _ in fresh if r)
    ctok = sum((r.completion_tokens or 0) for r, _, _ in fresh if r)
    etok = sum((r.prompt_tokens_evaluated or 0) for r, _, _ in fresh if r)
    cost = math.nan
    if price_table and spec in price_table:
        p_in, p_out = price_table[spec]
        cost = (ptok * p_in + ctok * p_out) / 1e6
    stats = {
        "judge": spec,
        "mode": mode,
        "n_requests": len(requests),
        "n_unique": len(unique),
        "n_cached": len(hits),
        "n_called": n_called,
        "n_failed": n_failed,
        "non_completion_rate": n_failed / len(unique) if unique else 0.0,
        "prompt_tokens": ptok,
        "prompt_tokens_evaluated": etok,
        "completion_tokens": ctok,
        "cost_usd": cost,
        "wall_s": time.perf_counter() - t_start,
    }
    if n_failed:
        log.warning("%s: %d of %d distinct requests failed (non-completion rate %.1f%%)",
                    spec, n_failed, len(unique), 100 * stats["non_completion_rate"])
    return RunResult(frame, stats)
