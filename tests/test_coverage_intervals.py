"""Seeded Monte-Carlo coverage of every interval cfbench reports, at the sizes the tool uses.

Each check simulates audits with a known truth (cfbench.stats.coverage) and runs the interval
code the tables use. Tolerances cannot pass by luck: with R replications the binomial SE of a
coverage estimate near 0.95 is sqrt(0.95 * 0.05 / R) (<= 0.7 points for R >= 970); a check
asks for coverage >= nominal - 2 points - 3 SE, and for a gate's upper bound a one-sided miss
<= 5 % + 3 SE. The sizes and truths are the ones the contact-center default runs at (8 items,
one counterfactual pair and 3 repeat pairs per item, true flip rates near 0).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cfbench.metrics import counterfactual as M
from cfbench.stats import coverage as C
from cfbench.stats.intervals import (clustered_rate_intervals, items_needed_zero_events, mean_interval_t,
                                     paired_difference)

NOMINAL = 0.95


def _floor(reps: int) -> float:
    se = math.sqrt(NOMINAL * (1 - NOMINAL) / reps)
    assert se <= 0.007
    return NOMINAL - 0.02 - 3 * se


@pytest.mark.parametrize("n", [5, 8, 12, 20, 60])
@pytest.mark.parametrize("m", [1, 3])
def test_flip_rate_interval_covers(n, m):
    reps = 2000
    for p in (0.0, 0.02, 0.05, 0.1, 0.2, 0.5):
        r = C.rate_coverage(n_items=n, p=p, pairs_per_item=m, reps=reps, seed=n * 10 + m)
        assert r["coverage"] >= _floor(reps), (n, m, p, r)
        # the bound a gate reads: one-sided miss within nominal 2.5 % + 3 SE
        assert r["miss_high"] <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / reps), (n, m, p, r)


@pytest.mark.parametrize("shape", ["halfnormal", "skewed", "zero_inflated", "signed"])
@pytest.mark.parametrize("n", [8, 12, 20])
@pytest.mark.parametrize("m", [1, 3])
def test_mean_interval_covers_from_8_items(shape, n, m):
    reps = 1000
    r = C.mean_coverage(n_items=n, effect=2.0, shape=shape, pairs_per_item=m, reps=reps, n_boot=1000,
                        seed=100 * m + n)
    assert r["coverage"] >= _floor(reps), (shape, n, m, r)


@pytest.mark.parametrize("shape, m", [("skewed", 1), ("zero_inflated", 3), ("skewed", 3)])
def test_mean_interval_reaches_93_percent_where_it_used_to_fall_short(shape, m):
    # the cases that covered 92.8-93.3 % at 8 items before the K/(K-1) widening of the bootstrap-t
    # (docs/statistics.md); 3000 audits (SE 0.4 points): the aim of 93 % must hold as measured,
    # without the 3-SE allowance, and the upper side (the weaker end for skewed items) must not miss
    # more than 5 %
    reps = 3000
    r = C.mean_coverage(n_items=8, effect=2.0, shape=shape, pairs_per_item=m, reps=reps, n_boot=1000, seed=808 + m)
    assert r["coverage"] >= 0.93, (shape, m, r)
    assert r["miss_high"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps), (shape, m, r)


def test_mean_interval_widening_only_widens_and_vanishes_with_many_items():
    # the (K/(K-1))^2 factor scales the bootstrap-t half-widths: the widened interval contains the one
    # without it, and at 200 items the two differ by about 1 %; resample SEs floored (floored_se)
    from cfbench.stats.bootstrap import resample_counts
    from cfbench.stats.intervals import bootstrap_t_rows

    for K in (8, 200):
        rng = np.random.default_rng(K)
        y = rng.gamma(2.0, 1.0, size=(50, K))
        w = resample_counts(K, 500, np.random.default_rng(1))
        lo, hi = bootstrap_t_rows(y, np.ones_like(y), w)
        r = y.mean(axis=1)
        se = y.std(axis=1, ddof=1) / math.sqrt(K)
        wt = w.T
        rb = (y @ wt) / K
        seb = np.sqrt(np.maximum((y * y) @ wt - K * rb * rb, 0) / (K - 1)) / math.sqrt(K)
        seb = np.where(seb <= 1e-9 * se[:, None], se[:, None] / math.sqrt(K), np.maximum(seb, se[:, None] / K))
        tb = (rb - r[:, None]) / seb
        t_lo, t_hi = np.quantile(tb, 0.025, axis=1), np.quantile(tb, 0.975, axis=1)
        for i in range(len(y)):  # the long side of the row's t values at 1 %, at most 1.35x as far from 0
            if -t_lo[i] > t_hi[i]:
                t_lo[i] = max(np.quantile(tb[i], 0.01), 1.35 * t_lo[i])
            else:
                t_hi[i] = min(np.quantile(tb[i], 0.99), 1.35 * t_hi[i])
        q = stats.t.ppf(0.975, K - 1)
        lo0, hi0 = np.minimum(r - t_hi * se, r - q * se), np.maximum(r - t_lo * se, r + q * se)
        c = (K / (K - 1)) ** 2
        assert np.allclose(lo, np.minimum(r - c * t_hi * se, r - q * se))
        assert np.allclose(hi, np.maximum(r - c * t_lo * se, r + q * se))
        assert (lo <= lo0 + 1e-12).all() and (hi >= hi0 - 1e-12).all()
        grow = (hi - lo) / (hi0 - lo0) - 1
        assert grow.max() <= (0.32 if K == 8 else 0.011) and grow.max() > 0


@pytest.mark.parametrize("n", [5, 8, 20, 60])
def test_net_cfr_interval_covers(n):
    reps = 1000
    for p_rep, net in ((0.0, 0.0), (0.05, 0.0), (0.05, 0.1), (0.2, 0.1)):
        r = C.net_cfr_coverage(n_items=n, net=net, p_rep=p_rep, reps=reps, seed=n)
        assert r["coverage"] >= _floor(reps), (n, p_rep, net, r)


@pytest.mark.parametrize("n", [5, 8, 20, 60])
def test_gate_false_pass_at_the_maximum(n):
    reps = 1000
    tol = 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    for p_rep in (0.0, 0.05, 0.2):
        fp = C.gate_false_pass(n_items=n, max_net=0.10, p_rep=p_rep, reps=reps, seed=n)
        assert fp <= tol, (n, p_rep, fp)


@pytest.mark.parametrize("kind,n", [("rate", 8), ("rate", 20), ("mean", 8), ("mean", 20)])
def test_judge_difference_interval_covers(kind, n):
    reps = 1000
    delta, base = (0.1, 0.1) if kind == "rate" else (1.0, 2.0)
    for d in (0.0, delta):
        r = C.judge_delta_coverage(n_items=n, delta=d, base=base, kind=kind, reps=reps, n_boot=400, seed=n)
        assert r["coverage"] >= _floor(reps), (kind, n, d, r)


# ---- the specific regressions of the issue ----

def test_zero_flips_in_8_pairs_leave_a_wide_upper_bound():
    f = pd.DataFrame({"judge": "j", "dimension": "g", "item_id": np.repeat([f"i{k}" for k in range(8)], 2),
                      "question_id": "q", "condition": ["a", "b"] * 8, "answer_yes": 1.0, "parse_ok": True})
    t = M.flip_rate(f, value="answer_yes", unit=["item_id", "question_id"], by=["judge", "dimension"]).iloc[0]
    assert t["cfr"] == 0 and t["ci_low"] == 0
    assert t["ci_high"] >= 0.25
    # the exact two-sided 95 % bound for 0 of 8 (Clopper-Pearson: 1 - 0.025^(1/8))
    assert t["ci_high"] == pytest.approx(1 - 0.025 ** (1 / 8))


def test_all_zero_masd_is_not_a_point():
    f = pd.DataFrame({"judge": "j", "dimension": "g", "item_id": np.repeat([f"i{k}" for k in range(8)], 2),
                      "question_id": "q", "condition": ["a", "b"] * 8, "p": 40.0, "parse_ok": True})
    kw = dict(value="p", unit=["item_id", "question_id"], by=["judge", "dimension"])
    t = M.mean_abs_score_diff(f, **kw, score_range=(0, 100)).iloc[0]
    assert t["masd"] == 0 and t["ci_low"] == 0
    assert t["ci_high"] == pytest.approx(100 * (1 - 0.025 ** (1 / 8)))
    # without a range there is nothing to bound it with: NaN and the reason, never [0, 0]
    u = M.mean_abs_score_diff(f, **kw).iloc[0]
    assert math.isnan(u["ci_high"]) and u["ci_method"].startswith("none: no spread")


def test_one_item_gives_nan_not_a_point():
    est, lo, hi, how = clustered_rate_intervals(np.array([1.0]), np.array([3.0]), np.array([0]))
    assert est[0] == pytest.approx(1 / 3) and math.isnan(lo[0]) and math.isnan(hi[0])
    assert how[0].startswith("none: one item")
    lo, hi, how = mean_interval_t(np.array([5.0]), np.array([1.0]), n_boot=100, rng=np.random.default_rng(0))
    assert math.isnan(lo) and how.startswith("none: one item")
    d = paired_difference(np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([3.0, 3.0]),
                          kind="rate")
    assert d["n_items"] == 1 and math.isnan(d["ci_low"]) and d["ci_method"].startswith("none")


def test_items_needed_is_the_exact_zero_event_bound():
    for mx in (0.05, 0.1, 0.2, 0.3):
        k = items_needed_zero_events(mx)
        assert 1 - 0.025 ** (1 / k) < mx <= 1 - 0.025 ** (1 / (k - 1))
        # independent: statsmodels' Clopper-Pearson ("beta") for 0 of k
        from statsmodels.stats.proportion import proportion_confint
        assert proportion_confint(0, k, alpha=0.05, method="beta")[1] < mx
        assert proportion_confint(0, k - 1, alpha=0.05, method="beta")[1] >= mx


def test_rate_interval_with_one_pair_per_item_is_clopper_pearson():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((0, 5), (1, 8), (3, 8), (8, 8), (7, 20)):
        x = np.r_[np.ones(k), np.zeros(n - k)]
        _, lo, hi, _ = clustered_rate_intervals(x, np.ones(n), np.zeros(n, int))
        want = proportion_confint(k, n, alpha=0.05, method="beta")
        assert (lo[0], hi[0]) == pytest.approx(want, abs=1e-10)


def test_mover_with_independent_sides_is_newcombe():
    # zero correlation and Wilson sides reproduce Newcombe's published example (method 10):
    # 56/70 - 48/80 -> [0.0524, 0.3339] (Newcombe 1998, Table II)
    from cfbench.stats.intervals import mover_difference
    from cfbench.stats.proportions import wilson_interval

    l1, u1 = wilson_interval(56, 70)
    l2, u2 = wilson_interval(48, 80)
    lo, hi = mover_difference(56 / 70, l1, u1, 48 / 80, l2, u2, 0.0)
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)


def test_t_part_of_the_mean_interval_is_the_t_interval():
    # with one pair per item the interval contains the textbook t interval on the item values
    y = np.array([0.0, 1.0, 3.0, 2.0, 8.0, 1.0, 0.5, 2.5])
    lo, hi, how = mean_interval_t(y, np.ones(8), n_boot=2000, rng=np.random.default_rng(0))
    half = stats.t.ppf(0.975, 7) * y.std(ddof=1) / math.sqrt(8)
    assert lo <= y.mean() - half + 1e-12 and hi >= y.mean() + half - 1e-12
    assert how == "bootstrap-t and t over items (union)"
