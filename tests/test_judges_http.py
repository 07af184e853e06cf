"""The OpenAI-compatible backend (aiohttp transport) against a misbehaving loopback server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

pytest.importorskip("aiohttp")

from cfbench.judges import (CacheMissError, GenerationConfig, JudgeError, Request, ResponseCache, RetryableError, get_judge,
                            run_requests, yes_probability)
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.judges.openai_backend import DEFAULT_BASE_URL

SECRET = "sk-test-" + "x7Q" * 12


@pytest.fixture
def server():
    with FakeOpenAIServer(lifetime_s=120) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_ambient_openai_env(monkeypatch):
    """A developer's real key or base URL must not reach the loopback server or change a default."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def one(text: str = "hello", **cfg) -> list[Request]:
    return [Request("r0", ({"role": "user", "content": text},), GenerationConfig(**cfg))]


def test_plain_call_sends_the_settings(server, tmp_path):
    res = run_requests(f"openai:fake-model@{server.base_url}", one(temperature=0.2, top_p=0.9, max_tokens=7, seed=3),
                       cache=tmp_path / "c.sqlite", progress=False)
    assert res.judgments.text[0] == "echo: hello"
    body = server.last_body()
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == \
        ("fake-model", 0.2, 0.9, 7, 3)
    assert (res.judgments.prompt_tokens[0], res.judgments.completion_tokens[0]) == (1, 2)


def test_body_is_model_messages_and_chat_params_exactly(server):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    cfg = GenerationConfig(seed=None, stop=("\n", "END"), top_logprobs=3, json_schema=schema)
    msgs = ({"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"})
    get_judge(f"openai:m@{server.base_url}").complete(Request("r", msgs, cfg))
    assert server.last_body() == {"model": "m", "messages": [dict(m) for m in msgs], **cfg.chat_params()}
    assert "seed" not in server.last_body() and server.last_body()["response_format"]["type"] == "json_schema"


def test_429_with_retry_after_then_success(server, tmp_path):
    server.script(["429:0", "429:0"])
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False)
    assert server.requests == 3 and bool(res.judgments.ok[0])


@pytest.mark.parametrize("action, retry_after", [("429:2.5", 2.5), ("429", None), ("429:soon", None),
                                                 ("429:-3", 0.0), ("429:inf", None)])
def test_429_retry_after_is_parsed_or_left_to_backoff(server, action, retry_after):
    server.script([action])
    with pytest.raises(RetryableError, match="429 rate limited: slow down") as info:
        get_judge(f"openai:m@{server.base_url}").complete(one()[0])
    assert info.value.retry_after == retry_after


@pytest.mark.parametrize("status", ["408", "500", "503"])
def test_408_and_5xx_are_retryable(server, status):
    server.script([status])
    with pytest.raises(RetryableError, match=f"{status}: fake error {status}"):
        get_judge(f"openai:m@{server.base_url}").complete(one()[0])


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


def test_400_carries_the_server_message_and_is_not_retried(server, tmp_path):
    server.script(["400"])
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False,
                       backoff_s=0.01)
    assert server.requests == 1
    assert not res.judgments.ok[0] and res.judgments.error[0] == "JudgeError: 400: fake error 400"


def test_4xx_with_a_text_body_reports_the_body(server):
    server.script(["text:404"])
    with pytest.raises(JudgeError, match=r"^404: <html>fake error 404</html>$") as info:
        get_judge(f"openai:m@{server.base_url}").complete(one()[0])
    assert not isinstance(info.value, RetryableError)


def test_timeouts_are_retried(server, tmp_path):
    server.script(["hang:5"])
    judge = get_judge(f"openai:m@{server.base_url}", request_timeout_s=0.5)
    res = run_requests(judge, one(), cache=tmp_path / "c.sqlite", progress=False, backoff_s=0.01)
    assert bool(res.judgments.ok[0]) and server.requests == 2


def test_a_refused_connection_is_retryable():
    with socket.socket() as sock:  # a loopback port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RetryableError, match="ClientConnectorError"):
        get_judge(f"openai:m@http://127.0.0.1:{port}/v1").complete(one()[0])


@pytest.mark.parametrize("action", ["garbage", "no-choices"])
def test_malformed_200_is_retried_then_a_recorded_failure(server, tmp_path, action):
    server.script([action] * 3)
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False,
                       backoff_s=0.01)
    assert server.requests == 3
    assert not res.judgments.ok[0] and res.judgments.text.isna()[0]
    assert "RetryableError: malformed response" in res.judgments.error[0]
    assert res.stats["non_completion_rate"] == 1.0


def test_null_content_names_the_finish_reason_and_is_not_retried(server, tmp_path):
    server.script(["null-content"])
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False)
    assert server.requests == 1
    assert res.judgments.error[0] == "JudgeError: empty message (finish_reason=content_filter)"


def test_logprobs_are_parsed(server):
    resp = get_judge(f"openai:m@{server.base_url}").complete(one(top_logprobs=2)[0])
    assert resp.top_logprobs == {"Yes": -0.1, "No": -2.4} and resp.finish_reason == "stop"
    assert server.last_body()["logprobs"] is True and server.last_body()["top_logprobs"] == 2
    assert get_judge(f"openai:m@{server.base_url}").complete(one()[0]).top_logprobs is None


def test_logprobs_reach_the_row(server, tmp_path):
    res = run_requests(f"openai:m@{server.base_url}", one(top_logprobs=2), cache=tmp_path / "c.sqlite",
                       progress=False)
    assert yes_probability(json.loads(res.judgments.top_logprobs[0])) > 0.9


def test_base_url_spec_beats_env_beats_default(monkeypatch):
    assert get_judge("openai:m").base_url == DEFAULT_BASE_URL
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-host:1/v1/")
    assert get_judge("openai:m").base_url == "http://env-host:1/v1"
    assert get_judge("openai:m@http://spec-host:2/v1").base_url == "http://spec-host:2/v1"


def test_authorization_header_reaches_the_server(server, monkeypatch):
    get_judge(f"openai:m@{server.base_url}").complete(one()[0])
    assert server.headers[-1]["Authorization"] == "Bearer not-needed"  # keyless self-hosted server
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    get_judge(f"openai:m@{server.base_url}").complete(one()[0])
    assert server.headers[-1]["Authorization"] == f"Bearer {SECRET}"
    monkeypatch.setenv("MY_GATEWAY_KEY", "gw-" + SECRET)
    get_judge(f"openai:m@{server.base_url}", api_key_env="MY_GATEWAY_KEY").complete(one()[0])
    assert server.headers[-1]["Authorization"] == f"Bearer gw-{SECRET}"


def test_the_default_server_without_a_key_fails_before_any_network_call():
    with pytest.raises(JudgeError, match="set the environment variable OPENAI_API_KEY") as info:
        get_judge("openai:gpt-4o-mini").complete(one()[0])
    assert not isinstance(info.value, RetryableError)


@pytest.mark.parametrize("env", ["OPENAI_API_KEY", "MY_GATEWAY_KEY"])
def test_a_key_echoed_by_the_server_is_scrubbed_from_the_error(server, monkeypatch, env):
    monkeypatch.setenv(env, SECRET)
    judge = get_judge(f"openai:m@{server.base_url}", api_key_env=env)
    server.script(["echo-key"])
    with pytest.raises(JudgeError) as info:
        judge.complete(one()[0])
    assert server.headers[-1]["Authorization"] == f"Bearer {SECRET}"  # the server did see it...
    message = str(info.value)
    assert message.startswith("401: Incorrect API key provided: Bearer <") and SECRET not in message  # ...we don't
    assert SECRET not in repr(judge) and SECRET not in repr(vars(judge))


def test_api_key_never_reaches_any_file(server, tmp_path, monkeypatch, caplog):
    from cfbench.report import RunOutput

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    cache_path = tmp_path / "cache.sqlite"
    # also exercise the error paths, each request its own (whatever order the calls and retries come in): r0 a
    # 500 twice (gave up), r1 a 500 then a success, r2 a 500 then a 401 echoing the key
    for user, actions in (("hello", ["500", "500"]), ("b", ["500", "ok"]), ("c", ["500", "echo-key"])):
        server.script_prompt(user, actions)
    reqs = one() + [Request("r1", ({"role": "user", "content": "b"},)), Request("r2", ({"role": "user", "content": "c"},))]
    res = run_requests("openai:m@" + server.base_url, reqs, cache=cache_path, progress=False, backoff_s=0.3,
                       max_attempts=2, concurrency=1)
    assert server.requests == 6 and all(h["Authorization"] == f"Bearer {SECRET}" for h in server.headers)  # used...
    j = res.judgments.set_index("request_id")
    assert res.stats["n_failed"] == 2 and [bool(j.ok[r]) for r in ("r0", "r1", "r2")] == [False, True, False]
    assert "Bearer <OPENAI_API_KEY>" in j.error["r2"] and "gave up after 2 attempt(s)" in j.error["r0"]
    assert "gave up after 2 attempt(s)" in caplog.text and SECRET not in caplog.text
    out = RunOutput(tmp_path / "out")
    out.table("judgments", res.judgments)
    out.summary({"stats": res.stats, "note": f"echo {SECRET}"})
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path  # ...and written nowhere


def test_one_session_per_loop_closed_by_arelease(server):
    import asyncio

    judge = get_judge(f"openai:m@{server.base_url}")

    async def twice():
        await judge.acomplete(one()[0])
        session = judge._sessions[id(asyncio.get_running_loop())][1]
        await judge.acomplete(one()[0])
        assert judge._sessions[id(asyncio.get_running_loop())][1] is session
        await judge.arelease()
        return session

    assert asyncio.run(twice()).closed and judge._sessions == {}
    assert judge.complete(one()[0]).text == "echo: hello" and judge._sessions == {}  # sync path, own loop


def test_building_the_judge_does_not_import_aiohttp():
    code = ("import sys, cfbench; from cfbench.judges import get_judge; get_judge('openai:gpt-4o-mini'); "
            "print('aiohttp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_missing_aiohttp_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # makes `import aiohttp` raise ImportError
    with pytest.raises(JudgeError, match=r"pip install 'cfbench\[api\]'"):
        get_judge("openai:m@http://127.0.0.1:9/v1").complete(one()[0])


def test_a_retry_after_longer_than_backoff_max_fails_the_call_at_once(server, tmp_path):
    server.script(["429:3600"])
    res = run_requests(f"openai:m@{server.base_url}", one(), cache=tmp_path / "c.sqlite", progress=False,
                       backoff_max_s=5.0)
    row = res.judgments.iloc[0]
    assert server.requests == 1 and not bool(row.ok)
    assert "asked to wait 3600 s" in row.error and "not retried" in row.error


def test_a_server_from_the_environment_is_part_of_the_spec_and_the_cache_key(server, monkeypatch, tmp_path):
    """Replies from a server named by $OPENAI_BASE_URL must not be replayed as OpenAI's own."""
    assert get_judge("openai:m").spec == "openai:m"
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    judge = get_judge("openai:m")
    assert judge.spec == f"openai:m@{server.base_url}"
    res = run_requests(judge, one(), cache=tmp_path / "c.sqlite", progress=False)
    assert res.judgments.judge[0] == f"openai:m@{server.base_url}"
    again = run_requests("openai:m", one(), cache=tmp_path / "c.sqlite", mode="replay", progress=False)
    assert again.judgments.judge[0] == f"openai:m@{server.base_url}" and again.stats["n_cached"] == 1
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with pytest.raises(CacheMissError):
        run_requests("openai:m", one(), cache=tmp_path / "c.sqlite", mode="replay", progress=False)
