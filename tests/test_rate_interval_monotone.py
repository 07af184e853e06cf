"""The cluster-adjusted rate interval never says a rate is lower because an event was seen (2026-11-29)."""

import numpy as np
import pytest

from cfbench.stats.intervals import clopper_pearson, clustered_rate_intervals, worst_case_bound


def _bounds(events, m):
    events = np.asarray(events, float)
    _, lo, hi, _ = clustered_rate_intervals(events, np.full(events.size, float(m)), np.zeros(events.size, int))
    return float(lo[0]), float(hi[0])


@pytest.mark.parametrize("K", [8, 20, 28, 60])
@pytest.mark.parametrize("m", [2, 3, 5])
def test_the_upper_bound_never_falls_when_events_are_seen(K, m):
    _, hi0 = _bounds(np.zeros(K), m)
    assert hi0 == pytest.approx(worst_case_bound(K))
    for x in (1, 2, 3):
        ev = np.zeros(K)
        ev[:x] = 1  # one event in each of x items: a design effect near 1, which alone gave a bound below hi0
        lo, hi = _bounds(ev, m)
        assert hi >= hi0 - 1e-12 and lo <= x / (K * m) <= hi
    # with all pairs of all items but one pair flipped, the lower bound is no higher than with all flipped
    lo_all, _ = _bounds(np.full(K, float(m)), m)
    ev = np.full(K, float(m))
    ev[0] -= 1
    lo, _ = _bounds(ev, m)
    assert lo <= lo_all + 1e-12


def test_the_case_that_showed_it_and_one_pair_per_item_is_plain_clopper_pearson():
    """The case that showed it (two pairs, 28 transcripts, one flip: 0.097 against 0.123 with none), and with one
    pair per item nothing changes: the interval is Clopper-Pearson on the items."""
    ev = np.zeros(28)
    ev[0] = 1
    _, hi = _bounds(ev, 2)
    assert hi == pytest.approx(worst_case_bound(28)) and worst_case_bound(28) > 0.12
    for x in range(0, 9):
        ev = np.zeros(20)
        ev[:x] = 1
        lo, hi = _bounds(ev, 1)
        cl, ch = clopper_pearson(np.array([x]), np.array([20]))
        assert (lo, hi) == pytest.approx((float(cl[0]), float(ch[0])))
