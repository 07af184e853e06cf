"""Paired bootstrap for the TPR difference and the threshold sweep."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cfbench.io.pairs import load_pairs
from cfbench.metrics.groups import fpr_gap, tpr_gap
from cfbench.studies.shopflow import pair_flips, paired_bootstrap, rates, route_rows, threshold_sweep

REPO = Path(__file__).resolve().parents[1]
V = ["formal", "conversational"]


@pytest.fixture(scope="module")
def seed_frame():
    return load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv", variants=V)


def _loop_bootstrap(routed, n_boot, seed, conf=0.95):
    """Straightforward re-implementation: resample pair ids, recompute TPRs per resample."""
    by_pair = {pid: g.set_index("variant") for pid, g in routed.groupby("pair_id", sort=False)}
    ids = list(by_pair)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(n_boot, len(ids)))
    diffs = []
    for row in draws:
        tp = {v: 0 for v in V}
        npos = 0
        for j in row:
            g = by_pair[ids[j]]
            if g["expected_ready"].iloc[0]:
                npos += 1
                for v in V:
                    tp[v] += bool(g.at[v, "selected"])
        if npos:
            diffs.append((tp[V[0]] - tp[V[1]]) / npos)
    a = (1 - conf) / 2
    return np.quantile(diffs, [a, 1 - a]), len(diffs)


def test_matches_loop_implementation(seed_frame):
    routed = route_rows(seed_frame, 0.70)
    res = paired_bootstrap(routed, V, among=True, n_boot=300, seed=42)
    (lo, hi), n_valid = _loop_bootstrap(routed, 300, 42)
    assert (res.ci_low, res.ci_high, res.n_valid) == (pytest.approx(lo), pytest.approx(hi), n_valid)
    assert res.estimate == pytest.approx(5 / 6 - 3 / 6)


def test_seeded_and_reproducible(seed_frame):
    routed = route_rows(seed_frame, 0.70)
    a = paired_bootstrap(routed, V, among=True, n_boot=500, seed=1)
    b = paired_bootstrap(routed, V, among=True, n_boot=500, seed=1)
    assert a == b and a.seed == 1 and a.n_boot == 500


def test_identical_routes_give_a_degenerate_interval(seed_frame):
    f = seed_frame.copy()
    formal = f[f.variant == "formal"].set_index("pair_id")["score"]
    f["score"] = f["pair_id"].map(formal)  # conversational rows get the formal score
    res = paired_bootstrap(route_rows(f, 0.70), V, among=True, n_boot=200, seed=0)
    assert (res.estimate, res.ci_low, res.ci_high) == (0.0, 0.0, 0.0)


def test_sweep_rows_agree_with_direct_computation(seed_frame):
    ts = [0.0, 0.55, 0.70, 0.85, 1.0]
    sw = threshold_sweep(seed_frame, ts, variants=V).set_index("threshold")
    for t in ts:
        routed = route_rows(seed_frame, t)
        r = rates(routed, variants=V)
        assert sw.at[t, "selection"] == pytest.approx(routed["selected"].mean())
        assert sw.at[t, "n_flips"] == len(pair_flips(routed, variants=V))
        for got, want in ((sw.at[t, "tpr_gap"], tpr_gap(r)), (sw.at[t, "fpr_gap"], fpr_gap(r))):
            assert got == pytest.approx(want, nan_ok=True)
    assert sw.at[0.70, "tpr_gap"] == pytest.approx(1 / 3)
    assert sw.at[0.0, "selection"] == 1.0 and sw.at[0.0, "tpr_gap"] == 0.0


def test_selection_never_rises_with_threshold(seed_frame):
    sw = threshold_sweep(seed_frame, np.linspace(0, 1, 41), variants=V)
    assert (np.diff(sw["selection"].to_numpy()) <= 1e-12).all()
