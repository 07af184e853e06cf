"""The judge-bias pointwise responsiveness check (issue 33): a score that ignores the reply is called responsive
in at most 2.5 % of audits, whatever the shape of its scores; a judge telling a known-worse reply apart by two
points is called responsive in most audits of the sizes the study uses. The simulation is
``benchmarks/bench_pointwise_responsive.py``; the false-responsive rate is also computed exactly here, by
summing over the binomial counts, independently of the simulation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cfbench.studies.judge_bias import metrics as M

REPS = 20000


@pytest.fixture(scope="module")
def bench(import_benchmark):
    return import_benchmark("bench_pointwise_responsive")


def _exact_blind_rate(pmf: np.ndarray, n: int) -> float:
    """P(called responsive) for a judge drawing both scores of each of ``n`` items from ``pmf`` alike: the number
    of untied items is Binomial(n, 1 - sum p^2), each untied item goes either way with probability 1/2, and the
    check passes when the exact one-sided 97.5 % Clopper-Pearson lower bound of up / untied exceeds 0.5."""
    untied = 1.0 - float(np.sum(pmf ** 2))
    total = 0.0
    for m in range(1, n + 1):
        up = np.arange(m + 1)
        lo = np.where(up > 0, stats.beta.ppf(0.025, np.maximum(up, 1), m - up + 1), 0.0)
        total += stats.binom.pmf(m, n, untied) * stats.binom.pmf(up, m, 0.5)[lo > 0.5].sum()
    return total


@pytest.mark.parametrize("judge,pmf", [("blind-uniform", np.full(10, 0.1)), ("blind-skewed", np.array([.3, .5, .2]))])
@pytest.mark.parametrize("n", [9, 18, 36])
def test_a_score_that_ignores_the_reply_is_called_responsive_at_most_at_the_nominal_rate(bench, judge, pmf, n):
    exact = _exact_blind_rate(pmf, n)
    assert exact <= 0.025
    got = bench.responsive_rate(judge, n, REPS, seed=n)
    se = math.sqrt(max(exact, 1e-3) * (1 - exact) / REPS)
    assert abs(got - exact) < 4 * se  # the simulation and the exact sum agree


def test_a_constant_judge_is_never_responsive_and_ties_do_not_count_as_right(bench):
    assert bench.responsive_rate("constant", 60, 200, seed=1) == 0.0
    # counting ties as right answers (the tempting shortcut) calls the skewed blind judge responsive nearly always
    real, alt = bench.scores("blind-skewed", 36, 2000, np.random.default_rng(2))
    wrong = M.discrimination_lower_bound((real >= alt).sum(axis=1), (real < alt).sum(axis=1))
    assert np.mean(wrong > 0.5) > 0.5
    assert bench.responsive_rate("blind-skewed", 36, 2000, seed=2) < 0.035


@pytest.mark.parametrize("n,gap,least", [(18, 2.0, 0.78), (36, 2.0, 0.98), (60, 1.0, 0.78)])
def test_a_judge_that_tells_the_known_worse_reply_apart_is_called_responsive(bench, n, gap, least):
    assert bench.responsive_rate(f"gap:{gap:g}", n, 4000, seed=7) >= least


def test_the_table_and_the_check_read_the_same_bound():
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(1, 30))
        real, alt = rng.integers(1, 11, n), rng.integers(1, 11, n)
        if rng.random() < 0.5:
            alt = np.minimum(real, alt)  # many right and tied
        cells = pd.DataFrame({"item_id": [f"i{k:02d}" for k in range(n)], "real_score": real, "alt_score": alt})
        t = M.pointwise_control_table(cells)
        up, down = int((real > alt).sum()), int((real < alt).sum())
        assert (t["real_higher"].iloc[0], t["alt_higher"].iloc[0], t["tied"].iloc[0]) == (up, down, n - up - down)
        lo = float(M.discrimination_lower_bound(up, down))
        assert (math.isnan(lo) and math.isnan(t["ci_low"].iloc[0])) or lo == pytest.approx(t["ci_low"].iloc[0])
        ok, why = M.pointwise_responsiveness(t)
        assert ok == (up + down > 0 and lo > 0.5)
        assert ("scored the same" in why) == (up + down == 0)
