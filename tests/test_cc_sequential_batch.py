"""The contact-center sequential audit through the Batch API (issue 35): each wave one batch job, decided
cells get no request after their stopping wave, and a process killed with SIGKILL at a step of a wave
resumes without sending any request twice.

The judge is the loopback fake server (:mod:`cfbench.judges.fakeserver`) answering each prompt by a rule of
this module (the transcript's own label; ``formality`` variants flip on 3/4 of the items, ``politeness``
never). What is counted is what the server received: every line of every input file uploaded to it.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("openai")

from batch_waves_util import cli_argv, openai_env, received, run_killed
from cfbench.core.seeding import unit_interval
from cfbench.judges.cache import ResponseCache
from cfbench.judges.fakeserver import FakeOpenAIServer
from cfbench.judges.registry import canonical_spec
from cfbench.studies.contact_center_qa import batch_waves as B
from cfbench.studies.contact_center_qa import sequential as S
from cfbench.studies.contact_center_qa.items import iter_items
from cfbench.studies.contact_center_qa.params import Params
from cfbench.studies.contact_center_qa.requests import plan_for

KEY = "sk-test-" + "Zx81" * 8
MAX_ITEMS, WAVE = 12, 2


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    openai_env(monkeypatch, KEY)


def _params(url: str) -> Params:
    return Params(judges=(f"openai:fake-judge@{url}",), transcripts_path="synthetic", n_items=MAX_ITEMS,
                  dimensions=("politeness", "formality"), questions=("issue_resolution",), repeats=2,
                  robustness_temperatures=(0.0,), fairness=False, coaching=False, n_boot=20, gate_max_net_cfr=0.5,
                  sequential=True, wave_size=WAVE, max_items=MAX_ITEMS)


class _Judge:
    """Every request the audit could send, by prompt and by custom id (the cache key), and the answer rule."""

    def __init__(self, params: Params):
        spec = canonical_spec(params.judges[0])
        self.by_prompt, self.by_key = {}, {}
        for t in iter_items(S.walk_params(params)):
            _, plan = plan_for(params, [t], progress=False)
            for r in plan.requests[params.judges[0]]:
                parts = r.request_id.split("/")
                variant = parts[4].split("::")
                dim, cond = (variant[1], variant[2]) if len(variant) == 3 else ("original", "original")
                info = (t.id, dim, cond, t.labels[parts[1]] == "Yes")
                self.by_prompt[tuple((m["role"], m["content"]) for m in r.messages)] = info
                self.by_key[r.cache_key(spec)] = info

    def __call__(self, body: dict) -> str:
        item, dim, cond, yes = self.by_prompt[tuple((m["role"], m["content"]) for m in body["messages"])]
        flip = dim == "formality" and unit_interval("seq-test", item) < 0.75 and cond != "neutral"
        return json.dumps({"answer": "Yes" if yes != flip else "No", "confidence": 80})


def _received(server: FakeOpenAIServer, judge: _Judge) -> pd.DataFrame:
    """One row per line of every batch input file the server got: custom id, item, dimension."""
    return received(server, lambda cid: dict(zip(("item", "dimension"), judge.by_key[cid][:2])), ["item", "dimension"])


def _check_sent(result, sent: pd.DataFrame) -> None:
    """No request sent twice; a decided cell's dimension asked about its first waves' transcripts only."""
    assert not sent["custom_id"].duplicated().any()
    items = result.summary["items"]
    cells = result.tables["sequential_cells"].set_index("dimension")
    assert cells.loc["politeness", "verdict"] == "pass" and cells.loc["formality", "verdict"] == "inconclusive"
    stop = int(cells.loc["politeness", "stopped_at_wave"])
    assert 0 < stop * WAVE < len(items) == MAX_ITEMS  # decided before the end: the check below means something
    asked = sent[sent["dimension"] == "politeness"]
    assert set(asked["item"]) == set(items[: stop * WAVE])
    assert len(asked) == 2 * stop * WAVE  # neutral and polite, once each: nothing after its stopping wave
    assert set(sent.loc[sent["dimension"] == "formality", "item"]) == set(items)
    assert sent["batch"].nunique() == len(items) // WAVE  # one job per wave


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted Batch run: its table, and what its server received."""
    os.environ.setdefault("OPENAI_API_KEY", KEY)
    tmp = tmp_path_factory.mktemp("ref")
    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        result = B.run_batch(params, tmp / "run", cache=ResponseCache(tmp / "cache.sqlite"), poll_s=0)
        return result, _received(srv, judge), tmp / "run"


def test_each_wave_is_one_batch_job_and_decided_cells_get_no_request_after_their_wave(reference):
    result, sent, folder = reference
    _check_sent(result, sent)
    manifest = B.read_waves(folder)
    assert manifest["complete"] and [w["status"] for w in manifest["waves"]] == ["judged"] * (MAX_ITEMS // WAVE)
    ids = [i for w in manifest["waves"] for ids in w["batch_ids"].values() for i in ids]
    assert sorted(ids) == sorted(sent["batch"].unique())  # the manifest names every job the server got
    dims = [w["dimensions"] for w in manifest["waves"]]
    stop = int(result.tables["sequential_cells"].set_index("dimension").loc["politeness", "stopped_at_wave"])
    assert dims[:stop] == [["formality", "politeness"]] * stop and dims[stop:] == [["formality"]] * (len(dims) - stop)


_PARAMS = "cfbench.studies.contact_center_qa.params"


@pytest.mark.parametrize("step,nth", [("submitted", 3), ("judged", 2)])
def test_a_kill_9_at_a_step_of_a_wave_resumes_without_sending_anything_twice(reference, tmp_path, step, nth):
    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        run_killed(B.__name__, _PARAMS, tmp_path, params.to_mapping(), step, nth, KEY)
        before = _received(srv, judge)
        waves = B.read_waves(tmp_path / "run")["waves"]
        assert not B.read_waves(tmp_path / "run")["complete"] and len(waves) >= 2
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
    assert len(sent) > len(before)  # the resumed run sent the rest ...
    _check_sent(result, sent)  # ... and nothing twice
    # the same verdicts, bounds and counts as the uninterrupted run (whose judge names another port) ...
    pd.testing.assert_frame_equal(result.tables["sequential_cells"].drop(columns="judge"),
                                  reference[0].tables["sequential_cells"].drop(columns="judge"))
    # ... and exactly the requests it sent: the same transcripts x dimensions, as often
    count = lambda f: f.groupby(["item", "dimension"]).size().to_dict()  # noqa: E731
    assert count(sent) == count(reference[1])


def test_kills_after_planning_and_after_collecting_resume_without_sending_anything_twice(reference, tmp_path):
    """The other two crash points, in one folder: killed after planning wave 2 (its plans in the manifest,
    nothing of it submitted), resumed and killed again after collecting wave 2 (replies fetched, not yet folded
    into the cells), then resumed to the end."""
    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        counts = []
        # (the resumed process passes the collected step once for wave 1, replayed from the cache, then for wave 2)
        for step, nth in (("planned", 2), ("collected", 2)):
            run_killed(B.__name__, _PARAMS, tmp_path, params.to_mapping(), step, nth, KEY)
            assert not B.read_waves(tmp_path / "run")["complete"]
            counts.append(len(_received(srv, judge)))
        result = B.run_batch(params, tmp_path / "run", cache=ResponseCache(tmp_path / "cache.sqlite"), poll_s=0)
        sent = _received(srv, judge)
    assert counts[0] < counts[1] < len(sent)  # each run sent something new ...
    _check_sent(result, sent)  # ... and nothing twice
    pd.testing.assert_frame_equal(result.tables["sequential_cells"].drop(columns="judge"),
                                  reference[0].tables["sequential_cells"].drop(columns="judge"))
    count = lambda f: f.groupby(["item", "dimension"]).size().to_dict()  # noqa: E731
    assert count(sent) == count(reference[1])


def test_the_command_line_runs_and_resumes_the_batch_sequential_audit(reference, tmp_path, capsys):
    """``cfbench batch sequential`` is run_batch behind the study-agnostic CLI: the same jobs as the reference
    run, and running it again on a finished folder sends nothing."""
    from cfbench.cli import main

    with FakeOpenAIServer(lifetime_s=300) as srv:
        params = _params(srv.base_url)
        judge = _Judge(params)
        srv.reply = judge
        argv = cli_argv("contact_center_qa", params.to_mapping(), tmp_path)
        assert main(argv) == 0
        sent = _received(srv, judge)
        assert main(argv) == 0  # resumed on a finished folder
        again = _received(srv, judge)
    assert "politeness" in capsys.readouterr().out  # the cells' table is printed
    assert len(again) == len(sent)
    assert sent.groupby(["item", "dimension"]).size().to_dict() == reference[1].groupby(
        ["item", "dimension"]).size().to_dict()
