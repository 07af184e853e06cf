"""The judge-bias sequential audit through the Batch API (issue 35): each wave one job per judge, a decided cue's
requests in no later wave's job, the same cells as the live sequential run on the same answers, and a process
killed with SIGKILL after a step of a wave resumes without sending anything twice.

The judge is the loopback fake server (:mod:`cfbench.judges.fakeserver`) answering each prompt by a rule of this
module: it picks the reply actually sent (accurate on the controls, position-consistent), except under
``authority`` (it picks the other reply on every item: a fail) and under ``verbosity`` (the other reply on every
fifth item: a net flip share of 0.2, the test's maximum, never decided). What is counted is what the server
received: every line of every batch input file uploaded to it.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("openai")

from batch_waves_util import cli_argv, openai_env, received, run_killed
from cfbench.core.errors import InputError
from cfbench.judges.cache import ResponseCache
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.judges.registry import canonical_spec
from cfbench.studies.judge_bias import batch_waves as B
from cfbench.studies.judge_bias.study import Params, plan, run

KEY = "sk-test-" + "Qm27" * 8
N_ITEMS, WAVE = 20, 2


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    openai_env(monkeypatch, KEY)


def _params(url: str, **kw) -> Params:
    base = dict(judges=(f"openai:fake-judge@{url}",), star_path="none", n_draft=0, n_control=N_ITEMS,
                cues=("position", "verbosity", "authority"), pointwise_cues=(), gate_max_net_flip=0.2, n_boot=20,
                sequential=True, wave_size=WAVE)
    return Params(**(base | kw))


class _Judge:
    """Every request the audit could send, by prompt and by custom id (the cache key), and the answer rule."""

    def __init__(self, params: Params):
        spec = canonical_spec(params.judges[0])
        self.by_prompt, self.by_key, self.live = {}, {}, []
        p = plan(params)
        every_fifth = {it.item_id: i % 5 == 0 for i, it in enumerate(p.items)}
        for r in p.requests:
            item, task, cond, order = r.request_id.split("/")
            info = (item, cond, order, every_fifth[item])
            self.by_prompt[tuple((m["role"], m["content"]) for m in r.messages)] = info
            self.by_key[r.cache_key(spec)] = info

    def __call__(self, body: dict) -> str:
        item, cond, order, fifth = info = self.by_prompt[tuple((m["role"], m["content"]) for m in body["messages"])]
        self.live.append(info)
        real = "A" if order == "realA" else "B"
        flip = cond == "authority" or (cond == "verbosity" and fifth)
        return ("B" if real == "A" else "A") if flip else real


def _received(server: FakeOpenAIServer, judge: _Judge) -> pd.DataFrame:
    """One row per line of every batch input file the server got: custom id, item, condition, batch."""
    return received(server, lambda cid: dict(zip(("item", "condition"), judge.by_key[cid][:2])), ["item", "condition"])


def _cells(result) -> pd.DataFrame:
    return result.tables["sequential_cells"].drop(columns="judge")  # the judge spec names the server's port


def _check_sent(result, sent: pd.DataFrame) -> None:
    """Nothing sent twice; the failed cue asked about its first waves' items only, the undecided one about all."""
    assert not sent["custom_id"].duplicated().any()
    cells = result.tables["sequential_cells"].set_index("cue")
    assert cells.loc["authority", "verdict"] == "fail" and cells.loc["verbosity", "verdict"] == "inconclusive"
    order = list(result.frames["items"]["item_id"])
    assert result.summary["sequential"]["n_walked"] == N_ITEMS  # verbosity never decides: every item walked
    stop = int(cells.loc["authority", "stopped_at_wave"])
    assert 0 < stop * WAVE < N_ITEMS  # decided before the end: the checks below mean something
    assert sorted(sent.loc[sent["condition"] == "authority", "item"]) == sorted(order[: stop * WAVE])
    assert sorted(sent.loc[sent["condition"] == "verbosity", "item"]) == sorted(order)
    assert sorted(sent.loc[sent["condition"] == "baseline", "item"]) == sorted(order * 2)  # both orders, all items
    assert sent["batch"].nunique() == N_ITEMS // WAVE  # one job per wave (one judge)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted Batch run and a live sequential run against one server: their results, what the server
    got in batch files, and the requests the live run sent."""
    os.environ.setdefault("OPENAI_API_KEY", KEY)
    tmp = tmp_path_factory.mktemp("jbref")
    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        result = B.run_batch(params, tmp / "run", cache=ResponseCache(tmp / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
        judge.live.clear()
        live = run(params, tmp / "live", progress=False, cache=ResponseCache(tmp / "live.sqlite"), mode="live")
        live_sent = pd.DataFrame(judge.live, columns=["item", "condition", "order", "fifth"])
        assert len(_received(srv, judge)) == len(sent)  # the live run sent no batch
    return result, sent, tmp / "run", live, live_sent


def test_a_decided_cue_is_in_no_later_wave_s_batch(reference):
    result, sent, folder, _, _ = reference
    _check_sent(result, sent)
    manifest = B.read_waves(folder)
    assert manifest["complete"] and [w["status"] for w in manifest["waves"]] == ["judged"] * (N_ITEMS // WAVE)
    ids = [i for w in manifest["waves"] for ids in w["batch_ids"].values() for i in ids]
    assert sorted(ids) == sorted(sent["batch"].unique())  # the manifest names every job the server got
    stop = int(result.tables["sequential_cells"].set_index("cue").loc["authority", "stopped_at_wave"])
    asked = [any(c.endswith("pairwise:authority") for c in w["dimensions"]) for w in manifest["waves"]]
    assert asked == [True] * stop + [False] * (len(asked) - stop)
    per_wave = sent.groupby("batch")["condition"].apply(lambda c: "authority" in set(c))
    by_wave = [per_wave[w["batch_ids"][result.summary["judges"][0]][0]] for w in manifest["waves"]]
    assert by_wave == asked  # each job holds the cue exactly while its cell was undecided


def test_the_batch_cells_equal_the_live_sequential_run_s(reference):
    result, sent, _, live, live_sent = reference
    pd.testing.assert_frame_equal(result.tables["sequential_cells"], live.tables["sequential_cells"])
    pd.testing.assert_frame_equal(result.tables["sequential_waves"], live.tables["sequential_waves"])
    count = lambda f: f.groupby(["item", "condition"]).size().to_dict()  # noqa: E731
    assert count(sent) == count(live_sent)  # the same requests, batch or live
    assert result.summary["sequential"]["requests_sent"] == live.summary["sequential"]["requests_sent"] == len(sent)


def test_kills_after_planning_and_after_collecting_resume_without_sending_anything_twice(reference, tmp_path):
    """Killed after planning wave 2 (nothing of it submitted), resumed and killed again after collecting wave 2
    (replies fetched, not yet folded into the cells), then resumed to the end."""
    import dataclasses

    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        counts, statuses = [], []
        config = json.loads(json.dumps(dataclasses.asdict(params)))
        # (the resumed process passes the collected step once for wave 1, replayed from the cache, then for wave 2)
        for step, nth in (("planned", 2), ("collected", 2)):
            run_killed(B.__name__, "cfbench.studies.judge_bias.study", tmp_path, config, step, nth, KEY)
            manifest = B.read_waves(tmp_path / "run")
            assert not manifest["complete"]
            statuses.append([w["status"] for w in manifest["waves"]])
            counts.append(len(_received(srv, judge)))
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
    assert statuses == [["judged", "planned"], ["judged", "collected"]]  # killed where the test said
    assert counts[0] < counts[1] < len(sent)  # each run sent something new ...
    _check_sent(result, sent)  # ... and nothing twice
    pd.testing.assert_frame_equal(_cells(result), _cells(reference[0]))
    count = lambda f: f.groupby(["item", "condition"]).size().to_dict()  # noqa: E731
    assert count(sent) == count(reference[1])


def test_a_judge_without_a_batch_api_and_a_folder_of_another_run_are_refused(reference, tmp_path):
    _, _, folder, _, _ = reference
    with pytest.raises(InputError) as err:
        B.run_batch(_params("http://127.0.0.1:9", judges=("scripted:judge-bias-authority",)), tmp_path / "a")
    assert err.value.field == "judges" and "scripted:judge-bias-authority" in str(err.value)
    with pytest.raises(InputError) as err:
        B.run_batch(_params("http://127.0.0.1:9", sequential=False), tmp_path / "b")
    assert err.value.field == "sequential"
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # refused before anything was written
    before = (folder / B.MANIFEST).read_bytes()
    other = json.loads(before)["params"]["judges"][0].partition("@")[2]
    with pytest.raises(InputError) as err:  # the reference folder's judge, another gate
        B.run_batch(_params(other, gate_max_net_flip=0.4), folder, cache=ResponseCache(tmp_path / "c.sqlite"))
    assert err.value.field == "params" and "\n" not in str(err.value)
    assert (folder / B.MANIFEST).read_bytes() == before  # the folder's run untouched


def test_a_dollar_budget_prices_a_batch_wave_at_the_batch_price(tmp_path, monkeypatch):
    """The same budget buys about twice the waves through the Batch API (half price) as live; what the batch run
    spent is the Batch price of exactly the requests its jobs held."""
    from cfbench.judges.pricing import request_pricers

    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  fake-judge: {input: 100.0, output: 100.0, batch_discount: 0.5}\n")
    monkeypatch.setenv("CFBENCH_PRICES", str(prices))
    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        spec = params.judges[0]
        p = plan(params)
        first = {it.item_id for it in p.items[:WAVE]}
        wave1 = request_pricers([spec], batch=False)[spec]([r for r in p.requests if r.request_id.split("/")[0] in first])
        params = _params(srv.base_url, max_cost_usd=round(3.5 * wave1, 6))
        judge = _Judge(params)
        srv.reply = judge
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
        live = run(params, tmp_path / "live", progress=False, cache=ResponseCache(tmp_path / "live.sqlite"),
                   mode="live")
    seq, live_seq = result.summary["sequential"], live.summary["sequential"]
    assert live_seq["stopped_by"].startswith("budget") and seq["stopped_by"].startswith("budget")
    assert live_seq["n_walked"] == 3 * WAVE  # 3.5 live waves' worth of dollars ...
    assert seq["n_walked"] >= 6 * WAVE  # ... buy about twice as many at half price
    by_id = {r.cache_key(canonical_spec(spec)): r for r in p.requests}
    jobs = [[by_id[c] for c in g["custom_id"]] for _, g in sent.groupby("batch")]  # one job per wave
    at = lambda batch: sum(request_pricers([spec], batch=batch)[spec](j) for j in jobs)  # noqa: E731
    assert seq["spent_usd"] == pytest.approx(at(True), rel=1e-9)
    assert at(True) == pytest.approx(0.5 * at(False), rel=1e-3)  # (each wave's price rounded to cents/1000)
    assert seq["spent_usd"] <= params.max_cost_usd


def test_the_command_line_runs_the_judge_bias_batch_audit(reference, tmp_path, capsys):
    """``cfbench batch sequential --study judge_bias`` finds this study's run_batch: the same requests as the
    reference run, and rerunning it on the finished folder sends nothing."""
    import dataclasses

    from cfbench.cli import main

    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        argv = cli_argv("judge_bias", json.loads(json.dumps(dataclasses.asdict(params))), tmp_path)
        assert main(argv) == 0
        sent = _received(srv, judge)
        assert main(argv) == 0
        again = _received(srv, judge)
    assert "authority" in capsys.readouterr().out  # the cells' table is printed
    assert len(again) == len(sent)
    count = lambda f: f.groupby(["item", "condition"]).size().to_dict()  # noqa: E731
    assert count(sent) == count(reference[1])
