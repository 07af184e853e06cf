"""Score bands, calibration cells, intersection suppression and stage attribution."""

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.metrics.groups import calibration_table, score_band_labels, score_bands
from cfbench.studies.shopflow import FairnessContract, intersection_table, route_rows, stage_attribution


def test_band_edges_are_left_closed():
    b = score_bands([0.0, 0.69999, 0.70, 0.8999, 0.90, 1.0], edges=(0.70, 0.90))
    assert list(b) == ["below 0.70", "below 0.70", "0.70 to <0.90", "0.70 to <0.90", "0.90 and above",
                       "0.90 and above"]


@pytest.mark.parametrize("edges", [(), (0.9, 0.7), (0.5, 0.5), (0.0, 0.5), (0.5, 1.0)])
def test_bad_edges(edges):
    with pytest.raises(InputError):
        score_bands([0.5], edges=edges)


def test_configurable_bands_match_pandas_cut():
    rng = np.random.default_rng(3)
    s = rng.random(500)
    edges = (0.2, 0.45, 0.8)
    ours = score_bands(s, edges)
    theirs = pd.cut(s, bins=[-np.inf, *edges, np.inf], right=False, labels=score_band_labels(edges))
    assert list(ours.astype(str)) == list(theirs.astype(str))


def test_calibration_counts_against_groupby():
    rng = np.random.default_rng(5)
    f = pd.DataFrame({"variant": rng.choice(["a", "b"], 200), "score": rng.random(200),
                      "expected_ready": rng.random(200) < 0.5})
    t = calibration_table(f, score="score", positive="expected_ready", by="variant", edges=(0.5,),
                          min_support=60)
    for (v, band), g in f.groupby(["variant", np.where(f.score < 0.5, "below 0.50", "0.50 and above")]):
        row = t[(t.variant == v) & (t.band == band)].iloc[0]
        assert row.n == len(g) and row.observed_ready == pytest.approx(g.expected_ready.mean())
        assert row.sufficient == (len(g) >= 60)
    assert t.n.sum() == 200


def _frame(rows):
    return pd.DataFrame(rows, columns=["pair_id", "variant", "expected_ready", "channel", "evidence_passed",
                                       "score"])


def test_intersection_suppresses_small_cells_only():
    rows = []
    for i in range(6):  # chat: 6 ready + 2 review per variant; email: 1 ready per variant
        for v in ("formal", "conversational"):
            rows.append((f"c{i}", v, True, "chat", True, 0.9 if i < 4 else 0.1))
    for i in range(2):
        for v in ("formal", "conversational"):
            rows.append((f"r{i}", v, False, "chat", True, 0.9 if i == 0 else 0.1))
    for v in ("formal", "conversational"):
        rows.append(("e0", v, True, "email", True, 0.9))
    c = FairnessContract("equal_opportunity", 0.1, 0.1, min_positive_per_slice=5, min_negative_per_slice=2)
    t = intersection_table(route_rows(_frame(rows), 0.5), c).set_index(["channel", "variant"])
    chat = t.loc[("chat", "formal")]
    assert (chat.n_pos, chat.tpr_status, chat.tpr) == (6, "eligible", pytest.approx(4 / 6))
    assert (chat.n_neg, chat.fpr_status, chat.fpr) == (2, "eligible", pytest.approx(0.5))
    email = t.loc[("email", "formal")]
    assert email.n_pos == 1 and email.tpr_status == "insufficient" and np.isnan(email.tpr)
    assert email.fpr_status == "insufficient" and np.isnan(email.fpr)


def test_attribution_distinguishes_evidence_gate_from_judge():
    rows = [("a", "formal", True, "chat", True, 0.9), ("a", "conversational", True, "chat", False, 0.9),
            ("b", "formal", True, "chat", True, 0.9), ("b", "conversational", True, "chat", True, 0.2),
            ("c", "formal", True, "chat", True, 0.9), ("c", "conversational", True, "chat", True, 0.8)]
    routed = route_rows(_frame(rows), 0.5)
    assert routed.loc[1, "route"] == "blocked_by_evidence"
    allp = stage_attribution(routed, only_flipped=False)
    assert dict(zip(allp.pair_id, allp.stage)) == {"a": "evidence_gate", "b": "judge_or_route",
                                                   "c": "no_observed_flip"}
    assert list(stage_attribution(routed).pair_id) == ["a", "b"]
