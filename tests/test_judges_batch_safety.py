"""Issue 26, "batch output poisons the cache", and issue 25's two data-loss paths of `batch plan`.

Each test attacks one path with inputs of its own: a batch line answering a custom_id the plan never
had (a key another judge computes), a custom_id answered twice differently, another plan's output
fed to `cache import`, a plan pointed at a folder holding files it did not write or another judge's
plan, and a plan whose keys took their server from $OPENAI_BASE_URL collected without it.
"""

from __future__ import annotations

import argparse
import json

import pytest

pytest.importorskip("aiohttp")

from cfbench.core.errors import InputError
from cfbench.judges import GenerationConfig, Request, Response, ResponseCache, run_requests
from cfbench.judges.batch import collect_batch, plan_batch, read_manifest, submit_batch
from cfbench.judges.fakeserver import FakeOpenAIServer

KEY = "sk-proj-" + "Zx4Cv5Bn6Mm7" * 4


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CFBENCH_PRICES", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def server():
    with FakeOpenAIServer(lifetime_s=120) as srv:
        yield srv


def make(n: int, start: int = 0) -> list[Request]:
    cfg = GenerationConfig(max_tokens=5)
    return [Request(f"r{i}", ({"role": "user", "content": f"Did the agent greet the caller? #{i}"},), cfg)
            for i in range(start, start + n)]


def _cli(argv):
    from cfbench.cli import batch, cache

    parser = argparse.ArgumentParser(prog="cfbench")
    sub = parser.add_subparsers(dest="command")
    batch.add_parser(sub)
    cache.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def _run_to_collect(server, out, reqs, cache, script):
    spec = f"openai:m@{server.base_url}"
    plan_batch(reqs, spec, out, cache=cache, progress=False)
    submit_batch(out)
    server.script_batch(script)
    collect_batch(out, cache=cache)  # in progress
    return collect_batch(out, cache=cache), spec


# -- collect / import accept only the plan's custom_ids --------------------------------------------------

def test_a_batch_line_for_another_judges_key_never_answers_that_judge(server, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    victim = Request("v", ({"role": "user", "content": "Is this call compliant?"},))
    injected = victim.cache_key("scripted:yes")  # the key scripted:yes looks up for this request
    manifest, _ = _run_to_collect(server, tmp_path / "job", make(3), cache, ["ok", f"foreign:{injected}", "ok"])
    assert cache.get(injected) is None and cache.failures_many([injected]) == {}
    res = run_requests("scripted:yes", [victim], cache=cache, progress=False)
    row = res.judgments.iloc[0]
    assert not bool(row.cache_hit) and row.text == "Yes"  # the judge's own reply, not the injected text
    assert cache.get(injected, "scripted:yes")[0].text == "Yes"
    shard = manifest["shards"][0]
    assert (shard["n_ok"], shard["n_refused"], shard["n_missing"]) == (2, 1, 1)


def test_lookups_can_require_the_judge_the_reply_was_stored_for(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k1", "openai:m", Response(text="from the batch"))
    assert cache.get_rows(["k1"], "scripted:yes") == [] and cache.get("k1", "scripted:yes") is None
    assert cache.has_many(["k1"], "scripted:yes") == set() and cache.has_many(["k1"], "openai:m") == {"k1"}
    assert [r[1] for r in cache.get_rows(["k1"], "openai:m")] == [Response(text="from the batch").to_json()]
    cache.record_failures("openai:m", [("k2", "boom")])
    assert cache.failures_many(["k2"], "scripted:yes") == {} and cache.failures_many(["k2"], "openai:m")
    assert cache.known_keys("openai:m", ["k1", "k2", "k3"]) == {"k1", "k2"}
    assert cache.known_keys("scripted:yes", ["k1", "k2"]) == set()


def test_a_custom_id_answered_twice_differently_is_a_recorded_conflict(server, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = make(3)
    manifest, spec = _run_to_collect(server, tmp_path / "job", reqs, cache, ["dup-diff", "dup-same", "ok"])
    k0, k1 = reqs[0].cache_key(spec), reqs[1].cache_key(spec)
    assert cache.get(k0) is None and cache.failures_many([k0])[k0].startswith("conflict: 2 different results")
    assert cache.get(k1) is not None
    shard = manifest["shards"][0]
    assert (shard["n_ok"], shard["n_conflict"], shard["n_duplicate"], shard["n_failed"]) == (2, 1, 1, 1)
    rows = run_requests(spec, reqs, cache=cache, mode="replay", progress=False).judgments.set_index("request_id")
    assert not rows.ok["r0"] and "conflict" in rows.error["r0"] and rows.ok["r1"] and rows.ok["r2"]


def test_cache_import_of_another_plans_output_refuses_with_one_line(server, tmp_path):
    cache_path = tmp_path / "c.sqlite"
    run_requests("openai:gpt-4o-mini", make(2), cache=cache_path, mode="plan", progress=False)
    # a Batch output of requests this cache never planned (another plan, another judge)
    other = tmp_path / "other-plan.output.jsonl"
    other.write_text("".join(json.dumps({"custom_id": r.cache_key("openai:gpt-4o"), "error": None, "response": {
        "status_code": 200, "body": {"choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}]}}}) + "\n"
        for r in make(2)))
    with pytest.raises(InputError) as err:
        _cli(["cache", "import", str(other), "--judge", "openai:gpt-4o-mini", "--path", str(cache_path)])
    msg = str(err.value)
    assert "\n" not in msg and str(other) in msg and "another plan" in msg
    assert len(ResponseCache(cache_path)) == 0


def test_cache_import_counts_refused_lines_beside_the_planned_ones(tmp_path, capsys):
    cache_path = tmp_path / "c.sqlite"
    reqs = make(2)
    run_requests("openai:gpt-4o-mini", reqs, cache=cache_path, mode="plan", progress=False)
    ids = [r.cache_key("openai:gpt-4o-mini") for r in reqs] + [make(1, start=9)[0].cache_key("scripted:yes")]
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({"custom_id": k, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "No"}, "finish_reason": "stop"}]}}}) + "\n" for k in ids))
    assert _cli(["cache", "import", str(out), "--judge", "openai:gpt-4o-mini", "--path", str(cache_path)]) == 0
    text = capsys.readouterr().out
    assert "imported 2 replies" in text and "1 line(s) refused" in text
    assert ResponseCache(cache_path).get(ids[2]) is None


# -- batch plan --out removes only what it made -------------------------------------------------------------

def test_plan_never_deletes_shard_like_files_it_did_not_write(tmp_path):
    out = tmp_path / "job"
    out.mkdir()
    downloaded = out / "shard-00000.output.jsonl"
    notes = out / "shard-notes.jsonl.bak"
    downloaded.write_text("results I downloaded by hand\n")
    notes.write_text("my notes\n")
    plan_batch(make(4), "openai:m", out, cache=None, max_requests=2, progress=False)
    plan_batch(make(3), "openai:m", out, cache=None, max_requests=2, progress=False)  # re-plan the same judge
    assert downloaded.read_text() == "results I downloaded by hand\n" and notes.read_text() == "my notes\n"
    assert sorted(s["file"] for s in read_manifest(out)["shards"]) == ["shard-00000.jsonl", "shard-00001.jsonl"]


def test_a_shard_file_no_manifest_lists_is_refused_not_overwritten(tmp_path):
    out = tmp_path / "job"
    out.mkdir()
    stray = out / "shard-00000.jsonl"
    stray.write_text("somebody else's shard\n")
    with pytest.raises(InputError, match="no manifest here lists") as err:
        plan_batch(make(2), "openai:m", out, cache=None, progress=False)
    assert str(stray) in str(err.value) and stray.read_text() == "somebody else's shard\n"


def test_planning_another_judge_into_a_plan_folder_is_refused_unless_forced(tmp_path):
    out = tmp_path / "batch"
    first = plan_batch(make(5), "openai:gpt-4o-mini", out, cache=None, max_requests=2, progress=False)
    before = {s["file"]: (out / s["file"]).read_bytes() for s in first["shards"]}
    with pytest.raises(InputError, match="another plan .judge openai:gpt-4o-mini") as err:
        plan_batch(make(5), "openai:gpt-4o", out, cache=None, progress=False)
    assert "\n" not in str(err.value) and "--force" in str(err.value)
    assert {f: (out / f).read_bytes() for f in before} == before
    plan_batch(make(5), "openai:gpt-4o-mini", out, cache=None, max_requests=2, progress=False,
               source={"requests": "a.jsonl"})
    with pytest.raises(InputError, match="another plan"):  # same judge, another config
        plan_batch(make(5), "openai:gpt-4o-mini", out, cache=None, progress=False, source={"requests": "b.jsonl"})
    assert {f: (out / f).read_bytes() for f in before} == before and read_manifest(out)["judge"] == "openai:gpt-4o-mini"
    keep = out / "mine.txt"
    keep.write_text("x")
    forced = plan_batch(make(1), "openai:gpt-4o", out, cache=None, progress=False, force=True)
    assert forced["judge"] == "openai:gpt-4o" and keep.exists()
    assert sorted(p.name for p in out.glob("shard-*")) == ["shard-00000.jsonl"]


def test_plan_puts_each_judge_in_its_own_folder_and_the_steps_take_the_parent(server, tmp_path, capsys):
    reqs = tmp_path / "r.jsonl"
    reqs.write_text("".join(json.dumps({"request_id": f"a{i}", "messages": [{"role": "user", "content": f"x{i}"}]})
                            + "\n" for i in range(3)))
    root, cache = tmp_path / "batch" / "paper", str(tmp_path / "c.sqlite")
    for judge in (f"openai:m1@{server.base_url}", f"openai:m2@{server.base_url}"):
        assert _cli(["batch", "plan", "--requests", str(reqs), "--judge", judge, "--out", str(root),
                     "--cache", cache, "--quiet"]) == 0
    folders = sorted(p.parent.name for p in root.glob("*/manifest.json"))
    assert len(folders) == 2
    assert folders[0].startswith("openai-m1-http-127.0.0.1") and folders[1].startswith("openai-m2")
    assert _cli(["batch", "submit", "--dir", str(root)]) == 0
    assert _cli(["batch", "status", "--dir", str(root)]) == 0
    assert _cli(["batch", "collect", "--dir", str(root), "--cache", cache]) == 0
    assert capsys.readouterr().out.count("ok=3 failed=0") == 2
    assert len(ResponseCache(cache)) == 6


# -- the server in the keys ---------------------------------------------------------------------------------

def test_a_plan_whose_server_came_from_the_environment_is_checked_at_collect(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    out = tmp_path / "job"
    manifest = plan_batch(make(2), "openai:m", out, cache=None, progress=False)
    submit_batch(out)
    monkeypatch.delenv("OPENAI_BASE_URL")
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(InputError, match="OPENAI_BASE_URL") as err:
        collect_batch(out, cache=cache)
    assert "\n" not in str(err.value) and "unset" in str(err.value)
    assert manifest["endpoint_source"] == "OPENAI_BASE_URL" and manifest["judge"] == f"openai:m@{server.base_url}"
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    collect_batch(out, cache=cache)
    assert all(s["collected"] for s in collect_batch(out, cache=cache)["shards"])
    # a spec naming its server does not depend on the environment
    named = plan_batch(make(2), f"openai:m@{server.base_url}", tmp_path / "named", cache=None, progress=False)
    assert named["endpoint_source"] == "spec"


def test_a_manifest_naming_a_file_outside_its_folder_is_refused(tmp_path):
    out = tmp_path / "job"
    plan_batch(make(2), "openai:m", out, cache=None, progress=False)
    victim = tmp_path / "precious.jsonl"
    victim.write_text("keep me\n")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["shards"][0]["file"] = "../precious.jsonl"
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"shards\[0\]") as err:
        plan_batch(make(2), "openai:m", out, cache=None, progress=False)
    assert "\n" not in str(err.value) and victim.read_text() == "keep me\n"
