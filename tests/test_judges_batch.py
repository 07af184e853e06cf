"""Paper scale (issue 15): streaming batch plan, the submit -> status -> collect -> replay lifecycle
against the loopback server, the bounded cache, and the `cfbench batch` / `cfbench cache` commands."""

from __future__ import annotations

import os
import argparse
import hashlib
import json
import sqlite3
import zlib

import pytest
from pathlib import Path

pytest.importorskip("aiohttp")

from cfbench.core.errors import InputError
from cfbench.judges import GenerationConfig, Request, ResponseCache, get_judge, run_requests
from cfbench.judges.batch import (batch_status, collect_batch, import_batch, plan_batch, read_manifest,
                                  read_requests_jsonl, submit_batch)
from cfbench.judges.fakeserver import FakeOpenAIServer

KEY = "sk-proj-" + "Q7w8E9r0T1y2" * 4


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def server():
    with FakeOpenAIServer(lifetime_s=120) as srv:
        yield srv


def make(n: int, *, start: int = 0, text: str = "Was the agent polite? Answer Yes or No.") -> list[Request]:
    cfg = GenerationConfig(max_tokens=5, top_logprobs=2)
    return [Request(f"r{i}", ({"role": "system", "content": "You audit calls."},
                              {"role": "user", "content": f"{text} #{i} — café"}), cfg) for i in range(start, start + n)]


def expect(cache, judge, keys):
    """Make the cache know ``keys`` as requests of ``judge`` (what a plan-only run or export records)."""
    cache.remember_requests(judge, [Request(k, ({"role": "user", "content": k},)) for k in keys], keys=keys)


def lines(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


# -- plan -------------------------------------------------------------------------------------------------

def test_plan_writes_batch_lines_whose_ids_are_cache_keys_and_bodies_what_the_backend_sends(server, tmp_path):
    spec = f"openai:m@{server.base_url}/"
    reqs = make(3) + [Request("named", ({"role": "user", "content": "hi", "name": "Emily"},))]
    manifest = plan_batch(iter(reqs), spec, tmp_path / "b", cache=None, progress=False)
    got = lines(tmp_path / "b" / manifest["shards"][0]["file"])
    judge = get_judge(spec)
    assert [x["custom_id"] for x in got] == [r.cache_key(judge.spec) for r in reqs]
    for line, r in zip(got, reqs):
        assert (line["method"], line["url"]) == ("POST", "/v1/chat/completions")
        judge.complete(r)
        assert line["body"] == server.last_body()


def test_shards_respect_the_count_and_byte_limits_and_the_manifest_is_exact(tmp_path):
    manifest = plan_batch(make(25), "openai:m", tmp_path, cache=None, max_requests=10, progress=False)
    assert [s["count"] for s in manifest["shards"]] == [10, 10, 5]
    one_line = len((tmp_path / "shard-00000.jsonl").read_bytes().splitlines(keepends=True)[0])
    manifest = plan_batch(make(25), "openai:m", tmp_path / "by_bytes", cache=None, max_bytes=one_line * 4,
                          progress=False)
    assert all(s["count"] <= 4 and s["bytes"] <= one_line * 4 for s in manifest["shards"])
    assert sum(s["count"] for s in manifest["shards"]) == 25 == manifest["n_planned"]
    for s in manifest["shards"]:
        data = (tmp_path / "by_bytes" / s["file"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest(), data.count(b"\n")) == (s["bytes"], s["sha256"], s["count"])
    assert read_manifest(tmp_path / "by_bytes") == manifest


def test_plan_skips_cached_and_duplicate_requests(server, tmp_path):
    spec = f"openai:m@{server.base_url}"
    cache = ResponseCache(tmp_path / "c.sqlite")
    run_requests(spec, make(4), cache=cache, progress=False)
    dupes = [Request(f"d{r.request_id}", r.messages, r.config) for r in make(3, start=4)]
    manifest = plan_batch(make(10) + dupes, spec, tmp_path / "b", cache=cache, progress=False)
    assert (manifest["n_seen"], manifest["n_cached"], manifest["n_duplicate"], manifest["n_planned"]) == (13, 4, 3, 6)


def test_a_line_over_the_byte_limit_names_the_request(tmp_path):
    with pytest.raises(InputError, match=r"record 'r0'.*shard limit"):
        plan_batch(make(1), "openai:m", tmp_path, cache=None, max_bytes=100, progress=False)


def test_plan_is_for_openai_judges_only(tmp_path):
    with pytest.raises(InputError, match="openai"):
        plan_batch(make(1), "scripted:yes", tmp_path, cache=None, progress=False)


def test_requests_jsonl_round_trip_and_bad_lines(tmp_path):
    good = tmp_path / "r.jsonl"
    good.write_text(json.dumps({"request_id": "a", "messages": [{"role": "user", "content": "x"}],
                                "config": {"max_tokens": 3, "stop": ["\n"]}, "repeat": 1}) + "\n")
    (r,) = list(read_requests_jsonl(good))
    assert (r.request_id, r.config.max_tokens, r.config.stop, r.repeat) == ("a", 3, ("\n",), 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"request_id": "b", "messages": [{"role": "user", "content": "x"}],
                               "config": {"temprature": 0}}) + "\n")
    with pytest.raises(InputError, match=r"record 'b'.*config"):
        list(read_requests_jsonl(bad))


# -- the lifecycle ------------------------------------------------------------------------------------------

class _Interrupt(RuntimeError):
    pass


def test_submit_status_collect_replay_against_the_loopback_server(server, tmp_path):
    import openai

    spec = f"openai:m@{server.base_url}"
    reqs = make(12)
    cache = ResponseCache(tmp_path / "c.sqlite")
    out = tmp_path / "job"
    plan_batch(reqs, spec, out, cache=cache, max_requests=5, progress=False)  # 3 shards: 5, 5, 2

    # an interrupted submit (the second batch creation fails) resumes without uploading twice
    client = openai.OpenAI(api_key=KEY, base_url=server.base_url)
    real_create = client.batches.create
    calls = {"n": 0}

    def flaky_create(**kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise _Interrupt("connection dropped")
        return real_create(**kw)

    client.batches.create = flaky_create
    with pytest.raises(_Interrupt):
        submit_batch(out, client=client)
    half = read_manifest(out)
    assert half["shards"][0]["batch_id"] and half["shards"][1]["input_file_id"] and not half["shards"][1]["batch_id"]
    submit_batch(out)
    manifest = read_manifest(out)
    assert len(server.files) == 3 and len(server.batches) == 3
    assert all(s["batch_id"] for s in manifest["shards"])

    # results: line 2 content-filtered, line 3 an error object, line 4 a 500, line 6 echoes the key
    server.script_batch(["ok", "null-content", "error", "500", "ok", "echo-key-200"] + ["ok"] * 6)
    first = collect_batch(out, cache=cache)  # the batches are still in progress: nothing collected
    assert not any(s["collected"] for s in first["shards"]) and len(cache) == 0
    done = collect_batch(out, cache=cache)
    assert all(s["collected"] for s in done["shards"])
    assert sum(s["n_ok"] for s in done["shards"]) == 8 and sum(s["n_failed"] for s in done["shards"]) == 4
    again = collect_batch(out, cache=cache)  # collecting twice imports nothing twice
    assert again == done

    n_http = server.requests
    res = run_requests(spec, reqs, cache=cache, mode="replay", progress=False)
    assert server.requests == n_http  # replay called nothing
    j = res.judgments.set_index("request_id")
    assert j.ok.sum() == 8
    assert "null content" in j.error["r1"] and "content filter" in j.error["r1"]
    assert "batch error" in j.error["r2"] and "status 500" in j.error["r3"]
    assert "echoed a credential" in j.error["r5"]
    assert j.text["r0"].startswith("echo: Was the agent polite") and j.top_logprobs["r0"]
    assert KEY not in (tmp_path / "c.sqlite").read_bytes().decode("latin-1")

    # a live run retries the recorded failures (and only those)
    live = run_requests(spec, reqs, cache=cache, progress=False)
    assert live.judgments.ok.all() and live.stats["n_called"] == 4


def test_batch_status_records_ids_and_counts(server, tmp_path):
    out = tmp_path / "job"
    plan_batch(make(3), f"openai:m@{server.base_url}", out, cache=None, progress=False)
    submit_batch(out)
    batch_status(out)
    batch_status(out)
    s = read_manifest(out)["shards"][0]
    assert s["status"] == "completed" and s["output_file_id"] and s["request_counts"]["completed"] == 3


def test_planning_into_a_submitted_folder_is_refused(server, tmp_path):
    out = tmp_path / "job"
    plan_batch(make(2), f"openai:m@{server.base_url}", out, cache=None, progress=False)
    submit_batch(out)
    with pytest.raises(InputError, match="already submitted"):
        plan_batch(make(2), f"openai:m@{server.base_url}", out, cache=None, progress=False)


def test_import_of_a_null_content_line_is_a_failure_never_an_empty_reply(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    line = {"custom_id": "k1", "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}]}}}
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps(line) + "\n")
    expect(cache, "openai:m", ["k1"])
    assert import_batch(cache, "openai:m", path) == (0, 1)
    assert cache.get("k1") is None and "null content" in cache.failures_many(["k1"])["k1"]


# -- the bounded cache --------------------------------------------------------------------------------------

def test_answered_prompts_are_not_kept(server, tmp_path):
    path = tmp_path / "c.sqlite"
    long_prompt = "The customer explains the billing problem in detail. " * 200
    reqs = [Request(f"r{i}", ({"role": "user", "content": f"{long_prompt} {i}"},), GenerationConfig(max_tokens=3))
            for i in range(20)]
    server.reply = "Yes"
    cache = ResponseCache(path)
    run_requests(f"openai:m@{server.base_url}", reqs, cache=cache, progress=False)
    stats = cache.stats()
    assert stats["responses"] == 20 and stats["pending_requests"] == 0
    con = sqlite3.connect(path)
    sizes = [len(k) + len(j) + len(r) for k, j, r in con.execute("SELECT key, judge, response FROM responses")]
    assert max(sizes) < 400  # key + judge + reply JSON: a few hundred bytes, no prompt
    cache.vacuum()
    assert b"billing problem" not in path.read_bytes()


def test_plan_mode_keeps_pending_prompts_compressed_until_answered(server, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    spec = f"openai:m@{server.base_url}"
    run_requests(spec, make(3), cache=cache, mode="plan", progress=False)
    assert cache.stats()["pending_requests"] == 3
    run_requests(spec, make(3), cache=cache, progress=False)
    assert cache.stats()["pending_requests"] == 0


def test_an_old_cache_is_migrated_keeping_only_unanswered_prompts(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE responses (key TEXT PRIMARY KEY, judge TEXT NOT NULL, response TEXT NOT NULL, latency_s REAL,
                                created REAL NOT NULL);
        CREATE TABLE requests (key TEXT PRIMARY KEY, judge TEXT NOT NULL, request TEXT NOT NULL, created REAL NOT NULL);
    """)
    payload = json.dumps({"messages": [{"role": "user", "content": "x"}], "config": GenerationConfig().as_dict(),
                          "repeat": 0, "request_id": "a"})
    con.execute("INSERT INTO responses VALUES ('k1', 'openai:m', '{\"text\": \"Yes\"}', NULL, 0)")
    con.executemany("INSERT INTO requests VALUES (?, 'openai:m', ?, 0)", [("k1", payload), ("k2", payload)])
    con.commit()
    con.close()
    cache = ResponseCache(path)
    assert [k for k, _, _ in cache.pending()] == ["k2"] and cache.get("k1")[0].text == "Yes"
    tables = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "requests" not in tables
    blob = sqlite3.connect(path).execute("SELECT request FROM pending").fetchone()[0]
    assert json.loads(zlib.decompress(blob))["request_id"] == "a"


# -- the commands ---------------------------------------------------------------------------------------------

def _cli(argv):
    from cfbench.cli import batch, cache

    parser = argparse.ArgumentParser(prog="cfbench")
    sub = parser.add_subparsers(dest="command")
    batch.add_parser(sub)
    cache.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize("order", ["readme", "file-last", "file-first"])
def test_cache_import_accepts_the_readme_argument_order(tmp_path, order, capsys):
    out = tmp_path / "output.jsonl"
    out.write_text(json.dumps({"custom_id": "k", "error": None, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}]}}}) + "\n")
    path = str(tmp_path / "c.sqlite")
    expect(ResponseCache(path), "openai:gpt-4o-mini", ["k"])
    argv = {"readme": ["cache", "import", "--judge", "openai:gpt-4o-mini", str(out), "--path", path],
            "file-last": ["cache", "import", "--path", path, "--judge", "openai:gpt-4o-mini", str(out)],
            "file-first": ["cache", "import", str(out), "--judge", "openai:gpt-4o-mini", "--path", path]}[order]
    assert _cli(argv) == 0
    assert "imported 1 replies" in capsys.readouterr().out
    assert ResponseCache(path).get("k")[0].text == "Yes"


def test_batch_plan_command_from_a_requests_file_then_stats_and_vacuum(tmp_path, capsys):
    reqs = tmp_path / "r.jsonl"
    reqs.write_text("".join(json.dumps({"request_id": f"a{i}", "messages": [{"role": "user", "content": f"x{i}"}]})
                            + "\n" for i in range(7)))
    cache = str(tmp_path / "c.sqlite")
    assert _cli(["batch", "plan", "--requests", str(reqs), "--judge", "openai:m", "--out", str(tmp_path / "job"),
                 "--cache", cache, "--max-requests", "3", "--quiet"]) == 0
    assert "planned 7 requests in 3 shard(s)" in capsys.readouterr().out
    assert _cli(["cache", "stats", "--path", cache]) == 0
    assert json.loads(capsys.readouterr().out)["responses"] == 0
    assert _cli(["cache", "vacuum", "--path", cache]) == 0
    assert "size_after" in json.loads(capsys.readouterr().out)


def test_batch_plan_from_a_python_generator(tmp_path, monkeypatch, capsys):
    mod = tmp_path / "my_reqs.py"
    mod.write_text("from cfbench.judges import Request\n"
                   "def requests():\n"
                   "    for i in range(4):\n"
                   "        yield Request(f'g{i}', ({'role': 'user', 'content': str(i)},))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cli(["batch", "plan", "--requests", "my_reqs:requests", "--judge", "openai:m", "--out",
                 str(tmp_path / "job"), "--cache", str(tmp_path / "c.sqlite"), "--quiet"]) == 0
    assert read_manifest(tmp_path / "job" / "openai-m")["n_planned"] == 4


def test_batch_commands_run_the_lifecycle(server, tmp_path, capsys):
    reqs = tmp_path / "r.jsonl"
    reqs.write_text("".join(json.dumps({"request_id": f"a{i}", "messages": [{"role": "user", "content": f"x{i}"}]})
                            + "\n" for i in range(3)))
    job, cache = str(tmp_path / "job"), str(tmp_path / "c.sqlite")
    _cli(["batch", "plan", "--requests", str(reqs), "--judge", f"openai:m@{server.base_url}", "--out", job,
          "--cache", cache, "--quiet"])
    assert _cli(["batch", "submit", "--dir", job]) == 0
    assert _cli(["batch", "status", "--dir", job]) == 0
    _cli(["batch", "collect", "--dir", job, "--cache", cache])
    assert "ok=3 failed=0" in capsys.readouterr().out
    assert len(ResponseCache(cache)) == 3


def test_the_cache_reports_a_credential_in_any_table(tmp_path, monkeypatch):
    from cfbench.judges import Response

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k1", "openai:m", Response(text="clean"))
    assert cache.find_secret_leaks() == []
    cache.remember_requests("openai:m", [Request("p", ({"role": "user", "content": f"my key is {KEY}"},))],
                            keys=["k2"])
    cache.record_failures("openai:m", [("k3", f"401: Bearer {KEY[:-3]}")])
    assert cache.find_secret_leaks() == ["pending:k2", "failures:k3"]
    monkeypatch.delenv("OPENAI_API_KEY")
    assert cache.find_secret_leaks() == []


# -- a server without the Batch API ------------------------------------------------------------------------

def test_submit_to_a_server_without_the_files_api_is_one_line(tmp_path, monkeypatch):
    """llama.cpp's server, vLLM and most gateways serve chat completions only: submit names the missing
    endpoint in one line (it ended in a 27-line openai.NotFoundError traceback)."""
    import subprocess
    import sys

    monkeypatch.delenv("OPENAI_API_KEY")  # a keyless self-hosted server, named by URL
    with FakeOpenAIServer(lifetime_s=120, batch_api=False) as srv:
        out = tmp_path / "b"
        plan_batch(make(3), f"openai:m@{srv.base_url}", out, cache=None, progress=False)
        with pytest.raises(InputError, match=r"has no /v1/files endpoint \(HTTP 404\)") as exc:
            submit_batch(out)
        assert "\n" not in str(exc.value) and srv.base_url.split("//")[1] in str(exc.value)
        assert read_manifest(out)["shards"][0].get("input_file_id") is None  # nothing recorded as uploaded
        root = Path(__file__).resolve().parents[1]
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | {"PYTHONPATH": str(root)}
        r = subprocess.run([sys.executable, "-m", "cfbench.cli", "batch", "submit", "--dir", str(out)], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    err = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and "/v1/files" in err[0], r.stderr
