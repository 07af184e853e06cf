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


# --- the net against repeats: the cue's flip (one order) minus the item's repeat flip share (2 orders) ----------
# Per item the value lies in {-1, -1/2, 0, 1/2, 1}. At a true net of 0.10 a pass is a false pass.
REPEAT_CELLS = [(n, p0 + 0.10, p0) for n in (36, 60, 120) for p0 in (0.01, 0.05, 0.20)]


def _sim_repeats(n, p1, p0, reps=800, seed=17):
    rng = np.random.default_rng(seed)
    false_pass = 0
    for _ in range(reps):
        d = (rng.random(n) < p1).astype(float) - (rng.random((n, 2)) < p0).mean(axis=1)
        _, hi, _ = mean_interval_t(d, np.ones(n), n_boot=300, rng=rng, value_range=(-1, 1))
        false_pass += hi < 0.10
    return false_pass / reps


@pytest.mark.parametrize("n,p1,p0", REPEAT_CELLS)
def test_repeat_reference_gate_false_pass_at_the_maximum_stays_below_5_percent(n, p1, p0):
    assert _sim_repeats(n, p1, p0) <= 0.05


def test_below_36_items_the_interval_false_passes_too_often_so_the_gate_does_not_decide():
    """Why ``gate_status`` gives no pass below ``items_needed_zero_events`` (36 at 0.10): at 8 and 16 items
    a rare cue flip against averaged repeat flips false-passes well above 5 %."""
    from cfbench.studies.judge_bias.metrics import gate_status

    assert _sim_repeats(8, 0.15, 0.05) > 0.08 and _sim_repeats(16, 0.15, 0.05) > 0.06
    assert gate_status(0.05, 16, 0.10, -0.2).startswith("not decidable at this n (needs >= 36")


# --- the pointwise gate: per item |score shift under the cue| - |shift under the reference|, in [-9, 9] ----------
# True net = 1.0 point = the default maximum; shapes from "every item moves 1 point" to rare large jumps.
def _zero_inflated(p, values):
    values = np.asarray(values, float)
    return lambda rng, n: np.where(rng.random(n) < p, rng.choice(values, size=n), 0.0)


SHAPES = {
    "every item +1, reference 0": (lambda rng, n: np.ones(n), lambda rng, n: np.zeros(n)),
    "+3 on a third, reference 0": (_zero_inflated(1 / 3, [3]), lambda rng, n: np.zeros(n)),
    "+9 on a ninth, reference 0": (_zero_inflated(1 / 9, [9]), lambda rng, n: np.zeros(n)),
    "+2 on 3/4, reference 1 on half": (_zero_inflated(0.75, [2]), _zero_inflated(0.5, [1])),
    "1-3 on 60%, reference 1 on 20%": (_zero_inflated(0.6, [1, 2, 3]), _zero_inflated(0.2, [1])),
    "+5 on 30%, reference 1 on half": (_zero_inflated(0.3, [5]), _zero_inflated(0.5, [1])),
}
POINTWISE_SIZES = (32, 36, 60, 120)  # 32: the fewest items that can pass at 1.0 point; 36 default; 120 paper


def _sim_pointwise(n, cue, ref, reps=800, seed=7):
    rng = np.random.default_rng(seed)
    false_pass = 0
    for _ in range(reps):
        v = cue(rng, n) - ref(rng, n)
        _, hi, _ = mean_interval_t(v, np.ones(n), n_boot=300, rng=rng, value_range=(-9, 9))
        false_pass += hi < 1.0
    return false_pass / reps


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("n", POINTWISE_SIZES)
def test_pointwise_gate_false_pass_at_the_maximum_stays_below_5_percent(n, shape):
    assert _sim_pointwise(n, *SHAPES[shape]) <= 0.05


@pytest.mark.parametrize("n,p1,p0", [(n, p0 + 0.10, p0) for n in (36, 120) for p0 in (0.01, 0.05, 0.20)])
def test_reworded_reference_gate_false_pass_at_the_default_and_paper_sizes(n, p1, p0):
    fp, _ = _sim(n, p1, p0)
    assert fp <= 0.05
