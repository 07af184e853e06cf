"""A line of a wave's Batch output that comes back as an error, in every study's Batch-API sequential audit
(issue 35): nothing silently dropped, no crash on a cache miss.

* A transient failure (a line with status 500; a job that expired having answered only some lines) is re-sent
  in a follow-up job of the same wave before the wave is judged: the request is then judged from its reply, and
  the wave's entry in the manifest counts the re-sent request.
* A permanent failure (a line the server refused as an invalid request; a reply with null content, a content
  filter; a reply that echoed the key, which no file of the run then holds; one far past max_tokens) is not
  re-sent: it is a recorded failure in the cache, named (request id, custom id, reason) and
  counted in the wave's entry and in one log line; the wave is judged without it, as the live walk judges a
  request that failed.
* A transient failure still failing after the re-sends stops the run with one line naming the wave, the request
  and the error; the same call later resumes and goes on, sending nothing twice but the failed request.
* Re-sent lines are paid for: the dollars spent are the Batch price of every line sent, re-sends included, and
  the next wave's budget check sees them.

The study setups (parameters, the fake server's answer rule) are the three studies' own Batch test modules'.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("openai")

from batch_waves_util import openai_env
from cfbench.core.errors import InputError
from cfbench.judges.cache import ResponseCache
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.judges.registry import canonical_spec

KEY = "sk-test-" + "Le35" * 8


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    openai_env(monkeypatch, KEY)


def _cc(tmp_path, url):
    import test_cc_sequential_batch as T

    params = dataclasses.replace(T._params(url), n_items=4, max_items=4)
    return T.B, params, T._Judge(params), params.judges[0]


def _jb(tmp_path, url):
    import test_judge_bias_sequential_batch as T

    params = T._params(url, n_control=4)
    return T.B, params, T._Judge(params), params.judges[0]


def _sf(tmp_path, url):
    import test_shopflow_sequential_batch as T

    rows = [{"pair_id": f"p{i:03d}", "variant": v, "expected_ready": T._ready(f"p{i:03d}"), "channel": "chat",
             "evidence_passed": True, "request": f"request {i} ({v})", "reply": f"reply {i} ({v})"}
            for i in range(8) for v in ("formal", "conversational")]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "contract.yaml").write_text("primary_metric: equal_opportunity\nmax_tpr_gap: 0.5\nmax_fpr_gap: "
                                            "0.5\nmin_positive_per_slice: 1\nmin_negative_per_slice: 1\n",
                                            encoding="utf-8")
    params = T._params(tmp_path, url)
    return T.B, params, T._Judge(params), params.judge


STUDIES = {"contact_center_qa": _cc, "judge_bias": _jb, "shopflow": _sf}


def _lines(server: FakeOpenAIServer) -> list:
    """(batch id, custom id) of every line of every batch input file the server got, in order."""
    return [(b["id"], json.loads(line)["custom_id"]) for b in server.batches.values()
            for line in server.files[b["input_file_id"]].decode("utf-8").splitlines()]


def _start(srv, script):
    kind, _, what = script.partition(" ")
    if kind == "line":
        srv.script_batch(["ok", what])  # the 2nd line of the first job
    else:
        srv.script_batches([what])  # the first job answers its first line only


#: what the reason of each permanent failure says
PERMANENT = {"line error": "invalid_request", "line null-content": "null content",
             "line echo-key-200": "echoed a credential", "line big:200000": "far beyond max_tokens"}


# every study with every script, but a reply far past max_tokens (the study-free collect path alone) in one
@pytest.mark.parametrize("study,script,transient", [
    (study, script, transient) for script, transient in [("line 500", True), ("jobs expire:1", True)] +
    [(s, False) for s in PERMANENT] for study in STUDIES if study == "shopflow" or "big" not in script])
def test_a_failed_line_is_re_sent_when_transient_and_named_and_counted_when_not(tmp_path, study, script,
                                                                                 transient):
    os.environ.setdefault("OPENAI_API_KEY", KEY)
    logged = []
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        B, params, judge, spec = STUDIES[study](tmp_path, srv.base_url)
        srv.reply = judge
        _start(srv, script)
        cache = ResponseCache(tmp_path / "cache.sqlite")
        result = B.run_batch(params, tmp_path / "run", cache=cache, poll_s=0, log=logged.append)
        sent = _lines(srv)
    first_job = [cid for b, cid in sent if b == sent[0][0]]
    hit = first_job[1]  # the failed line (with expire:1, the first of the unanswered ones)
    manifest = B.read_waves(tmp_path / "run")
    assert manifest["complete"] and result.summary["sequential"]["waves"] == len(manifest["waves"])
    wave1 = manifest["waves"][0]
    spec = canonical_spec(spec)
    if transient:
        assert [cid for _, cid in sent].count(hit) == 2  # sent once more, in a follow-up job of wave 1 ...
        assert cache.get(hit, spec) is not None  # ... and answered
        assert wave1["resent"][params.judges[0] if study != "shopflow" else params.judge] >= 1
        assert not wave1.get("failed") and not any(w.get("failed") for w in manifest["waves"])
        assert len({b for b, _ in sent}) == len(manifest["waves"]) + 1  # one job per wave, one re-send job
    else:
        assert [cid for _, cid in sent].count(hit) == 1  # a permanent failure is not re-sent
        assert cache.get(hit, spec) is None and hit in cache.failures_many([hit], spec)
        (judge_name, failed), = wave1["failed"].items()
        assert failed["n"] == 1 and failed["first"][0]["custom_id"] == hit
        rid, reason = failed["first"][0]["request_id"], failed["first"][0]["reason"]
        assert rid and PERMANENT[script] in reason
        said = [m for m in logged if rid in m]
        assert len(said) == 1 and "wave 1" in said[0] and reason in said[0]
        if "echo-key" in script:  # the echoed key reached no file of the run, nor the log
            leaked = [str(f) for f in tmp_path.rglob("*") if f.is_file() and KEY.encode() in f.read_bytes()]
            assert not leaked and not any(KEY in m for m in logged)
        assert not any(w.get("failed") for w in manifest["waves"][1:])
        assert len({b for b, _ in sent}) == len(manifest["waves"])  # no re-send job


def test_a_transient_failure_that_persists_stops_the_run_in_one_line_and_the_same_call_resumes(tmp_path):
    os.environ.setdefault("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        B, params, judge, spec = _sf(tmp_path, srv.base_url)
        srv.reply = judge
        srv.script_batch(["ok", "500"] + ["ok"] * 6 + ["500", "500"])  # a line of the 8, and each of its 2 re-sends
        cache = ResponseCache(tmp_path / "cache.sqlite")
        with pytest.raises(InputError) as err:
            B.run_batch(params, tmp_path / "run", cache=cache, poll_s=0)
        stopped = _lines(srv)
        hit = stopped[1][1]
        result = B.run_batch(params, tmp_path / "run", cache=cache, poll_s=0)  # the server answers it now
        sent = _lines(srv)
    from cfbench.studies.shopflow.readiness import request_id

    msg, info = str(err.value), judge.by_key[hit]
    assert "\n" not in msg and "wave 1" in msg and "status 500" in msg and err.value.field == "custom_id"
    assert request_id(info["pair"], info["variant"], params.prompt) in msg
    assert [cid for _, cid in stopped].count(hit) == 3  # the job and two re-sends
    manifest = B.read_waves(tmp_path / "run")
    assert manifest["complete"] and cache.get(hit, canonical_spec(spec)) is not None
    assert [cid for _, cid in sent].count(hit) == 4  # once more after the resume ...
    others = [cid for _, cid in sent if cid != hit]
    assert len(others) == len(set(others))  # ... and nothing else twice
    assert result.summary["sequential"]["waves"] == len(manifest["waves"])
    assert result.summary["sequential"]["requests_resent"] == 3  # the stopped run's two re-sends are counted too


def test_killed_right_after_a_re_send_was_submitted_the_run_resumes_without_sending_anything_twice(tmp_path):
    """SIGKILL just after wave 1's follow-up job went out: the resumed run polls and collects that job (it does
    not re-send the line a third time) and goes on."""
    from batch_waves_util import run_killed

    import test_shopflow_sequential_batch as T

    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        B, params, judge, spec = _sf(tmp_path, srv.base_url)
        srv.reply = judge
        srv.script_batch(["ok", "500"])
        run_killed(B.__name__, "cfbench.studies.shopflow.study", tmp_path, T._config(params), "resent", 1, KEY)
        killed = _lines(srv)
        hit = killed[1][1]
        assert [cid for _, cid in killed].count(hit) == 2 and B.read_waves(tmp_path / "run")["waves"][0]["resent"]
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _lines(srv)
    cids = [cid for _, cid in sent]
    assert cids.count(hit) == 2 and len(cids) == len(set(cids)) + 1  # the re-send once, nothing else twice
    assert B.read_waves(tmp_path / "run")["complete"] and result.summary["sequential"]["waves"] >= 2
    assert result.summary["sequential"]["requests_resent"] == 1  # the killed run's re-send, counted once


def test_killed_between_a_re_send_and_its_record_the_resumed_run_still_counts_and_prices_it(tmp_path, monkeypatch):
    """SIGKILL after wave 1's follow-up job went out but before the wave's entry recorded it: the resumed run
    sends nothing twice, and still counts the re-sent line and its dollars (the old walk read them from the
    entry alone and counted none)."""
    from batch_waves_util import run_killed

    import test_shopflow_sequential_batch as T

    _priced(tmp_path, monkeypatch)
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        B, params, judge, spec = _sf(tmp_path, srv.base_url)
        params = dataclasses.replace(params, max_cost_usd=1e6)
        srv.reply = judge
        srv.script_batch(["ok", "500"])
        run_killed(B.__name__, "cfbench.studies.shopflow.study", tmp_path, T._config(params), "resubmitted", 1, KEY)
        killed = _lines(srv)
        hit = killed[1][1]
        assert [cid for _, cid in killed].count(hit) == 2 and not B.read_waves(tmp_path / "run")["waves"][0].get("resent")
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _lines(srv)
        jobs = _jobs_usd(srv, "fake-judge")
    cids = [cid for _, cid in sent]
    assert cids.count(hit) == 2 and len(cids) == len(set(cids)) + 1  # the re-send once, nothing else twice
    seq = result.summary["sequential"]
    assert seq["requests_resent"] == 1 and B.read_waves(tmp_path / "run")["waves"][0]["resent"] == {params.judge: 1}
    assert seq["spent_usd"] == pytest.approx(sum(jobs), abs=8 * TOKEN_USD) and jobs[1] > 80 * TOKEN_USD


def _jobs_usd(server: FakeOpenAIServer, model: str) -> list:
    """The Batch price of each job the server received, in order, priced from its input file's lines (their
    messages and ``max_tokens``) as the walk prices a list of requests."""
    from cfbench.judges.pricing import estimate_from_chars, load_prices

    out = []
    for b in server.batches.values():
        bodies = [json.loads(line)["body"] for line in server.files[b["input_file_id"]].decode("utf-8").splitlines()]
        chars = sum(len(m["role"]) + len(m["content"]) for body in bodies for m in body["messages"])
        out.append(estimate_from_chars(model, len(bodies), chars, sum(int(body["max_tokens"]) for body in bodies),
                                       load_prices(), batch=True)["cost"]["total_usd"])
    return out


TOKEN_USD = 100.0 * 0.5 / 1e6  # a token at the Batch price of :func:`_priced`


def _priced(tmp_path, monkeypatch) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  fake-judge: {input: 100.0, output: 100.0, batch_discount: 0.5}\n")
    monkeypatch.setenv("CFBENCH_PRICES", str(prices))


@pytest.mark.parametrize("study", list(STUDIES))
def test_the_dollars_spent_include_the_re_sent_lines_at_the_batch_price(tmp_path, monkeypatch, study):
    """A wave whose second line failed with a 500 and was re-sent once: the run's dollars spent are the Batch
    price of every line sent, the re-sent one included (a budget large enough never to stop the walk)."""
    _priced(tmp_path, monkeypatch)
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        B, params, judge, spec = STUDIES[study](tmp_path, srv.base_url)
        params = dataclasses.replace(params, max_cost_usd=1e6)
        srv.reply = judge
        srv.script_batch(["ok", "500"])
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        jobs = _jobs_usd(srv, "fake-judge")
    seq = result.summary["sequential"]
    spent = seq["cost_usd" if study == "contact_center_qa" else "spent_usd"]
    resend = jobs[1]  # the first wave's follow-up job (one line)
    assert len(jobs) == len(B.read_waves(tmp_path / "run")["waves"]) + 1 and resend > 0
    # the walk prices each wave (the contact center: each transcript's plan) and each re-send as one list, the
    # prompt tokens of a list rounded up once: at most one token per list apart from the price per job
    tol = 8 * TOKEN_USD
    assert spent == pytest.approx(sum(jobs), abs=tol) and resend > 10 * tol  # (not lost in the tolerance)
    assert seq["requests_resent"] == 1


def test_a_re_send_counts_against_the_next_waves_dollar_budget(tmp_path, monkeypatch):
    """A budget that holds both waves but not both waves and wave 1's re-sent line: the walk sends wave 1 and its
    re-send, then stops before wave 2, saying why; the dollars spent are those of the two jobs sent."""
    _priced(tmp_path, monkeypatch)
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        B, params, judge, spec = _sf(tmp_path, srv.base_url)
        srv.reply = judge
        srv.script_batch(["ok", "500"])
        B.run_batch(params, tmp_path / "free", cache=ResponseCache(tmp_path / "free.sqlite"), poll_s=0)
        wave1, resend, wave2 = _jobs_usd(srv, "fake-judge")
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        params = dataclasses.replace(params, judge=f"openai:fake-judge@{srv.base_url}",
                                     max_cost_usd=round(wave1 + wave2 + resend / 2, 9))
        srv.reply = judge
        srv.script_batch(["ok", "500"])
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        jobs = _jobs_usd(srv, "fake-judge")
    seq = result.summary["sequential"]
    assert jobs == pytest.approx([wave1, resend]) and seq["waves"] == 1
    assert "max_cost_usd" in seq["stopped_by"] and seq["spent_usd"] == pytest.approx(wave1 + resend, rel=1e-9)
