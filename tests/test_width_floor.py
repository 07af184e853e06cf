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

import importlib
import math

import numpy as np
import pytest
from scipy import stats

from cfbench.stats import coverage as C

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(REPO / "benchmarks"))
    yield importlib.import_module("bench_width_floor")
    mp.undo()


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
