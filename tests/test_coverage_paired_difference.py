"""Net CFR when the counterfactual and repeat flips match item by item (issue 21 follow-up).

The earlier coverage checks drew the two sides with only a shared item factor. Here each item
has a latent instability u_i ~ Beta (mean = repeat flip rate) and the counterfactual pair flips
whenever the repeat pair does, plus extra flips at the net rate, so the two sides' item totals
are strongly correlated (cfbench.stats.coverage.matched_net_cfr). With MOVER using the
estimated correlation (~1) the interval collapsed and a gate at 0.10 passed a judge whose true
net CFR is 0.10 in 21 % of audits at 8 items. Tolerances as in test_coverage_intervals: 1000
replications, coverage >= 95 % - 2 - 3 SE, gate false-pass <= 5 % + 3 SE.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cfbench.stats import coverage as C
from cfbench.stats.intervals import paired_difference

REPS = 1000
FLOOR = 0.95 - 0.02 - 3 * math.sqrt(0.95 * 0.05 / REPS)
GATE_TOL = 0.05 + 3 * math.sqrt(0.05 * 0.95 / REPS)


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("n", [5, 8, 12, 20, 60])
def test_matched_sides_at_the_gate_maximum(n, m):
    r = C.matched_net_cfr(n_items=n, net=0.10, p_rep=0.3, pairs_per_item=m, reps=REPS, seed=100 * m + n)
    assert r["reps"] == REPS
    assert r["coverage"] >= FLOOR, (n, m, r)
    assert r["false_pass"] <= GATE_TOL, (n, m, r)


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("n", [5, 8, 12, 20])
def test_identical_sides_cover_zero_and_never_collapse(n, m):
    r = C.matched_net_cfr(n_items=n, p_rep=0.3, pairs_per_item=m, identical=True, reps=REPS, seed=7 * n + m)
    assert r["coverage"] >= FLOOR, (n, m, r)
    assert r["zero_width"] == 0.0, (n, m, r)


def test_the_reported_example_no_longer_passes_the_gate():
    # 8 items, the same 3 items flip under the counterfactual and under the repeat: the old
    # interval was about [-0.09, +0.09]; a net CFR of 0.10 is entirely plausible from 8 items.
    flips = np.array([1, 1, 1, 0, 0, 0, 0, 0], float)
    one = np.ones(8)
    d = paired_difference(flips, one, flips, one, kind="rate")
    assert d["estimate"] == 0.0
    assert d["ci_high"] >= 0.25 and d["ci_low"] <= -0.25, d
    assert "capped at 0" in d["ci_method"] and "+1.00" in d["ci_method"], d["ci_method"]
    # Newcombe's independent combination of the two Clopper-Pearson intervals of 3/8
    from scipy import stats
    lo, hi = stats.beta.ppf(0.025, 3, 6), stats.beta.ppf(0.975, 4, 5)
    assert d["ci_high"] == pytest.approx(np.hypot(hi - 3 / 8, 3 / 8 - lo), rel=1e-9)


@pytest.mark.parametrize("k", [0, 2, 8])
def test_identical_sides_are_never_a_point(k):
    x = np.r_[np.ones(k), np.zeros(8 - k)]
    d = paired_difference(x, np.ones(8), x, np.ones(8), kind="rate")
    assert d["ci_high"] - d["ci_low"] > 0.2, d
    assert d["ci_low"] < 0 < d["ci_high"] or (k == 0 and d["ci_low"] <= 0 < d["ci_high"]), d
    s = np.array([0.0, 3, 5, 0, 10, 2, 0, 4])
    dm = paired_difference(s, np.ones(8), s, np.ones(8), kind="mean", n_boot=200,
                           rng=np.random.default_rng(0), value_range=(0.0, 100.0))
    assert dm["ci_high"] - dm["ci_low"] > 0, dm


def test_a_negative_correlation_is_still_used():
    # sides that move in opposite directions item by item: the interval is wider than Newcombe's
    a = np.array([1, 1, 1, 1, 0, 0, 0, 0], float)
    b = 1 - a
    one = np.ones(8)
    d = paired_difference(a, one, b, one, kind="rate")
    assert "-1.00 used as -1.00" in d["ci_method"], d["ci_method"]
    from scipy import stats
    lo, hi = stats.beta.ppf(0.025, 4, 5), stats.beta.ppf(0.975, 5, 4)
    assert d["ci_high"] == pytest.approx((hi - 0.5) + (0.5 - lo), rel=1e-9)


def test_the_gate_reads_the_capped_interval():
    from cfbench.studies.contact_center_qa.gates import net_cfr_gate
    flips = np.array([1, 1, 1, 0, 0, 0, 0, 0], float)
    d = paired_difference(flips, np.ones(8), flips, np.ones(8), kind="rate")
    t = pd.DataFrame([{"judge": "j", "dimension": "gender", "baseline": "robustness",
                       "estimate": d["estimate"], "counterfactual": d["est_1"], "robustness": d["est_2"],
                       "n_items": 8, "n_pairs": 8, "n_repeat_pairs": 8, "ci_low": d["ci_low"],
                       "ci_high": d["ci_high"], "ci_method": d["ci_method"]}])
    g = net_cfr_gate(t, max_net=0.10)
    assert g["verdict_kind"].iloc[0] == "uninformative"  # no responsiveness check given: never a pass
    assert net_cfr_gate(t, max_net=0.10, responsive=pd.DataFrame({"judge": ["j"], "responsive": [True], "why": ["ok"],
                                                                  "balanced_accuracy": [1.0], "ci_low": [0.9]}))[
        "verdict"].iloc[0] == "inconclusive"


@pytest.mark.parametrize("num1,den1,field,record", [([1, 5], [3, 3], "num1", 1), ([1, -1], [3, 3], "num1", 1),
                                                    ([1, 0], [3, -2], "den1", 1)])
def test_impossible_counts_are_refused_with_the_item_and_field(num1, den1, field, record):
    """More flips than pairs, negative flips or a negative number of pairs used to go to the bootstrap-t and
    come out as an interval; now one line names the item and the argument."""
    from cfbench.core.errors import InputError

    with pytest.raises(InputError) as err:
        paired_difference(np.array(num1, float), np.array(den1, float), np.zeros(2), np.full(2, 3.0), kind="rate",
                          pairing="items")
    assert err.value.field == field and err.value.record == record
    with pytest.raises(InputError, match="field 'num2'"):
        paired_difference(np.zeros(2), np.full(2, 3.0), np.array([4.0, 0.0]), np.full(2, 3.0), kind="rate")
    with pytest.raises(InputError, match="one length"):
        paired_difference(np.zeros(2), np.full(3, 3.0), np.zeros(2), np.full(2, 3.0), kind="rate")
    # an item with no pairs is not read, whatever its count; a mean's numerator may be negative
    got = paired_difference(np.array([1.0, 9.0, 2.0]), np.array([3.0, 0.0, 3.0]), np.array([0.0, 0.0, 1.0]),
                            np.array([3.0, 0.0, 3.0]), kind="rate", pairing="items")
    assert got["n_items"] == 2
    got = paired_difference(np.array([-1.0, 2.0, -3.0]), np.ones(3), np.zeros(3), np.ones(3), kind="mean")
    assert got["estimate"] == pytest.approx(-2 / 3)
