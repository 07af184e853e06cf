"""Continuous batching for the embedded judge: several sampled replies decoded at once.

On a CPU, generating one token of a 1.5B model reads every weight once; most
of that time is spent moving weights, not multiplying. Decoding ``slots``
sequences in one ``llama_decode`` call reads the weights once for all of them,
so long sampled replies (the identity-tone advice) come out several times
faster in total than one after another.

:class:`BatchEngine` owns a second llama.cpp context on the judge's model with
``slots`` independent sequences. A worker thread runs the loop a serving
engine runs: every step it puts one token of each generating sequence and, if a
slot is waiting, a chunk of that slot's prompt into one batch, decodes it, and
samples the next token of every sequence that produced logits. A slot whose
reply ends (end-of-generation token, a stop string, or ``max_tokens``) takes
the next queued request.

Only plain generation goes through the engine: no JSON grammar, no first-token
log-probabilities (those requests keep the judge's sequential path, whose
prefix reuse suits the short-answer protocols). Sampling is llama.cpp's own
chain with the request's settings: repeat penalty, top-p, temperature and a
per-request seed (``seed + repeat``, as on the sequential path); top-k and
min-p are off. A reply depends on its request and, through floating-point
summation order, on which requests shared its batches. So that a run's batches
do not depend on thread timing, a freed slot is refilled before the next step:
the engine waits up to ``refill_wait_s`` for the request the runner sends in
its place (it keeps ``slots`` calls in flight, so one comes within milliseconds
unless the run has no more), and at the start for a full set of ``slots``. A
seeded sampled run then gets the same batches, and so the same replies, each
time it is run on the same CPU module, as long as every replacement arrives in
time. The runner says how many replies a run will ask for (:meth:`BatchEngine.expect`),
so a slot freed after the last of them is not held for a replacement that will
not come; without that count the wait is paid once per slot left empty at the
end of a run.
"""

from __future__ import annotations

import ctypes
import queue
import threading
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, Callable

from .base import JudgeError, Request, Response

__all__ = ["BatchEngine"]


@dataclass
class _Job:
    request: Request
    tokens: list[int]
    stops: list[str]  # the chat template's and the request's, non-empty
    seed: int
    future: Future
    fed: int = 0  # prompt tokens already decoded
    out: list[int] = field(default_factory=list)
    raw: bytes = b""
    sampler: Any = None
    pos: int = 0
    next_token: int | None = None


#: how many recent tokens the repeat penalty looks back over (llama.cpp's usual window)
PENALTY_LAST_N = 64


def penalty_sampler(L: Any, vocab: Any, penalty: float, last_n: int = PENALTY_LAST_N) -> Any:
    """llama.cpp's repeat-penalty sampler, called with the argument list the installed bindings declare.

    llama-cpp-python 0.3.x declares ``(n_vocab, penalty_last_n, penalty_repeat, penalty_freq,
    penalty_present)``; newer llama.cpp headers drop ``n_vocab``. Calling the 5-argument binding with 4
    arguments raises ``TypeError`` on every request, so the declared ``argtypes`` decide.
    """
    fn = L.llama_sampler_init_penalties
    declared = getattr(fn, "argtypes", None)
    if declared is not None and len(declared) == 5:
        return fn(L.llama_vocab_n_tokens(vocab), last_n, penalty, 0.0, 0.0)
    return fn(last_n, penalty, 0.0, 0.0)


class BatchEngine:
    """Decode up to ``slots`` plain-generation requests at once on ``model`` (a ``llama_model_p``).

    ``submit(request, tokens, stops, seed)`` returns a :class:`~concurrent.futures.Future`
    of the :class:`~cfbench.judges.Response`. ``compute_lock`` is held around each
    decode step so the judge's sequential path never computes at the same time.
    """

    def __init__(self, llama_cpp: Any, model: Any, *, slots: int, slot_ctx: int, n_batch: int,
                 n_threads: int, compute_lock: threading.Lock, refill_wait_s: float = 2.0) -> None:
        if slots < 2:
            raise ValueError(f"slots must be >= 2, got {slots}")
        self._L = llama_cpp
        self.slots = slots
        self.refill_wait_s = float(refill_wait_s)
        self.slot_ctx = slot_ctx
        self.n_batch = n_batch
        self._lock = compute_lock
        L = llama_cpp
        cp = L.llama_context_default_params()
        cp.n_ctx = slot_ctx * slots
        cp.n_batch = n_batch
        cp.n_ubatch = n_batch
        cp.n_seq_max = slots
        cp.kv_unified = False  # one KV stream per slot: attention reads only its own sequence
        cp.n_threads = n_threads
        cp.n_threads_batch = n_threads
        self._ctx = L.llama_init_from_model(model, cp)
        if not self._ctx:
            raise JudgeError(f"llama.cpp could not create a {slots}-slot context of {slot_ctx} tokens per slot")
        self._vocab = L.llama_model_get_vocab(model)
        self._mem = L.llama_get_memory(self._ctx)
        self._batch = L.llama_batch_init(n_batch, 0, slots)
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._active: dict[int, _Job] = {}
        self._dead: BaseException | None = None  # set when the worker thread died
        # replies announced by expect() and not yet submitted; None: no count given (wait refill_wait_s)
        self._coming: int | None = None
        self._coming_lock = threading.Lock()
        #: waits for a freed slot's replacement that ran out after refill_wait_s (none came in time)
        self.refill_timeouts = 0
        self._thread = threading.Thread(target=self._loop, name="cfbench-local-batch", daemon=True)
        self._closed = False
        self._thread.start()

    # ------------------------------------------------------------------ public
    def submit(self, request: Request, tokens: list[int], stops: list[str], seed: int) -> Future:
        if self._dead is not None:
            raise JudgeError(f"the local batch engine stopped: {type(self._dead).__name__}: {self._dead}")
        if self._closed:
            raise JudgeError("the local batch engine is closed")
        fut: Future = Future()
        self._queue.put(_Job(request, tokens, [s for s in [*stops, *request.config.stop] if s], seed, fut))
        with self._coming_lock:  # counted after the put: when the count reads 0, every announced job is queued
            if self._coming:
                self._coming -= 1
        if self._dead is not None:  # died between the check and the put: nobody would take the job
            self._drain(self._dead)
        return fut

    def expect(self, n: int | None) -> None:
        """Announce that ``n`` more requests are coming (the rest of a run), or ``None``: no count.

        With a count, a freed slot waits for its replacement only while one is still to come, so the
        slots left empty at the end of a run start their last steps at once; the batches are the
        same as with the timed wait, which ends with no replacement either.
        """
        with self._coming_lock:
            self._coming = None if n is None else max(0, int(n))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout=60)
        L = self._L
        L.llama_batch_free(self._batch)
        L.llama_free(self._ctx)

    # ---------------------------------------------------------------- internals
    def _sampler(self, job: _Job) -> Any:
        L = self._L
        cfg = job.request.config
        chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
        penalty = cfg.repeat_penalty if cfg.repeat_penalty is not None else 1.0
        if penalty != 1.0:
            L.llama_sampler_chain_add(chain, penalty_sampler(L, self._vocab, penalty))
        if cfg.temperature <= 0:
            L.llama_sampler_chain_add(chain, L.llama_sampler_init_greedy())
        else:
            if cfg.top_p is not None and cfg.top_p < 1.0:
                L.llama_sampler_chain_add(chain, L.llama_sampler_init_top_p(cfg.top_p, 1))
            L.llama_sampler_chain_add(chain, L.llama_sampler_init_temp(cfg.temperature))
            L.llama_sampler_chain_add(chain, L.llama_sampler_init_dist(job.seed & 0xFFFFFFFF))
        return chain

    def _piece(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._L.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._L.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, False)
        return buf.raw[:n]

    def _add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        b = self._batch
        i = b.n_tokens
        b.token[i] = token
        b.pos[i] = pos
        b.n_seq_id[i] = 1
        b.seq_id[i][0] = seq
        b.logits[i] = logits
        b.n_tokens = i + 1
        return i

    def _release(self, slot: int | None, job: _Job) -> None:
        """Free a job's sampler and its slot's KV cells."""
        if job.sampler is not None:
            self._L.llama_sampler_free(job.sampler)
            job.sampler = None
        if slot is not None:
            self._L.llama_memory_seq_rm(self._mem, slot, -1, -1)

    def _finish(self, slot: int, job: _Job, reason: str, text: str) -> None:
        self._release(slot, job)
        try:  # the caller may have given up (the runner's timeout cancels the future)
            job.future.set_result(Response(text=text, top_logprobs=None, prompt_tokens=len(job.tokens),
                                           completion_tokens=len(job.out), prompt_tokens_evaluated=len(job.tokens),
                                           finish_reason=reason))
        except InvalidStateError:
            pass

    def _fail(self, slot: int | None, job: _Job, exc: BaseException) -> None:
        self._release(slot, job)
        try:
            job.future.set_exception(exc)
        except InvalidStateError:  # cancelled or already resolved
            pass

    def _drain(self, exc: BaseException) -> None:
        """Fail every running and queued job: nobody waits forever on a dead engine."""
        for slot, job in list(self._active.items()):
            try:
                self._fail(slot, job, exc)
            except BaseException:  # noqa: BLE001 - freeing may fail too; the caller must still learn
                if not job.future.done():
                    try:
                        job.future.set_exception(exc)
                    except InvalidStateError:
                        pass
        self._active.clear()
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                try:
                    job.future.set_exception(exc)
                except InvalidStateError:
                    pass

    def _accept(self, slot: int, job: _Job, token: int) -> bool:
        """Record a sampled token; True when the reply is finished (and resolved)."""
        L = self._L
        if L.llama_vocab_is_eog(self._vocab, token):
            self._finish(slot, job, "stop", job.raw.decode("utf-8", errors="ignore"))
            return True
        job.out.append(token)
        job.raw += self._piece(token)
        text = job.raw.decode("utf-8", errors="ignore")
        cut = min((i for i in (text.find(s) for s in job.stops) if i >= 0), default=-1)
        if cut >= 0:
            self._finish(slot, job, "stop", text[:cut])
            return True
        if len(job.out) >= job.request.config.max_tokens:
            self._finish(slot, job, "length", text)
            return True
        job.next_token = token
        return False

    def _replacement(self) -> _Job | None:
        """The request sent in place of a freed slot's: waited for up to ``refill_wait_s``, and not at all
        once every request announced by :meth:`expect` has been queued. Raises ``queue.Empty``."""
        if self._coming == 0:
            return self._queue.get_nowait()
        try:
            return self._queue.get(timeout=self.refill_wait_s)
        except queue.Empty:
            self.refill_timeouts += 1
            raise

    def _loop(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - the waiting calls learn of it instead of hanging
            err = JudgeError(f"the local batch engine stopped: {type(exc).__name__}: {exc}")
            self._dead = err
            self._drain(err)

    def _run(self) -> None:
        L = self._L
        active = self._active
        closing = False
        owed = 0  # slots freed (or empty at the start) whose replacement request is still awaited
        while True:
            # a call whose caller gave up (cancelled future) leaves its slot at once
            for slot, job in list(active.items()):
                if job.future.done():
                    self._release(slot, job)
                    del active[slot]
                    owed += 1
            # fill free slots: block when nothing is running; a slot whose replacement is owed waits for it
            while not closing and len(active) < self.slots:
                try:
                    if not active:
                        job = self._queue.get()
                        owed = self.slots - 1  # the rest of the run's first set is on its way
                    elif owed > 0:
                        job = self._replacement()
                        owed -= 1
                    else:
                        job = self._queue.get_nowait()
                except queue.Empty:
                    owed = 0  # none came: the run has no more for now
                    break
                if job is None:
                    closing = True
                    break
                if job.future.done():  # cancelled while queued
                    continue
                slot = next(s for s in range(self.slots) if s not in active)
                try:
                    job.sampler = self._sampler(job)
                except BaseException as exc:  # noqa: BLE001 - reported to the caller
                    self._fail(None, job, exc)
                    owed += 1  # its caller's place goes to another request
                    continue
                active[slot] = job
            if not active:
                if closing:
                    return
                continue
            self._batch.n_tokens = 0
            logit_index: dict[int, int] = {}
            for slot, job in active.items():  # one token of every generating sequence
                if job.fed == len(job.tokens):
                    logit_index[slot] = self._add(job.next_token, job.pos, slot, True)
                    job.pos += 1
            room = self.n_batch - self._batch.n_tokens
            for slot, job in active.items():  # then prompt chunks while the batch has room
                if room <= 0:
                    break
                if job.fed < len(job.tokens):
                    take = min(room, len(job.tokens) - job.fed)
                    for j in range(job.fed, job.fed + take):
                        idx = self._add(job.tokens[j], j, slot, j == len(job.tokens) - 1)
                    if job.fed + take == len(job.tokens):
                        logit_index[slot] = idx
                        job.pos = len(job.tokens)
                    job.fed += take
                    room -= take
            try:
                with self._lock:
                    rc = L.llama_decode(self._ctx, self._batch)
                if rc != 0:
                    raise JudgeError(f"llama_decode failed with code {rc}")
            except BaseException as exc:  # noqa: BLE001 - every job in the batch learns of it
                for slot, job in list(active.items()):
                    self._fail(slot, job, exc)
                active.clear()
                continue
            for slot, idx in logit_index.items():
                job = active[slot]
                token = L.llama_sampler_sample(job.sampler, self._ctx, idx)
                if self._accept(slot, job, token):
                    del active[slot]
                    owed += 1
