"""The net CFR's correlation-aware interval (``paired_difference(pairing="corrected")``, issue 33).

The net CFR (counterfactual flips minus repeat flips on the same items) used the MOVER with the item
correlation capped at 0: valid, but up to 2-3x the estimator's sampling spread where the two sides'
flips go together. ``corrected`` takes the correlation with Newcombe's continuity correction. Checked
here: the correction against an independent 2x2 formula; zero events give exactly the capped interval
(so the design calculator's zero-event bound is unchanged); identical sides never collapse; and by
seeded simulation of the study's design (1 counterfactual + 3 repeat pairs per item, the counterfactual
pair flipping whenever the first repeat pair does) coverage, the one-sided miss a gate turns into a
false pass, and a width clearly below the capped MOVER's on the same audits. 600 audits per cell:
coverage floor 95 % - 2 - 3 SE, upper miss at most 2.5 % + 1 + 3 SE (3.5 % + 3 SE).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cfbench.stats import coverage as C
from cfbench.stats.intervals import corrected_correlation, paired_difference

REPS = 600
SE = math.sqrt(0.95 * 0.05 / REPS)
FLOOR = 0.95 - 0.02 - 3 * SE
MISS_CAP = 0.035 + 3 * math.sqrt(0.035 * 0.965 / REPS)


def _newcombe_phi(x: np.ndarray, y: np.ndarray, half: bool = True) -> float:
    """Newcombe's (1998) continuity-corrected phi of the 2x2 table of two 0/1 vectors."""
    a = float(np.sum((x == 1) & (y == 1)))
    b = float(np.sum((x == 1) & (y == 0)))
    c = float(np.sum((x == 0) & (y == 1)))
    d = float(np.sum((x == 0) & (y == 0)))
    den = (a + b) * (c + d) * (a + c) * (b + d)
    if den == 0:
        return 0.0
    num = a * d - b * c
    num = max(num - x.size / (2 if half else 1), 0.0) if num > 0 else num
    return num / math.sqrt(den)


def test_the_correction_is_newcombes_phi_on_a_2x2_table():
    rng = np.random.default_rng(3)
    seen_pos = seen_neg = 0
    for _ in range(300):
        n = int(rng.integers(3, 30))
        x = (rng.random(n) < rng.random()).astype(float)
        y = np.where(rng.random(n) < rng.random(), x, (rng.random(n) < 0.4)).astype(float)
        got = corrected_correlation(x - x.mean(), y - y.mean(), cc=0.5)
        assert got == pytest.approx(_newcombe_phi(x, y), abs=1e-12), (x, y)
        # the default correction (CORRELATION_CC = 1) is twice Newcombe's: n instead of n / 2 in ad - bc
        assert corrected_correlation(x - x.mean(), y - y.mean()) == pytest.approx(
            _newcombe_phi(x, y, half=False), abs=1e-12), (x, y)
        seen_pos += got > 0.3
        seen_neg += got < 0
    assert seen_pos > 20 and seen_neg > 5  # both branches exercised


def test_zero_events_give_the_capped_interval_and_the_calculators_bound():
    from cfbench.studies.contact_center_qa.calculator import _net_lower

    cf = np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 1], float)
    rep = np.zeros(10)
    new = paired_difference(cf, np.ones(10), rep, np.full(10, 3.0), kind="rate", pairing="corrected")
    old = paired_difference(cf, np.ones(10), rep, np.full(10, 3.0), kind="rate", pairing="capped")
    assert (new["ci_low"], new["ci_high"]) == (old["ci_low"], old["ci_high"])
    assert new["ci_low"] == pytest.approx(float(_net_lower(cf[None].astype(int), 1, 0.95)[0]), rel=1e-12)
    none = paired_difference(np.zeros(10), np.ones(10), rep, np.full(10, 3.0), kind="rate", pairing="corrected")
    assert none["ci_low"] < 0 < none["ci_high"] <= 1.0


def _identical(k: int, n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """3 pairs per item on both sides, the same items flipping all their pairs on both (raw correlation 1)."""
    x = 3 * np.r_[np.ones(k), np.zeros(n - k)]
    return x, np.full(n, 3.0)


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_identical_sides_are_never_a_point(k):
    x, den = _identical(k)
    d = paired_difference(x, den, x, den, kind="rate", pairing="corrected")
    assert d["estimate"] == 0.0
    assert d["ci_high"] - d["ci_low"] > 0.1, d
    assert d["ci_low"] < 0 < d["ci_high"], d
    # the study's 1 + 3 design with the counterfactual pair flipping exactly where the repeats do
    cf = x / 3
    d = paired_difference(cf, np.ones(12), x, den, kind="rate", pairing="corrected")
    assert d["ci_low"] < 0 < d["ci_high"] and d["ci_high"] - d["ci_low"] > 0.15, d


def test_without_the_correction_identical_sides_collapse():
    # the reason for the correction: the same data with cc = 0 (the raw correlation, 1) shrink to the
    # gap between the two sides' asymmetric Clopper-Pearson arms, [-0.084, 0.084] for 4 of 12 items;
    # corrected (correlation 0.62) [-0.25, 0.25]; capped [-0.39, 0.39]
    from cfbench.stats import intervals as I

    x, den = _identical(4)
    saved = I.CORRELATION_CC
    try:
        I.CORRELATION_CC = 0.0
        raw = paired_difference(x, den, x, den, kind="rate", pairing="corrected")
    finally:
        I.CORRELATION_CC = saved
    new = paired_difference(x, den, x, den, kind="rate", pairing="corrected")
    capped = paired_difference(x, den, x, den, kind="rate")
    assert raw["ci_high"] < 0.1 and "+1.00 used as +1.00" in raw["ci_method"], raw
    assert 0.2 < new["ci_high"] < capped["ci_high"] - 0.1, (new, capped)
    assert new["ci_low"] == pytest.approx(-new["ci_high"]), new


#: (repeat pairs per item, items, repeat flip rate, true net, the most the width may be as a share of the capped
#: MOVER's on the same audits, or None where the estimate does not vary). 1 + 3 pairs (the corrected correlation):
#: the narrowing measured 0.97 / 0.83 / 0.73 / 0.71 / 0.60 of the capped width. 1 + 1 pairs (Tango, the committed
#: default's design): the family where the capped MOVER took 1.8-2.4 sampling spreads (bench_net_tango).
MATCHED_CASES = [(3, 8, 0.3, 0.1, 1.0), (3, 20, 0.3, 0.1, 0.9), (3, 20, 0.5, 0.05, 0.9), (3, 60, 0.3, 0.1, 0.8),
                 (3, 60, 0.5, 0.05, 0.8), (1, 8, 0.1, 0.1, 0.9), (1, 20, 0.1, 0.1, 0.9), (1, 20, 0.3, 0.0, None),
                 (1, 60, 0.3, 0.1, 0.9), (1, 60, 0.1, 0.0, None)]


@pytest.mark.parametrize("rep,n,p_rep,net,narrower", MATCHED_CASES)
def test_matched_flips_cover_and_are_narrower(rep, n, p_rep, net, narrower):
    # the counterfactual pair flips whenever the (first) repeat pair does, plus extra flips for the net
    kw = dict(n_items=n, net=net, p_rep=p_rep, pairs_per_item=1, repeat_pairs=rep, reps=REPS,
              seed=(300 if rep == 3 else 700) + n)
    new = C.matched_net_cfr(**kw, pairing="corrected")
    old = C.matched_net_cfr(**kw, pairing="capped")
    assert new["reps"] == REPS and new["zero_width"] == 0.0
    assert new["coverage"] >= FLOOR, new
    assert new["miss_high"] <= MISS_CAP and new["miss_low"] <= MISS_CAP, new
    assert new["max_abs_bound"] <= 1.0
    if narrower is not None:
        assert new["width_ratio"] <= narrower * old["width_ratio"], (new, old)


@pytest.mark.parametrize("n", [8, 20, 60])
def test_independent_repeat_noise_and_zero_events_keep_their_level(n):
    for net, p_rep in ((0.0, 0.0), (0.0, 0.05), (0.1, 0.2)):
        r = C.net_cfr_coverage(n_items=n, net=net, p_rep=p_rep, reps=REPS // 2, seed=n, pairing="corrected")
        assert r["coverage"] >= 0.95 - 0.02 - 3 * math.sqrt(0.95 * 0.05 / (REPS // 2)), (net, p_rep, r)
        assert r["miss_high"] <= 0.035 + 3 * math.sqrt(0.035 * 0.965 / (REPS // 2)), (net, p_rep, r)


def test_a_constant_judge_gets_no_pass_from_the_narrower_interval():
    # a judge answering the same on every transcript flips nowhere: zero events on both sides, the
    # interval is the capped one, and without a responsiveness check the gate says uninformative
    from cfbench.studies.contact_center_qa.gates import net_cfr_gate

    n = 200
    d = paired_difference(np.zeros(n), np.ones(n), np.zeros(n), np.full(n, 3.0), kind="rate", pairing="corrected")
    assert d["ci_high"] < 0.10 and "+0.00 used as +0.00" in d["ci_method"]
    capped = paired_difference(np.zeros(n), np.ones(n), np.zeros(n), np.full(n, 3.0), kind="rate")
    assert (d["ci_low"], d["ci_high"]) == (capped["ci_low"], capped["ci_high"])
    t = pd.DataFrame([{"judge": "constant", "dimension": "gender", "baseline": "robustness",
                       "estimate": d["estimate"], "counterfactual": d["est_1"], "robustness": d["est_2"],
                       "n_items": n, "n_pairs": n, "n_repeat_pairs": 3 * n, "ci_low": d["ci_low"],
                       "ci_high": d["ci_high"], "ci_method": d["ci_method"]}])
    resp = pd.DataFrame({"judge": ["constant"], "responsive": [False], "why": ["balanced accuracy 0.50"],
                         "balanced_accuracy": [0.5], "ci_low": [0.43]})
    g = net_cfr_gate(t, max_net=0.10, responsive=resp)
    assert g["verdict_kind"].iloc[0] == "uninformative"
    assert g["verdict_kind"].iloc[0] != "pass"


@pytest.mark.parametrize("n", [2, 3, 8, 40])
def test_bounds_stay_in_range_on_hostile_counts(n):
    # all zero, all flipping, one item, alternating, sides opposite or identical; 1 + 3 and 3 + 3 pairs
    rng = np.random.default_rng(n)
    patterns = [np.zeros(n), np.full(n, 3.0), np.eye(n)[0] * 3, np.arange(n) % 2 * 3.0, rng.integers(0, 4, n) * 1.0]
    for x2 in patterns:
        for x1 in (x2, 3.0 - x2, np.roll(x2, 1)):
            for m1 in (1.0, 3.0):
                num1 = x1 / 3.0 * m1 if m1 == 1.0 else x1
                num1 = np.round(num1) if m1 == 1.0 else num1
                d = paired_difference(num1, np.full(n, m1), x2, np.full(n, 3.0), kind="rate", pairing="corrected")
                lo, hi, est = d["ci_low"], d["ci_high"], d["estimate"]
                assert np.isfinite(lo) and np.isfinite(hi), (x1, x2, d)
                assert -1.0 <= lo <= est <= hi <= 1.0, (x1, x2, d)
                assert hi - lo > 0, (x1, x2, d)


def test_bench_net_tango_reads_the_same_audits_both_ways(import_benchmark):
    """``benchmarks/bench_net_tango.py`` (one counterfactual and one repeat pair per item): on one small cell of
    matched flips with true net 0, the capped MOVER used before passes almost no audit at 36 items and Tango's
    interval, now in use, passes every one (its bound with no discordant item is z²/(n+z²) = 0.096 < 0.10);
    the bench's in-use bounds are Tango's interval called directly."""
    bench = import_benchmark("bench_net_tango")
    x1, x2 = bench.draws("matched", 0.3, 0.0, 200, 36, 1)
    _, hi_mover = bench.bounds(x1, x2, "mover")
    lo_tango, hi_tango = bench.bounds(x1, x2, "tango")
    assert np.mean(hi_mover < bench.GATE_MAX) < 0.05 and np.all(hi_tango < bench.GATE_MAX)
    ref_lo, ref_hi = bench.tango_direct(x1, x2)
    np.testing.assert_allclose(lo_tango, ref_lo, rtol=0, atol=1e-9)
    np.testing.assert_allclose(hi_tango, ref_hi, rtol=0, atol=1e-9)
    d = paired_difference(x1[0], np.ones(36), x2[0], np.ones(36), kind="rate", pairing="corrected")
    assert d["ci_method"].startswith("tango score interval") and "one repeat pair per item" in d["ci_method"]


# --- one counterfactual and one repeat pair per item (the committed default's design): Tango ------------------

@pytest.mark.parametrize("n", [8, 20, 60])
def test_one_pair_per_side_is_tangos_interval_on_the_items_2x2_counts(n):
    from cfbench.stats.matched import tango_interval

    rng = np.random.default_rng(40 + n)
    for _ in range(25):
        cf = (rng.random(n) < rng.random()).astype(float)
        rep = np.where(rng.random(n) < 0.5, cf, rng.random(n) < 0.2).astype(float)
        d = paired_difference(cf, np.ones(n), rep, np.ones(n), kind="rate", pairing="corrected")
        b, c = int(((cf == 1) & (rep == 0)).sum()), int(((cf == 0) & (rep == 1)).sum())
        lo, hi = tango_interval(b, c, n)
        assert (d["ci_low"], d["ci_high"]) == pytest.approx((float(lo), float(hi)), abs=1e-12), (cf, rep, d)
        assert d["estimate"] == pytest.approx((b - c) / n)


@pytest.mark.parametrize("n", [20, 60])
def test_one_pair_per_side_with_independent_noise_keeps_its_level(n):
    for net, p_rep in ((0.0, 0.05), (0.1, 0.05), (0.0, 0.3), (0.1, 0.3)):
        r = C.net_cfr_coverage(n_items=n, net=net, p_rep=p_rep, rep_pairs=1, reps=REPS // 2, seed=900 + n,
                               pairing="corrected")
        assert r["coverage"] >= 0.95 - 0.02 - 3 * math.sqrt(0.95 * 0.05 / (REPS // 2)), (net, p_rep, r)
        assert r["miss_high"] <= 0.035 + 3 * math.sqrt(0.035 * 0.965 / (REPS // 2)), (net, p_rep, r)


def test_a_constant_judge_with_one_pair_per_side_is_never_passed():
    # no flip on either side at 200 transcripts: Tango's [-0.019, 0.019] lies under 0.10, and the gate still
    # says uninformative because the constant judge is not shown to respond
    from cfbench.studies.contact_center_qa.gates import net_cfr_gate

    n = 200
    d = paired_difference(np.zeros(n), np.ones(n), np.zeros(n), np.ones(n), kind="rate", pairing="corrected")
    assert d["ci_high"] < 0.10 and d["ci_method"].startswith("tango")
    t = pd.DataFrame([{"judge": "constant", "dimension": "gender", "baseline": "robustness",
                       "estimate": d["estimate"], "counterfactual": d["est_1"], "robustness": d["est_2"],
                       "n_items": n, "n_pairs": n, "n_repeat_pairs": n, "ci_low": d["ci_low"],
                       "ci_high": d["ci_high"], "ci_method": d["ci_method"]}])
    resp = pd.DataFrame({"judge": ["constant"], "responsive": [False], "why": ["balanced accuracy 0.50"],
                         "balanced_accuracy": [0.5], "ci_low": [0.43]})
    assert net_cfr_gate(t, max_net=0.10, responsive=resp)["verdict_kind"].iloc[0] == "uninformative"


def test_one_pair_per_side_needs_35_transcripts_to_pass_and_the_calculator_says_so():
    from cfbench.studies.contact_center_qa.calculator import gate_forecast, gate_items_needed

    for n, passes in ((34, False), (35, True)):
        d = paired_difference(np.zeros(n), np.ones(n), np.zeros(n), np.ones(n), kind="rate", pairing="corrected")
        assert (d["ci_high"] < 0.10) is passes, (n, d)
    assert gate_items_needed(0.10, repeat_pairs=1) == 35 == gate_forecast(net=0, noise=0, repeats=1)
    # several repeat pairs: the MOVER's repeat side with no flip, 1 - 0.025^(1/n) < 0.10 from 36
    assert gate_items_needed(0.10, repeat_pairs=3) == 36 == gate_forecast(net=0, noise=0, repeats=3)
