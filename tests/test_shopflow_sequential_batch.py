"""ShopFlow's sequential audit through the Batch API (issue 35): each wave one batch job, a decided stratum's
pairs in no later wave's job, the same cells and waves as the live sequential run on the same answers, a dollar
budget at the Batch price, and a process killed with SIGKILL after a step of a wave resuming without sending
anything twice.

The judge is the loopback fake server (:mod:`cfbench.judges.fakeserver`, its first-token logprobs following the
reply) answering by a rule of this module: every ready pair's two wordings "Yes" (TPR gap 0: the cell passes
after a few waves); on the needs-review pairs the formal wording "No" and the conversational one "Yes" on every
other pair (FPR gap -0.5, the maximum's negative: never decided, so every needs-review pair is walked). What is
counted is what the server received: every line of every batch input file uploaded to it.
"""

from __future__ import annotations

import dataclasses
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
from cfbench.studies.shopflow import batch_waves as B
from cfbench.studies.shopflow import readiness as R
from cfbench.studies.shopflow.study import Params, run

KEY = "sk-test-" + "Sf35" * 8
N_PER_STRATUM, WAVE = 16, 4


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    openai_env(monkeypatch, KEY)


def _ready(pair_id: str) -> bool:
    return int(pair_id[1:]) % 2 == 0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sfbatch")
    rows = [{"pair_id": f"p{i:03d}", "variant": v, "expected_ready": _ready(f"p{i:03d}"), "channel": "chat",
             "evidence_passed": True, "request": f"request {i} ({v})", "reply": f"reply {i} ({v})"}
            for i in range(2 * N_PER_STRATUM) for v in ("formal", "conversational")]
    (d / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (d / "contract.yaml").write_text("primary_metric: equal_opportunity\nmax_tpr_gap: 0.5\nmax_fpr_gap: 0.5\n"
                                     "min_positive_per_slice: 1\nmin_negative_per_slice: 1\n", encoding="utf-8")
    return d


def _params(files, url: str, **kw) -> Params:
    return Params(**(dict(judge=f"openai:fake-judge@{url}", pairs_path=str(files / "pairs.jsonl"),
                          contract_path=str(files / "contract.yaml"), sequential=True, wave_size=WAVE,
                          sweep_step=0.3) | kw))  # (a short threshold sweep: half a run's time otherwise)


def _config(params: Params) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(params)))


class _Judge:
    """Every request the audit could send, by prompt and by custom id (the cache key), and the answer rule."""

    def __init__(self, params: Params):
        spec = canonical_spec(params.judge)
        pairs = pd.read_json(params.pairs_path, lines=True)
        self.by_prompt, self.by_key, self.live = {}, {}, []
        for r in R.build_requests(pairs, prompt=params.prompt):
            pair_id, variant = r.request_id.split("/")[-2:]
            info = {"pair": pair_id, "variant": variant, "ready": _ready(pair_id)}
            self.by_prompt[tuple((m["role"], m["content"]) for m in r.messages)] = info
            self.by_key[r.cache_key(spec)] = info

    def __call__(self, body: dict) -> str:
        info = self.by_prompt[tuple((m["role"], m["content"]) for m in body["messages"])]
        self.live.append(info)
        if info["ready"]:
            return "Yes"
        served = info["variant"] == "conversational" and (int(info["pair"][1:]) // 2) % 2 == 0
        return "Yes" if served else "No"


def _received(server: FakeOpenAIServer, judge: _Judge) -> pd.DataFrame:
    return received(server, judge.by_key.__getitem__, ["pair", "variant", "ready"])


def _count(sent: pd.DataFrame) -> dict:
    return sent.groupby(["pair", "variant"]).size().to_dict()


def _check_sent(result, sent: pd.DataFrame) -> None:
    """Nothing sent twice; the passed TPR cell's ready pairs asked about up to its stopping wave only, every
    needs-review pair asked about; one job per wave."""
    assert not sent["custom_id"].duplicated().any()
    cells = result.tables["judged_sequential_cells"].set_index("gap")
    assert cells.loc["tpr_gap", "verdict"] == "pass" and cells.loc["fpr_gap", "verdict"] == "inconclusive"
    k = int(cells.loc["tpr_gap", "stopped_at_item"])
    assert 0 < k < N_PER_STRATUM  # decided before the end: the checks below mean something
    ready = sent[sent["ready"]]
    assert sorted(set(ready["pair"])) == [f"p{2 * i:03d}" for i in range(k)] and len(ready) == 2 * k
    assert sorted(set(sent.loc[~sent["ready"], "pair"])) == [f"p{2 * i + 1:03d}" for i in range(N_PER_STRATUM)]
    assert len(sent) == 2 * (k + N_PER_STRATUM) == result.summary["sequential"]["requests_sent"]
    assert sent["batch"].nunique() == result.summary["sequential"]["waves"]  # one job per wave


@pytest.fixture(scope="module")
def reference(files, tmp_path_factory):
    """An uninterrupted Batch run and a live sequential run against one server: their results, what the server
    got in batch files, and the requests the live run sent."""
    os.environ.setdefault("OPENAI_API_KEY", KEY)
    tmp = tmp_path_factory.mktemp("sfref")
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        params = _params(files, srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        result = B.run_batch(params, tmp / "run", cache=ResponseCache(tmp / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
        judge.live.clear()
        live = run(params, tmp / "live", progress=False, cache=ResponseCache(tmp / "live.sqlite"), mode="live")
        live_sent = pd.DataFrame(judge.live, columns=["pair", "variant", "ready"])
        assert len(_received(srv, judge)) == len(sent)  # the live run sent no batch
    return result, sent, tmp / "run", live, live_sent


def test_a_decided_stratum_s_pairs_are_in_no_later_wave_s_batch(reference):
    result, sent, folder, _, _ = reference
    _check_sent(result, sent)
    manifest = B.read_waves(folder)
    n_waves = result.summary["sequential"]["waves"]
    assert manifest["complete"] and [w["status"] for w in manifest["waves"]] == ["judged"] * n_waves
    ids = [i for w in manifest["waves"] for ids in w["batch_ids"].values() for i in ids]
    assert sorted(ids) == sorted(sent["batch"].unique())  # the manifest names every job the server got
    stop = int(result.tables["judged_sequential_cells"].set_index("gap").loc["tpr_gap", "stopped_at_wave"])
    assert 0 < stop < n_waves  # waves after the stop exist
    asked = ["tpr_gap" in w["dimensions"] for w in manifest["waves"]]
    assert asked == [True] * stop + [False] * (n_waves - stop)
    ready_lines = sent.groupby("batch")["ready"].sum()
    per_wave = [int(ready_lines[w["batch_ids"][result.summary["judged"]["judge"]][0]]) for w in manifest["waves"]]
    assert all(n > 0 for n in per_wave[:stop]) and per_wave[stop:] == [0] * (n_waves - stop)  # counted per job


def test_the_batch_cells_and_waves_equal_the_live_sequential_run_s(reference):
    result, sent, _, live, live_sent = reference
    for name in ("judged_sequential_cells", "judged_sequential_waves", "judged_interval_checks"):
        pd.testing.assert_frame_equal(result.tables[name], live.tables[name])
    assert _count(sent) == _count(live_sent)  # the same requests, batch or live
    assert result.summary["sequential"]["requests_sent"] == live.summary["sequential"]["requests_sent"] == len(sent)


def test_kills_after_planning_submitting_and_collecting_resume_without_sending_anything_twice(files, reference,
                                                                                              tmp_path):
    """In one folder: killed after planning wave 2 (nothing of it submitted); resumed and killed after submitting
    wave 2 (its job at the server, not collected); resumed and killed after collecting wave 3 (replies fetched,
    not yet folded into the cells); then resumed to the end."""
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        params = _params(files, srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        counts, statuses = [], []
        # (a resumed process passes the steps of the waves it replays from the cache again, so the nth pass of a
        # step is in wave n)
        for step, nth in (("planned", 2), ("submitted", 2), ("collected", 3)):
            run_killed(B.__name__, "cfbench.studies.shopflow.study", tmp_path, _config(params), step, nth, KEY)
            manifest = B.read_waves(tmp_path / "run")
            assert not manifest["complete"]
            statuses.append([w["status"] for w in manifest["waves"]])
            counts.append(len(_received(srv, judge)))
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
    assert statuses == [["judged", "planned"], ["judged", "submitted"], ["judged", "judged", "collected"]]
    assert counts[0] < counts[1] < counts[2] < len(sent)  # each run sent something new ...
    _check_sent(result, sent)  # ... and nothing twice
    pd.testing.assert_frame_equal(result.tables["judged_sequential_cells"], reference[0].tables["judged_sequential_cells"])
    assert _count(sent) == _count(reference[1])


@pytest.mark.parametrize("change,field", [({"judge": "scripted:shopflow-ready"}, "judge"),
                                          ({"sequential": False}, "sequential"),
                                          ({"candidate_prompt": "register_blind"}, "candidate_prompt")])
def test_what_the_batch_path_cannot_run_is_refused_in_one_line(files, tmp_path, change, field):
    with pytest.raises(InputError) as err:
        B.run_batch(_params(files, "http://127.0.0.1:9/v1", **change), tmp_path / "a")
    assert err.value.field == field and "\n" not in str(err.value)
    assert not (tmp_path / "a").exists()  # refused before anything was written


def test_a_folder_of_another_run_is_refused_and_left_as_it_was(files, reference, tmp_path):
    folder = reference[2]
    before = (folder / B.MANIFEST).read_bytes()
    url = json.loads(before)["params"]["judge"].partition("@")[2]
    with pytest.raises(InputError) as err:  # the reference run's judge and pairs, another wave size
        B.run_batch(_params(files, url, wave_size=2), folder, cache=ResponseCache(tmp_path / "c.sqlite"))
    assert err.value.field == "params" and "\n" not in str(err.value)
    assert (folder / B.MANIFEST).read_bytes() == before


def test_a_dollar_budget_prices_a_batch_wave_at_the_batch_price(files, tmp_path, monkeypatch):
    """The same budget buys twice the waves at the half Batch price as live; what the batch run spent is the
    Batch price of exactly the requests its jobs held."""
    from cfbench.judges.pricing import request_pricers

    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  fake-judge: {input: 100.0, output: 100.0, batch_discount: 0.5}\n")
    monkeypatch.setenv("CFBENCH_PRICES", str(prices))
    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        params = _params(files, srv.base_url)
        spec = params.judge
        pairs = pd.read_json(params.pairs_path, lines=True)
        every = R.build_requests(pairs, prompt=params.prompt)
        wave1 = request_pricers([spec], batch=False)[spec](every[: 2 * WAVE])
        params = _params(files, srv.base_url, max_cost_usd=round(3.5 * wave1, 6))
        judge = _Judge(params)
        srv.reply = judge
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
        live = run(params, tmp_path / "live", progress=False, cache=ResponseCache(tmp_path / "live.sqlite"),
                   mode="live")
    seq, live_seq = result.summary["sequential"], live.summary["sequential"]
    assert "max_cost_usd" in live_seq["stopped_by"] and live_seq["waves"] == 3  # 3.5 live waves' worth ...
    assert seq["waves"] >= 6  # ... buy about twice as many at half price
    by_id = {r.cache_key(canonical_spec(spec)): r for r in every}
    jobs = [[by_id[c] for c in g["custom_id"]] for _, g in sent.groupby("batch")]  # one job per wave
    at = lambda batch: sum(request_pricers([spec], batch=batch)[spec](j) for j in jobs)  # noqa: E731
    assert seq["spent_usd"] == pytest.approx(at(True), rel=1e-9) and seq["spent_usd"] <= params.max_cost_usd
    assert at(True) == pytest.approx(0.5 * at(False), rel=1e-3)


def test_the_command_line_runs_the_shopflow_batch_audit_and_a_rerun_sends_nothing(files, reference, tmp_path,
                                                                                   capsys):
    from cfbench.cli import main

    with FakeOpenAIServer(lifetime_s=300, logprobs_follow_reply=True) as srv:
        params = _params(files, srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        argv = cli_argv("shopflow", _config(params), tmp_path)
        assert main(argv) == 0
        sent = _received(srv, judge)
        assert main(argv) == 0  # on the finished folder
        again = _received(srv, judge)
    assert "tpr_gap" in capsys.readouterr().out  # the cells' table is printed
    assert len(again) == len(sent) and _count(sent) == _count(reference[1])
