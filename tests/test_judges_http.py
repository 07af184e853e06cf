"""The OpenAI-compatible backend against a misbehaving loopback server."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")
pytest.importorskip("aiohttp")

from cfbench.judges import GenerationConfig, Request, ResponseCache, get_judge, run_requests
from cfbench.judges.fakeserver import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer(lifetime_s=120) as srv:
        yield srv


def one(text: str = "hello", **cfg) -> list[Request]:
    return [Request("r0", ({"role": "user", "content": text},), GenerationConfig(**cfg))]


def test_plain_call_sends_the_settings(server, tmp_path):
    res = run_requests(f"openai:fake-model@{server.base_url}", one(temperature=0.2, top_p=0.9, max_tokens=7, seed=3),
                       cache=tmp_path / "c.sqlite", progress=False)
    assert res.judgments.text[0] == "echo: hello"
    body = server.last_body()
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == \
        ("fake-model", 0.2, 0.9, 7, 3)


def test_429_with_retry_after_then_success(server, tmp_path):
    server.script(["429:0", "429:0"])
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False)
    assert server.requests == 3 and bool(res.judgments.ok[0])


def test_500s_exhaust_three_attempts_and_are_not_cached(server, tmp_path):
    server.script(["500"] * 3)
    cache = ResponseCache(tmp_path / "c.sqlite")
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=cache, progress=False, backoff_s=0.01)
    assert server.requests == 3
    assert not res.judgments.ok[0] and "500" in res.judgments.error[0]
    assert len(cache) == 0
    # the next run calls again (errors are never cached) and now succeeds
    res2 = run_requests(f"openai:m@{server.base_url}", one(), cache=cache, progress=False)
    assert bool(res2.judgments.ok[0]) and server.requests == 4


def test_timeouts_are_retried(server, tmp_path):
    server.script(["hang:5"])
    judge = get_judge(f"openai:m@{server.base_url}", request_timeout_s=0.5)
    res = run_requests(judge, one(), cache=tmp_path / "c.sqlite", progress=False, backoff_s=0.01)
    assert bool(res.judgments.ok[0]) and server.requests == 2


def test_garbage_body_is_a_recorded_failure(server, tmp_path):
    server.script(["garbage"] * 3)
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False,
                       backoff_s=0.01)
    assert not res.judgments.ok[0] and res.judgments.text.isna()[0]
    assert res.stats["non_completion_rate"] == 1.0


def test_logprobs_reach_the_row(server, tmp_path):
    import json

    from cfbench.judges import yes_probability

    res = run_requests(f"openai:m@{server.base_url}", one(top_logprobs=2), cache=tmp_path / "c.sqlite",
                       progress=False)
    top = json.loads(res.judgments.top_logprobs[0])
    assert yes_probability(top) > 0.9 and server.last_body()["top_logprobs"] == 2


def test_api_key_never_reaches_any_file(server, tmp_path, monkeypatch):
    from cfbench.report import RunOutput

    secret = "sk-test-" + "x7Q" * 12
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    cache_path = tmp_path / "cache.sqlite"
    server.script(["500"] * 3)  # also exercise the error path
    res = run_requests("openai:m@" + server.base_url, one() + [Request("r1", ({"role": "user", "content": "b"},))],
                       cache=cache_path, progress=False, backoff_s=0.01)
    assert server.headers[-1]["Authorization"] == f"Bearer {secret}"  # it was used...
    out = RunOutput(tmp_path / "out")
    out.table("judgments", res.judgments)
    out.summary({"stats": res.stats, "note": f"echo {secret}"})
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path  # ...and written nowhere
