"""The judge-bias gate's false-pass rate and the shift interval's coverage, simulated at the study's sizes.

Per item the net flip is ``flip under the cue - flip under the reworded prompt`` (one order each), so
values lie in {-1, 0, 1}; the gate passes when the upper bound of the mean interval over items is below
0.10. At a true net flip rate of exactly 0.10 a pass is a false pass: it must stay at or below 5 %
(nominal 2.5 %). The naive percentile bootstrap of the same differences is the negative control: it
exceeds 5 % in these cells, so the test can fail. Seeded; 800 simulated audits per cell
(binomial SE of a 5 % rate: 0.8 points).
"""

from __future__ import annotations

import numpy as np
import pytest

from cfbench.stats.intervals import mean_interval_t

CELLS = [(8, 0.30, 0.20), (20, 0.15, 0.05), (40, 0.10, 0.0)]


def _sim(n, p1, p0, reps=800, seed=5, naive=False):
    rng = np.random.default_rng(seed)
    false_pass = covered = 0
    truth = p1 - p0
    for _ in range(reps):
        d = (rng.random(n) < p1).astype(float) - (rng.random(n) < p0).astype(float)
        if naive:
            b = d[rng.integers(0, n, (300, n))].mean(1)
            lo, hi = np.quantile(b, [0.025, 0.975])
        else:
            lo, hi, _ = mean_interval_t(d, np.ones(n), n_boot=300, rng=rng, value_range=(-1, 1))
        false_pass += hi < 0.10
        covered += lo <= truth <= hi
    return false_pass / reps, covered / reps


@pytest.mark.parametrize("n,p1,p0", CELLS)
def test_gate_false_pass_at_the_maximum_stays_below_5_percent(n, p1, p0):
    fp, cov = _sim(n, p1, p0)
    assert fp <= 0.05, fp
    assert cov >= 0.93, cov


@pytest.mark.parametrize("n,p1,p0", CELLS)
def test_negative_control_naive_percentile_bootstrap_false_passes_more(n, p1, p0):
    fp_naive, _ = _sim(n, p1, p0, naive=True)
    fp, _ = _sim(n, p1, p0)
    assert fp_naive > 0.06 and fp_naive > 2 * fp
