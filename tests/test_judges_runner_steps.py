"""The runner's named steps (issue 25): cache read, admission, dispatch with retry and record, each
checked on its own; the end-to-end behaviour is covered by the other test_judges_runner* files."""

from __future__ import annotations

import asyncio

import pytest

from cfbench.judges import CacheMissError, GenerationConfig, Judge, Request, Response, ResponseCache, RetryableError
from cfbench.judges.runner import _admission, _Dispatch, _keys_and_unique, _read_cache


def req(i: int) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": f"question {i}"},), GenerationConfig(max_tokens=8))


SPEC = "scripted:yes"


def _unique(n: int) -> dict[str, Request]:
    return _keys_and_unique(SPEC, [req(i) for i in range(n)])[1]


def test_read_cache_splits_hits_from_todo_and_remembers_the_rest(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    unique = _unique(3)
    first, *rest = list(unique)
    cache.put(first, SPEC, Response(text="Cached", prompt_tokens=2, completion_tokens=1), 0.5)
    outcomes, hits, todo = _read_cache(cache, SPEC, unique, "live")
    assert hits == {first} and todo == rest  # first-seen order
    assert outcomes[first][0] == "Cached" and outcomes[first][5] == 0.5 and outcomes[first][6] is None
    assert [k for k, _, _ in cache.pending(SPEC)] == rest  # remembered for `cfbench cache export`


def test_read_cache_in_plan_mode_calls_nothing_and_in_replay_raises_on_a_miss(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    unique = _unique(2)
    outcomes, hits, todo = _read_cache(cache, SPEC, unique, "plan")
    assert todo == [] and not hits
    assert all(o[6].startswith("not sent (plan only)") for o in outcomes.values())
    with pytest.raises(CacheMissError):
        _read_cache(cache, SPEC, unique, "replay")
    cache.record_failures(SPEC, [(k, "boom") for k in unique])
    outcomes, hits, todo = _read_cache(cache, SPEC, unique, "replay")
    assert todo == [] and {o[6] for o in outcomes.values()} == {"recorded failure: boom"}


class _Flaky(Judge):
    """Fails each request's first attempt with a retryable overload, then answers."""

    spec = "flaky:test"
    max_concurrency = 4
    adaptive_concurrency = True
    initial_concurrency = 2

    def __init__(self) -> None:
        self.seen: set[str] = set()

    async def acomplete(self, request: Request) -> Response:
        await asyncio.sleep(0)
        if request.request_id not in self.seen:
            self.seen.add(request.request_id)
            raise RetryableError("429 rate limited", overload=True)
        return Response(text="Yes", prompt_tokens=1, completion_tokens=1)

    def complete(self, request: Request) -> Response:  # pragma: no cover - acomplete is used
        raise NotImplementedError


def test_admission_fixed_limit_or_adaptive_from_the_backend():
    judge = _Flaky()
    fixed = _admission(judge, 3)
    assert (fixed.limit, fixed.ceiling, fixed.adaptive) == (3, 3, False)
    adaptive = _admission(judge, None)
    assert (adaptive.limit, adaptive.ceiling, adaptive.adaptive) == (2, 4, True)


def test_dispatch_retries_records_replies_and_failures(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    unique = _unique(6)
    outcomes: dict[str, tuple] = {}
    dispatch = _Dispatch(_Flaky(), SPEC, cache, unique, outcomes, concurrency=None, max_attempts=2,
                         timeout_s=30.0, backoff_s=0.001, backoff_max_s=0.01, jitter_seed=0, cache_wait_s=1.0)
    asyncio.run(dispatch.run(list(unique), desc="t", progress=False))
    assert dispatch.n_called == 6 and len(dispatch.fresh) == 6
    assert all(o[0] == "Yes" and o[6] is None for o in outcomes.values())  # every second attempt answered
    assert set(cache.has_many(list(unique), judge=SPEC)) == set(unique)  # each reply cached as it came

    outcomes.clear()
    cache = ResponseCache(tmp_path / "fresh.sqlite")  # no replies yet for these keys
    once = _Dispatch(_Flaky(), SPEC, cache, unique, outcomes, concurrency=2, max_attempts=1,
                     timeout_s=30.0, backoff_s=0.001, backoff_max_s=0.01, jitter_seed=0, cache_wait_s=1.0)
    asyncio.run(once.run(list(unique), desc="t", progress=False))
    assert once.fresh == []
    assert all("gave up after 1 attempt(s)" in o[6] for o in outcomes.values())
    recorded = cache.failures_many(list(unique), judge=SPEC)
    assert set(recorded) == set(unique)  # failure reasons written (flushed at the end of the run)
