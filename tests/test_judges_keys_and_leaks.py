"""Issue 12 §2 (no piece of a key is ever written) and §5 (the cache key is everything that is sent)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from urllib.parse import quote

import pandas as pd
import pytest

pytest.importorskip("aiohttp")

from cfbench.core.secrets import find_secret_leaks
from cfbench.judges import GenerationConfig, JudgeError, PRESETS, Request, ResponseCache, get_judge, run_requests
from cfbench.judges.base import canonical_base_url, request_key
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.core.secrets import FRAGMENT, echoed_credential, scrub
from cfbench.judges.openai_backend import _SNIPPET

KEY = "sk-proj-" + "A1b2C3d4Z9y8" * 4  # no run of it appears in ordinary text


@pytest.fixture
def server():
    with FakeOpenAIServer(lifetime_s=120) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def pieces(text: str, n: int = 6) -> list[str]:
    """Every run of ``n`` key characters found in ``text`` (beyond the public ``sk-proj-`` prefix)."""
    body = KEY[len("sk-proj-"):]
    return [body[i:i + n] for i in range(len(body) - n + 1) if body[i:i + n] in text]


def req(text="hello", rid="r0", **cfg) -> Request:
    return Request(rid, ({"role": "user", "content": text},), GenerationConfig(**cfg))


# -- §2 scrubbing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", [
    KEY, json.dumps(KEY)[1:-1], quote(KEY, safe=""), "".join(f"\\u{ord(c):04x}" for c in KEY),
    "".join(f"\\u{ord(c):04X}" for c in KEY), "".join(f"%{b:02X}" for b in KEY.encode()),
    KEY[5:], KEY[:-7], KEY[10:10 + FRAGMENT],
])
def test_scrub_removes_every_form_and_every_long_piece(form):
    out = scrub(f"before {form} after")
    assert "<OPENAI_API_KEY>" in out and not pieces(out, FRAGMENT)
    assert echoed_credential(f"x {form} y") == "OPENAI_API_KEY"


def test_scrub_leaves_ordinary_text_alone():
    text = "The agent greeted the customer; sk-proj- keys start like this."
    assert scrub(text) == text and echoed_credential(text) is None


@pytest.mark.parametrize("offset", list(range(_SNIPPET - len(KEY) - 3, _SNIPPET + 3)))
def test_a_401_echoing_the_key_at_any_offset_around_the_clip_leaves_no_piece(server, offset):
    server.script([f"echo-key-401:{offset}"])
    with pytest.raises(JudgeError) as info:
        get_judge(f"openai:m@{server.base_url}").complete(req())
    message = str(info.value)
    assert message.startswith("401") and not pieces(message), message


@pytest.mark.parametrize("offset", [0, _SNIPPET - 20, _SNIPPET - 1, _SNIPPET, _SNIPPET + 5])
def test_a_401_at_the_clip_through_the_runner_leaves_no_piece_in_rows_or_logs(server, tmp_path, caplog, offset):
    server.script([f"echo-key-401:{offset}"])
    res = run_requests(f"openai:m@{server.base_url}", [req()], cache=tmp_path / "c.sqlite", progress=False)
    assert not res.judgments.ok[0]
    assert not pieces(res.judgments.error[0]) and not pieces(caplog.text)
    assert not pieces((tmp_path / "c.sqlite").read_bytes().decode("latin-1"))


def test_a_redirect_carrying_the_key_url_encoded_is_scrubbed(server):
    server.script(["echo-key-redirect"])
    with pytest.raises(JudgeError, match="302") as info:
        get_judge(f"openai:m@{server.base_url}").complete(req())
    assert not pieces(str(info.value)) and quote(KEY, safe="") not in str(info.value)


@pytest.mark.parametrize("action", ["echo-key-200", "echo-key-escaped"])
def test_a_200_reply_holding_the_key_is_a_failure_never_cached_or_returned(server, tmp_path, action):
    server.script([action])
    cache_path = tmp_path / "cache" / "c.sqlite"
    res = run_requests(f"openai:m@{server.base_url}", [req()], cache=cache_path, progress=False)
    row = res.judgments.iloc[0]
    assert not row.ok and row.text is None and "reply echoed a credential" in row.error
    assert ResponseCache(cache_path).get(row.key) is None
    res.judgments.to_parquet(tmp_path / "judgments.parquet")
    res.judgments.to_csv(tmp_path / "judgments.csv")
    assert find_secret_leaks(tmp_path) == []
    # replay shows the recorded failure instead of a reply
    again = run_requests(f"openai:m@{server.base_url}", [req()], cache=cache_path, mode="replay", progress=False)
    assert not again.judgments.ok[0] and "echoed a credential" in again.judgments.error[0]


def test_the_key_check_is_not_fooled_by_a_server_that_cut_the_key(server, tmp_path, monkeypatch):
    srv_reply = f"token was {KEY[3:3 + 20]}"
    with FakeOpenAIServer(reply=srv_reply) as srv:
        res = run_requests(f"openai:m@{srv.base_url}", [req()], cache=False, progress=False)
    assert "echoed a credential" in res.judgments.error[0]


# -- §5 the key is everything sent -------------------------------------------------------------------

def test_a_message_name_splits_keys_and_both_requests_are_sent(server, tmp_path):
    a = Request("a", ({"role": "user", "content": "Rate the agent.", "name": "Emily"},))
    b = Request("b", ({"role": "user", "content": "Rate the agent.", "name": "Lakisha"},))
    spec = f"openai:m@{server.base_url}"
    assert a.cache_key(spec) != b.cache_key(spec)
    n0 = server.requests
    res = run_requests(spec, [a, b], cache=tmp_path / "c.sqlite", progress=False)
    assert server.requests - n0 == 2 and res.stats["n_unique"] == 2
    assert {body["messages"][0]["name"] for body in list(server.bodies)[-2:]} == {"Emily", "Lakisha"}


def test_zero_and_zero_point_zero_are_one_setting():
    assert req(temperature=0).cache_key("openai:m") == req(temperature=0.0).cache_key("openai:m")
    assert req(temperature=0).cache_key("local:m") == req(temperature=0.0).cache_key("local:m")
    assert json.dumps(GenerationConfig(temperature=0, top_p=1).chat_params()) == \
        json.dumps(GenerationConfig(temperature=0.0, top_p=1.0).chat_params())


@pytest.mark.parametrize("a,b", [("http://h:8000/v1/", "http://h:8000/v1"), ("HTTP://H:8000/v1", "http://h:8000/v1"),
                                 ("http://h:80/v1", "http://h/v1"), ("https://h:443/v1//", "https://h/v1")])
def test_one_server_one_key_whatever_the_spelling_of_its_url(a, b, monkeypatch):
    assert canonical_base_url(a) == canonical_base_url(b)
    assert req().cache_key(f"openai:m@{a}") == req().cache_key(f"openai:m@{b}")
    assert get_judge(f"openai:m@{a}").spec == get_judge(f"openai:m@{b}").spec
    monkeypatch.setenv("OPENAI_BASE_URL", a)
    assert get_judge("openai:m").spec == get_judge(f"openai:m@{b}").spec


def test_a_setting_the_backend_does_not_send_does_not_split_keys():
    assert req(repeat_penalty=1.3).cache_key("openai:m") == req(repeat_penalty=1.0).cache_key("openai:m")
    assert req(repeat_penalty=1.3).cache_key("local:m") != req(repeat_penalty=1.0).cache_key("local:m")


def test_local_keys_are_unchanged_from_the_first_release():
    """The committed results were computed from a cache keyed this way (sha256 of this JSON)."""
    import hashlib

    msgs = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is 2 even? é"})
    cfg = PRESETS["seed000"]
    old = {"judge": "local:qwen2.5-coder-1.5b", "messages": [[m["role"], m["content"]] for m in msgs],
           "config": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1000, "seed": 0, "repeat_penalty": 1.0,
                      "stop": [], "json_schema": None, "top_logprobs": 0}, "repeat": 1}
    blob = json.dumps(old, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert Request("x", msgs, cfg, repeat=1).cache_key("local:qwen2.5-coder-1.5b") == hashlib.sha256(blob).hexdigest()


def test_a_reply_far_beyond_max_tokens_is_an_error_and_not_cached(server, tmp_path):
    server.script(["big:5000000"])
    cache_path = tmp_path / "c.sqlite"
    res = run_requests(f"openai:m@{server.base_url}", [req(max_tokens=4)], cache=cache_path, progress=False)
    assert not res.judgments.ok[0] and "far beyond max_tokens=4" in res.judgments.error[0]
    assert len(ResponseCache(cache_path)) == 0 and cache_path.stat().st_size < 1_000_000


def test_a_long_reply_within_bounds_is_kept(server, tmp_path):
    server.script(["big:2000"])
    res = run_requests(f"openai:m@{server.base_url}", [req(max_tokens=1000)], cache=tmp_path / "c.sqlite",
                       progress=False)
    assert res.judgments.ok[0] and len(res.judgments.text[0]) == 2000


def test_timeouts_say_how_long_they_waited(server, tmp_path):
    server.script(["hang:5"] * 2)
    res = run_requests(f"openai:m@{server.base_url}", [req()], cache=False, progress=False, timeout_s=0.3,
                       max_attempts=2, backoff_s=0.01)
    assert "no reply within timeout_s=0.3 s" in res.judgments.error[0] and "2 attempt" in res.judgments.error[0]


_HOLD_LOCK = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("INSERT INTO failures VALUES ('x', 'j', 'held', 0)")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("ROLLBACK")
"""


def _hold(path, seconds):
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(path), str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_cache_locked_by_another_process_is_a_recorded_failure_not_an_exception(server, tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, busy_timeout_s=0.05)
    proc = _hold(path, 6)
    try:
        res = run_requests(f"openai:m@{server.base_url}", [req()], cache=cache, progress=False, cache_wait_s=0.5)
    finally:
        proc.wait(20)
    assert not res.judgments.ok[0] and "cache write failed" in res.judgments.error[0]
    assert "locked" in res.judgments.error[0]


def test_a_briefly_locked_cache_is_waited_for(server, tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, busy_timeout_s=0.05)
    proc = _hold(path, 0.6)
    try:
        res = run_requests(f"openai:m@{server.base_url}", [req()], cache=cache, progress=False, cache_wait_s=20)
    finally:
        proc.wait(20)
    assert res.judgments.ok[0] and cache.get(res.judgments.key[0]) is not None


# -- reasoning models (seed 000 Table 8) -------------------------------------------------------------

def test_reasoning_settings_are_sent_and_keyed(server):
    low, medium = PRESETS["seed000-reasoning-low"], PRESETS["seed000-reasoning-medium"]
    r = Request("r", ({"role": "user", "content": "hi"},), low)
    get_judge(f"openai:gpt-5@{server.base_url}").complete(r)
    body = server.last_body()
    assert body["reasoning_effort"] == "low" and body["temperature"] == 1.0
    assert body["max_completion_tokens"] == 1000 and "max_tokens" not in body and "top_p" not in body
    assert r.cache_key("openai:gpt-5") != Request("r", r.messages, medium).cache_key("openai:gpt-5")


@pytest.mark.parametrize("changes,needle", [(dict(temperature=0.0), "temperature=1"),
                                            (dict(reasoning_effort="extreme"), "reasoning_effort"),
                                            (dict(top_logprobs=5), "logprobs")])
def test_reasoning_settings_reject_what_those_models_refuse(changes, needle):
    with pytest.raises(ValueError, match=needle):
        GenerationConfig(**{**dict(temperature=1.0, reasoning_effort="low"), **changes})


# -- adaptive concurrency ------------------------------------------------------------------------------

def test_concurrency_backs_off_on_a_saturated_server_and_finishes(tmp_path):
    with FakeOpenAIServer(latency_s=0.02, max_in_flight=6) as srv:
        reqs = [req(f"q{i}", rid=f"r{i}") for i in range(300)]
        res = run_requests(f"openai:m@{srv.base_url}", reqs, cache=False, progress=False, backoff_s=0.01,
                           max_attempts=8)
    assert res.judgments.ok.all(), res.judgments.error.dropna().head()
    assert min(res.stats["concurrency_history"]) <= 6 < max(res.stats["concurrency_history"])


def test_concurrency_grows_while_latency_holds():
    with FakeOpenAIServer(latency_s=0.02) as srv:
        reqs = [req(f"q{i}", rid=f"r{i}") for i in range(1500)]
        res = run_requests(f"openai:m@{srv.base_url}", reqs, cache=False, progress=False)
    assert res.judgments.ok.all()
    assert res.stats["concurrency_history"][0] == 1 and srv.peak_in_flight > 16  # an unknown server: from 1 up


def test_a_fixed_concurrency_is_respected(server):
    reqs = [req(f"q{i}", rid=f"r{i}") for i in range(40)]
    run_requests(f"openai:m@{server.base_url}", reqs, cache=False, progress=False, concurrency=3)
    assert server.peak_in_flight <= 3


def test_a_batch_status_that_echoes_the_key_reaches_the_manifest_scrubbed(tmp_path, monkeypatch):
    """Every string the Batch server sends is scrubbed before the manifest keeps it: the error code, the
    status and the result file ids, not only the error message."""
    from types import SimpleNamespace as NS

    from cfbench.core.secrets import find_secret_leaks
    from cfbench.judges import batch as B

    key = "sk-proj-Xq7Lm2PzR9tKw4VbN8cJhY3dGf6SaE1uTo5iWnQ"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    (tmp_path / B.MANIFEST).write_text(json.dumps({"judge": "openai:m", "shards": [
        {"file": "shard-00001.jsonl", "batch_id": "b1", "status": "in_progress"}]}))
    batch = NS(status=f"failed {key}", output_file_id=f"file-{key}", error_file_id=f"file-{key}", request_counts=None,
               errors=NS(data=[{"code": f"invalid_api_key {key}", "message": f"bad key {key}", "line": 1}]))
    B.batch_status(tmp_path, client=NS(batches=NS(retrieve=lambda bid: batch)))
    text = (tmp_path / B.MANIFEST).read_text()
    assert key not in text and "invalid_api_key" in text and find_secret_leaks(tmp_path) == []
