"""The bound on the long side of a skewed mean (issue 33: the upper bound of a MASD on heavy-tailed items).

Seeded simulations with a known truth, through the code the tables use
(:func:`cfbench.stats.coverage.family_coverage` -> ``intervals.bootstrap_t_rows``). The method before
this change is the same code with equal tails (``LONG_SIDE_SHARE = 1``), run on the same audits.

Tolerance of the miss test: 4,000 audits of 20 items of lognormal P(Yes) shifts. The equal-tailed
bound misses above in 5.0-5.6 % of audits (benchmarks/bench_skew_tails.py and this seed); the bound in
use in 3.0-3.3 %. The threshold 3.9 % lies 3.2 binomial SEs (sqrt(.05 .95 / 4000) = 0.34 points) below
a true miss of 5.0 %, so the old method passes it by luck with probability under 0.1 %, and 2.5 SEs
(0.28 points) above a true miss of 3.2 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from cfbench.stats import coverage as C
from cfbench.stats import intervals as I


@pytest.fixture
def equal_tails(monkeypatch):
    """Switch to the bootstrap-t bounds as they were: the a and 1 - a quantiles on both sides."""
    def use():
        monkeypatch.setattr(I, "LONG_SIDE_SHARE", 1.0)
    return use


def test_heavy_tail_upper_bound_misses_at_most_3_9_percent(equal_tails):
    kw = dict(n_items=20, reps=4000, n_boot=1000, seed=20)
    new = C.family_coverage("pyes_heavy_tail", **kw)
    equal_tails()
    old = C.family_coverage("pyes_heavy_tail", **kw)
    assert new["miss_high"] <= 0.039, new
    assert old["miss_high"] > 0.039, old          # the method before this change fails the same check
    assert new["coverage"] >= 0.95 and new["miss_low"] <= 0.01, new


def test_long_side_widening_costs_bounded_width(equal_tails):
    """The price is width on the long side only: at 20 items heavy-tailed P(Yes) 1.53 -> 1.81 sampling
    spreads (the 1.5 target is not met, docs/statistics.md); normal items 1.20 -> 1.34, within 1.5."""
    kw = dict(reps=2000, n_boot=1000)
    heavy = C.family_coverage("pyes_heavy_tail", n_items=20, seed=21, **kw)
    sym = C.mean_coverage(n_items=20, effect=2.0, shape="signed", seed=21, **kw)
    # normal items: the widened side is whichever tail the resamples happen to make longer
    d = np.random.default_rng(5).normal(size=(2000, 20))
    w = np.random.default_rng(6).multinomial(20, np.full(20, 1 / 20), size=1000).astype(float)
    lo, hi = I.bootstrap_t_rows(d, np.ones_like(d), w)
    spread = np.diff(np.quantile(d.mean(axis=1), [0.025, 0.975]))[0]
    normal_ratio = np.mean(hi - lo) / spread
    equal_tails()
    heavy_old = C.family_coverage("pyes_heavy_tail", n_items=20, seed=21, **kw)
    lo0, hi0 = I.bootstrap_t_rows(d, np.ones_like(d), w)
    assert heavy["width_ratio"] <= 1.3 * heavy_old["width_ratio"], (heavy, heavy_old)
    assert heavy["width_ratio"] <= 2.1, heavy
    assert normal_ratio <= 1.5 and normal_ratio <= 1.15 * np.mean(hi0 - lo0) / spread, normal_ratio
    assert sym["coverage"] >= 0.93, sym


def test_the_long_side_follows_the_skew():
    """Right-skewed values widen the upper bound, the mirror image the lower one, by the same amount."""
    rng = np.random.default_rng(3)
    y = rng.lognormal(size=(1, 15))
    w = np.random.default_rng(4).multinomial(15, np.full(15, 1 / 15), size=2000).astype(float)
    lo, hi = I.bootstrap_t_rows(y, np.ones_like(y), w)
    lo_m, hi_m = I.bootstrap_t_rows(-y, np.ones_like(y), w)
    assert np.allclose([lo[0], hi[0]], [-hi_m[0], -lo_m[0]])
    r = y.mean()
    assert hi[0] - r > r - lo[0]


def test_never_narrower_than_equal_tails(equal_tails):
    """Either side moves out or stays: the rule can only lower a gate's false-pass rate."""
    rng = np.random.default_rng(8)
    y = np.concatenate([rng.lognormal(size=(100, 12)), rng.normal(size=(100, 12)),
                        rng.choice([0.0, 1.0, 2.0], p=[0.8, 0.15, 0.05], size=(100, 12))])
    w = np.random.default_rng(9).multinomial(12, np.full(12, 1 / 12), size=500).astype(float)
    lo, hi = I.bootstrap_t_rows(y, np.ones_like(y), w)
    equal_tails()
    lo0, hi0 = I.bootstrap_t_rows(y, np.ones_like(y), w)
    ok = np.isfinite(lo0)
    assert (lo[ok] <= lo0[ok] + 1e-12).all() and (hi[ok] >= hi0[ok] - 1e-12).all()
    assert (hi > hi0 + 1e-9).mean() > 0.3   # and it does move out, mostly on the right for lognormal rows
