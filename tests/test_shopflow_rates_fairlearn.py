"""Per-slice selection/TPR/FPR and their gaps agree with fairlearn's MetricFrame."""

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (MetricFrame, false_positive_rate, selection_rate, true_positive_rate)

from cfbench.metrics.groups import fpr_gap, pairwise_gaps, selection_gap, tpr_gap
from cfbench.studies.shopflow import rates, route_rows


def _random_frame(seed, n, groups):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "pair_id": [f"x{i}" for i in range(n)],
        "variant": rng.choice(groups, size=n),
        "expected_ready": rng.random(n) < 0.6,
        "score": rng.random(n),
        "channel": "chat",
        "evidence_passed": rng.random(n) < 0.9,
    })


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("groups", [("formal", "conversational"), ("a", "b", "c", "d")])
def test_rates_match_metricframe(seed, groups):
    f = route_rows(_random_frame(seed, 300, groups), 0.55)
    ours = rates(f)
    mf = MetricFrame(metrics={"selection": selection_rate, "tpr": true_positive_rate,
                              "fpr": false_positive_rate},
                     y_true=f["expected_ready"].astype(int), y_pred=f["selected"].astype(int),
                     sensitive_features=f["variant"])
    theirs = mf.by_group
    for m in ("selection", "tpr", "fpr"):
        for g in groups:
            assert ours.at[g, m] == pytest.approx(theirs.at[g, m], abs=1e-12), (m, g)
    diff = mf.difference(method="between_groups")
    assert tpr_gap(ours) == pytest.approx(diff["tpr"], abs=1e-12)
    assert fpr_gap(ours) == pytest.approx(diff["fpr"], abs=1e-12)
    assert selection_gap(ours) == pytest.approx(diff["selection"], abs=1e-12)


def test_counts_are_consistent():
    f = route_rows(_random_frame(7, 200, ("a", "b")), 0.5)
    r = rates(f)
    assert (r["n_pos"] + r["n_neg"] == r["n"]).all()
    assert r["n"].sum() == 200
    blocked = f[f.route == "blocked_by_evidence"]
    assert len(blocked) > 0 and not blocked["selected"].any()


def test_pairwise_gaps_cover_every_pair_of_slices_and_max_equals_range():
    f = route_rows(_random_frame(11, 400, ("a", "b", "c")), 0.5)
    r = rates(f)
    pg = pairwise_gaps(r)
    assert len(pg) == 3 * 3  # three slice pairs × three metrics
    for m in ("tpr", "fpr", "selection"):
        sub = pg[pg.metric == m]
        assert sub["gap"].max() == pytest.approx(r[m].max() - r[m].min())
        row = sub.iloc[0]
        assert row["difference"] == pytest.approx(r.at[row.slice_a, m] - r.at[row.slice_b, m])


def test_slice_without_positives_has_undefined_tpr_and_gap():
    f = pd.DataFrame({"pair_id": ["a", "b", "c", "d"], "variant": ["x", "x", "y", "y"],
                      "expected_ready": [True, False, False, False], "score": [0.9, 0.2, 0.9, 0.1],
                      "channel": "chat", "evidence_passed": True})
    r = rates(route_rows(f, 0.5))
    assert np.isnan(r.at["y", "tpr"]) and np.isnan(tpr_gap(r))
    assert r.at["y", "fpr"] == 0.5
