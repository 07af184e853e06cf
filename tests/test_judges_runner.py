"""The runner: caching, dedup, repeats, replay, failures."""

from __future__ import annotations

import threading

import pytest

from cfbench.judges import (CacheMissError, GenerationConfig, Judge, JudgeError, Request, Response,
                            ResponseCache, RetryableError, plan_requests, run_requests)


class CountingJudge(Judge):
    """Replies with the prompt and a call counter; fails on demand."""

    max_concurrency = 4

    def __init__(self, fail_first: int = 0, retryable: bool = True, always_fail: bool = False):
        self.spec = "counting:test"
        self.calls = 0
        self.fail_first = fail_first
        self.retryable = retryable
        self.always_fail = always_fail
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Response:
        with self._lock:
            self.calls += 1
            n = self.calls
        if self.always_fail or n <= self.fail_first:
            raise (RetryableError("transient", retry_after=0.0) if self.retryable else JudgeError("fatal"))
        return Response(text=f"{request.messages[-1]['content']}#r{request.repeat}", prompt_tokens=3,
                        completion_tokens=2)


def req(i: int, text: str = "q", repeat: int = 0, **cfg) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": text},), GenerationConfig(**cfg), repeat=repeat)


@pytest.fixture
def cache(tmp_path):
    return ResponseCache(tmp_path / "c.sqlite")


def test_identical_requests_are_called_once_and_rows_keep_order(cache):
    judge = CountingJudge()
    reqs = [req(0, "a"), req(1, "b"), req(2, "a"), req(3, "c"), req(4, "b")]
    res = run_requests(judge, reqs, cache=cache, progress=False)
    assert judge.calls == 3
    assert list(res.judgments.request_id) == ["r0", "r1", "r2", "r3", "r4"]
    assert list(res.judgments.text) == ["a#r0", "b#r0", "a#r0", "c#r0", "b#r0"]
    assert res.stats["n_unique"] == 3 and res.stats["n_called"] == 3


def test_second_run_is_served_from_cache(cache):
    reqs = [req(i, f"t{i}") for i in range(5)]
    run_requests(CountingJudge(), reqs, cache=cache, progress=False)
    judge = CountingJudge()
    res = run_requests(judge, reqs, cache=cache, progress=False, concurrency=1, timeout_s=5)
    assert judge.calls == 0  # operational settings (concurrency, timeout) are not part of the key
    assert res.judgments.cache_hit.all()
    assert res.stats["n_cached"] == 5 and res.stats["n_called"] == 0


def test_repeats_are_distinct_calls(cache):
    judge = CountingJudge()
    reqs = [req(k, "same", repeat=k) for k in range(3)]
    res = run_requests(judge, reqs, cache=cache, progress=False)
    assert judge.calls == 3
    assert list(res.judgments.text) == ["same#r0", "same#r1", "same#r2"]
    assert res.judgments.key.nunique() == 3
    assert len(cache) == 3


def test_transient_errors_are_retried(cache):
    judge = CountingJudge(fail_first=2)
    res = run_requests(judge, [req(0)], cache=cache, progress=False, backoff_s=0.0)
    assert judge.calls == 3 and bool(res.judgments.ok[0])


def test_failures_are_recorded_not_cached_and_not_retried_forever(cache):
    judge = CountingJudge(always_fail=True)
    res = run_requests(judge, [req(0), req(1, "x")], cache=cache, progress=False, backoff_s=0.0)
    assert judge.calls == 6  # 3 attempts each, then give up
    assert not res.judgments.ok.any()
    assert res.judgments.error.str.contains("transient").all()
    assert res.judgments.text.isna().all()
    assert res.stats["non_completion_rate"] == 1.0
    assert len(cache) == 0  # errors are never cached


def test_fatal_errors_are_not_retried(cache):
    judge = CountingJudge(always_fail=True, retryable=False)
    res = run_requests(judge, [req(0)], cache=cache, progress=False)
    assert judge.calls == 1 and res.judgments.error[0] == "JudgeError: fatal"


def test_replay_reads_cache_and_fails_loudly_on_a_miss(cache):
    reqs = [req(0, "a"), req(1, "b")]
    run_requests(CountingJudge(), reqs[:1], cache=cache, progress=False)
    judge = CountingJudge()
    ok = run_requests(judge, reqs[:1], cache=cache, mode="replay", progress=False)
    assert ok.judgments.text[0] == "a#r0" and judge.calls == 0
    with pytest.raises(CacheMissError, match=r"1 of 2 distinct requests.*r1"):
        run_requests(judge, reqs, cache=cache, mode="replay", progress=False)
    assert judge.calls == 0


def test_replay_mode_from_environment(cache, monkeypatch):
    monkeypatch.setenv("CFBENCH_MODE", "replay")
    with pytest.raises(CacheMissError):
        run_requests(CountingJudge(), [req(0)], cache=cache, progress=False)


def test_duplicate_request_ids_are_an_error(cache):
    with pytest.raises(ValueError, match="request_id 'r0'"):
        run_requests(CountingJudge(), [req(0, "a"), req(0, "b")], cache=cache, progress=False)


def test_plan_counts_cached_and_to_call(cache):
    reqs = [req(0, "a"), req(1, "b"), req(2, "a")]
    run_requests(CountingJudge(), reqs[:1], cache=cache, progress=False)
    plan = plan_requests(CountingJudge(), reqs, cache=cache)
    assert plan == {"n_requests": 3, "n_unique": 2, "n_cached": 1, "n_to_call": 1}
    pending = list(cache.pending("counting:test"))
    assert len(pending) == 1 and pending[0][2]["messages"][0]["content"] == "b"


def test_scripted_fail_and_garbage(cache):
    res = run_requests("scripted:fail", [req(0)], cache=cache, progress=False)
    assert not res.judgments.ok[0] and "scripted failure" in res.judgments.error[0]


def test_runs_inside_a_running_event_loop(cache):
    import asyncio

    async def inner():
        return run_requests(CountingJudge(), [req(0, "loop")], cache=cache, progress=False)

    res = asyncio.run(inner())
    assert res.judgments.text[0] == "loop#r0"
