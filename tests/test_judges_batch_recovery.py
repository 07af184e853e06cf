"""Issue 25: failed batches recovered without re-planning, costs stated before and after, and a
plan's shards run by another OpenAI-Batch-compatible runner (vLLM's run-batch file format).

Everything runs against the loopback fake Files/Batches server (cfbench.judges.fakeserver), which
rejects batches whole, fails lines, expires batches part way and refuses creations for a queue limit.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import types

import pytest

pytest.importorskip("aiohttp")

from cfbench.core.errors import InputError
from cfbench.judges import GenerationConfig, Request, ResponseCache, run_requests
from cfbench.judges.batch import (batch_status, collect_batch, import_outputs, is_permanent,
                                  plan_batch, read_manifest, retry_batch, submit_batch)
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.judges.pricing import TokenCounter, estimate_cost, load_prices

KEY = "sk-proj-" + "Rt5Yu6Io7Pa8" * 4


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CFBENCH_PRICES", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def server():
    with FakeOpenAIServer(lifetime_s=120) as srv:
        yield srv


def make(n: int) -> list[Request]:
    cfg = GenerationConfig(max_tokens=5)
    return [Request(f"r{i}", ({"role": "system", "content": "You audit calls."},
                              {"role": "user", "content": f"Was the caller's issue resolved? #{i}"}), cfg)
            for i in range(n)]


def _cli(argv):
    from cfbench.cli import batch, cache

    parser = argparse.ArgumentParser(prog="cfbench")
    sub = parser.add_subparsers(dest="command")
    batch.add_parser(sub)
    cache.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def _ids(server, file_id):
    return [json.loads(x)["custom_id"] for x in server.files[file_id].decode().splitlines()]


def _finish(out, cache):
    collect_batch(out, cache=cache)
    return collect_batch(out, cache=cache)


# -- recovery ---------------------------------------------------------------------------------------------

def test_a_batch_rejected_whole_is_stored_shown_and_retried_without_replanning(server, tmp_path, capsys):
    spec, out, cache = f"openai:m@{server.base_url}", tmp_path / "job", ResponseCache(tmp_path / "c.sqlite")
    reqs = make(6)
    plan_batch(reqs, spec, out, cache=cache, max_requests=3, progress=False)
    server.script_batches(["ok", "fail:token_limit_exceeded"])
    submit_batch(out)
    batch_status(out)
    shard = read_manifest(out)["shards"][1]
    assert shard["status"] == "failed" and shard["errors"][0]["code"] == "token_limit_exceeded"
    assert _cli(["batch", "status", "--dir", str(out)]) == 0
    assert "batch error token_limit_exceeded: fake batch rejected whole" in capsys.readouterr().out
    _finish(out, cache)
    keys = [r.cache_key(spec) for r in reqs]
    reasons = cache.failures_many(keys[3:])
    assert len(reasons) == 3 and all("token_limit_exceeded" in r for r in reasons.values())
    n_planned_bytes = sum(s["bytes"] for s in read_manifest(out)["shards"])
    info = retry_batch(out, cache=cache)
    assert (info["n_resent"], info["n_permanent"]) == (3, 0) and info["shards"] == ["retry-01-shard-00000.jsonl"]
    new = read_manifest(out)["shards"][-1]
    assert _ids(server, new["input_file_id"]) == keys[3:]  # only the rejected shard's requests, as planned
    assert (out / new["file"]).read_bytes() == (out / "shard-00001.jsonl").read_bytes()
    assert n_planned_bytes == sum(s["bytes"] for s in read_manifest(out)["shards"][:2])
    _finish(out, cache)
    res = run_requests(spec, reqs, cache=cache, mode="replay", progress=False)
    assert res.judgments.ok.all()


def test_retry_resends_transient_and_missing_lines_and_lists_permanent_ones(server, tmp_path):
    spec, out, cache = f"openai:m@{server.base_url}", tmp_path / "job", ResponseCache(tmp_path / "c.sqlite")
    reqs = make(5)
    keys = [r.cache_key(spec) for r in reqs]
    plan_batch(reqs, spec, out, cache=cache, progress=False)
    server.script_batches(["expire:4"])  # the 5th line never answered
    submit_batch(out)
    server.script_batch(["ok", "error", "500", "ok"])  # an invalid_request line (permanent), a 500 (transient)
    manifest = _finish(out, cache)
    assert manifest["shards"][0]["status"] == "expired" and manifest["shards"][0]["n_missing"] == 1
    info = retry_batch(out, cache=cache)
    assert (info["n_resent"], info["n_permanent"]) == (2, 1)
    resent = _ids(server, read_manifest(out)["shards"][-1]["input_file_id"])
    assert resent == [keys[2], keys[4]]
    listed = (out / info["permanent_file"]).read_text().splitlines()
    assert listed[0] == "custom_id\treason" and listed[1].startswith(keys[1] + "\tbatch error: invalid_request")
    _finish(out, cache)
    assert retry_batch(out, cache=cache, submit=False)["n_resent"] == 0  # nothing transient left
    info = retry_batch(out, cache=cache, include_permanent=True)
    assert info["n_resent"] == 1 and _ids(server, read_manifest(out)["shards"][-1]["input_file_id"]) == [keys[1]]
    _finish(out, cache)
    assert run_requests(spec, reqs, cache=cache, mode="replay", progress=False).judgments.ok.all()


def test_retry_lists_a_reply_that_echoed_the_key_or_ran_far_past_max_tokens_instead_of_re_sending_it(server,
                                                                                                   tmp_path):
    """Such a reply is refused at import (never cached); a deterministic server would send it again, so retry
    lists it as permanent (no key in the list, nor in any file of the folder) unless include_permanent."""
    spec, out, cache = f"openai:m@{server.base_url}", tmp_path / "job", ResponseCache(tmp_path / "c.sqlite")
    reqs = make(4)
    keys = [r.cache_key(spec) for r in reqs]
    plan_batch(reqs, spec, out, cache=cache, progress=False)
    server.script_batch(["ok", "echo-key-200", "big:5000", "500"])
    submit_batch(out)
    _finish(out, cache)
    info = retry_batch(out, cache=cache)
    assert (info["n_resent"], info["n_permanent"]) == (1, 2)
    assert _ids(server, read_manifest(out)["shards"][-1]["input_file_id"]) == [keys[3]]  # only the 500
    listed = dict(x.split("\t", 1) for x in (out / info["permanent_file"]).read_text().splitlines()[1:])
    assert "echoed a credential" in listed[keys[1]] and "far beyond max_tokens=5" in listed[keys[2]]
    assert not [f.name for f in tmp_path.rglob("*") if f.is_file() and KEY.encode() in f.read_bytes()]
    _finish(out, cache)
    info = retry_batch(out, cache=cache, include_permanent=True)
    assert info["n_resent"] == 2 and _ids(server, read_manifest(out)["shards"][-1]["input_file_id"]) == keys[1:3]


@pytest.mark.parametrize("case", ["echo", "chars", "tokens", "unstorable", "withheld"])
def test_a_reply_refused_as_untrustworthy_is_a_permanent_failure(case):
    """What the runner's own reply check says of an echoed key, a reply far past max_tokens (by characters and
    by the server's token count) and one no file can store, and of a line withheld at download for a key."""
    from cfbench.judges import Response
    from cfbench.judges.runner import reply_problem

    creds = {"OPENAI_API_KEY": KEY}
    if case == "withheld":
        from cfbench.judges.batch import _withheld

        error = json.loads(_withheld(json.dumps({"custom_id": "k", "response": {"body": KEY}}), creds))["error"]
        reason = f"batch error: {error['code']} {error['message']}"
    else:
        reply = {"echo": Response(text=f"your key is {KEY}"), "chars": Response(text="x" * 5000),
                 "tokens": Response(text="Yes", completion_tokens=500), "unstorable": Response(text="Yes \ud800")}
        reason = reply_problem(reply[case], 5, creds=creds)
    assert reason and KEY not in reason and is_permanent(reason)


def test_a_line_whose_custom_id_spells_the_key_is_withheld_and_refused_and_the_rest_imported(tmp_path):
    """A server that echoes the key into a line's custom_id: the line is written withheld (no key on disk) under
    an id no plan holds, so the import refuses and counts it and imports the other lines (it used to stop the
    whole import on a null custom_id, again at every resume, as the file stays on disk)."""
    from cfbench.judges.batch import WITHHELD_ID, _import_lines, _withheld

    creds = {"OPENAI_API_KEY": KEY}
    good = {"custom_id": "k1", "response": {"status_code": 200, "body": {"choices": [
        {"message": {"content": "Yes"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3,
                                                                            "completion_tokens": 1}}}}
    echoed = {"custom_id": f"k2 {KEY}", "response": {"status_code": 200, "body": {}}}
    out = tmp_path / "shard.output.jsonl"
    out.write_text("".join(_withheld(json.dumps(x), creds) + "\n" for x in (good, echoed)), encoding="utf-8")
    assert KEY.encode() not in out.read_bytes()
    cache = ResponseCache(tmp_path / "c.sqlite")
    counts = _import_lines(cache, "openai:m", [out], allowed={"k1": 10, "k2": 10})
    assert (counts["ok"], counts["refused"], counts["refused_ids"]) == (1, 1, [WITHHELD_ID])
    assert counts["answered"] == {"k1"} and cache.get("k1", "openai:m") is not None


@pytest.mark.parametrize("reason,permanent", [
    ("batch line status 400: bad request", True), ("batch line status 429: slow down", False),
    ("batch line status 500: boom", False), ("batch error: invalid_request fake line error", True),
    ("batch error: rate_limit_exceeded try later", False), ("null content (finish_reason=content_filter; a content "
                                                             "filter?)", True),
    ("no result for this request (batch b ended expired)", False), ("conflict: 2 different results", False),
])
def test_which_failures_are_permanent(reason, permanent):
    assert is_permanent(reason) is permanent


def test_submit_caps_active_batches_and_backs_off_on_queue_limits(server, tmp_path):
    spec, out = f"openai:m@{server.base_url}", tmp_path / "job"
    plan_batch(make(6), spec, out, cache=None, max_requests=2, progress=False)  # 3 shards
    manifest = submit_batch(out, max_active=1)
    assert [bool(s.get("batch_id")) for s in manifest["shards"]] == [True, False, False]
    slept, peak = [], []

    def sleep(s):
        slept.append(s)
        m = read_manifest(out)
        peak.append(sum(1 for x in m["shards"] if x.get("batch_id") and x["status"] not in
                        ("completed", "failed", "expired", "cancelled")))

    server.script_batches(["reject-429"])  # the next creation hits the queue limit once
    manifest = submit_batch(out, max_active=1, wait=True, sleep=sleep, backoff_s=2.0, backoff_max_s=5.0)
    assert all(s.get("batch_id") for s in manifest["shards"]) and len(server.batches) == 3
    assert max(peak) <= 1 and server.batch_creates == 4
    assert slept[:2] == [2.0, 4.0] and max(slept) <= 5.0  # doubling back-off, capped
    assert not any(s.get("submit_error") for s in manifest["shards"])


def test_a_queue_limit_without_wait_is_stored_and_the_next_submit_goes_on(server, tmp_path, capsys):
    spec, out = f"openai:m@{server.base_url}", tmp_path / "job"
    plan_batch(make(4), spec, out, cache=None, max_requests=2, progress=False)
    server.script_batches(["ok", "reject-429"])
    assert _cli(["batch", "submit", "--dir", str(out)]) == 0
    text = capsys.readouterr().out
    assert "queue limit (429" in text and "not created (429): Enqueued token limit reached" in text
    assert read_manifest(out)["shards"][1]["submit_error"]["status"] == 429
    submit_batch(out)
    assert all(s.get("batch_id") for s in read_manifest(out)["shards"]) and len(server.files) == 2  # no re-upload


def test_a_bad_request_at_creation_is_one_line_not_a_retry_loop(server, tmp_path):
    out = tmp_path / "job"
    plan_batch(make(2), f"openai:m@{server.base_url}", out, cache=None, progress=False)
    server.script_batches(["reject-400"])
    with pytest.raises(InputError, match="refused the batch .400.: endpoint not supported") as err:
        submit_batch(out, wait=True, sleep=lambda s: pytest.fail("a 400 must not be retried"))
    assert "\n" not in str(err.value) and server.batch_creates == 1


def test_cancel_then_retry_recovers_the_cancelled_requests(server, tmp_path, capsys):
    spec, out, cache = f"openai:m@{server.base_url}", tmp_path / "job", ResponseCache(tmp_path / "c.sqlite")
    reqs = make(3)
    plan_batch(reqs, spec, out, cache=cache, progress=False)
    submit_batch(out)
    assert _cli(["batch", "cancel", "--dir", str(out)]) == 0
    assert "status cancelling" in capsys.readouterr().out
    manifest = _finish(out, cache)
    assert manifest["shards"][0]["status"] == "cancelled" and manifest["shards"][0]["n_missing"] == 3
    assert _cli(["batch", "retry", "--dir", str(out), "--cache", str(tmp_path / "c.sqlite")]) == 0
    assert "re-sending 3 request(s) in 1 new shard(s)" in capsys.readouterr().out
    _finish(out, cache)
    assert run_requests(spec, reqs, cache=cache, mode="replay", progress=False).judgments.ok.all()


# -- costs ------------------------------------------------------------------------------------------------

def test_plan_states_tokens_and_cost_from_the_price_table(tmp_path, capsys):
    reqs = make(4)
    manifest = plan_batch(reqs, "openai:gpt-4o-mini", tmp_path / "job", cache=None, progress=False)
    chars = [sum(len(m["role"]) + len(m["content"]) for m in r.messages) for r in reqs]
    want_tokens = sum(math.ceil(c / 4) + 3 * 2 + 3 for c in chars)
    tok = manifest["tokens"]
    assert tok["prompt_tokens"] == want_tokens and tok["max_output_tokens"] == 20
    assert tok["method"].startswith("estimate: characters / 4")
    cost = manifest["cost"]
    assert cost["priced_as"] == "gpt-4o-mini" and cost["batch_discount"] == 0.5
    assert cost["total_usd"] == pytest.approx((want_tokens * 0.15 + 20 * 0.60) * 0.5 / 1e6)
    # the CLI prints it before anything is sent
    reqfile = tmp_path / "r.jsonl"
    reqfile.write_text("".join(json.dumps({"request_id": r.request_id, "messages": list(r.messages),
                                           "config": {"max_tokens": 5}}) + "\n" for r in reqs))
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  gpt-4o-mini: {input: 1.0, output: 2.0, batch_discount: 0.25}\n")
    assert _cli(["batch", "plan", "--requests", str(reqfile), "--judge", "openai:gpt-4o-mini-2024-07-18",
                 "--out", str(tmp_path / "cli"), "--prices", str(prices), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert f"4 requests, {want_tokens:,} prompt tokens (estimate: characters / 4" in text
    total = (want_tokens * 1.0 + 20 * 2.0) * 0.75 / 1e6
    assert f"= at most ${total:,.2f}" in text and "25% batch discount" in text


def test_an_unpriced_model_says_so_instead_of_a_number(tmp_path):
    cost = estimate_cost("my-finetune", 1000, 10, load_prices())
    assert cost["total_usd"] is None and "no price for 'my-finetune'" in cost["note"]


@pytest.mark.parametrize("text,field", [("models: {m: {input: -1, output: 1}}\n", "input"),
                                        ("models: {m: {input: 1}}\n", "each model needs"),
                                        ("models: {m: {input: 1, output: 1, batch_discount: 1.5}}\n", "batch_discount"),
                                        ("nope: 1\n", "models")])
def test_a_bad_price_table_is_one_line_naming_the_file(tmp_path, text, field):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=field) as err:
        load_prices(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_tiktoken_counts_when_it_is_installed(monkeypatch):
    """A stand-in for tiktoken's interface (the real one needs its BPE files from the network)."""
    class Enc:
        name = "fake_base"

        def encode(self, text, disallowed_special=()):
            return text.split()

    fake = types.SimpleNamespace(encoding_for_model=lambda model: Enc(), get_encoding=lambda name: Enc())
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    counter = TokenCounter("gpt-4o-mini")
    msgs = ({"role": "system", "content": "You audit calls."}, {"role": "user", "content": "one two three"})
    counter.add(msgs, 5)
    assert counter.method == "tiktoken fake_base, every request"
    assert counter.prompt_tokens == 3 + (3 + 1 + 3) + (3 + 1 + 3)
    sampled = TokenCounter("gpt-4o-mini", sample=2)
    for fp in range(4):
        sampled.add(msgs, 5, fp)
    assert sampled.n_sampled == 2 and sampled.prompt_tokens == 4 * counter.prompt_tokens
    assert "1 request in 2, scaled by characters" in sampled.method


def test_collect_reports_the_usage_and_cost_of_the_collected_replies(server, tmp_path, capsys):
    spec, out, cache = f"openai:gpt-4o-mini@{server.base_url}", tmp_path / "job", ResponseCache(tmp_path / "c.sqlite")
    reqs = make(3)
    plan_batch(reqs, spec, out, cache=cache, progress=False)
    submit_batch(out)
    collect_batch(out, cache=cache)
    assert _cli(["batch", "collect", "--dir", str(out), "--cache", str(tmp_path / "c.sqlite")]) == 0
    manifest = read_manifest(out)
    rows = run_requests(spec, reqs, cache=cache, mode="replay", progress=False).judgments
    ptok, ctok = int(rows.prompt_tokens.sum()), int(rows.completion_tokens.sum())
    assert ptok > 0 and manifest["usage"] == {"n_replies": 3, "prompt_tokens": ptok, "completion_tokens": ctok}
    assert manifest["collected_cost"]["total_usd"] == pytest.approx((ptok * 0.15 + ctok * 0.60) * 0.5 / 1e6)
    assert f"collected 3 replies: {ptok} prompt + {ctok} completion tokens" in capsys.readouterr().out


# -- another runner: vLLM's run-batch file format -------------------------------------------------------------

def vllm_like_run_batch(shard, output, *, fail_every: int = 0):
    """A file-in/file-out runner writing what vLLM's ``run_batch`` writes: per input line one
    ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`` line; a
    failed request has ``status_code`` 400, ``body`` null and the message in ``error``."""
    with open(shard, encoding="utf-8") as src, open(output, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            item = json.loads(line)
            assert item["method"] == "POST" and item["url"] == "/v1/chat/completions"
            body = item["body"]
            if fail_every and i % fail_every == fail_every - 1:
                row = {"id": f"vllm-{i}", "custom_id": item["custom_id"],
                       "response": {"status_code": 400, "request_id": f"vllm-batch-{i}", "body": None},
                       "error": "This model's maximum context length is 4096 tokens"}
            else:
                user = body["messages"][-1]["content"]
                reply = {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes",
                                                              "reasoning_content": None, "tool_calls": []},
                                      "logprobs": None, "finish_reason": "stop", "stop_reason": None}],
                         "usage": {"prompt_tokens": len(user.split()), "total_tokens": len(user.split()) + 1,
                                   "completion_tokens": 1, "prompt_tokens_details": None},
                         "prompt_logprobs": None}
                row = {"id": f"vllm-{i}", "custom_id": item["custom_id"],
                       "response": {"status_code": 200, "request_id": f"vllm-batch-{i}", "body": reply}, "error": None}
            dst.write(json.dumps(row) + "\n")


def test_a_plans_shards_run_by_a_vllm_style_runner_are_imported(tmp_path, capsys):
    spec = "openai:Qwen/Qwen2.5-7B-Instruct@http://gpu-node:8000/v1"
    out, cache_path = tmp_path / "job", tmp_path / "c.sqlite"
    cache = ResponseCache(cache_path)
    reqs = make(7)
    manifest = plan_batch(reqs, spec, out, cache=cache, max_requests=4, progress=False)
    for shard in manifest["shards"]:
        stem = shard["file"].removesuffix(".jsonl")
        vllm_like_run_batch(out / shard["file"], out / f"{stem}.output.jsonl", fail_every=3)
    outputs = [str(out / f"shard-{i:05d}.output.jsonl") for i in range(2)]
    assert _cli(["batch", "import", "--dir", str(out), *outputs, "--cache", str(cache_path)]) == 0
    printed = capsys.readouterr().out
    assert "ok=3 failed=1" in printed and "ok=2 failed=1" in printed
    rows = run_requests(spec, reqs, cache=cache, mode="replay", progress=False).judgments.set_index("request_id")
    assert rows.ok.sum() == 5 and set(rows.text[rows.ok]) == {"Yes"}
    assert "status 400" in rows.error["r2"] and "maximum context length" in rows.error["r2"]
    assert is_permanent(rows.error["r2"].removeprefix("recorded failure: "))
    assert read_manifest(out)["usage"]["n_replies"] == 5


def test_importing_an_output_into_the_wrong_shard_is_refused(tmp_path):
    spec = "openai:m@http://gpu-node:8000/v1"
    out = tmp_path / "job"
    manifest = plan_batch(make(4), spec, out, cache=None, max_requests=2, progress=False)
    vllm_like_run_batch(out / "shard-00001.jsonl", tmp_path / "results.jsonl")
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(InputError, match="which shard"):
        import_outputs(out, [tmp_path / "results.jsonl"], cache=cache)
    with pytest.raises(InputError, match="none of its 2 custom_ids belong to shard shard-00000.jsonl"):
        import_outputs(out, [tmp_path / "results.jsonl"], cache=cache, shard="shard-00000.jsonl")
    assert len(cache) == 0 and not read_manifest(out)["shards"][0]["collected"]
    import_outputs(out, [tmp_path / "results.jsonl"], cache=cache, shard="shard-00001.jsonl")
    assert len(cache) == 2 and manifest["shards"][1]["file"] == "shard-00001.jsonl"


def test_a_cost_from_counted_characters_is_labelled_an_estimate():
    from cfbench.judges.pricing import estimate_from_chars

    est = estimate_from_chars("gpt-4o", n_requests=10, prompt_chars=4_001, max_output_tokens=50)
    assert est["prompt_tokens"] == 1_001 + 90 and est["method"].startswith("estimate")
    assert est["cost"]["total_usd"] == pytest.approx((1_091 * 2.5 + 50 * 10.0) * 0.5 / 1e6)


def test_retry_without_submitting_writes_shards_to_run_elsewhere_once(tmp_path, capsys):
    spec = "openai:m@http://gpu-node:8000/v1"
    out, cache_path = tmp_path / "job", tmp_path / "c.sqlite"
    cache = ResponseCache(cache_path)
    reqs = make(6)
    keys = [r.cache_key(spec) for r in reqs]
    plan_batch(reqs, spec, out, cache=cache, progress=False)
    vllm_like_run_batch(out / "shard-00000.jsonl", tmp_path / "all.jsonl", fail_every=3)
    kept = [x for x in (tmp_path / "all.jsonl").read_text().splitlines() if json.loads(x)["custom_id"] != keys[0]]
    (out / "shard-00000.output.jsonl").write_text("\n".join(kept) + "\n")  # the runner lost the first request
    import_outputs(out, [out / "shard-00000.output.jsonl"], cache=cache)
    argv = ["batch", "retry", "--dir", str(out), "--cache", str(cache_path), "--no-submit"]
    assert _cli(argv) == 0  # no key, no server: nothing is submitted
    text = capsys.readouterr().out
    assert "re-sending 1 request(s) in 1 new shard(s)" in text and "2 permanent failure(s) not re-sent" in text
    assert [json.loads(x)["custom_id"] for x in (out / "retry-01-shard-00000.jsonl").read_text().splitlines()] == \
        [keys[0]]
    assert _cli(argv) == 0  # the retry shard is still to run: its request is not written again
    assert "re-sending 0 request(s)" in capsys.readouterr().out
    vllm_like_run_batch(out / "retry-01-shard-00000.jsonl", out / "retry-01-shard-00000.output.jsonl")
    import_outputs(out, [out / "retry-01-shard-00000.output.jsonl"], cache=cache)
    rows = run_requests(spec, reqs, cache=cache, mode="replay", progress=False).judgments
    assert rows.ok.sum() == 4 and rows.set_index("request_id").ok["r0"]


def test_submit_with_nothing_left_to_submit_needs_no_key(tmp_path, monkeypatch):
    """Every shard already has its batch: `submit` has nothing to send, so it must not ask for a key."""
    out = tmp_path / "job"
    plan_batch(make(4), "openai:gpt-4o-mini", out, cache=None, max_requests=2, progress=False)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    for i, shard in enumerate(manifest["shards"]):
        shard["batch_id"], shard["status"] = f"batch_{i}", "in_progress"
    path.write_text(json.dumps(manifest))
    monkeypatch.delenv("OPENAI_API_KEY")
    got = submit_batch(out)
    assert [s["batch_id"] for s in got["shards"]] == ["batch_0", "batch_1"]
    manifest["shards"][1]["batch_id"] = None  # one shard left: now the key is needed, and said so
    path.write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        submit_batch(out)


def test_a_submit_killed_between_creating_a_batch_and_saving_its_id_does_not_create_it_twice(server, tmp_path):
    """The server made the batch, the run died before the id reached the manifest: the next submit finds
    that batch by its input file and adopts it, so the shard is not paid for twice."""
    import openai

    spec, out = f"openai:m@{server.base_url}", tmp_path / "job"
    plan_batch(make(4), spec, out, cache=None, max_requests=2, progress=False)  # 2 shards
    real = openai.OpenAI(api_key=KEY, base_url=server.base_url, max_retries=0)

    class Killed(BaseException):
        pass

    def create_then_die(**kw):
        real.batches.create(**kw)
        raise Killed  # as kill -9 right after the server answered

    dying = types.SimpleNamespace(files=real.files, batches=types.SimpleNamespace(create=create_then_die,
                                                                                  list=real.batches.list))
    with pytest.raises(Killed):
        submit_batch(out, client=dying)
    assert server.batch_creates == 1 and read_manifest(out)["shards"][0].get("batch_id") is None
    manifest = submit_batch(out)
    assert server.batch_creates == 2 and len(server.batches) == 2  # shard 1 adopted, shard 2 created once
    assert sorted(s["batch_id"] for s in manifest["shards"]) == sorted(server.batches)
    assert not any(s.get("creating") for s in manifest["shards"])
