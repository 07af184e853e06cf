"""Issue 15, part A: every study streams the requests its run sends (``iter_requests``), the paper
config's synthetic transcripts are generated on the fly, and ``cfbench batch plan --study`` plans them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cfbench.core.errors import InputError
from cfbench.cli.reproduce import load_config_file, project_root

ROOT = project_root()
CC_SPEC = "openai:gpt-4o-mini"


def _config(study: str, name: str, **overrides):
    return load_config_file(ROOT / "configs" / study / f"{name}.yaml", study, overrides=overrides or None)


def _cc_params(**overrides):
    from cfbench.studies.contact_center_qa import Params

    return Params.from_config(_config("contact_center_qa", "smoke"), **overrides)


# -- contact center -------------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides", [
    {},  # the smoke design: every compared condition, fairness arm, coaching on the first 2 of 3 items
    {"conditions_per_dimension": 1, "n_items": 4, "coaching_items": 1, "qa_mode": "free", "paraphrases": 1,
     "questions": ["issue_resolution"], "robustness_temperatures": [0.0]},
])
def test_cc_iter_requests_yields_exactly_the_plans_requests_once_for_every_judge(overrides):
    from cfbench.studies.contact_center_qa import iter_requests
    from cfbench.studies.contact_center_qa.items import load_items
    from cfbench.studies.contact_center_qa.requests import plan_for

    judges = ("scripted:cc-qa", CC_SPEC)
    params = _cc_params(judges=list(judges), **overrides)
    _, plan = plan_for(params, load_items(params))
    streamed = list(iter_requests(params))
    for judge in judges:
        keys = [r.cache_key(judge) for r in streamed]
        assert len(keys) == len(set(keys)), "a request was yielded twice"
        assert set(keys) == set(plan.rows.loc[plan.rows["judge"] == judge, "key"])
        assert len(keys) == len(plan.requests[judge])


def _fake(i: int, label: str, named: bool = True):
    from cfbench.io.transcripts import transcripts_from_records

    rec = {"id": f"t{i:02d}", "turns": [{"speaker": "agent", "text": f"Hello {i}"}],
           "labels": {"issue_resolution": label}}
    if named:
        rec["agent_name"] = "Ana"
    return transcripts_from_records([rec])[0]


@pytest.mark.parametrize("pattern", ["YYYYYNNY", "NNNNNNYN", "YNYNYNYN", "YYYYYYYY", "NYNNYYYNNN"])
@pytest.mark.parametrize("balance", ["issue_resolution", ""])
def test_cc_streamed_selection_is_select_items_order(pattern, balance):
    from cfbench.studies.contact_center_qa.items import iter_items, select_items

    ts = [_fake(i, "Yes" if c == "Y" else "No", named=(i % 3 != 2)) for i, c in enumerate(pattern)]
    for require_name in (True, False):
        pool = [t for t in ts if not require_name or t.agent_name]
        for n in range(0, len(pool) + 2):
            p = _cc_params(n_items=n, balance_label=balance, require_agent_name=require_name)
            if n <= len(pool):
                want = [t.id for t in select_items(ts, n, require_agent_name=require_name,
                                                   balance_label=balance or None)]
                assert [t.id for t in iter_items(p, ts)] == want, (pattern, balance, require_name, n)
            else:
                with pytest.raises(InputError, match=f"only {len(pool)} transcripts qualify, {n} requested"):
                    list(iter_items(p, ts))


def test_cc_synthetic_source_streams_the_shipped_set_and_beyond():
    from cfbench.io.transcripts import load_transcripts
    from cfbench.studies.contact_center_qa.items import load_items
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    shipped = [t.to_dict() for t in load_transcripts(shipped_transcripts_path())]
    p = _cc_params(transcripts_path="synthetic:seed=0", n_items=30, require_agent_name=False, balance_label="")
    got = load_items(p)
    assert [t.to_dict() for t in got[:24]] == shipped  # the shipped set is the stream's first 24
    assert [t.id for t in got[24:]] == [f"cc{i:03d}" for i in range(24, 30)]
    again = load_items(dataclasses.replace(p, transcripts_path="synthetic"))
    assert [t.to_dict() for t in again] == [t.to_dict() for t in got]  # seed 0 is the default: reproducible
    other = load_items(dataclasses.replace(p, transcripts_path="synthetic:seed=1"))
    assert [t.turns for t in other] != [t.turns for t in got]
    # the seed's selection rules apply to the stream as to a file: named agents, alternating labels
    sel = load_items(_cc_params(transcripts_path="synthetic:seed=0", n_items=40))
    assert all(t.agent_name for t in sel)
    assert [t.labels["issue_resolution"] for t in sel[:20]] == ["Yes", "No"] * 10


@pytest.mark.parametrize("source, field_text", [
    ("synthetic:seed=x", "seed must be an integer"),
    ("synthetic:speed=3", "key one of seed, min_turns, max_turns"),
    ("synthetic:seed", "expected key=value"),
])
def test_cc_bad_synthetic_source_names_the_field(source, field_text):
    from cfbench.studies.contact_center_qa.items import load_items

    with pytest.raises(InputError, match=field_text) as err:
        load_items(_cc_params(transcripts_path=source))
    assert "transcripts_path" in str(err.value)


def test_reproduce_keeps_a_source_name_and_resolves_a_relative_path():
    from cfbench.cli.reproduce.config import absolute_paths

    got = absolute_paths({"transcripts_path": "synthetic:seed=2", "pairs_path": "my/pairs.csv", "amiri_path": ""})
    assert got["transcripts_path"] == "synthetic:seed=2"
    assert got["pairs_path"] == str(Path("my/pairs.csv").resolve())
    assert got["amiri_path"] == ""


def test_reproduce_keeps_a_bare_source_name_that_is_no_file(tmp_path, monkeypatch):
    """`-p transcripts_path synthetic` (the stream with its default settings) reached the notebook as
    an absolute path to a file called `synthetic`, which does not exist."""
    from cfbench.cli.reproduce.config import absolute_paths

    monkeypatch.chdir(tmp_path)
    assert absolute_paths({"transcripts_path": "synthetic"})["transcripts_path"] == "synthetic"
    (tmp_path / "calls").write_text("[]")  # a bare name that IS a file here stays a path
    assert absolute_paths({"transcripts_path": "calls"})["transcripts_path"] == str(tmp_path / "calls")


def test_paper_config_selects_its_1200_transcripts_lazily():
    from cfbench.studies.contact_center_qa import Params
    from cfbench.studies.contact_center_qa.items import iter_items

    params = Params.from_config(_config("contact_center_qa", "paper"))
    assert params.transcripts_path.startswith("synthetic")
    items = iter_items(params)
    first = [next(items).id for _ in range(3)]  # nothing is generated ahead of what is consumed
    assert first == ["cc000", "cc001", "cc002"]
    assert sum(1 for _ in items) == params.n_items - 3


# -- shopflow and identity tone: the requests the run sends ------------------------------------------------

def _sent(monkeypatch, module, attr):
    sent: list = []
    real = getattr(module, attr)

    def spy(judge, requests, *a, **k):
        requests = list(requests)
        sent.append((judge if isinstance(judge, str) else judge.spec, requests))
        return real(judge, requests, *a, **k)

    monkeypatch.setattr(module, attr, spy)
    return sent


def test_shopflow_iter_requests_is_what_run_sends(monkeypatch):
    import cfbench.judges
    from cfbench.studies.shopflow import Params, iter_requests, run

    params = Params.from_config(_config("shopflow", "smoke"))
    assert params.candidate_prompt  # both prompts are streamed
    sent = _sent(monkeypatch, cfbench.judges, "run_requests")
    run(params, progress=False)
    want = {r.cache_key(params.judge) for _, reqs in sent for r in reqs}
    keys = [r.cache_key(params.judge) for r in iter_requests(params)]
    assert len(sent) == 2 and len(keys) == len(set(keys)) and set(keys) == want


def test_identity_tone_iter_requests_is_what_run_sends(monkeypatch):
    import cfbench.judges.runner
    from cfbench.studies.identity_tone import Params, iter_requests, run

    params = Params.from_config(_config("identity_tone", "smoke"), reproduce_released=False)
    sent = _sent(monkeypatch, cfbench.judges.runner, "run_requests")
    run(params)
    model = params.fresh_models[0]
    want = {r.cache_key(model) for _, reqs in sent for r in reqs}
    keys = [r.cache_key(model) for r in iter_requests(params)]
    assert len(keys) == len(set(keys)) == len(want) and set(keys) == want


# -- the CLI -----------------------------------------------------------------------------------------------

def test_cli_batch_plan_streams_a_study_config_and_skips_cached_requests(tmp_path, capsys, monkeypatch):
    from cfbench.cli import main
    from cfbench.judges import ResponseCache, Response
    from cfbench.studies.contact_center_qa import iter_requests

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used-by-planning-0000")
    spec = "openai:m@http://127.0.0.1:9/v1"  # planning never connects
    config = ROOT / "configs" / "contact_center_qa" / "smoke.yaml"
    cache_path = tmp_path / "cache.sqlite"
    params = _cc_params(n_items=2, fairness=False)
    keys = [r.cache_key(spec) for r in iter_requests(params)]
    cache = ResponseCache(cache_path)
    cache.put(keys[0], spec, Response(text="Yes 80"))
    cache.put(keys[5], spec, Response(text="No 10"))
    argv = ["batch", "plan", "--study", "contact_center_qa", "-f", str(config), "-p", "n_items", "2",
            "-p", "fairness", "false", "--judge", spec, "--out", str(tmp_path / "b"), "--cache", str(cache_path),
            "--quiet", "--max-requests", "40"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "not one of the config's judges" in out.err
    (plan_dir,) = [p.parent for p in (tmp_path / "b").glob("*/manifest.json")]  # one folder per judge
    manifest = json.loads((plan_dir / "manifest.json").read_text())
    assert (manifest["n_seen"], manifest["n_cached"], manifest["n_duplicate"]) == (len(keys), 2, 0)
    lines = [json.loads(x) for s in manifest["shards"] for x in (plan_dir / s["file"]).read_text().splitlines()]
    assert all(s["count"] <= 40 for s in manifest["shards"]) and len(manifest["shards"]) > 1
    assert [x["custom_id"] for x in lines] == [k for i, k in enumerate(keys) if i not in (0, 5)]
    assert {(x["method"], x["url"]) for x in lines} == {("POST", "/v1/chat/completions")}
    assert f"planned {len(keys) - 2:,} requests" in out.out


def test_cli_batch_plan_study_errors_are_one_line(tmp_path, capsys):
    from cfbench.cli import main

    config = ROOT / "configs" / "contact_center_qa" / "smoke.yaml"
    argv = ["batch", "plan", "--study", "contact_center_qa", "-f", str(config), "-p", "n_itemz", "2",
            "--judge", "openai:m", "--out", str(tmp_path / "b")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "n_itemz" in err and err.count("\n") == 1


# -- plan only: a design too large to plan in memory is counted by streaming ---------------------------------

def test_cc_plan_only_counts_a_large_design_by_streaming_and_previews_its_first_items(monkeypatch, tmp_path):
    from cfbench.studies.contact_center_qa import iter_requests, run, study

    monkeypatch.setattr(study, "PLAN_ONLY_MAX_REQUESTS", 100)  # the smoke design at 5 items counts as large
    monkeypatch.setenv("CFBENCH_MODE", "plan")
    params = _cc_params(n_items=5, transcripts_path="synthetic:seed=0")
    result = run(params, out=tmp_path / "out", config_name="smoke", progress=False)
    full = result.summary["plan_only"]
    n = sum(1 for _ in iter_requests(params))
    assert (full["n_items"], full["preview_items"]) == (5, study.PLAN_ONLY_PREVIEW_ITEMS)
    assert full["n_requests_per_judge"] == n and full["n_requests"] == n * len(params.judges)
    assert sum(full["by_task_arm"].values()) == n
    assert len(result.summary["items"]) == study.PLAN_ONLY_PREVIEW_ITEMS < 5
    assert result.params == params and result.summary["params"]["n_items"] == 5
    assert not result.frames["judgments"]["ok"].any()  # nothing was called
    assert f"{n:,} distinct requests per judge" in result.header() and "cfbench batch plan" in result.header()
    result.check()
    from cfbench.studies.contact_center_qa.calculator import design_table

    row = design_table({"plan only": result}).iloc[0]
    assert (row["n_items"], row["requests"]) == (5, n * len(params.judges))
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["plan_only"]["n_requests_per_judge"] == n


def test_cc_plan_only_of_a_small_design_plans_it_whole(monkeypatch):
    from cfbench.studies.contact_center_qa import run

    monkeypatch.setenv("CFBENCH_MODE", "plan")
    result = run(_cc_params(), progress=False)
    assert "plan_only" not in result.summary and len(result.summary["items"]) == 3


def test_cc_design_table_from_the_run_equals_planning_again():
    from cfbench.studies.contact_center_qa import run
    from cfbench.studies.contact_center_qa.calculator import design_table

    params = _cc_params()
    result = run(params, progress=False)
    import pandas as pd

    pd.testing.assert_frame_equal(design_table({"this run": result}), design_table({"this run": params}))


def test_shopflow_plan_only_records_both_prompts_and_says_what_to_do(monkeypatch, tmp_path):
    from cfbench.judges import ResponseCache
    from cfbench.studies.shopflow import Params, iter_requests, run

    monkeypatch.setenv("CFBENCH_MODE", "plan")
    params = Params.from_config(_config("shopflow", "smoke"))
    n = sum(1 for _ in iter_requests(params))  # both prompts
    with pytest.raises(InputError, match=rf"plan only: {n} requests recorded .* none answered.*--replay"):
        run(params, out=tmp_path / "out", progress=False)
    assert (tmp_path / "out" / "seed_rates.csv").exists()  # the seed part needs no judge and is written
    pending = {key for key, _, _ in ResponseCache().pending(params.judge)}
    assert pending == {r.cache_key(params.judge) for r in iter_requests(params)}  # ready for cache export
