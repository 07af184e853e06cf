"""``benchmarks/bench_width_bound.py``: Pratt's floor on the expected width of any valid interval. Its
Neyman-Pearson step agrees with a linear program, and the floor lies below the expected width of intervals known
to be valid on the same model (Tango's on matched pairs, exact; Hoeffding's on scores in 0..9), so it is a
floor and not an overstatement that would excuse a wide interval. Gaffke's bound, which the bench sets beside it
on scores, is the exact binomial bound where it can be checked by hand (the exact unconditional interval it sets
beside it on matched pairs is checked in ``test_matched_intervals.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog


@pytest.fixture(scope="module")
def bench(import_benchmark):
    return import_benchmark("bench_width_bound")


@pytest.mark.parametrize("seed", range(6))
def test_least_acceptance_is_the_linear_program_optimum(bench, seed):
    """min P_true(A) over A in [0, 1]^outcomes with P_null(A) >= 1 - alpha, solved as a linear program, with
    zero-probability outcomes and ties in the likelihood ratio on both sides."""
    rng = np.random.default_rng(seed)
    p_true = rng.dirichlet(np.ones(12))
    p_null = rng.dirichlet(np.ones(12))
    p_true[[0, 1]] = 0.0                         # the truth cannot produce these
    p_null[[2, 3]] = 0.0                         # the null cannot produce these
    p_null[5] = p_true[5] * p_null[4] / max(p_true[4], 1e-300)   # a tie in the ratio
    p_true, p_null = p_true / p_true.sum(), p_null / p_null.sum()
    for alpha in (0.05, 0.07, 0.3):
        lp = linprog(p_true, A_ub=[-p_null], b_ub=[-(1 - alpha)], bounds=[(0, 1)] * 12, method="highs")
        assert lp.status == 0
        assert bench.least_acceptance(p_true, p_null, alpha) == pytest.approx(lp.fun, abs=1e-9)


def test_compositions_enumerate_the_multinomial(bench):
    c = bench.compositions(7, 3)
    assert len(c) == math.comb(9, 2) and (c.sum(axis=1) == 7).all() and len({tuple(r) for r in c}) == len(c)
    assert bench.multinomial_pmf(c, np.array([0.2, 0.5, 0.3])).sum() == pytest.approx(1.0)


@pytest.mark.parametrize("n", [8, 20])
def test_matched_floor_lies_below_tangos_exact_width(bench, n):
    """Tango's interval covers at least 94.5 % at every pair of cell rates (bench_tango_exact), so at 93 % the
    floor must lie below its exact expected width; at 95 % as well here, where Tango is far from the floor."""
    kind, truth = bench.FAMILIES["judges_cfr"]
    tango = bench.expected_width(truth, n)
    floors = [bench.pratt_floor(kind, truth, n, a, grid=801) for a in (0.05, 0.07)]
    assert 0 < floors[1] < floors[0] < tango


@pytest.mark.parametrize("n", [8, 20])
def test_score_floor_lies_below_hoeffding(bench, n):
    """Hoeffding's interval (mean +- 9 sqrt(log(2 / alpha) / 2n)) covers every distribution on 0..9, so its
    width bounds the floor from above; the floor grows as the coverage asked for grows."""
    kind, truth = bench.FAMILIES["coaching_rare"]
    hoeffding = 2 * 9 * math.sqrt(math.log(2 / 0.05) / (2 * n))
    floors = [bench.pratt_floor(kind, truth, n, a, grid=901) for a in (0.05, 0.07)]
    assert 0 < floors[1] < floors[0] < hoeffding


def test_nulls_have_the_quantity_they_are_tested_at(bench):
    t = np.array([0.10, 0.045, 0.0, 0.855])
    for delta in (-0.3, -0.01, 0.02, 0.4):
        qs = bench._matched_nulls(t, delta)
        assert qs and all(abs((q[1] - q[2]) - (0.045 + delta)) < 1e-9 and abs(q.sum() - 1) < 1e-12
                          and (q >= 0).all() for q in qs)
    s = np.array([0.9, 0.08, 0.02] + [0.0] * 7)
    for delta in (-0.1, 0.05, 3.0):
        qs = bench._score_nulls(s, delta)
        assert qs and all(abs((q * np.arange(10)).sum() - (0.12 + delta)) < 1e-9 and abs(q.sum() - 1) < 1e-12
                          and (q >= 0).all() for q in qs)


def test_gaffke_matches_the_binomial_bound_where_it_is_known(bench):
    """Every value 0: the upper bound is the exact binomial bound top (1 - (alpha/2)^(1/n)) and the lower bound 0;
    one value x: the upper bound is x + (1 - alpha/2)(top - x) (a uniform split of 1 into 2)."""
    lo, hi = bench.gaffke_interval(np.zeros((1, 20)), 9.0, draws=40_000, seed=3)
    assert lo[0] == pytest.approx(0.0, abs=1e-12)
    assert hi[0] == pytest.approx(9.0 * (1 - 0.025 ** (1 / 20)), rel=0.03)
    lo, hi = bench.gaffke_interval(np.array([[2.0]]), 9.0, draws=40_000, seed=4)
    assert hi[0] == pytest.approx(2.0 + 0.975 * 7.0, rel=0.01) and lo[0] == pytest.approx(0.025 * 2.0, abs=0.02)


def test_quick_run_prints_every_family(bench, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run([sys.executable, str(Path(bench.__file__)), "--quick"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and " x" in line]
    assert len(rows) == 2 * len(bench.FAMILIES)
    for name in bench.FAMILIES:
        assert f"| {name} | 8 | " in out.stdout and f"| {name} | 20 | " in out.stdout, name

