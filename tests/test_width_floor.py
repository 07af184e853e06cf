"""The oracle of ``benchmarks/bench_width_floor.py`` on data where its answer is known by construction.

Normal items: the studentized mean has a t distribution with K - 1 degrees of freedom, so the oracle's
pivot quantiles are the t quantiles, the equal-tailed oracle is the t interval (coverage 95 %, each
side 2.5 %) and its mean width over the sampling spread is ``2 t_(K-1) c4(K) / (2 z_0.975)`` with
``c4`` the bias of the sample standard deviation. Exponential items (skewed): the 3.5 / 3.5 % oracle
misses 3.5 % on each side by construction of its quantiles, however long the tail of the pivot.
Seeded; tolerances are 3-5 Monte Carlo standard errors and far below the error of a wrong pivot
(normal quantiles instead of t ones: 0.40 at 8 items, 0.13 at 20; the t interval on exponential items misses
above in about 8 %).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from cfbench.stats import coverage as C

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench(import_benchmark):
    return import_benchmark("bench_width_floor")


def _c4(K: int) -> float:
    return math.sqrt(2 / (K - 1)) * math.exp(math.lgamma(K / 2) - math.lgamma((K - 1) / 2))


@pytest.mark.parametrize("K", [8, 20])
def test_oracle_on_normal_items_is_the_t_interval(bench, K):
    rng = np.random.default_rng(40 + K)
    cal = rng.normal(3.0, 2.0, size=(40_000, K))
    qs = bench.pivot_quantiles(cal, np.ones_like(cal), 3.0)
    q_lo, q_hi = qs["oracle, equal tails 2.5 / 2.5 %"]
    t = stats.t.ppf(0.975, K - 1)
    assert abs(q_hi - t) < 0.08 and abs(q_lo + t) < 0.08, (q_lo, q_hi, t)

    ev = rng.normal(3.0, 2.0, size=(60_000, K))
    r = C._summary(*bench.oracle_bounds(ev, np.ones_like(ev), None, q_lo, q_hi), 3.0, ev.mean(1))
    assert abs(r["coverage"] - 0.95) < 0.006, r
    assert abs(r["miss_low"] - 0.025) < 0.005 and abs(r["miss_high"] - 0.025) < 0.005, r
    expected = 2 * t * _c4(K) / (2 * stats.norm.ppf(0.975))   # 1.164 at 8 items, 1.054 at 20
    assert abs(r["width_ratio"] - expected) < 0.03, (r["width_ratio"], expected)

    w = bench.why(cal, np.ones_like(cal), 3.0)
    assert abs(w["mean_se"] - _c4(K)) < 0.01, w
    assert w["flat"] == 0.0 and abs(w["corr"]) < 0.03, w


def test_oracle_split_misses_its_level_on_skewed_items(bench):
    K = 20
    rng = np.random.default_rng(7)
    cal = rng.exponential(1.0, size=(40_000, K))
    qs = bench.pivot_quantiles(cal, np.ones_like(cal), 1.0)
    ev = rng.exponential(1.0, size=(20_000, K))
    one = np.ones_like(ev)
    r = C._summary(*bench.oracle_bounds(ev, one, None, *qs["oracle, 3.5 / 3.5 %"]), 1.0, ev.mean(1))
    assert abs(r["miss_low"] - 0.035) < 0.007 and abs(r["miss_high"] - 0.035) < 0.007, r
    # the t interval on the same audits misses above far more often: the pivot's lower tail is long
    t = stats.t.ppf(0.975, K - 1)
    se = ev.std(1, ddof=1) / np.sqrt(K)
    t_row = C._summary(ev.mean(1) - t * se, ev.mean(1) + t * se, 1.0, ev.mean(1))
    assert t_row["miss_high"] > 0.055, t_row
    w = bench.why(cal, np.ones_like(cal), 1.0)
    assert w["corr"] > 0.5 and w["T25"] < -t - 0.3, w   # se grows with the estimate; long lower tail


def test_quick_run_prints_every_row(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_width_floor.py"), "--quick", "--only",
                          "pyes_heavy_tail"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for n in (8, 20, 60):
        for method in ("cfbench (after)", "plain bootstrap-t", "oracle, equal tails", "oracle, 3.5 / 3.5 %",
                       "one fixed pair"):
            assert f"| pyes_heavy_tail | {n} | {method}" in out.stdout, (n, method)
    assert "| pyes_heavy_tail | 20 | 0.0 |" in out.stdout       # the why table: no audit without spread
    assert "* pyes_heavy_tail n=20:" in out.stdout and "Run time:" in out.stdout


@pytest.fixture(scope="module")
def calibrated(import_benchmark):
    return import_benchmark("bench_calibrated_boot")


def _reference_miss(y, idx, jdx, vr, r, level, side):
    """The plain bootstrap-t of each outer sample ``y[idx[b]]`` (inner samples ``[jdx[b]]`` of it), one
    sample at a time with the textbook formulas: the share whose bound on ``side`` at T quantile
    ``level`` misses ``r``. Samples without spread get the all-equal rule (left out without a range)."""
    K = len(y)
    misses = n = 0
    for b in range(len(idx)):
        x = y[idx[b]]
        rb = x.mean()
        if np.ptp(x) <= 1e-12 * max(1.0, abs(rb)):
            if vr is None:
                continue
            share = 1 - 0.025 ** (1 / K)
            n += 1
            misses += (rb + (vr[1] - rb) * share < r) if side == "hi" else (rb - (rb - vr[0]) * share > r)
            continue
        n += 1
        sb = x.std(ddof=1) / math.sqrt(K)
        xx = x[jdx[b]]
        sbb = xx.std(1, ddof=1) / math.sqrt(K)
        sbb = np.where(sbb <= 1e-9 * sb, sb / math.sqrt(K), np.maximum(sbb, sb / K))
        bound = rb - np.quantile((xx.mean(1) - rb) / sbb, min(max(level, 0.0), 1.0)) * sb
        misses += (bound < r) if side == "hi" else (bound > r)
    return misses / n


@pytest.mark.parametrize("case", ["exponential", "lognormal", "mostly_zero_ranged"])
def test_calibrated_levels_hit_the_aim_of_a_one_sample_reference(calibrated, case):
    """The vectorised calibration (prepivots + calibrated_levels) against loops over explicit outer and
    inner samples: at the chosen level the reference's estimated miss crosses the aim (2.5 %) on each
    side, to within the resolution of 200 outer x 100 inner resamples. Checked to fail with the prepivots
    mirrored or the two levels swapped (every case), and without the resample-SE floor (the mostly-zero
    case, whose resamples often show no spread)."""
    K, B1, B2, aim = 10, 200, 100, 0.025
    rng = np.random.default_rng({"exponential": 1, "lognormal": 2, "mostly_zero_ranged": 3}[case])
    vr = None
    if case == "exponential":
        y = rng.exponential(1.0, K)
    elif case == "lognormal":
        y = np.exp(rng.normal(0, 1.5, K))
    else:
        y, vr = rng.choice([0.0, 0.0, 0.0, 1.0, 2.0], K).astype(float), (0.0, 9.0)
        y[:2] = [0.0, 1.0]                                   # the sample itself has spread
    idx = rng.integers(0, K, (B1, K))
    jdx = rng.integers(0, K, (B1, B2, K))
    w = np.stack([np.bincount(i, minlength=K) for i in idx]).astype(float)
    comp = np.take_along_axis(idx[:, None, :], jdx, axis=2).reshape(B1 * B2, K)
    w_inner = np.stack([np.bincount(c, minlength=K) for c in comp]).astype(float)
    num = y[None]
    u, m_lo, m_hi = calibrated.prepivots(num, np.ones_like(num), vr, w, w_inner)
    lvl_lo, lvl_hi = calibrated.calibrated_levels(u, m_lo, m_hi, vr is not None, np.array([aim]), np.array([aim]))
    r, d, n = y.mean(), 1.5 / B2, np.isfinite(u).sum() if vr is None else B1
    tol = 1.5 / n
    # the upper bound misses less as its level falls; the lower bound as its level rises. Where even the
    # outermost inner quantile misses more than the aim, the level saturates at 0 (or 1).
    hi, lo = lvl_hi[0], lvl_lo[0]
    assert _reference_miss(y, idx, jdx, vr, r, hi + d, "hi") >= aim - tol, hi
    assert hi <= d or _reference_miss(y, idx, jdx, vr, r, hi - d, "hi") <= aim + tol, hi
    assert _reference_miss(y, idx, jdx, vr, r, lo - d, "lo") >= aim - tol, lo
    assert lo >= 1 - d or _reference_miss(y, idx, jdx, vr, r, lo + d, "lo") <= aim + tol, lo
    assert _reference_miss(y, idx, jdx, vr, r, 0.5, "hi") > 0.3      # the check is not vacuous
    # inner_counts: K draws per inner sample, only from the items of its outer sample
    wi = calibrated.inner_counts(w[:5], 50, rng)
    assert np.all(wi.sum(1) == K) and np.all(wi.reshape(5, 50, K)[np.broadcast_to(w[:5, None] == 0, (5, 50, K))] == 0)


def test_calibrated_quick_run_prints_every_row(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_calibrated_boot.py"), "--quick", "--only",
                          "mean_skewed"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for n in (8, 20, 60):
        row = next(line for line in out.stdout.splitlines() if line.startswith(f"| mean_skewed | {n} | "))
        assert row.count(" x") == 6, row             # cfbench, plain, oracle and three calibrated cells
    assert "| mean_skewed | 20 | upper |" in out.stdout and "CPU per interval" in out.stdout
