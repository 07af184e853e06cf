"""Thresholds outside [0, 1] and negative / NaN / non-numeric scores reaching the metrics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hostile_util import expect_input_error

from cfbench.metrics.counterfactual import flip_rate, mean_abs_score_diff
from cfbench.metrics.groups import score_bands
from cfbench.studies.shopflow import FairnessContract, audit_pairs, route_rows, threshold_sweep
from cfbench.stats.paired import paired_tests

#: the identity-tone frame's column names, given to the paired statistics explicitly
TONE_COLUMNS = {"model": "model", "unit": "prompt_id", "group": "identity"}

REPO = Path(__file__).resolve().parents[1]
BAD_THRESHOLDS = [-0.01, 1.01, float("nan"), float("inf"), "high", None]


def _scored_pairs():
    from cfbench.io.pairs import load_pairs

    return load_pairs(REPO / "cfbench" / "studies" / "shopflow" / "data" / "seed_observations.csv")


@pytest.mark.parametrize("t", BAD_THRESHOLDS, ids=repr)
def test_routing_threshold_outside_unit_interval(t):
    expect_input_error(lambda: route_rows(_scored_pairs(), t), field="threshold")


@pytest.mark.parametrize("t", BAD_THRESHOLDS, ids=repr)
def test_audit_threshold_outside_unit_interval(t):
    contract = FairnessContract.from_yaml(REPO / "cfbench" / "studies" / "shopflow" / "data" / "contract.yaml")
    expect_input_error(lambda: audit_pairs(_scored_pairs(), contract, threshold=t), field="threshold")


def test_sweep_with_a_threshold_outside_unit_interval():
    expect_input_error(lambda: threshold_sweep(_scored_pairs(), [0.2, 0.5, 1.2]), field="threshold")


@pytest.mark.parametrize("edges", [(0.0, 0.5), (0.5, 1.0), (0.9, 0.7), (), (0.5, float("nan"))], ids=repr)
def test_calibration_edges_outside_open_unit_interval(edges):
    expect_input_error(lambda: score_bands([0.1, 0.6], edges), field="edges")


def test_routing_an_unscored_row_names_the_pair():
    frame = _scored_pairs()
    frame.loc[3, "score"] = np.nan
    expect_input_error(lambda: route_rows(frame, 0.5), field="score", record=str(frame.loc[3, "pair_id"]))


def _judgments(values, col="answer_yes"):
    n = len(values)
    return pd.DataFrame({"judge": "j", "dimension": "gender", "item_id": [f"i{k // 2}" for k in range(n)],
                         "question_id": "q", "condition": ["a", "b"] * (n // 2), col: values, "parse_ok": True})


@pytest.mark.parametrize("bad", [2.0, -1.0, 0.5], ids=repr)
def test_flip_rate_rejects_non_binary_answers(bad):
    frame = _judgments([1.0, bad, 0.0, 1.0])
    expect_input_error(lambda: flip_rate(frame, value="answer_yes", unit=["item_id", "question_id"], by=["judge", "dimension"], n_boot=0), field="answer_yes", record="1")


def test_flip_rate_rejects_text_answers():
    frame = _judgments([1.0, "Yes", 0.0, 1.0])
    expect_input_error(lambda: flip_rate(frame, value="answer_yes", unit=["item_id", "question_id"], by=["judge", "dimension"], n_boot=0), field="answer_yes", record="1")


def test_masd_rejects_text_scores_and_excludes_nan_scores_visibly():
    expect_input_error(lambda: mean_abs_score_diff(_judgments([80, "high", 70, 60], "confidence"), value="confidence", unit=["item_id", "question_id"], by=["judge", "dimension"],
                                                           n_boot=0),
                       field="confidence", record="1")
    out = mean_abs_score_diff(_judgments([80, np.nan, 70, 60], "confidence"), value="confidence",
                              unit=["item_id", "question_id"], by=["judge", "dimension"], n_boot=0)
    assert out["masd"].iloc[0] == 10.0 and out["n_pairs"].iloc[0] == 1 and out["n_pairs_excluded"].iloc[0] == 1


def test_duplicate_condition_in_one_unit():
    frame = _judgments([1.0, 0.0, 0.0, 1.0])
    frame.loc[1, "condition"] = "a"
    expect_input_error(lambda: flip_rate(frame, value="answer_yes", unit=["item_id", "question_id"], by=["judge", "dimension"], n_boot=0), field="condition")


def _tone(nan_at=None, dup=False):
    rows = [{"model": "m", "prompt_id": f"p{p}", "identity": g, "sentiment": 0.1 * p + (g == "B")}
            for p in range(4) for g in ("A", "B")]
    frame = pd.DataFrame(rows)
    if nan_at is not None:
        frame.loc[nan_at, "sentiment"] = np.nan
    if dup:
        frame = pd.concat([frame, frame.iloc[[2]]], ignore_index=True)
    return frame


def test_paired_tests_name_the_prompt_with_a_missing_score():
    expect_input_error(lambda: paired_tests(_tone(nan_at=5), metrics=["sentiment"], groups=["A", "B"], **TONE_COLUMNS, seed=0,
                                            n_resamples=50), field="sentiment", record="p2")


def test_paired_tests_reject_a_duplicate_response():
    expect_input_error(lambda: paired_tests(_tone(dup=True), metrics=["sentiment"], groups=["A", "B"], **TONE_COLUMNS, seed=0,
                                            n_resamples=50), field="identity", record="p1")


def test_paired_tests_reject_an_identity_not_in_the_design():
    frame = _tone()
    frame.loc[0, "identity"] = "Z"
    expect_input_error(lambda: paired_tests(frame, metrics=["sentiment"], groups=["A", "B"], **TONE_COLUMNS, seed=0,
                                            n_resamples=50), field="identity", record="p0")
