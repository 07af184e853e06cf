"""Judge A minus judge B flip rates with several pairs per item: Tango's interval scaled by the items'
design effect (``intervals.clustered_tango``), which replaced the bootstrap-t of the item differences.

The coverage checks use the tolerances of ``test_coverage_families.py`` (coverage >= 93 % - 3 SE, a
one-sided miss <= 3.5 % + 3 SE); each width check sits between the value the clustered Tango gives on
the test's seeds and the value the bootstrap-t it replaced gives on the same audits (in brackets), so
the old interval fails it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cfbench.stats import coverage as C
from cfbench.stats.intervals import ITEMS_BOOT, ITEMS_TANGO, ITEMS_TANGO_CLUSTERED, clustered_tango, paired_difference
from cfbench.stats.matched import tango_interval


def _se(p: float, reps: int) -> float:
    return math.sqrt(p * (1 - p) / reps)


def test_one_pair_per_item_is_tango():
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 1], float)
    b = np.array([0, 0, 1, 0, 0, 1, 0, 0, 0, 0], float)
    lo, hi, deff = clustered_tango(a, b, np.ones(10))
    t_lo, t_hi = tango_interval(4, 1, 10)
    assert deff == 1.0 and (lo, hi) == pytest.approx((float(t_lo), float(t_hi)), abs=1e-12)
    d = paired_difference(a, np.ones(10), b, np.ones(10), kind="rate", pairing="items")
    assert d["ci_method"] == ITEMS_TANGO and (d["ci_low"], d["ci_high"]) == pytest.approx((lo, hi))


def test_no_discordant_pair_makes_the_item_the_unit():
    """Both judges flip the same pairs: nothing says how the pairs of an item hang together, so 8 items
    of 3 pairs count as 8 pairs, not 24."""
    a = np.array([1, 0, 0, 3, 0, 0, 2, 0], float)
    lo, hi, deff = clustered_tango(a, a, np.full(8, 3.0))
    assert deff == 3.0
    assert (lo, hi) == pytest.approx(tuple(float(x) for x in tango_interval(0, 0, 8)))
    assert hi > float(tango_interval(0, 0, 24)[1])


def test_discordance_in_one_item_counts_less_than_spread_over_three():
    m = np.full(12, 3.0)
    one_item = np.r_[3.0, np.zeros(11)]
    three_items = np.r_[1.0, 1.0, 1.0, np.zeros(9)]
    lo1, hi1, deff1 = clustered_tango(one_item, np.zeros(12), m)
    lo3, hi3, deff3 = clustered_tango(three_items, np.zeros(12), m)
    assert deff1 == 3.0 and deff3 == 1.0
    # the same 3 discordant pairs of 36 are less evidence when one item holds them all: [-0.18, 0.35]
    # (Tango on 1 of 12) against [-0.02, 0.22] (3 of 36)
    assert lo1 < lo3 - 0.1 and hi1 > hi3 + 0.1


def test_paired_difference_routes_several_pairs_to_the_clustered_tango():
    rng = np.random.default_rng(4)
    m = np.full(15, 3.0)
    b = rng.binomial(3, 0.1, 15).astype(float)
    a = np.minimum(b + rng.binomial(1, 0.2, 15), 3).astype(float)
    d = paired_difference(a, m, b, m, kind="rate", pairing="items")
    assert d["ci_method"] == ITEMS_TANGO_CLUSTERED
    assert d["ci_low"] <= d["estimate"] <= d["ci_high"]
    assert (d["ci_low"], d["ci_high"]) == pytest.approx(clustered_tango(a, b, m)[:2])
    # the two sides counted on different pairs (a parse failure dropped one of B's): not the same pairs
    m2 = m.copy()
    m2[0] = 2.0
    b2 = np.minimum(b, m2)
    d2 = paired_difference(a, m, b2, m2, kind="rate", pairing="items", n_boot=300,
                           rng=np.random.default_rng(0))
    assert d2["ci_method"] == ITEMS_BOOT


@pytest.mark.parametrize("name,n,max_ratio", [
    ("judges_cfr_3pairs", 20, 2.2),              # 1.69 (bootstrap-t of the item differences: 4.05)
    ("judges_cfr_3pairs_clustered", 20, 3.0),    # 1.84 (bootstrap-t: 3.85)
    ("judges_cfr_3pairs_clustered", 60, 2.0),    # 1.22 (bootstrap-t: 4.57)
])
def test_clustered_judge_cfr_families_cover_and_are_narrower(name, n, max_ratio):
    reps = 500
    r = C.family_coverage(name, n_items=n, reps=reps, seed=20 + n)
    assert r["coverage"] >= 0.93 - 3 * _se(0.93, reps), r
    assert max(r["miss_low"], r["miss_high"]) <= 0.035 + 3 * _se(0.035, reps), r
    assert r["width_ratio"] <= max_ratio, r


def test_bench_independent_truth(import_benchmark):
    """The closed-form truth of the bench's `independent` family against a simulation of it."""
    bench = import_benchmark("bench_clustered_tango")
    a, b, m, truth = bench.draws("independent", np.random.default_rng(3), 20_000, 20)
    d = ((a - b) / m).ravel()
    assert abs(d.mean() - truth) < 5 * d.std() / math.sqrt(d.size), (d.mean(), truth)


def test_swapping_the_judges_mirrors_the_interval():
    rng = np.random.default_rng(9)
    m = rng.integers(1, 5, 25).astype(float)
    a = rng.binomial(m.astype(int), 0.3).astype(float)
    b = rng.binomial(m.astype(int), 0.1).astype(float)
    lo, hi, deff = clustered_tango(a, b, m)
    lo2, hi2, deff2 = clustered_tango(b, a, m)
    assert deff == deff2 and (lo2, hi2) == pytest.approx((-hi, -lo), abs=1e-9)
    assert lo <= (a - b).sum() / m.sum() <= hi


def test_contact_center_judge_differences_with_two_questions():
    """Two questions per transcript give two pairs per item and dimension. Judge A flips both pairs of
    every other transcript on `gender`: 6 of 12 transcripts, so the interval is Tango's on 6 of 12 (the
    transcript the unit), not on 12 of 24 pairs."""
    from test_cc_judge_differences import _rows

    from cfbench.studies.contact_center_qa import tables as T

    r = _rows(n_items=12)
    d = T.study_tables(pd.concat([r, r.assign(question_id="q2")], ignore_index=True), n_boot=200,
                       seed=1)["judge_differences"]
    cfr = d[d["metric"] == "cfr"].set_index("dimension")
    assert (cfr["ci_method"] == ITEMS_TANGO_CLUSTERED).all()
    assert cfr.loc["gender", "delta"] == pytest.approx(0.5)
    assert (cfr.loc["gender", "ci_low"], cfr.loc["gender", "ci_high"]) == pytest.approx(
        tuple(float(x) for x in tango_interval(6, 0, 12)))
    assert cfr.loc["gender", "ci_high"] - cfr.loc["gender", "ci_low"] > float(np.subtract(*tango_interval(12, 0, 24)[::-1]))
