"""The local batch engine's bookkeeping on a fake llama.cpp (no model loaded): a call the runner
gave up on leaves its slot, and an engine that dies fails its callers instead of hanging them."""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from types import SimpleNamespace

import pytest

from cfbench.judges import GenerationConfig, Request, run_requests
from cfbench.judges.base import Judge, JudgeError, Response
from cfbench.judges.local import LocalJudge
from cfbench.judges.local_batch import BatchEngine
from cfbench.judges.runner import _FirstTimeout


class FakeLlama:
    """Just enough of llama_cpp's C API for BatchEngine: every decode sleeps ``step_s``; every
    sampled token is 7 (piece ``b"a"``), never end-of-generation, so a reply ends at max_tokens."""

    def __init__(self, step_s: float = 0.005, sample_error_after: int | None = None):
        self.step_s = step_s
        self.sample_error_after = sample_error_after
        self.samples = 0
        self.decodes = 0
        self.seq_rm: list[int] = []
        self.freed = 0
        self.made = 0

    def llama_context_default_params(self):
        return SimpleNamespace()

    def llama_init_from_model(self, model, cp):
        return object()

    def llama_model_get_vocab(self, model):
        return object()

    def llama_get_memory(self, ctx):
        return object()

    def llama_batch_init(self, n, embd, seqs):
        return SimpleNamespace(token=[0] * n, pos=[0] * n, n_seq_id=[0] * n, seq_id=[[0] for _ in range(n)],
                               logits=[False] * n, n_tokens=0)

    def llama_batch_free(self, b):
        pass

    def llama_free(self, ctx):
        pass

    def llama_sampler_chain_default_params(self):
        return None

    def llama_sampler_chain_init(self, p):
        self.made += 1
        return object()

    def llama_sampler_chain_add(self, chain, s):
        pass

    def llama_sampler_init_greedy(self):
        return object()

    def llama_sampler_init_penalties(self, *a):
        return object()

    def llama_sampler_init_top_p(self, *a):
        return object()

    def llama_sampler_init_temp(self, *a):
        return object()

    def llama_sampler_init_dist(self, *a):
        return object()

    def llama_sampler_free(self, s):
        self.freed += 1

    def llama_memory_seq_rm(self, mem, seq, p0, p1):
        self.seq_rm.append(seq)

    def llama_decode(self, ctx, batch):
        self.decodes += 1
        time.sleep(self.step_s)
        return 0

    def llama_sampler_sample(self, sampler, ctx, idx):
        self.samples += 1
        if self.sample_error_after is not None and self.samples > self.sample_error_after:
            raise ValueError("sampler blew up")
        return 7

    def llama_vocab_is_eog(self, vocab, token):
        return False

    def llama_token_to_piece(self, vocab, token, buf, n, lstrip, special):
        ctypes.memmove(buf, b"a", 1)
        return 1


def req(rid: str, max_tokens: int) -> Request:
    return Request(rid, ({"role": "user", "content": rid},),
                   GenerationConfig(temperature=0.0, max_tokens=max_tokens, seed=1))


def engine(fake: FakeLlama, slots: int = 2) -> BatchEngine:
    return BatchEngine(fake, object(), slots=slots, slot_ctx=512, n_batch=64, n_threads=1,
                       compute_lock=threading.Lock())


def test_a_cancelled_call_frees_its_slot_and_the_engine_keeps_serving():
    fake = FakeLlama(step_s=0.005)
    eng = engine(fake, slots=2)
    try:
        long = eng.submit(req("long", 400), [1, 2, 3], [], 1)  # ~2 s of decoding
        time.sleep(0.1)
        assert long.cancel()  # what asyncio.wrap_future does when the runner's timeout fires
        queued = [eng.submit(req(f"q{i}", 300), [1, 2], [], 1) for i in range(3)]
        assert queued[2].cancel()  # cancelled while still queued: never takes a slot
        ok = eng.submit(req("after", 5), [1, 2], [], 1)
        # before the fix the engine later called set_result on the cancelled future, its thread
        # died on InvalidStateError, and every later call waited forever
        for f in (*queued[:2], ok):
            assert f.result(timeout=20).finish_reason == "length"
        assert ok.result().completion_tokens == 5
        assert eng._thread.is_alive()
        with pytest.raises(CancelledError):
            long.result(timeout=0)
        # the cancelled call left long before its 400 tokens: ok finished well under 400 steps later
        assert fake.samples < 2 * 400
    finally:
        eng.close()
    assert fake.made == 4 and fake.freed == 4  # the call cancelled in the queue never got a sampler; all others freed


def test_an_engine_that_dies_fails_its_waiting_calls_instead_of_hanging():
    fake = FakeLlama(step_s=0.002, sample_error_after=3)
    eng = engine(fake, slots=2)
    try:
        running = [eng.submit(req(f"r{i}", 50), [1, 2], [], 1) for i in range(4)]  # 2 run, 2 queued
        for f in running:
            with pytest.raises(JudgeError, match="stopped: ValueError: sampler blew up"):
                f.result(timeout=10)
        assert not eng._thread.is_alive()
        with pytest.raises(JudgeError, match="stopped"):
            eng.submit(req("late", 5), [1], [], 1)  # a new call is refused, not queued forever
    finally:
        eng.close()


class EngineJudge(Judge):
    """A judge on the fake engine, with the local backend's runner-facing attributes."""

    name = "engine-stub"
    max_concurrency = 2
    adaptive_concurrency = getattr(LocalJudge, "adaptive_concurrency", False)

    def __init__(self, fake: FakeLlama):
        self.spec = "engine:stub"
        self.eng = engine(fake, slots=2)

    async def acomplete(self, request: Request) -> Response:
        return await asyncio.wrap_future(self.eng.submit(request, [1, 2, 3], [], 1))


def test_the_runner_timeout_cancels_an_engine_call_and_the_run_finishes(tmp_path):
    fake = FakeLlama(step_s=0.01)
    judge = EngineJudge(fake)
    try:
        # 'slow' needs ~3 s of decoding; the runner cuts it at 0.3 s on each of its 2 attempts
        reqs = [req("slow", 300), *(req(f"fast{i}", 3) for i in range(4))]
        res = run_requests(judge, reqs, cache=False, progress=False, timeout_s=0.3, max_attempts=2,
                           backoff_s=0.01)
        j = res.judgments.set_index("request_id")
        assert not j.loc["slow", "ok"] and "timeout" in j.loc["slow", "error"]
        assert j.drop(index="slow").ok.all()
        assert judge.eng._thread.is_alive()
        # after the run, the engine still answers
        assert judge.eng.submit(req("again", 2), [1], [], 1).result(timeout=10).completion_tokens == 2
    finally:
        judge.eng.close()


class TimedJudge(Judge):
    """Replies in ``fast_s``, except request 'long' which takes ``long_s`` (a long generation)."""

    name = "timed"
    max_concurrency = 4

    def __init__(self, adaptive: bool, fast_s: float = 0.001, long_s: float = 0.5):
        self.spec = f"timed:{adaptive}"
        self.adaptive_concurrency = adaptive
        self.fast_s, self.long_s = fast_s, long_s
        self.calls: dict[str, int] = {}

    async def acomplete(self, request: Request) -> Response:
        self.calls[request.request_id] = self.calls.get(request.request_id, 0) + 1
        await asyncio.sleep(self.long_s if request.request_id == "long" else self.fast_s)
        return Response(text="Yes", top_logprobs=None, prompt_tokens=3, completion_tokens=1,
                        finish_reason="stop")


def test_the_p95_cuts_apply_to_network_backends_only_never_to_local(monkeypatch):
    assert not getattr(LocalJudge, "adaptive_concurrency", False)
    monkeypatch.setattr(_FirstTimeout, "FLOOR_S", 0.01)
    monkeypatch.setattr(_FirstTimeout, "MIN_SAMPLES", 5)
    reqs = [req(f"f{i}", 5) for i in range(30)] + [req("long", 5)]  # 'long' runs after the cut is known

    local_like = TimedJudge(adaptive=getattr(LocalJudge, "adaptive_concurrency", False))
    res = run_requests(local_like, reqs, cache=False, progress=False, timeout_s=30, max_attempts=3)
    assert res.judgments.ok.all()
    assert local_like.calls["long"] == 1  # never cut, never re-sent

    network_like = TimedJudge(adaptive=True)  # the control: the same call on a network backend is cut
    res = run_requests(network_like, reqs, cache=False, progress=False, timeout_s=30, max_attempts=2,
                       backoff_s=0.01)
    j = res.judgments.set_index("request_id")
    assert network_like.calls["long"] == 2 and not j.loc["long", "ok"]


class RecordingLlama(FakeLlama):
    """FakeLlama that keeps, for every decode step, the (slot, position) of each token in the batch."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.steps: list[tuple] = []

    def llama_decode(self, ctx, batch):
        self.steps.append(tuple((batch.seq_id[i][0], batch.pos[i]) for i in range(batch.n_tokens)))
        return super().llama_decode(ctx, batch)


class JitteryJudge(Judge):
    """Hands each request to the engine after a random delay of up to ``jitter_s``, seeded per run: the time
    the local judge spends tokenizing the prompt in the event loop before it submits (so, as there, the
    requests reach the engine in the runner's order, each a little late)."""

    name = "jittery"
    max_concurrency = 3
    adaptive_concurrency = False

    def __init__(self, fake: FakeLlama, seed: int, jitter_s: float, announce: bool = False):
        import random

        self.spec = "engine:jittery"
        self.eng = BatchEngine(fake, object(), slots=3, slot_ctx=512, n_batch=64, n_threads=1,
                               compute_lock=threading.Lock(), refill_wait_s=0.5)
        self.rng, self.jitter_s, self.announce = random.Random(seed), jitter_s, announce

    def expect_calls(self, requests) -> None:  # what LocalJudge does, when ``announce``
        if self.announce:
            self.eng.expect(len(requests))

    async def acomplete(self, request: Request) -> Response:
        time.sleep(self.rng.uniform(0, self.jitter_s))
        n = int(request.request_id[1:])
        return await asyncio.wrap_future(self.eng.submit(request, [1] * (3 + n % 5), [], 1))


@pytest.mark.parametrize("announce", [False, True], ids=["no count", "runner announces the count"])
def test_a_runs_batches_do_not_depend_on_when_the_runner_hands_requests_over(announce):
    """The same 10 requests (replies of 8-35 tokens), run twice on 3 slots with the runner's hand-over delayed
    at random (up to 40 ms, 8 decode steps) and differently each time: every decode step holds the same
    slots at the same positions, so a sampled reply, which llama.cpp computes up to float summation order
    within its batch, comes out the same. Before the engine waited for a freed slot's replacement it
    started with whatever had arrived and decoded on without the late ones: the steps differed. With the
    run's count announced (what the runner does through ``expect_calls``) the steps are the same again, and no
    freed slot waits out ``refill_wait_s`` at the end of the run."""
    runs, timeouts = [], []
    for seed in (1, 2):
        fake = RecordingLlama(step_s=0.005)
        judge = JitteryJudge(fake, seed, jitter_s=0.04, announce=announce)
        try:
            reqs = [req(f"r{i}", 8 + (7 * i) % 28) for i in range(10)]
            res = run_requests(judge, reqs, cache=False, progress=False)
            assert res.judgments.ok.all() and (res.judgments.completion_tokens > 0).all()
        finally:
            judge.eng.close()
        runs.append(fake.steps)
        timeouts.append(judge.eng.refill_timeouts)
    assert runs[0] == runs[1]
    assert max(len({slot for slot, _ in step}) for step in runs[0]) == 3  # (all three slots were used at once)
    if announce:
        assert timeouts == [0, 0]
    else:  # the two slots freed after the last request each waited for a replacement that never came
        assert timeouts == [2, 2]


def test_announced_and_unannounced_runs_decode_the_same_steps_but_only_the_unannounced_waits():
    """``expect(n)`` changes when the engine stops waiting, never what it decodes: the same jobs, submitted
    at once, give the same steps with and without the count; without it the two slots freed after the last
    job, and a lone job's first step, each wait out refill_wait_s."""
    steps, timeouts = [], []
    for announce in (False, True):
        fake = RecordingLlama(step_s=0.001)
        eng = BatchEngine(fake, object(), slots=3, slot_ctx=512, n_batch=64, n_threads=1,
                          compute_lock=threading.Lock(), refill_wait_s=0.3)
        try:
            if announce:
                eng.expect(7)
            futs = [eng.submit(req(f"j{i}", 5 + 3 * i), [1, 2, 3], [], 1) for i in range(7)]
            assert [f.result(timeout=20).completion_tokens for f in futs] == [5 + 3 * i for i in range(7)]
            if announce:
                eng.expect(1)
            assert eng.submit(req("lone", 4), [1, 2], [], 1).result(timeout=20).completion_tokens == 4
        finally:
            eng.close()
        steps.append(fake.steps)
        timeouts.append(eng.refill_timeouts)
    assert steps[0] == steps[1]
    assert timeouts == [3, 0]  # unannounced: 2 at the end of the 7, 1 for the lone job's missing companions
