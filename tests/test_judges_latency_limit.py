"""Concurrency that adapts to latency, not only to 429s (issue 37): a server that queues calls instead
of refusing them (llama.cpp's) must bring the limit down; retries are counted and reported."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("aiohttp")

from cfbench.judges import GenerationConfig, Request, run_requests  # noqa: E402
from cfbench.judges.failures import failure_counts, failure_kind  # noqa: E402
from cfbench.judges.fakeserver import FakeOpenAIServer  # noqa: E402
from cfbench.judges.runner import _Gate  # noqa: E402

CFG = GenerationConfig(max_tokens=4)


def req(i: int) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": f"q{i}"},), CFG)


def test_a_queueing_server_brings_the_limit_down_and_every_call_completes():
    # one slot, 100 ms per call: with n in flight a call waits n x 100 ms; the limit must settle near 2
    with FakeOpenAIServer(latency_s=0.1, slots=1) as srv:
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(40)], cache=False,
                           progress=False, timeout_s=30)
    assert res.judgments.ok.all()
    hist = res.stats["concurrency_history"]
    assert res.stats["latency_cuts"] >= 1, hist
    assert hist[-1] <= 3 and max(hist[1:] or hist) <= 4, hist  # settled near 2, never grew past the start
    assert res.stats["n_retried"] == 0 and srv.requests == 40  # no silent resends
    # latency is from the moment of sending: with 2-3 in flight a call waits at most ~3 service times
    assert res.judgments.latency_s.median() <= 0.1 * 3.5, res.judgments.latency_s.describe()


def test_the_same_run_on_a_server_that_scales_is_not_cut():
    # no queue: latency flat in the calls in flight (0.2 s per call: scheduling noise on a busy machine is
    # small beside it, so a cut here means the limit misread the server, not the test machine)
    with FakeOpenAIServer(latency_s=0.2) as srv:
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(200)], cache=False,
                           progress=False, timeout_s=30)
    assert res.judgments.ok.all()
    assert res.stats["latency_cuts"] == 0 and max(res.stats["concurrency_history"]) >= 32


def test_the_gate_cuts_by_the_latency_gradient_and_ignores_stale_replies():
    gate = _Gate(16, ceiling=64, adaptive=True)
    gate.succeeded(0.1, 0)  # best latency 0.1 s
    for _ in range(15):
        gate.succeeded(1.6, 0)  # a window of 16 at 16 x the best: queueing
    assert gate.limit == 8  # at most halved per window
    for _ in range(30):
        gate.succeeded(1.6, 0)  # replies to calls admitted before the cut: no further cut
    assert gate.limit == 8
    for _ in range(8):
        gate.succeeded(0.8, gate._epoch)  # still 8 x the best: halved again
    assert gate.limit == 4


def test_timeouts_are_retries_that_are_counted_and_warned(caplog):
    with FakeOpenAIServer(latency_s=0.01) as srv:
        # six requests hang on their first call only, whatever the order of calls (a queue of actions taken
        # in call order let a retry draw another request's hang: CI saw one request hang 3 times, and once
        # 3 requests hang twice each, which is below the warning's share)
        for i in range(6):
            srv.script_prompt(f"q{i}", ["hang:3"])
        with caplog.at_level(logging.WARNING, logger="cfbench.judges"):
            res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(40)], cache=False,
                               progress=False, timeout_s=0.5, backoff_s=0.01)
    assert res.judgments.ok.all()
    # each hang is one timeout and one retried request (more only if the machine stalls an "ok" past 0.5 s)
    assert res.stats["n_retried"] >= 6 and res.stats["retries_by_kind"].get("timeout", 0) >= 6, res.stats
    assert any("needed a retry" in r.getMessage() for r in caplog.records)


def test_a_fixed_limit_is_not_adapted():
    with FakeOpenAIServer(latency_s=0.02, slots=1) as srv:
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(12)], cache=False,
                           progress=False, concurrency=3)
        assert srv.peak_in_flight <= 3
    assert res.judgments.ok.all() and "concurrency_history" not in res.stats


@pytest.mark.parametrize("error,kind", [
    ("not sent (plan only): recorded for `cfbench cache export`", "not sent (plan only)"),
    ("not run: plan mode (recorded for `cfbench cache export`)", "not sent (plan only)"),
    ("RetryableError: timeout: no reply within timeout_s=600 s (gave up after 3 attempt(s))", "timeout"),
    ("recorded failure: RetryableError: timeout: no reply within 1.2 s on attempt 1 (4 x the p95)", "timeout"),
    ("RetryableError: 429 rate limited: slow down (gave up after 3 attempt(s))", "http error"),
    ("JudgeError: 400: bad request", "http error"),
    ("RetryableError: ClientConnectorError: Cannot connect to host", "http error"),
    ("JudgeError: empty message (finish_reason=content_filter)", "refusal"),
    ("RetryableError: malformed response (not JSON): <html>", "bad reply"),
])
def test_failure_kinds_say_what_happened(error, kind):
    assert failure_kind(error) == kind


def test_replies_that_arrived_are_unparseable_or_refusals():
    assert failure_kind(None, parse_ok=True) is None
    assert failure_kind(None, parse_ok=False, text="Maybe, it depends.") == "unparseable"
    assert failure_kind(None, parse_ok=False, text="I'm sorry, but I can't assess this call.") == "refusal"


def test_a_plan_only_run_reports_requests_not_sent_not_failures(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="cfbench.judges"):
        res = run_requests("openai:gpt-4o-mini", [req(i) for i in range(5)], cache=tmp_path / "c.sqlite",
                           mode="plan", progress=False)
    assert res.stats["n_not_sent"] == 5 and res.stats["failures_by_kind"] == {"not sent (plan only)": 5}
    assert failure_counts(res.judgments) == {"openai:gpt-4o-mini": {"not sent (plan only)": 5}}
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "5 of 5 distinct requests not sent (plan only" in text and "failed" not in text
