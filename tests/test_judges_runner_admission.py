"""The runner's admission gate, adaptive limit, first-attempt timeout and failure log (issues 25, 26)."""

from __future__ import annotations

import asyncio
import time

import pytest

from cfbench.judges import GenerationConfig, Judge, JudgeError, Request, Response, ResponseCache, run_requests
from cfbench.judges import runner as runner_mod
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.judges.runner import _Gate


def req(i: int, text: str | None = None) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": text or f"q{i}"},), GenerationConfig(max_tokens=4))


def test_each_release_wakes_one_waiter_not_the_whole_queue():
    """The old gate notify_all()ed a Condition on every release: 564,000 wake-ups for 3,000 calls."""
    seen = []

    class Spy(_Gate):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen.append(self)

    class Quick(Judge):
        spec = "quick:test"
        max_concurrency = 4

        async def acomplete(self, request: Request) -> Response:
            await asyncio.sleep(0)
            return Response(text="Yes")

        def complete(self, request: Request) -> Response:  # pragma: no cover - acomplete is used
            return Response(text="Yes")

    orig = runner_mod._Gate
    runner_mod._Gate = Spy
    try:
        res = run_requests(Quick(), [req(i) for i in range(3000)], cache=False, progress=False)
    finally:
        runner_mod._Gate = orig
    assert res.judgments.ok.all()
    gate = seen[0]
    assert gate.peak <= 4
    assert gate.wakeups <= 3000  # at most one wake-up per call admitted after waiting


def test_gate_grants_slots_in_order_and_a_raised_limit_admits_waiters_at_once():
    async def scenario() -> list[str]:
        gate = _Gate(1, ceiling=4, adaptive=False)
        order = []
        await gate.acquire()

        async def waiter(name: str, priority: bool = False) -> None:
            await gate.acquire(priority=priority)
            order.append(name)

        tasks = [asyncio.create_task(waiter("a")), asyncio.create_task(waiter("b"))]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(waiter("retry", priority=True)))
        await asyncio.sleep(0)
        gate.release()
        await asyncio.sleep(0)
        assert order == ["retry"] and gate.in_flight == 1
        gate._set(3)  # the controller raises the limit: both remaining waiters go now
        await asyncio.gather(*tasks)
        assert gate.in_flight == 3
        return order

    assert asyncio.run(scenario()) == ["retry", "a", "b"]


def test_a_cancelled_waiter_does_not_leak_a_slot():
    async def scenario() -> int:
        gate = _Gate(1, ceiling=1, adaptive=False)
        await gate.acquire()
        t = asyncio.create_task(gate.acquire())
        await asyncio.sleep(0)
        gate.release()  # granted to t ...
        t.cancel()      # ... which is cancelled before it runs: the slot must come back
        with pytest.raises(asyncio.CancelledError):
            await t
        return gate.in_flight

    assert asyncio.run(scenario()) == 0


def test_scattered_429s_do_not_collapse_the_limit_but_a_saturated_server_cuts_it():
    gate = _Gate(16, ceiling=256, adaptive=True)
    for i in range(2000):  # 5 % of replies are 429 at random: the limit keeps growing
        if i % 20 == 7:
            gate.overloaded(gate._epoch)
        else:
            gate.succeeded(0.05)
    assert gate.limit == 256, gate.history
    for _ in range(40):  # now most replies are 429: cut, once per epoch
        gate.overloaded(gate._epoch)
    assert gate.limit < 16
    stale = gate._epoch - 1
    before = gate.limit
    for _ in range(10):
        gate.overloaded(stale)  # replies to calls admitted before the last cut: no further cut
    assert gate.limit == before


def test_concurrency_recovers_after_a_burst_of_429s(tmp_path):
    with FakeOpenAIServer(latency_s=0.01) as srv:
        # an unknown server starts at 1 call in flight: a healthy start lets the limit grow, then a burst
        srv.script(["ok"] * 120 + ["429:0"] * 40)
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(6000)], cache=False,
                           progress=False, backoff_s=0.01, max_attempts=45)
    assert res.judgments.ok.all()
    hist = res.stats["concurrency_history"]
    cuts = [i for i in range(1, len(hist)) if hist[i] < hist[i - 1]]
    assert cuts, hist  # it backed off ...
    low = min(hist[cuts[0]:])
    assert hist[-1] >= 2 * max(low, 8) and hist[-1] > max(hist[:cuts[0]]), hist  # ... and recovered past its old peak


def test_a_hung_first_attempt_is_cut_long_before_the_timeout(tmp_path):
    with FakeOpenAIServer(latency_s=0.01) as srv:
        srv.script(["ok"] * 60 + ["hang:4"])
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(200)], cache=False,
                           progress=False, concurrency=1, timeout_s=60)
        sent = srv.requests
    assert res.judgments.ok.all()
    # the hung call was cut (at 4 x p95, at least 1 s, not the 60 s timeout) and sent again; had it
    # been left to run, its reply after 4 s would have been taken and the server would count 200
    assert sent == 201


def test_failures_are_in_the_cache_while_the_run_is_still_going(tmp_path):
    path = tmp_path / "c.sqlite"
    bad = req(0, "bad")
    bad_key = bad.cache_key("watch:test")
    seen = {}

    class Watch(Judge):
        spec = "watch:test"
        max_concurrency = 1

        def complete(self, request: Request) -> Response:
            if request.messages[0]["content"] == "bad":
                raise JudgeError("refused")
            deadline = time.time() + 5
            while time.time() < deadline:  # the run is not over: has the failure been written yet?
                got = ResponseCache(path).failures_many([bad_key])
                if got:
                    seen.update(got)
                    break
                time.sleep(0.05)
            return Response(text="ok")

    run_requests(Watch(), [bad, req(1, "slow")], cache=ResponseCache(path), progress=False)
    assert "refused" in seen.get(bad_key, ""), seen
