"""Each study notebook, smoke config, with a judge that fails every call: the run says so, and every
table it writes shows n = 0 and no estimate (or the run stops with the reason) — nothing that reads as a result."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

pm = pytest.importorskip("papermill")

REPO = Path(__file__).resolve().parents[1]
ESTIMATES = ("cfr", "masd", "value", "estimate", "accuracy", "mean_diff", "ci_low", "ci_high", "t", "t_p",
             "wilcoxon_p", "cohens_d", "sentiment", "politeness", "hedging", "neg_tone", "words", "delta")


def _run(study: str, tmp_path: Path, **overrides):
    params = yaml.safe_load((REPO / "configs" / study / "smoke.yaml").read_text(encoding="utf-8"))
    params.update(overrides, output_dir=str(tmp_path / "run"), config_name="smoke")
    pm.execute_notebook(str(REPO / "notebooks" / f"{study}.ipynb"), str(tmp_path / f"{study}.ipynb"),
                        parameters=params, cwd=str(REPO), progress_bar=False, kernel_name="python3")
    return tmp_path / "run"


def _assert_no_estimates(csv: Path, cols=ESTIMATES):
    frame = pd.read_csv(csv)
    for col in set(cols) & set(frame.columns):
        assert frame[col].isna().all(), f"{csv.name}: column {col} holds numbers computed from no judgment"


@pytest.mark.slow
def test_contact_center_notebook_with_a_failing_judge(tmp_path):
    run = _run("contact_center_qa", tmp_path, judges=["scripted:fail"])
    summary = json.loads((run / "summary.json").read_text())
    stats = summary["run_stats"]["scripted:fail"]
    assert stats["non_completion_rate"] == 1.0 and stats["n_failed"] == stats["n_unique"] > 0
    assert summary["parse_ok_rate"] == 0.0 and summary["mean_cfr_pct"]["scripted:fail"] is None
    for name in ("cfr", "masd", "robustness", "accuracy", "cfr_by_category", "cfr_minus_robustness", "table2",
                 "direction", "fairness_prompting_delta"):
        _assert_no_estimates(run / f"{name}.csv", ESTIMATES + ("scripted:fail",))
    assert (pd.read_csv(run / "parse_rates.csv")["parse_ok"] == 0).all()


@pytest.mark.slow
def test_identity_notebook_with_a_failing_model(tmp_path):
    run = _run("identity_tone", tmp_path, fresh_models=["scripted:fail"])
    fresh = json.loads((run / "summary.json").read_text())["fresh"]
    assert fresh["run_stats"]["scripted:fail"]["non_completion_rate"] == 1.0
    assert fresh["status_counts"]["scripted:fail"] == {"error": 32}
    for name in ("fresh_table2_described", "fresh_table2_as_run", "fresh_pairs_described", "fresh_pairs_as_run"):
        _assert_no_estimates(run / f"{name}.csv")
        assert (pd.read_csv(run / f"{name}.csv")["n"] == 0).all()
    refusals = pd.read_csv(run / "refusals.csv")
    assert (refusals["error_rate"] == 1.0).all() and (refusals["none_rate"] == 0.0).all()


@pytest.mark.slow
def test_shopflow_notebook_stops_with_the_reason_and_writes_no_judged_table(tmp_path):
    with pytest.raises(pm.PapermillExecutionError) as info:
        _run("shopflow", tmp_path, judge="scripted:fail")
    assert "no pair has every variant scored" in str(info.value)
    written = {p.name for p in (tmp_path / "run").iterdir()}
    assert written and all(not n.startswith("judged") for n in written)  # only the judge-free seed part
