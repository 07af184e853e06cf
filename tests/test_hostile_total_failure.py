"""A judge that fails (or talks nonsense) on every call: the run says so and no table looks like a result."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.judges import GenerationConfig, Request, run_requests

#: the identity-tone frame's column names, given to the paired statistics explicitly
TONE_COLUMNS = {"model": "model", "unit": "prompt_id", "group": "identity"}

REPO = Path(__file__).resolve().parents[1]


def _reqs(n=6):
    return [Request(f"r{i}", ({"role": "user", "content": f"question {i}"},), GenerationConfig(max_tokens=4))
            for i in range(n)]


def test_runner_reports_total_non_completion(tmp_path):
    res = run_requests("scripted:fail", _reqs(), cache=tmp_path / "c.sqlite", progress=False)
    assert res.stats["n_failed"] == 6 and res.stats["non_completion_rate"] == 1.0
    assert not res.judgments["ok"].any() and res.judgments["text"].isna().all()
    assert res.judgments["error"].str.contains("scripted failure").all()
    # errors are never cached: a rerun calls again
    again = run_requests("scripted:fail", _reqs(), cache=tmp_path / "c.sqlite", progress=False)
    assert again.stats["n_called"] == 6 and again.stats["n_cached"] == 0


def _numeric_estimates(tables: dict[str, pd.DataFrame]) -> list[float]:
    vals = []
    for name, t in tables.items():
        for col in ("cfr", "masd", "value", "estimate", "accuracy", "kappa", "delta"):
            if col in t.columns:
                vals += pd.to_numeric(t[col], errors="coerce").tolist()
    return vals


@pytest.mark.parametrize("spec", ["scripted:fail", "scripted:garbage"])
def test_contact_center_tables_hold_no_numbers_when_nothing_parsed(spec):
    from cc_fixtures import variants_frame

    from cfbench.studies.contact_center_qa.judging import run_plan
    from cfbench.studies.contact_center_qa.requests import plan_evaluation
    from cfbench.studies.contact_center_qa.tables import study_tables

    plan = plan_evaluation(variants_frame(), judges=[spec], questions=["issue_resolution"], qa_mode="compact",
                             config=GenerationConfig(max_tokens=8), repeats=2, coaching=True)
    judgments, rows, stats = run_plan(plan, progress=False)
    assert not rows["parse_ok"].any()
    if spec == "scripted:fail":
        assert stats[spec]["non_completion_rate"] == 1.0
        assert judgments["parse_error"].str.startswith("call failed").all()
    else:
        assert stats[spec]["non_completion_rate"] == 0.0 and judgments["text"].notna().all()
    tables = study_tables(rows, n_boot=20)
    vals = _numeric_estimates(tables)
    assert vals and all(math.isnan(v) for v in vals), "a table shows a number computed from no judgment"
    assert (tables["cfr"]["n_pairs"] == 0).all() and (tables["cfr"]["n_pairs_excluded"] > 0).all()
    assert tables["accuracy"].empty or tables["accuracy"]["n"].eq(0).all()


@pytest.mark.parametrize("spec", ["scripted:fail", "scripted:garbage"])
def test_shopflow_refuses_to_score_when_no_pair_is_judged(spec):
    from cfbench.io.pairs import load_pairs
    from cfbench.studies.shopflow.readiness import attach_scores, build_requests, parse_readiness

    pairs = load_pairs(REPO / "cfbench" / "studies" / "shopflow" / "data" / "pairs.jsonl", score_column=None).head(8)
    res = run_requests(spec, build_requests(pairs), cache=False, progress=False)
    parsed = parse_readiness(res.judgments)
    assert not parsed["parse_ok"].any() and parsed["score"].isna().all()
    with pytest.raises(InputError, match="no pair has every variant scored"):
        attach_scores(pairs, parsed)


def test_identity_advice_marks_every_failed_reply_as_error():
    from cfbench.metrics.refusal import refusal_table
    from cfbench.perturb.stimuli import identity_variants
    from cfbench.studies.identity_tone.advice import advice_config, generate_advice

    variants = identity_variants([{"prompt_id": "p1", "task": "How do I ask for a raise?"}], seed=0)
    responses, stats = generate_advice(["scripted:fail"], variants, config=advice_config(max_tokens=20), cache=False)
    assert stats["scripted:fail"]["non_completion_rate"] == 1.0
    assert (responses["status"] == "error").all() and responses["text"].isna().all()
    table = refusal_table(responses, by=("model", "identity"))
    assert (table["error_rate"] == 1.0).all()
    assert np.allclose(table[[c for c in table.columns if c.endswith("_rate") and c != "error_rate"]], 0.0)


def test_paired_statistics_with_no_responses_say_there_were_none():
    from cfbench.stats.paired import paired_tests

    scores = pd.DataFrame([{"model": "m", "prompt_id": f"p{i}", "identity": g, "sentiment": np.nan}
                           for i in range(3) for g in ("A", "B")])
    out = paired_tests(scores, metrics=["sentiment"], groups=["A", "B"], **TONE_COLUMNS, seed=0, n_resamples=50,
                       on_missing="drop_unit")
    assert out["n"].eq(0).all() and out["mean_diff"].isna().all()
    assert "zero" not in out["wilcoxon_method"].iloc[0]
