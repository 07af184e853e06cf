"""The threshold sweep (the paired percentile bootstrap that shared this file was removed from ShopFlow:
its gaps are answered by Tango's interval, tests/test_shopflow_interval_gate.py)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cfbench.io.pairs import load_pairs
from cfbench.metrics.groups import fpr_gap, tpr_gap
import cfbench.studies.shopflow as shopflow
from cfbench.studies.shopflow import pair_flips, rates, route_rows, threshold_sweep

REPO = Path(__file__).resolve().parents[1]
V = ["formal", "conversational"]


@pytest.fixture(scope="module")
def seed_frame():
    return load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv", variants=V)


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


def test_shopflow_no_longer_offers_the_percentile_bootstrap():
    assert not hasattr(shopflow, "paired_bootstrap") and "paired_bootstrap" not in shopflow.__all__
