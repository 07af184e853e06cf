"""Run many requests against one judge: cached, deduplicated, retried, bounded.

:func:`run_requests` is the one entry point studies use. For each request it

1. computes the cache key and reads every cached reply first;
2. merges identical requests (same key) so each distinct call is made once;
3. orders the remaining calls by the judge's ``order_key`` (the local backend
   groups prompts sharing a prefix so llama.cpp reuses its KV cache);
4. calls the judge with at most ``concurrency`` calls in flight: a fixed pool of workers pulls
   the keys in order and a gate admits one waiter per free slot, so the cost per call does not
   grow with the number of requests queued (flat from 1,000 to 100,000 in
   ``benchmarks/bench_runner.py``). Transient failures are retried (at most ``max_attempts``
   attempts, exponential backoff with seeded jitter, honouring a server's Retry-After); a retry
   gives up its slot while it waits and is admitted ahead of first attempts when due;
5. checks each reply before trusting it: a reply holding a credential from the
   environment ("reply echoed a credential", any spelling, see :mod:`cfbench.core.secrets`) or
   far longer than ``max_tokens`` allows is a failure, neither cached nor returned as text;
6. stores each success in the cache the moment it arrives (errors are never
   cached as replies), so a killed run resumes where it stopped, and writes failure reasons
   within a second of each failure. A cache locked by another process is waited for
   (``cache_wait_s``) and then recorded as the call's failure, never raised out of the run.

Backends that set ``adaptive_concurrency`` (the OpenAI-compatible one) start at
``initial_concurrency`` calls in flight and adapt: the limit grows while latency holds
(doubling until the first overload, then by an eighth per window) and halves when 429/503
replies make up 15 % or more of the recent replies (once per epoch: replies to calls admitted
before a cut do not cut again), never above ``max_concurrency``. A server that refuses a few
calls at random therefore keeps its concurrency; a saturated one is backed off from. Their
attempts are also cut early: attempt ``k`` may take 4 x the p95 latency so far x 2^(k-1)
(at least 1 s x 2^(k-1), at most ``timeout_s``), so a hung call holds its slot for seconds
(``benchmarks/bench_faults.py``: with 20 % of calls faulty, 0.70 of the healthy throughput at
20,000 requests, 0.47 at 10,000 where the run's ~10 s tail of retried calls weighs more).

Failures are logged with their reason and returned as rows with ``ok=False``;
they are recorded in the cache (replay shows them with their reason), excluded
from metrics downstream and counted in the run's non-completion rate.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import contextvars
import gc
import json
import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..core.schema import JUDGMENT_COLUMNS
from .base import GenerationConfig, Judge, JudgeError, Request, Response, RetryableError, request_keys
from .cache import CacheLockedError, ResponseCache
from ..core.secrets import credentials, echoed_credential, scrub
from ..core.errors import InputError
from ..core.text import for_terminal, unstorable
from .failures import NOT_SENT, failure_kind
from .registry import canonical_spec, get_judge

__all__ = ["run_requests", "arun_requests", "plan_requests", "RunResult", "CacheMissError", "judge_for",
           "chat_function", "judge_settings"]

log = logging.getLogger("cfbench.judges")

CacheArg = ResponseCache | str | Path | None | Literal[False]


DEFAULT_TIMEOUT_S = 600.0
FROM_SETTINGS: Any = type("FromSettings", (), {"__repr__": lambda self: "FROM_SETTINGS"})()
_SETTINGS: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("cfbench_judge_settings", default={})


@contextlib.contextmanager
def judge_settings(*, concurrency: int | None = None, timeout_s: float | None = None) -> Iterator[None]:
    """Operational defaults for every :func:`run_requests` inside (a study's ``Params.concurrency`` and
    ``Params.timeout_s``): ``concurrency`` calls in flight (None or 0: adapt to the server), attempts
    cut ``timeout_s`` seconds after sending (None or 0: the default). They are not part of any cache
    key. An argument given to :func:`run_requests` itself wins."""
    for name, value in (("concurrency", concurrency), ("timeout_s", timeout_s)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ValueError(f"judge setting {name} must be a number >= 0, got {value!r}")
    now = dict(_SETTINGS.get())
    now.update({k: v for k, v in (("concurrency", concurrency), ("timeout_s", timeout_s)) if v})
    token = _SETTINGS.set(now)
    try:
        yield
    finally:
        _SETTINGS.reset(token)


def uses_judge_settings(fn: Callable) -> Callable:
    """Decorate a study's ``run(params, ...)``: its judge calls use ``params.concurrency`` and
    ``params.timeout_s`` (0 or absent: the defaults), see :func:`judge_settings`."""
    import functools

    @functools.wraps(fn)
    def wrapped(params: Any, *args: Any, **kwargs: Any) -> Any:
        with judge_settings(concurrency=getattr(params, "concurrency", None) or None,
                            timeout_s=getattr(params, "timeout_s", None) or None):
            return fn(params, *args, **kwargs)

    return wrapped


def _env_number(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"${name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"${name} must be a number >= 0, got {raw!r}")
    return value or None


def resolve_settings(concurrency: int | None, timeout_s: Any) -> tuple[int | None, float | None]:
    """``(concurrency, timeout_s)`` after the defaults: the argument, else :func:`judge_settings`, else
    ``$CFBENCH_CONCURRENCY`` / ``$CFBENCH_TIMEOUT_S``, else adaptive / 600 s."""
    ctx = _SETTINGS.get()
    if concurrency is None:
        concurrency = ctx.get("concurrency")
        if concurrency is None:
            env = _env_number("CFBENCH_CONCURRENCY")
            if env is not None and env != int(env):  # int() would cut 2.7 to 2 without a word
                raw = os.environ["CFBENCH_CONCURRENCY"]
                raise ValueError(f"$CFBENCH_CONCURRENCY must be a whole number, got {raw!r}")
            concurrency = int(env) if env else None
    if timeout_s is FROM_SETTINGS:
        timeout_s = ctx.get("timeout_s") or _env_number("CFBENCH_TIMEOUT_S") or DEFAULT_TIMEOUT_S
    return (int(concurrency) if concurrency else None), timeout_s


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


def _resolve_cache(cache: CacheArg, *, read_only: bool = False) -> ResponseCache | None:
    if cache is False:
        return None
    if isinstance(cache, ResponseCache):
        return cache
    from .cache import default_cache_path

    path = Path(cache) if cache is not None else default_cache_path()
    # replay only reads (an archived cache, a read-only mount); a missing file is created as before
    return ResponseCache(path, read_only=read_only and path.is_file())


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
    keys = dict(zip(request_keys(spec, requests), requests))
    cached = store.has_many(list(keys), judge=spec) if store is not None else set()
    if store is not None and remember:
        new = [k for k in keys if k not in cached]
        store.remember_requests(spec, [keys[k] for k in new], keys=new)
    return {
        "n_requests": len(requests),
        "n_unique": len(keys),
        "n_cached": len(cached),
        "n_to_call": len(keys) - len(cached),
    }


def run_requests(judge: Judge | str, requests: Iterable[Request], *, cache: CacheArg = None,
                 mode: Literal["live", "replay", "plan"] | None = None, concurrency: int | None = None,
                 max_attempts: int = 3, timeout_s: Any = FROM_SETTINGS, backoff_s: float = 1.0,
                 backoff_max_s: float = 60.0, jitter_seed: int = 0,
                 price_table: Mapping[str, tuple[float, float]] | None = None,
                 desc: str | None = None, progress: bool = True, cache_wait_s: float = 120.0) -> RunResult:
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
        Calls in flight at once (a fixed limit). Default: :func:`judge_settings`, else
        ``$CFBENCH_CONCURRENCY``, else the backend's: an adaptive limit for network backends (see
        :class:`_Gate`), its ``max_concurrency`` for the others.
    timeout_s : float or None
        Seconds one attempt may take, counted from the moment it is sent (never from when it was
        queued here). Default: :func:`judge_settings`, else ``$CFBENCH_TIMEOUT_S``, else 600.
    max_attempts : int
        Attempts per call for transient errors (429, 5xx, timeouts); at most 3 by default.
    backoff_s, backoff_max_s : float
        Exponential backoff (with seeded jitter) between attempts, capped at ``backoff_max_s``.
        A server's Retry-After is honoured up to ``backoff_max_s``; a longer one fails the
        call at once with the wait in its reason, rather than stalling the run.
    price_table : mapping, optional
        ``{spec: (usd_per_1M_prompt_tokens, usd_per_1M_completion_tokens)}`` for a cost estimate.
    cache_wait_s : float
        How long a reply waits, in total, for a cache another process keeps locked; after that
        the call is a recorded failure ("cache write failed ...") and the run goes on.

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
    concurrency, timeout_s = resolve_settings(concurrency, timeout_s)  # here: a worker thread has no context
    coro = arun_requests(judge, requests, cache=cache, mode=mode, concurrency=concurrency,
                         max_attempts=max_attempts, timeout_s=timeout_s, backoff_s=backoff_s,
                         backoff_max_s=backoff_max_s, jitter_seed=jitter_seed, price_table=price_table,
                         desc=desc, progress=progress, cache_wait_s=cache_wait_s)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Inside a running loop (Jupyter, papermill): run on a private loop in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


#: A reply longer than this many characters per allowed token is "far beyond max_tokens".
_CHARS_PER_TOKEN_LIMIT = 32
_CHARS_SLACK = 1024
_TOKENS_FACTOR = 2
#: the words by which :func:`reply_problem`'s reasons say why a reply is not trusted (each reason starts "reply ");
#: such a reply is never retried here, and a Batch line failing so is not re-sent (``batch.is_permanent``)
UNTRUSTED_REPLY = ("echoed a credential", "far beyond max_tokens", "cannot be stored")


def reply_problem(response: Response, max_tokens: int, *, secret_env: tuple[str, ...] = (),
                  creds: dict[str, str] | None = None) -> str | None:
    """Why a reply must not be trusted, or None: it holds a lone surrogate (no file can store it), it
    echoes a credential, or it is far beyond
    ``max_tokens`` (more than 32 characters per allowed token + 1024, or more than twice the
    allowed completion tokens + 16 by the server's own count)."""
    text = response.text if isinstance(response.text, str) else ""
    for part, value in (("text", text), ("top_logprobs", "".join(response.top_logprobs or ())),
                        ("finish_reason", response.finish_reason)):
        if bad := unstorable(value):  # valid JSON (``"\ud800"``) that no file can hold: data, not a crash
            return f"reply {part} {bad}, which cannot be stored; not cached"
    creds = credentials(secret_env) if creds is None else creds
    name = None
    for value in (text, "".join(response.top_logprobs or ()), response.finish_reason):  # every text field
        if name is None and isinstance(value, str) and value:
            name = echoed_credential(value, creds=creds)
    if name is not None:
        return f"reply echoed a credential (${name}); not cached, text withheld"
    char_limit = _CHARS_PER_TOKEN_LIMIT * max_tokens + _CHARS_SLACK
    if len(text) > char_limit:
        return (f"reply of {len(text):,} characters is far beyond max_tokens={max_tokens} "
                f"(limit {char_limit:,} characters); not cached")
    ctok = response.completion_tokens
    if isinstance(ctok, int) and ctok > _TOKENS_FACTOR * max_tokens + 16:
        return f"reply of {ctok:,} completion tokens is far beyond max_tokens={max_tokens}; not cached"
    return None


class _Gate:
    """At most ``limit`` calls in flight; each released slot wakes exactly one waiter (FIFO, with
    retries queued ahead of first attempts), so admission costs O(1) whatever the queue length.

    When ``adaptive`` the limit moves between 1 and ``ceiling``:

    * it grows while latency holds (doubling per window of ``limit`` good replies until the first
      overload, then by ``max(1, limit // 8)`` per window, so it recovers within a few windows);
    * it is cut by the latency gradient (TCP Vegas, Netflix's gradient limit) when the median
      latency of a window of ``limit`` replies exceeds ``TOLERANCE`` x the best latency seen
      (+ ``SLACK_S``): to ``limit x bound / median``, at most by half per window. A server that
      queues calls instead of refusing them (llama.cpp's, one slot) makes each call wait for the
      ones ahead of it, so its latency grows with the calls in flight and the limit settles where
      latency stops growing (about 2 on a one-slot server) instead of filling its queue until
      calls time out;
    * it is cut by half when overload replies (429/503) make up at least ``OVERLOAD_SHARE`` of
      the replies since the last cut (the last ``WINDOW`` of them at most; at least
      ``MIN_OVERLOADS`` overloads, or ``WINDOW // 5`` replies, before a share counts), and at most
      once per epoch (calls admitted before a cut saw the old limit, so their 429s do not count
      again). A scattering of 429s from a server that fails some calls at random therefore does
      not collapse the limit; a saturated server, which refuses most calls beyond its capacity,
      is backed off from at once. Timeouts count as overload replies here.
    """

    OVERLOAD_SHARE = 0.15
    WINDOW = 100
    MIN_OVERLOADS = 5
    TOLERANCE = 2.0   # latency up to this multiple of the best one seen is not queueing
    SLACK_S = 0.05    # ... plus this much (scheduling noise on sub-second replies)

    def __init__(self, start: int, *, ceiling: int, adaptive: bool):
        self.limit = max(1, min(start, ceiling))
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.in_flight = 0
        self.peak = 0
        self.history: list[int] = [self.limit]
        self.wakeups = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._best: float | None = None
        self._good = 0
        self._slow_start = True
        self._epoch = 0          # bumped by every cut
        self._window: collections.deque[bool] = collections.deque()  # recent replies: overloaded?
        self._n_over = 0
        self._lat: list[float] = []  # latencies of this epoch's replies, one window at a time
        self.latency_cuts = 0

    async def acquire(self, *, priority: bool = False) -> int:
        """Take a slot (waiting if none is free); returns the epoch to pass back to
        :meth:`overloaded`."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
        else:
            fut = asyncio.get_running_loop().create_future()
            if priority:
                self._waiters.appendleft(fut)
            else:
                self._waiters.append(fut)
            try:
                await fut  # the releaser counted this slot as ours before waking us
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self.release()  # granted, then cancelled: hand the slot on
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(fut)
                raise
        if self.in_flight > self.peak:
            self.peak = self.in_flight
        return self._epoch

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            fut = self._waiters.popleft()
            if fut.done():
                continue
            self.in_flight += 1
            self.wakeups += 1
            fut.set_result(None)

    def _set(self, limit: int) -> None:
        if limit != self.limit:
            self.limit = limit
            self.history.append(limit)
            self._wake()

    def _note(self, over: bool) -> None:
        w = self._window
        w.append(over)
        self._n_over += over
        while len(w) > self.WINDOW:
            self._n_over -= w.popleft()

    def overloaded(self, epoch: int | None = None) -> None:
        if not self.adaptive:
            return
        self._note(True)
        if epoch is not None and epoch != self._epoch:
            return  # admitted before the last cut: it saw the old limit
        if len(self._window) < self.WINDOW // 5 and self._n_over < self.MIN_OVERLOADS:
            return  # a few early 429s are not yet a share
        if self._n_over < self.OVERLOAD_SHARE * len(self._window):
            return
        self._cut(self.limit // 2)

    def succeeded(self, latency: float, epoch: int | None = None) -> None:
        """A reply after ``latency`` seconds (from the moment its call was sent). Grows the limit while
        latency holds; cuts it by the latency gradient when the median latency of a window of
        replies (calls admitted in this epoch) exceeds ``TOLERANCE`` x the best latency seen."""
        if not self.adaptive:
            return
        self._note(False)
        self._best = latency if self._best is None else min(self._best, latency)
        if epoch is not None and epoch != self._epoch:
            return  # admitted before the last cut: its latency reflects the old limit
        lat = self._lat
        lat.append(latency)
        if len(lat) >= max(2, self.limit):
            median = sorted(lat)[len(lat) // 2]
            lat.clear()
            bound = self.TOLERANCE * self._best + self.SLACK_S
            if median > bound and self.limit > 1:  # queueing at the server: back off by the gradient
                self._cut(max(self.limit // 2, int(self.limit * bound / median)), latency=True)
                return
        if latency > self.TOLERANCE * self._best + self.SLACK_S:  # latency no longer holds: stop growing
            self._good = 0
            return
        self._good += 1
        if self._good >= self.limit:
            self._good = 0
            step = self.limit if self._slow_start else max(1, self.limit // 8)
            self._set(min(self.ceiling, self.limit + step))

    def _cut(self, limit: int, *, latency: bool = False) -> None:
        self._epoch += 1
        self._slow_start = False
        self._good = 0
        self._window.clear()
        self._n_over = 0
        self._lat.clear()
        self.latency_cuts += latency
        self._set(max(1, limit))


class _FirstTimeout:
    """Per-attempt timeouts on a network backend. Once ``MIN_SAMPLES`` replies have arrived, attempt
    ``k`` may take ``FACTOR`` x the p95 latency of the replies so far x 2^(k-1) (at least
    ``FLOOR_S`` x 2^(k-1), never more than ``timeout_s``); before that, every attempt has
    ``timeout_s``. A hung call then holds its slot for seconds, not for the whole timeout, and a
    call that hangs on every attempt gives up after about 7 x the first cut rather than
    3 x ``timeout_s``; a slow but live server raises the p95 and so every cut."""

    FACTOR = 4.0
    FLOOR_S = 1.0
    MIN_SAMPLES = 20

    def __init__(self, timeout_s: float | None):
        self.timeout_s = timeout_s
        self._recent: collections.deque[float] = collections.deque(maxlen=256)
        self._n = 0
        self._base: float | None = None
        #: attempts running under the full timeout before the first cut was known -> (start, attempt)
        self.early: dict[Any, tuple[float, int]] = {}

    def observe(self, latency: float) -> bool:
        """Record a reply's latency; True when this made the first cut known."""
        self._recent.append(latency)
        self._n += 1
        first = False
        if self._n >= self.MIN_SAMPLES and (self._n < 256 or self._n % 32 == 0):
            lat = sorted(self._recent)
            p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
            first = self._base is None
            self._base = max(self.FLOOR_S, self.FACTOR * p95)
        return first

    def limit(self, attempt: int = 1) -> float | None:
        if self._base is None:
            return self.timeout_s
        cut = self._base * 2 ** (attempt - 1)
        return cut if self.timeout_s is None else min(self.timeout_s, cut)


class _FailureLog:
    """Failure reasons written to the cache as they happen (at most ``every_s`` apart, and on
    :meth:`flush`), so a run killed midway keeps the reasons of the calls that failed before."""

    def __init__(self, store: ResponseCache | None, spec: str, every_s: float = 1.0):
        self.store, self.spec, self.every_s = store, spec, every_s
        self._buf: list[tuple[str, str]] = []
        self._last = time.perf_counter()

    def add(self, key: str, reason: str) -> None:
        if self.store is None:
            return
        if not self._buf:  # the first reason after a flush is written within every_s at the latest
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_later(self.every_s, self.flush)
        self._buf.append((key, reason))
        if time.perf_counter() - self._last >= self.every_s:
            self.flush()

    def flush(self) -> None:
        self._last = time.perf_counter()
        if self.store is None or not self._buf:
            return
        buf, self._buf = self._buf, []
        _quietly(lambda: self.store.record_failures(self.spec, buf), "record failures")


async def arun_requests(judge: Judge | str, requests: Iterable[Request], *, cache: CacheArg = None,
                        mode: Literal["live", "replay", "plan"] | None = None, concurrency: int | None = None,
                        max_attempts: int = 3, timeout_s: Any = FROM_SETTINGS, backoff_s: float = 1.0,
                        backoff_max_s: float = 60.0, jitter_seed: int = 0,
                        price_table: Mapping[str, tuple[float, float]] | None = None,
                        desc: str | None = None, progress: bool = True, cache_wait_s: float = 120.0) -> RunResult:
    """Async form of :func:`run_requests` (same arguments).

    The run is five steps, each one function: keys and merging (:func:`_keys_and_unique`), the
    cache read (:func:`_read_cache`: hits, replay's recorded failures, plan mode), admission and
    dispatch (:class:`_Dispatch`: a gate from :func:`_admission` and a pool of workers), retry and
    record (:meth:`_Dispatch.call`, :meth:`_Dispatch.record_reply`, :meth:`_Dispatch.record_failure`),
    and the result (:func:`_result`: the frame and the tallies).
    """
    concurrency, timeout_s = resolve_settings(concurrency, timeout_s)
    if mode is None:
        mode = os.environ.get("CFBENCH_MODE", "live")  # type: ignore[assignment]
    if mode not in ("live", "replay", "plan"):
        raise ValueError(f"mode must be 'live', 'replay' or 'plan', got {mode!r}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    spec = _spec_of(judge)
    requests = list(requests)
    with _gc_paused():
        keys, unique = _keys_and_unique(spec, requests)
    t_start = time.perf_counter()
    store = _resolve_cache(cache, read_only=mode == "replay")
    outcomes, hits, todo = _read_cache(store, spec, unique, mode)
    dispatch: _Dispatch | None = None
    if todo:
        built = judge if isinstance(judge, Judge) else judge_for(spec)
        dispatch = _Dispatch(built, spec, store, unique, outcomes, concurrency=concurrency,
                             max_attempts=max_attempts, timeout_s=timeout_s, backoff_s=backoff_s,
                             backoff_max_s=backoff_max_s, jitter_seed=jitter_seed, cache_wait_s=cache_wait_s)
        await dispatch.run(todo, desc=desc or spec, progress=progress)
    return _result(requests, keys, unique, spec, mode, outcomes, hits, dispatch, price_table, t_start)


def _read_cache(store: ResponseCache | None, spec: str, unique: dict[str, Request], mode: str
                ) -> tuple[dict[str, tuple], set[str], list[str]]:
    """Cache read: ``(outcomes, hits, todo)``. ``outcomes`` holds, per distinct key, the row tuple of
    every cached reply (one batched look-up scoped to ``spec``, one JSON decode); in replay mode also
    the recorded failure of every other key (a key with neither raises :class:`CacheMissError`); in
    plan mode a "not run" failure for every other key. ``todo`` is what remains to be called, in
    first-seen order; those keys are remembered in the cache for ``cfbench cache export``."""
    with _gc_paused():
        # per distinct key: (text, top_logprobs_json, prompt_tokens, completion_tokens, evaluated, latency, error,
        # finish_reason)
        outcomes: dict[str, tuple] = _hit_outcomes(store.get_rows(unique, judge=spec)) if store is not None else {}
    hits = set(outcomes)  # get_rows returns only the keys asked for
    todo = [k for k in unique if k not in hits]
    if mode == "replay" and todo:
        recorded = store.failures_many(todo, judge=spec) if store is not None else {}
        missing = [k for k in todo if k not in recorded]
        if missing:
            raise CacheMissError(
                f"replay mode: {len(missing)} of {len(unique)} distinct requests for {spec} are not in the cache "
                f"({store.path if store else 'no cache'}); first missing: {[unique[k].request_id for k in missing[:5]]}"
            )
        for k in todo:
            outcomes[k] = _failed(f"recorded failure: {recorded[k]}")
        todo = []
    if store is not None and todo:
        # remembered until answered, so `cfbench cache export` can send them through a Batch API
        _quietly(lambda: store.remember_requests(spec, [unique[k] for k in todo], keys=todo), "remember requests")
    if mode == "plan":
        for k in todo:
            outcomes[k] = _failed(f"{NOT_SENT}: recorded for `cfbench cache export`")
        todo = []
    return outcomes, hits, todo


def _admission(judge: Judge, concurrency: int | None) -> _Gate:
    """Admission: the gate for ``judge``. A fixed ``concurrency`` is a fixed limit; without one, a
    backend that sets ``adaptive_concurrency`` starts at its ``initial_concurrency`` and adapts up to
    its ``max_concurrency``; any other backend runs at its ``max_concurrency``."""
    adaptive = concurrency is None and bool(getattr(judge, "adaptive_concurrency", False))
    start = concurrency or (getattr(judge, "initial_concurrency", judge.max_concurrency) if adaptive
                            else judge.max_concurrency)
    return _Gate(start, ceiling=concurrency or judge.max_concurrency, adaptive=adaptive)


class _Dispatch:
    """Dispatch, retry and record for the calls of one run that the cache could not answer.

    :meth:`run` orders the keys by the judge's ``order_key`` and starts a fixed pool of workers
    that pull them in that order, so the cost per call does not grow with the number of requests
    queued (no task and no waiter per queued request). Each worker makes one :meth:`call` at a
    time: attempts through the gate, retries with backoff, and the outcome recorded by
    :meth:`record_reply` or :meth:`record_failure`.
    """

    def __init__(self, judge: Judge, spec: str, store: ResponseCache | None, unique: dict[str, Request],
                 outcomes: dict[str, tuple], *, concurrency: int | None, max_attempts: int,
                 timeout_s: float | None, backoff_s: float, backoff_max_s: float, jitter_seed: int,
                 cache_wait_s: float) -> None:
        self.judge, self.spec, self.store, self.unique, self.outcomes = judge, spec, store, unique, outcomes
        self.max_attempts, self.timeout_s = max_attempts, timeout_s
        self.backoff_s, self.backoff_max_s, self.cache_wait_s = backoff_s, backoff_max_s, cache_wait_s
        self.gate = _admission(judge, concurrency)
        self.secret_env = tuple(e for e in (getattr(judge, "api_key_env", None),) if e)
        self.creds = credentials(self.secret_env)
        self.rng = random.Random(jitter_seed)
        self.failures = _FailureLog(store, spec)
        # network backends: an attempt that takes far longer than the replies so far is cut and
        # retried with a longer cut (a hung call must not hold its slot for the whole timeout)
        self.quick = _FirstTimeout(timeout_s) if getattr(judge, "adaptive_concurrency", False) else None
        self.fresh: list[Response] = []  # replies received in this run (for its token tallies)
        self.n_called = 0
        self.n_retried = 0  # calls whose first attempt failed transiently (retried, or not when max_attempts=1)
        self.retry_kinds: collections.Counter[str] = collections.Counter()  # retries by failure kind
        self.bar: Any = None

    async def run(self, todo: list[str], *, desc: str, progress: bool) -> None:
        """Call every key of ``todo`` (at most the gate's limit in flight) and record each outcome."""
        unique = self.unique
        todo.sort(key=lambda k: self.judge.order_key(unique[k]))
        self.judge.expect_calls([unique[k] for k in todo])
        self.bar = tqdm(total=len(todo), desc=for_terminal(desc) if desc else desc, disable=not progress, mininterval=1.0,
                        unit="call", dynamic_ncols=True)
        # More workers than slots: those waiting out a backoff hold no slot while the others keep
        # the limit busy.
        n_workers = min(len(todo), 2 * self.gate.ceiling + 8)
        queue = iter(todo)
        try:
            await asyncio.gather(*(self._worker(queue) for _ in range(n_workers)))
        finally:
            self.bar.close()
            self.failures.flush()
            await self.judge.arelease()
        self.n_called = len(todo)

    async def _worker(self, queue: Iterator[str]) -> None:
        unique, call, update = self.unique, self.call, self.bar.update
        for key in queue:  # shared iterator: each worker takes the next key when it is free
            await call(key, unique[key])
            update(1)

    async def call(self, key: str, req: Request) -> None:
        """Retry: up to ``max_attempts`` attempts, each holding a slot of the gate only while it is
        in flight (a retry waiting out its backoff gives its slot up and queues ahead of first
        attempts when it is due); the outcome is recorded either way."""
        gate, quick, max_attempts = self.gate, self.quick, self.max_attempts
        reason = "not attempted"
        attempt = 0
        for attempt in range(1, max_attempts + 1):
            epoch = await gate.acquire(priority=attempt > 1)
            limit = quick.limit(attempt) if quick is not None else self.timeout_s
            t0 = time.perf_counter()
            try:
                resp = await self._attempt(req, limit, attempt)
            except RetryableError as exc:
                gate.release()
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if getattr(exc, "overload", False) or failure_kind(reason) == "timeout":
                    gate.overloaded(epoch)
                self.retry_kinds[failure_kind(reason)] += attempt < max_attempts
                if attempt == 1:
                    self.n_retried += max_attempts > 1
                if attempt == max_attempts:
                    reason += f" (gave up after {attempt} attempt(s))"
                    break
                retry_after = getattr(exc, "retry_after", None)
                if retry_after is not None and retry_after > self.backoff_max_s:
                    reason += (f" (the server asked to wait {retry_after:g} s, more than "
                               f"backoff_max_s={self.backoff_max_s:g} s: not retried)")
                    break
                delay = (retry_after if retry_after is not None
                         else min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + self.rng.random()))
                await asyncio.sleep(delay)
                continue
            except JudgeError as exc:
                gate.release()
                reason = f"{type(exc).__name__}: {exc}"
                break
            except BaseException as exc:  # a backend bug or an unexpected SDK error: record, don't crash
                gate.release()
                if not isinstance(exc, Exception):
                    raise  # cancellation, KeyboardInterrupt
                reason = f"{type(exc).__name__}: {exc}"
                break
            gate.release()
            latency = time.perf_counter() - t0
            gate.succeeded(latency, epoch)
            if quick is not None and quick.observe(latency):
                # the first cut is known: calls started before it get it too (a call that hung
                # at the start of the run must not hold its slot for the whole timeout)
                for cm, (started, att) in list(quick.early.items()):
                    cut = quick.limit(att)
                    if cut is not None and not cm.expired():
                        cm.reschedule(started + cut)
            problem = reply_problem(resp, req.config.max_tokens, creds=self.creds)
            if problem is None:
                problem = await self.record_reply(key, resp, latency)
            if problem is None:
                return
            reason = problem
            break
        self.record_failure(key, req, reason, attempt)

    async def _attempt(self, req: Request, limit: float | None, attempt: int) -> Response:
        """One attempt, cut after ``limit`` seconds (a cut is a :class:`RetryableError`)."""
        if limit is None:
            return await self.judge.acomplete(req)
        quick, timeout_s = self.quick, self.timeout_s
        try:
            if _HAS_TIMEOUT_CM:  # no extra task per call, unlike wait_for
                async with asyncio.timeout(limit) as cm:
                    if quick is not None and limit == timeout_s:
                        quick.early[cm] = (asyncio.get_running_loop().time(), attempt)
                        try:
                            return await self.judge.acomplete(req)
                        finally:
                            quick.early.pop(cm, None)
                    return await self.judge.acomplete(req)
            return await asyncio.wait_for(self.judge.acomplete(req), limit)  # pragma: no cover - 3.10
        except asyncio.TimeoutError:
            if quick is not None:
                limit = quick.limit(attempt) or limit
            if limit != timeout_s:
                raise RetryableError(f"timeout: no reply within {limit:.3g} s on attempt {attempt} "
                                     f"({_FirstTimeout.FACTOR:g} x the p95 latency so far x {2 ** (attempt - 1)}, "
                                     f"at most timeout_s={timeout_s:g} s)") from None
            raise RetryableError(f"timeout: no reply within timeout_s={timeout_s:g} s") from None

    async def record_reply(self, key: str, resp: Response, latency: float) -> str | None:
        """Record a checked reply: cached the moment it arrives (a lock held by another process is
        waited for, up to ``cache_wait_s``), then kept as the key's outcome. Returns the reason the
        reply could not be cached, or None."""
        store = self.store
        if store is not None:
            t0 = time.perf_counter()
            delay = 0.05
            tries = 0
            while True:
                tries += 1
                try:
                    store.put(key, self.spec, resp, latency, wait=False)  # never blocks the loop long
                    break
                except CacheLockedError as exc:
                    waited = time.perf_counter() - t0
                    if waited >= self.cache_wait_s:
                        return (f"cache write failed after {tries} attempts over {waited:.1f} s "
                                f"(cache_wait_s={self.cache_wait_s:g}): {exc}")
                    await asyncio.sleep(min(delay, max(0.0, self.cache_wait_s - waited)))
                    delay = min(delay * 2, 5.0)
        self.outcomes[key] = _response_outcome(resp, latency)
        self.fresh.append(resp)
        return None

    def record_failure(self, key: str, req: Request, reason: str, attempt: int) -> None:
        """Record a failed call: logged (scrubbed of credentials), kept as the key's outcome, and
        written to the cache within a second, so a killed run keeps the reason."""
        reason = scrub(reason, self.secret_env)
        log.warning("request %s on %s failed after %d attempt(s): %s", for_terminal(req.request_id),
                    for_terminal(self.spec), attempt, for_terminal(reason))  # a server's body may hold escapes
        self.outcomes[key] = _failed(reason)
        self.failures.add(key, reason)


def _result(requests: list[Request], keys: list[str], unique: dict[str, Request], spec: str, mode: str,
            outcomes: dict[str, tuple], hits: set[str], dispatch: _Dispatch | None,
            price_table: Mapping[str, tuple[float, float]] | None, t_start: float) -> RunResult:
    """The run's rows (one per request, in order) and its tallies: counts, tokens, cost, and for an
    adaptive run the concurrency history."""
    with _gc_paused():
        frame = _frame(requests, keys, spec, outcomes, hits)
    n_failed = sum(1 for o in outcomes.values() if o[6] is not None)
    if mode == "replay":  # what the cached replies used (their recorded usage), not 0
        used = [outcomes[k] for k in hits]
        ptok = sum((o[2] or 0) for o in used)
        ctok = sum((o[3] or 0) for o in used)
        etok = sum((o[4] or 0) for o in used)
    else:
        fresh = dispatch.fresh if dispatch is not None else []
        ptok = sum((r.prompt_tokens or 0) for r in fresh)
        ctok = sum((r.completion_tokens or 0) for r in fresh)
        etok = sum((r.prompt_tokens_evaluated or 0) for r in fresh)
    cost, cost_note = _cost(spec, ptok, ctok, price_table)
    stats = {
        "judge": spec,
        "mode": mode,
        "n_requests": len(requests),
        "n_unique": len(unique),
        "n_cached": len(hits),
        "n_called": dispatch.n_called if dispatch is not None else 0,
        "n_failed": n_failed,
        "non_completion_rate": n_failed / len(unique) if unique else 0.0,
        "prompt_tokens": ptok,
        "prompt_tokens_evaluated": etok,
        "completion_tokens": ctok,
        "cost_usd": cost,
        "cost_note": cost_note,
        "wall_s": time.perf_counter() - t_start,
    }
    kinds = collections.Counter(failure_kind(o[6]) for o in outcomes.values() if o[6] is not None)
    stats["failures_by_kind"] = dict(sorted(kinds.items()))
    stats["n_not_sent"] = kinds.get(NOT_SENT, 0)
    stats["n_retried"] = dispatch.n_retried if dispatch is not None else 0
    stats["retries_by_kind"] = dict(sorted((dispatch.retry_kinds if dispatch is not None else {}).items()))
    gate = dispatch.gate if dispatch is not None else None
    if gate is not None and gate.adaptive:
        stats["concurrency_history"] = gate.history
        stats["peak_in_flight"] = gate.peak
        stats["latency_cuts"] = gate.latency_cuts
    _warn_failures(spec, stats, len(unique))
    return RunResult(frame, stats)


#: A share of calls needing a retry above this is worth a warning (a server that drops or times out
#: calls); below it retries are routine (a stray 503).
RETRY_WARN_SHARE = 0.05


def _warn_failures(spec: str, stats: dict[str, Any], n_unique: int) -> None:
    """One warning per kind of trouble: calls not sent (plan only), calls that failed (by kind), and
    calls that needed a retry when more than :data:`RETRY_WARN_SHARE` of those made did."""
    n_not_sent = stats["n_not_sent"]
    if n_not_sent:
        log.warning("%s: %d of %d distinct requests not sent (plan only; recorded for `cfbench cache export`)",
                    for_terminal(spec), n_not_sent, n_unique)
    n_failed = stats["n_failed"] - n_not_sent
    if n_failed:
        by = ", ".join(f"{n} {k}" for k, n in stats["failures_by_kind"].items() if k != NOT_SENT)
        log.warning("%s: %d of %d distinct requests failed: %s (non-completion rate %.1f%%)",
                    for_terminal(spec), n_failed, n_unique, by, 100 * stats["non_completion_rate"])
    n_called, n_retried = stats["n_called"], stats["n_retried"]
    if n_called and n_retried > RETRY_WARN_SHARE * n_called:
        by = ", ".join(f"{n} {k}" for k, n in stats["retries_by_kind"].items())
        log.warning("%s: %d of %d calls needed a retry (%.0f%%; retries: %s); the server may be overloaded: "
                    "lower concurrency or raise timeout_s", for_terminal(spec), n_retried, n_called, 100 * n_retried / n_called,
                    by or "none")


def _cost(spec: str, ptok: int, ctok: int,
          price_table: Mapping[str, tuple[float, float]] | None) -> tuple[float, str]:
    """(USD, how it was priced) for ``ptok`` prompt and ``ctok`` completion tokens of ``spec``.
    ``local:`` and ``scripted:`` judges cost 0 (no API); ``openai:`` models are priced from the
    price table (:mod:`cfbench.judges.pricing`, list price, not the Batch API discount); other
    backends and unpriced models give NaN, with the reason."""
    if price_table and spec in price_table:
        p_in, p_out = price_table[spec]
        return (ptok * p_in + ctok * p_out) / 1e6, "price_table argument"
    backend = spec.partition(":")[0]
    if backend == "local":
        return 0.0, "0: local model on this machine, no API cost"
    if backend == "scripted":
        return 0.0, "0: scripted test double, no API cost"
    if backend == "openai":
        from .pricing import estimate_cost, load_prices

        model = spec.partition(":")[2].partition("@")[0]
        try:
            est = estimate_cost(model, ptok, ctok, load_prices(), batch=False)
        except Exception as exc:  # noqa: BLE001 - a bad $CFBENCH_PRICES must not lose the run's results
            return math.nan, f"not priced: {exc}"
        if est["total_usd"] is None:
            return math.nan, est["note"]
        return est["total_usd"], (f"estimate: recorded usage at list price of {est['priced_as']} "
                                  f"(as of {est.get('as_of')}), no Batch API discount")
    return math.nan, f"not priced: no price table for the {backend!r} backend"


def _keys_and_unique(spec: str, requests: list[Request]) -> tuple[list[str], dict[str, Request]]:
    """Keys of ``requests`` and the first request of each distinct key, in first-seen order.
    Raises on a ``request_id`` used twice, and on a message no file can store (one line naming the request)."""
    for r in requests:  # a lone surrogate would crash the key's hash far from the input that held it
        for i, m in enumerate(r.messages):
            if bad := unstorable(m.get("content")):
                raise InputError(f"{bad}, which cannot be sent or stored", source=f"request to {spec}",
                                 record=r.request_id, field=f"messages[{i}].content")
    keys = request_keys(spec, requests)
    unique: dict[str, Request] = dict(zip(keys, requests))
    if len(unique) < len(requests):  # merged requests: each key keeps its first request
        unique = {}
        for k, r in zip(keys, requests):
            unique.setdefault(k, r)
    if len(unique) < len(requests) or len({r.request_id for r in requests}) != len(requests):
        seen: set[str] = set()
        for r in requests:
            if r.request_id in seen:
                raise ValueError(f"request_id {r.request_id!r} appears more than once in one run")
            seen.add(r.request_id)
    return keys, unique


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: the batched key / look-up / frame steps allocate
    hundreds of thousands of acyclic objects, and each collection they trigger walks every live
    object (about a sixth of replay's time at 100k requests). Never held across an ``await``."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _quietly(fn, what: str) -> None:  # noqa: ANN001
    """Bookkeeping writes (pending requests, failure reasons) must not sink a run on a locked cache."""
    try:
        fn()
    except CacheLockedError as exc:
        log.warning("could not %s: %s", what, for_terminal(exc))


def _failed(reason: str) -> tuple:
    return (None, None, None, None, None, None, reason, None)


def _response_outcome(resp: Response, latency: float | None) -> tuple:
    top = json.dumps(resp.top_logprobs) if resp.top_logprobs else None
    return (resp.text, top, resp.prompt_tokens, resp.completion_tokens, resp.prompt_tokens_evaluated, latency, None,
            resp.finish_reason)


def _hit_outcome(blob: str, latency: float | None) -> tuple:
    d = json.loads(blob)
    top = d.get("top_logprobs")
    return (d["text"], json.dumps(top) if top else None, d.get("prompt_tokens"), d.get("completion_tokens"),
            d.get("prompt_tokens_evaluated"), latency, None, d.get("finish_reason"))


_TOP_FIELD = '"top_logprobs": '
_AFTER_TOP = ', "prompt_tokens": '
_NO_SLICE = object()  # a stored reply not in Response.to_json's layout


def _hit_outcomes(rows: Sequence[tuple[str, str, float | None]]) -> dict[str, tuple]:
    """:func:`_hit_outcome` of every cached ``(key, reply JSON, latency)`` row: the same tuples,
    with all replies decoded in one ``json.loads``.

    The top-logprobs JSON is sliced out of the stored reply, and left out of the decoding,
    instead of being decoded and re-encoded: the reply was written by :meth:`Response.to_json`
    (same separators and key order as ``json.dumps``, floats by ``repr`` both ways), so the
    slice is what ``json.dumps`` would write whenever it is ASCII (``to_json`` keeps non-ASCII
    characters, ``json.dumps`` escapes them). A quote inside a JSON string is always escaped,
    so the two field markers cannot occur inside the text or a token. A slice that is not
    ASCII is re-encoded; a row without the markers is decoded whole.
    """
    if not rows:
        return {}
    tops: list[str | None] = []
    slim: list[str] = []
    for _, blob, _ in rows:
        i = blob.find(_TOP_FIELD)
        j = blob.find(_AFTER_TOP, i) if i >= 0 else -1
        if j > i:
            tops.append(blob[i + len(_TOP_FIELD):j])
            slim.append(blob[:i] + blob[j + 2:])  # '{"text": …, "prompt_tokens": …}'
        else:
            tops.append(_NO_SLICE)
            slim.append(blob)
    try:
        decoded = json.loads("[" + ",".join(slim) + "]")
        if len(decoded) != len(rows):
            raise ValueError("a row holds more than one JSON value")
        out = {}
        for (key, _, lat), d, top in zip(rows, decoded, tops):
            if top is _NO_SLICE:
                top = d.get("top_logprobs")
                top = json.dumps(top) if top else None
            elif top == "null" or top == "{}":
                top = None
            elif not top.isascii():
                top = json.dumps(json.loads(top))
            out[key] = (d["text"], top, d.get("prompt_tokens"), d.get("completion_tokens"),
                        d.get("prompt_tokens_evaluated"), lat, None, d.get("finish_reason"))
        return out
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    out = {}  # a damaged row: decode one by one, so the error names it
    for key, blob, lat in rows:
        try:
            out[key] = _hit_outcome(blob, lat)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"cache row {key}: field 'response' is not a stored reply "
                             f"({type(exc).__name__}: {exc})") from None
    return out


def _frame(requests: list[Request], keys: list[str], spec: str, outcomes: dict[str, tuple],
           hits: AbstractSet[str]) -> pd.DataFrame:
    """The judgments frame, built column by column (one row per request, in order)."""
    rows = [outcomes[k] for k in keys]
    cols = list(zip(*rows)) if rows else [()] * 8
    errors = list(cols[6])
    frame = pd.DataFrame({
        "request_id": [r.request_id for r in requests],
        "judge": [spec] * len(requests),
        "repeat": [r.repeat for r in requests],
        "key": keys,
        "text": list(cols[0]),
        "top_logprobs": list(cols[1]),
        "prompt_tokens": pd.array(list(cols[2]), dtype="Int64"),
        "completion_tokens": pd.array(list(cols[3]), dtype="Int64"),
        "prompt_tokens_evaluated": pd.array(list(cols[4]), dtype="Int64"),
        "latency_s": np.array(list(cols[5]), dtype=float),
        "cache_hit": [k in hits for k in keys],
        "error": errors,
        "ok": [e is None for e in errors],
        "finish_reason": list(cols[7]),
    }, columns=JUDGMENT_COLUMNS)
    return frame


def chat_function(judge: Judge | str, config: GenerationConfig, *, name: str = "chat", **run_options: Any
                  ) -> Callable[[Sequence[Sequence[Mapping[str, str]]]], list[str | None]]:
    """A plain function ``chats -> replies`` over :func:`run_requests`, for code that must not import judges.

    Each chat is a list of ``{"role", "content"}`` messages; the reply is the judge's text, or ``None``
    where the call failed (the failure stays recorded in the cache). Replies are cached like any other.
    The perturbers' LLM identify / rewrite / validate steps take such a function.
    """
    def complete(chats: Sequence[Sequence[Mapping[str, str]]]) -> list[str | None]:
        requests = [Request(f"{name}-{k}", tuple(dict(m) for m in chat), config) for k, chat in enumerate(chats)]
        if not requests:
            return []
        judgments = run_requests(judge, requests, desc=name, **run_options).judgments
        return [text if ok else None for text, ok in zip(judgments["text"], judgments["ok"])]

    return complete
