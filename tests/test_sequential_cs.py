"""Betting confidence sequences (cfbench.stats.sequential): the same numbers as the paper's formulas
written out by hand, the same numbers however the items arrive in waves, and the error rate held
under continuous monitoring (peeking after every item), where a fixed-n interval loses it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from cfbench.stats.sequential import BettingCS, alpha_per_cell, confidence_sequence, gate_verdict


def _by_hand(z, alpha=0.05, grid=200):
    """Waudby-Smith & Ramdas' hedged betting CS, one candidate and one time at a time (no numpy tricks)."""
    n = len(z)
    lows, ups = [], []
    run_lo, run_up = 0.0, 1.0
    wealth_up = [0.0] * (grid + 1)
    wealth_down = [0.0] * (grid + 1)
    total, sq = 0.0, 0.0
    for t in range(1, n + 1):
        var_prev = (0.25 + sq) / t  # sigma^2_{t-1} = (1/4 + sum_{i<t} (z_i - mu_i)^2) / t
        lam = math.sqrt(2 * math.log(2 / alpha) / (var_prev * t * math.log(t + 1)))
        x = z[t - 1]
        inside = []
        for j in range(grid + 1):
            m = j / grid
            lu = lam if m == 0 else min(lam, 0.75 / m)  # truncation 3/4, the paper's other choice
            ld = lam if m == 1 else min(lam, 0.75 / (1 - m))
            wealth_up[j] += math.log(max(1 + lu * (x - m), 0.0)) if 1 + lu * (x - m) > 0 else -math.inf
            wealth_down[j] += math.log(1 - ld * (x - m)) if 1 - ld * (x - m) > 0 else -math.inf
            if max(wealth_up[j], wealth_down[j]) < math.log(2 / alpha):
                inside.append(m)
        total += x
        mu_t = (0.5 + total) / (t + 1)
        sq += (x - mu_t) ** 2
        if inside:
            run_lo = max(run_lo, max(0.0, inside[0] - 1 / grid))
            run_up = min(run_up, min(1.0, inside[-1] + 1 / grid))
        lows.append(run_lo)
        ups.append(run_up)
    return np.array(lows), np.array(ups)


@pytest.mark.parametrize("kind", ["bernoulli", "three_point", "continuous"])
def test_matches_the_formulas_written_out_by_hand(kind):
    rng = np.random.default_rng(7)
    z = {"bernoulli": rng.random(40) < 0.15, "three_point": rng.choice([0, 0.5, 1], 40, p=[0.1, 0.8, 0.1]),
         "continuous": rng.beta(0.5, 3, 40)}[kind].astype(float)
    lo, up = confidence_sequence(z, grid=200)
    want_lo, want_up = _by_hand(list(z), grid=200)
    np.testing.assert_allclose(lo, want_lo, atol=1e-12)
    np.testing.assert_allclose(up, want_up, atol=1e-12)


def test_waves_of_any_size_give_the_same_sequence_and_the_state_survives_json():
    rng = np.random.default_rng(3)
    x = rng.choice([-1.0, 0.0, 1.0], 150, p=[0.05, 0.85, 0.10])
    lo, up = confidence_sequence(x, lo=-1, hi=1)
    cs, at = BettingCS(lo=-1, hi=1), 0
    for size in [1, 7, 0, 30, 2, 50, 60]:
        cs.update(x[at:at + size])
        at += size
        cs = BettingCS.from_dict(json.loads(json.dumps(cs.to_dict())))  # a manifest round trip between waves
        if at:
            assert cs.bounds() == pytest.approx((lo[at - 1], up[at - 1]), abs=1e-12)
    assert at == 150 and cs.n == 150 and cs.mean == pytest.approx(x.mean())


def test_bounds_hold_the_estimate_and_narrow_on_quiet_data():
    lo, up = confidence_sequence(np.zeros(200))
    assert lo[-1] == 0.0 and up[-1] < 0.05  # 200 items with no flip: the rate is shown below 5 %
    assert np.all(np.diff(up) <= 0) and np.all(np.diff(lo) >= 0)  # a running intersection only narrows


def test_values_outside_the_declared_range_are_refused_with_the_value():
    with pytest.raises(ValueError, match=r"\(2\.0\) lies outside the declared range \[0\.0, 1\.0\]"):
        BettingCS().update([0.5, 2.0])
    with pytest.raises(ValueError, match="alpha"):
        BettingCS(alpha=0)


def test_gate_verdict_three_ways_and_alpha_split():
    assert gate_verdict(0.0, 0.08, 0.10) == "pass"
    assert gate_verdict(0.12, 0.30, 0.10) == "fail"
    assert gate_verdict(0.05, 0.15, 0.10) == "inconclusive"
    assert alpha_per_cell(0.05, 15) == pytest.approx(0.05 / 15)


def _ever(path_lo, path_up, maximum, verdict):
    return np.array([any(gate_verdict(a, b, maximum) == verdict for a, b in zip(lo_, up_))
                     for lo_, up_ in zip(path_lo, path_up)])


@pytest.mark.parametrize("name,draw", [
    # net flip rate at the maximum (0.10): flips under the cue 0.15, repeat flips 0.05, items independent
    ("net_flips_at_max", lambda rng, n: (rng.random(n) < 0.15).astype(float) - (rng.random(n) < 0.05)),
    # a flip rate exactly at the maximum, mostly zeros
    ("flip_rate_at_max", lambda rng, n: (rng.random(n) < 0.10).astype(float)),
])
def test_peeking_after_every_item_keeps_the_false_pass_at_its_level(name, draw):
    """True value exactly at the maximum; the audit looks after every item up to 150 and stops at the first
    pass. A pass is then false. The sequence's bound is alpha/2 = 2.5 %; 600 audits put the binomial
    upper 99.9 % limit of an observed rate near 2.5 % at about 4.5 %, so the check cannot pass by luck
    if the true rate were 5 % or more."""
    rng = np.random.default_rng(11)
    lo_rng = -1.0 if name.startswith("net") else 0.0
    paths = [confidence_sequence(draw(rng, 150), lo=lo_rng, hi=1.0, grid=400) for _ in range(600)]
    false_pass = _ever([p[0] for p in paths], [p[1] for p in paths], 0.10, "pass").mean()
    upper_999 = sps.beta.ppf(0.999, false_pass * 600 + 1, 600 - false_pass * 600)
    assert false_pass <= 0.025 + 0.02 and upper_999 < 0.06, (false_pass, upper_999)
    # the fixed-n 95 % interval (Clopper-Pearson on the flips) peeked at every item: the error the CS avoids
    if name == "flip_rate_at_max":
        fixed = []
        for _ in range(600):
            x = draw(rng, 150)
            k, n = np.cumsum(x), np.arange(1, 151)
            upper = np.where(k < n, sps.beta.ppf(0.975, k + 1, n - k), 1.0)
            fixed.append(bool((upper < 0.10).any()))
        assert np.mean(fixed) > 2 * max(false_pass, 0.01)  # peeking inflates a fixed-n interval's false pass
