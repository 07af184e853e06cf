"""The threshold-sweep figure shows the contract's limit and says so in words when nothing moved."""

from __future__ import annotations

import numpy as np
import pytest

from cfbench.io.pairs import load_pairs
from cfbench.studies.shopflow import shipped, threshold_sweep
from cfbench.studies.shopflow.figures import plot_threshold_sweep

V = ["formal", "conversational"]
TS = np.round(np.arange(0.05, 0.951, 0.01), 2)


def _texts(fig):
    ax = fig.axes[0]
    return [t.get_text() for t in ax.texts], [l.get_label() for l in ax.get_lines()], ax


@pytest.fixture(scope="module")
def seed_frame():
    return load_pairs(shipped("seed_observations.csv"), variants=V)


def test_limit_lines_are_drawn_and_labelled_at_plus_and_minus_the_contract_maximum(seed_frame):
    sw = threshold_sweep(seed_frame, TS, variants=V)
    fig = plot_threshold_sweep(sw, threshold=0.7, variants=V, tpr_limit=0.1, fpr_limit=0.1, n_pairs=10)
    texts, labels, ax = _texts(fig)
    assert "contract limit ±0.10 (TPR and FPR gaps)" in labels
    ys = sorted({round(float(l.get_ydata()[0]), 6) for l in ax.get_lines()
                 if len(set(np.asarray(l.get_ydata(), dtype=float))) == 1 and l.get_color() == "firebrick"})
    assert ys == [-0.1, 0.1]
    assert 0.1 in [round(t, 4) for t in ax.get_yticks()] and -0.1 in [round(t, 4) for t in ax.get_yticks()]
    # the plotted TPR line is the signed difference formal − conversational (sign convention of the gate)
    tpr = next(l for l in ax.get_lines() if l.get_label() == "TPR gap")
    at = list(TS).index(0.7)
    assert tpr.get_ydata()[at] == pytest.approx(5 / 6 - 3 / 6)
    assert ax.get_ylabel() == "gap, formal − conversational"
    assert not any("no pair changes route" in t for t in texts)


def test_nothing_moved_is_said_in_words(seed_frame):
    f = seed_frame.copy()
    formal = f[f.variant == "formal"].set_index("pair_id")["score"]
    f["score"] = f["pair_id"].map(formal)  # both wordings scored the same: no flip anywhere
    sw = threshold_sweep(f, TS, variants=V)
    texts, _, _ = _texts(plot_threshold_sweep(sw, threshold=0.7, variants=V, tpr_limit=0.1, fpr_limit=0.1,
                                              n_pairs=10))
    assert any("no pair changes route at any threshold: every gap is 0 (0 flips in 10 pairs)" in t for t in texts)


def test_undefined_gap_is_named_not_drawn_as_zero(seed_frame):
    ready_only = seed_frame[seed_frame["expected_ready"]]
    sw = threshold_sweep(ready_only, TS, variants=V)
    texts, labels, _ = _texts(plot_threshold_sweep(sw, threshold=0.7, variants=V, tpr_limit=0.1, fpr_limit=0.2))
    assert any("FPR gap undefined at every threshold (no needs-review rows)" in t for t in texts)
    assert "FPR gap" not in labels
    assert {"contract limit ±0.10 (TPR gap)", "contract limit ±0.20 (FPR gap)"} <= set(labels)
