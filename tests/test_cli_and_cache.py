"""The command line, config loading, and the Batch-API round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cfbench.cli import main
from cfbench.core.errors import InputError
from cfbench.judges import GenerationConfig, Request, ResponseCache, plan_requests, run_requests
from cfbench.judges.batch import export_batch, import_batch
from cfbench.cli.reproduce import load_config


def test_judges_lists_every_backend(capsys):
    assert main(["judges"]) == 0
    out = capsys.readouterr().out
    for name in ("local", "openai", "hf", "scripted"):
        assert out.count(f"\n{name} ") + out.startswith(f"{name} ") == 1


def test_judges_check_runs_one_call(capsys):
    assert main(["judges", "--check", "scripted:yes"]) == 0
    assert "text='Yes'" in capsys.readouterr().out
    assert main(["judges", "--check", "scripted:fail"]) == 1


def test_config_with_a_secret_looking_key_is_refused(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "configs" / "shopflow").mkdir(parents=True)
    (tmp_path / "configs" / "shopflow" / "default.yaml").write_text("judge: openai:gpt-4o-mini\nopenai_api_key: sk-x\n")
    with pytest.raises(InputError, match="openai_api_key.*environment variables only"):
        load_config("shopflow", "default", root=tmp_path)


@pytest.mark.parametrize("text, problem", [("- a\n- b\n", "must be a mapping"), ("a: [1,\n", "not valid YAML")])
def test_bad_config_files(tmp_path, text, problem):
    (tmp_path / "configs" / "s").mkdir(parents=True)
    (tmp_path / "configs" / "s" / "smoke.yaml").write_text(text)
    with pytest.raises(InputError, match=problem):
        load_config("s", "smoke", root=tmp_path)


def test_every_shipped_config_loads():
    for study in ("shopflow", "identity_tone", "contact_center_qa"):
        for config in ("smoke", "default", "paper"):
            params = load_config(study, config)
            assert "output_dir" not in params  # set by reproduce, never by a config


def test_batch_export_import_round_trip(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    spec = "openai:gpt-4o-mini"
    reqs = [Request(f"r{i}", ({"role": "user", "content": f"q{i}"},), GenerationConfig(max_tokens=5, top_logprobs=2))
            for i in range(3)]
    assert plan_requests(spec, reqs, cache=cache)["n_to_call"] == 3
    out = tmp_path / "batch.jsonl"
    assert export_batch(cache, spec, out) == 3
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {x["custom_id"] for x in lines} == {r.cache_key(spec) for r in reqs}
    assert lines[0]["body"]["model"] == "gpt-4o-mini" and lines[0]["body"]["top_logprobs"] == 2
    # what the Batch API sends back: two successes and one error
    results = tmp_path / "results.jsonl"
    rows = [{"custom_id": x["custom_id"], "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": f"answer {i}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2}}}} for i, x in enumerate(lines[:2])]
    rows.append({"custom_id": lines[2]["custom_id"], "response": None, "error": {"message": "failed"}})
    results.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert import_batch(cache, spec, results) == (2, 1)
    # the imported replies serve a replay; the errored one is still a miss
    by_key = {r.cache_key(spec): r for r in reqs}
    done = [by_key[x["custom_id"]] for x in lines[:2]]
    res = run_requests(spec, done, cache=cache, mode="replay", progress=False)
    assert sorted(res.judgments.text) == ["answer 0", "answer 1"]
    assert len(list(cache.pending(spec))) == 1


def test_cache_cli_stats_and_export(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    plan_requests("openai:m", [Request("a", ({"role": "user", "content": "x"},))], cache=path)
    assert main(["cache", "stats", "--path", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["pending_requests"] == 1
    assert main(["cache", "export", "--judge", "openai:m", "--out", str(tmp_path / "b.jsonl"), "--path", str(path)]) == 0
    assert (tmp_path / "b.jsonl").read_text().count("custom_id") == 1


@pytest.mark.parametrize("name, secret", [("openai_api_key", True), ("hf_token", True), ("token", True),
                                          ("client_secret", True), ("max_tokens", False), ("key_terms", False),
                                          ("judge", False)])
def test_secret_parameter_names(name, secret):
    from cfbench.cli.reproduce.config import _SECRET_NAME

    assert bool(_SECRET_NAME.search(name)) is secret


def test_reproduce_smoke_through_the_cli(tmp_path, capsys):
    """The command users run: executes a study notebook into <results>/<study>/<config>/."""
    assert main(["reproduce", "--config", "smoke", "--study", "shopflow", "--results", str(tmp_path)]) == 0
    out = tmp_path / "shopflow" / "smoke"
    assert (out / "shopflow.ipynb").is_file() and (out / "summary.json").is_file()
    info = json.loads((out / "run_info.json").read_text())
    assert info["study"] == "shopflow" and info["config"] == "smoke" and info["wall_s"] > 0
    captured = capsys.readouterr()
    assert "shopflow" in captured.out
    # the kernel's judge progress bar streams to the terminal, not only into the notebook
    assert "readiness baseline" in captured.err and "88/88" in captured.err
    assert "without encryption" not in captured.err  # the kernel talks over IPC sockets, not plain TCP


def test_replay_flag_is_scoped_to_the_call(tmp_path, monkeypatch):
    import os

    from cfbench.cli.reproduce import StudyFailed, reproduce

    monkeypatch.delenv("CFBENCH_MODE", raising=False)
    with pytest.raises(StudyFailed, match="CacheMissError"):
        # smoke judges were never cached in this fresh cache dir, so replay must fail loudly
        reproduce("smoke", ["shopflow"], results_dir=tmp_path, replay=True)
    assert "CFBENCH_MODE" not in os.environ


def test_plan_mode_calls_nothing_and_records_for_export(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    spec = "openai:gpt-4o-mini"  # no key is set: a real call would fail
    reqs = [Request(f"r{i}", ({"role": "user", "content": f"q{i % 2}"},)) for i in range(3)]
    res = run_requests(spec, reqs, cache=cache, mode="plan", progress=False)
    assert res.stats["n_called"] == 0 and not res.judgments.ok.any() and not res.judgments.cache_hit.any()
    assert res.judgments.error.str.startswith("not sent (plan only)").all()
    assert len(list(cache.pending(spec))) == 2  # distinct requests only
    assert export_batch(cache, spec, tmp_path / "b.jsonl") == 2
    mine = tmp_path / "notes.jsonl"
    mine.write_text("the researcher's own file\n")
    with pytest.raises(InputError, match="exists; not overwritten"):
        export_batch(cache, spec, mine)
    assert mine.read_text() == "the researcher's own file\n"  # untouched
    assert export_batch(cache, spec, mine, force=True) == 2 and len(mine.read_text().splitlines()) == 2


def test_live_run_remembers_failed_requests_for_export(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = [Request("ok", ({"role": "user", "content": "a"},))]
    run_requests("scripted:yes", reqs, cache=cache, progress=False)
    run_requests("scripted:fail", reqs, cache=cache, progress=False)
    assert [j for _, j, _ in cache.pending()] == ["scripted:fail"]


@pytest.mark.parametrize("study", ["shopflow", "identity_tone", "contact_center_qa"])
def test_papermill_sees_every_notebook_parameter(study):
    """`papermill --help-notebook` and papermill's own parameter inspection list every
    parameter the notebook declares (a '=' in a help comment used to hide some)."""
    pm = pytest.importorskip("papermill")
    from cfbench.cli.reproduce import notebook_parameters

    nb = Path(__file__).resolve().parents[1] / "notebooks" / f"{study}.ipynb"
    inspected = pm.inspect_notebook(str(nb))
    assert set(inspected) == set(notebook_parameters(nb))
    assert all(p["help"] for p in inspected.values()), [k for k, p in inspected.items() if not p["help"]]
