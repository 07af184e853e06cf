"""The one verdict vocabulary (cfbench.stats.verdicts): rules at the boundaries, the forecast against its closed
form, the balanced accuracy of a constant judge, and seeded error rates at the committed-scale sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cfbench.stats import verdicts as V
from cfbench.stats.intervals import clopper_pearson, paired_difference


def test_three_way_rule_and_unresponsive_judges():
    assert V.verdict(0.0, 0.0999, 0.1) == "pass" and V.verdict(0.0, 0.1, 0.1) == "inconclusive"
    assert V.verdict(0.1, 0.3, 0.1) == "inconclusive" and V.verdict(0.1001, 0.3, 0.1) == "fail"
    assert V.verdict(math.nan, math.nan, 0.1) == "inconclusive"
    assert V.verdict(0.0, 0.05, 0.1, responsive=False, why="w") == "uninformative (w)"
    assert V.verdict(0.2, 0.3, 0.1, responsive=False, why="w") == "fail"  # shown unfair either way
    assert V.two_sided_verdict(-0.05, 0.05, 0.1) == "pass" and V.two_sided_verdict(-0.2, -0.11, 0.1) == "fail"
    assert V.two_sided_verdict(-0.05, 0.15, 0.1) == "inconclusive"
    assert V.verdict_kind("uninformative (w)") == "uninformative"
    assert V.kind_counts(["pass", "uninformative (x)", "pass"]) == {"pass": 2, "fail": 0, "inconclusive": 0,
                                                                     "uninformative": 1}


@pytest.mark.parametrize("e,lo,hi,n", [(0.02, -0.1, 0.2, 10), (0.2, 0.05, 0.4, 12), (0.0, -0.3, 0.3, 4)])
def test_forecast_matches_the_closed_form(e, lo, hi, n):
    # upper bound e + (hi - e) sqrt(n / m) < max  <=>  m > n ((hi - e) / (max - e))^2 (mirror for the lower bound)
    mx = 0.1
    half = (hi - e) if e < mx else (e - lo)
    expect = math.floor(n * (half / abs(mx - e)) ** 2) + 1
    got = V.items_to_decide(e, mx, V.scaled_bounds(e, lo, hi, n), n_from=n + 1)
    assert abs(got - expect) <= 1  # float rounding at the exact boundary
    row = V.forecast_row(e, lo, hi, n, mx)
    assert row["verdict"] == "inconclusive" and row["items_needed"] == got
    assert V.forecast_row(0.1, 0.0, 0.2, n, mx)["forecast"] == V.NOT_DECIDABLE


def test_a_constant_judge_has_balanced_accuracy_one_half_whatever_the_label_mix():
    for n_yes, n_no in ((5, 5), (30, 3), (2, 40)):
        l1, h1 = clopper_pearson(n_yes, n_yes)
        l2, h2 = clopper_pearson(0, n_no)
        est, lo, _ = V.balanced_accuracy(1.0, float(l1), float(h1), 0.0, float(l2), float(h2))
        assert est == 0.5 and lo < 0.5


def _ba_lo(k1, n1, k2, n2):
    l1, h1 = clopper_pearson(k1, n1)
    l2, h2 = clopper_pearson(k2, n2)
    return V.balanced_accuracy(k1 / n1, float(l1), float(h1), k2 / n2, float(l2), float(h2))[1]


def test_responsiveness_error_rate_and_power_by_seeded_simulation():
    rng = np.random.default_rng(11)
    reps, n = 1500, 20
    # a label-blind judge (P(Yes) 0.5): called responsive at most at the nominal 2.5 % (+ 3 Monte Carlo SE)
    k1, k2 = rng.binomial(n // 2, 0.5, reps), rng.binomial(n // 2, 0.5, reps)
    false = np.mean([_ba_lo(a, n // 2, b, n // 2) > 0.5 for a, b in zip(k1, k2)])
    assert false <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / reps)
    # a 90 %-accurate judge is shown responsive in most audits at 20 items (simulated 97 %)
    k1, k2 = rng.binomial(n // 2, 0.9, reps), rng.binomial(n // 2, 0.9, reps)
    assert np.mean([_ba_lo(a, n // 2, b, n // 2) > 0.5 for a, b in zip(k1, k2)]) >= 0.9


def test_gate_false_fail_and_power_by_seeded_simulation():
    rng = np.random.default_rng(12)

    def rate(n, net, noise, kind, reps=300):
        hits = 0
        for _ in range(reps):
            cf = (rng.random(n) < noise + net).astype(float)
            rep = rng.binomial(3, noise, n).astype(float)
            d = paired_difference(cf, np.ones(n), rep, np.full(n, 3.0), kind="rate")
            hits += V.verdict(d["ci_low"], d["ci_high"], 0.1) == kind
        return hits / reps

    assert rate(36, 0.0, 0.05, "fail") <= 0.01  # the old rule failed 76 % of these (issue 33)
    assert rate(60, 0.3, 0.05, "fail") >= 0.75  # simulated 89 %


def test_half_an_interval_is_no_interval_and_no_items_no_forecast():
    """A NaN bound on either side: no interval, so neither pass nor fail (it once passed on the other bound);
    a forecast needs items to scale from (n = 0 or negative once gave "about 2 items" or a math error)."""
    import math

    from cfbench.stats.verdicts import forecast_row, two_sided_verdict, verdict

    assert verdict(math.nan, 0.05, 0.1) == "inconclusive" and verdict(0.2, math.nan, 0.1) == "inconclusive"
    assert verdict(math.nan, 0.05, 0.1, responsive=False).startswith("uninformative")
    assert two_sided_verdict(math.nan, 0.05, 0.1) == "inconclusive"
    assert verdict(-math.inf, 0.05, 0.1) == "pass"  # an infinite bound is still a bound
    assert forecast_row(math.nan, math.nan, 0.05, 20, 0.1)["verdict"] == "inconclusive"
    for n in (0, -5):
        row = forecast_row(0.05, 0.0, 0.2, n, 0.1)
        assert row["verdict"] == "inconclusive" and row["forecast"].startswith("no forecast")


def test_no_item_count_shows_a_judge_at_or_below_chance_responsive():
    from cfbench.studies.contact_center_qa.calculator import responsive_items

    assert responsive_items(0.0) is None and responsive_items(0.3) is None and responsive_items(0.5) is None
    assert responsive_items(0.8) is not None and responsive_items(0.8) < responsive_items(0.7)
