"""The length-adjusted tone difference (identity tone ``fresh_length_adjusted_described``,
``cfbench.stats.paired.length_adjusted_tests``): seeded Monte-Carlo coverage at the prompt counts the
audit runs (6-20 prompts per pair) and checks of the interval's construction.

Tolerances as in ``test_coverage_intervals.py``: with R audits the SE of a coverage near 95 % is
sqrt(0.0475 / R) (0.7 points at 1000); a check asks for coverage >= 93 % - 3 SE.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cfbench.stats import coverage as C
from cfbench.stats.paired import LENGTH_CI_METHODS, intercept_interval, length_adjusted_tests

NOMINAL = 0.95


def _floor(reps: int) -> float:
    return NOMINAL - 0.02 - 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / reps)


@pytest.mark.parametrize("errors", C.LENGTH_ERRORS)
@pytest.mark.parametrize("n", [6, 8, 12, 20])
def test_length_adjusted_interval_covers(errors, n):
    reps = 1000
    r = C.length_adjusted_coverage(n_units=n, errors=errors, reps=reps, seed=10 * n + len(errors))
    assert r["coverage"] >= _floor(reps), (errors, n, r)
    # no gate reads this interval; still, neither side may carry the whole nominal 5 % miss
    assert r["miss_high"] < 0.05 and r["miss_low"] < 0.05, (errors, n, r)
    assert r["no_ci"] == 0.0


def test_ols_t_alone_falls_short_for_skewed_errors_and_the_union_does_not():
    # the reason for the change: same simulated audits, the OLS t interval alone and the union
    reps = 2000
    for n in (8, 12):
        old = C.length_adjusted_coverage(n_units=n, errors="skewed", reps=reps, seed=n, ci_method="ols_t")
        new = C.length_adjusted_coverage(n_units=n, errors="skewed", reps=reps, seed=n)
        assert old["coverage"] < 0.935, (n, old)
        assert new["coverage"] >= 0.94 and new["coverage"] - old["coverage"] >= 0.02, (n, old, new)


def _scores(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        for g, shift in (("a", 0.0), ("b", 0.5)):
            words = 130 + rng.normal(0, 8) + 6 * shift
            rows.append({"model": "m", "prompt_id": f"p{i}", "identity": g, "words": words,
                         "x": 0.02 * words + shift + rng.exponential()})
    return pd.DataFrame(rows)


KEYS = {"model": "model", "unit": "prompt_id", "group": "identity"}


def test_rows_name_their_interval_and_the_union_contains_the_ols_t_interval():
    sc = _scores(9, 3)
    new = length_adjusted_tests(sc, metrics=["x"], groups=["a", "b"], length="words", seed=4, **KEYS)
    old = length_adjusted_tests(sc, metrics=["x"], groups=["a", "b"], length="words", ci_method="ols_t", **KEYS)
    assert new.ci_method.tolist() == [LENGTH_CI_METHODS["residual_bootstrap_t"]]
    assert old.ci_method.tolist() == [LENGTH_CI_METHODS["ols_t"]]
    assert new.adj_diff.iloc[0] == old.adj_diff.iloc[0] and new.adj_p.iloc[0] == old.adj_p.iloc[0]
    assert new.adj_ci_low.iloc[0] <= old.adj_ci_low.iloc[0] < old.adj_ci_high.iloc[0] <= new.adj_ci_high.iloc[0]
    assert (new.adj_ci_low.iloc[0], new.adj_ci_high.iloc[0]) != (old.adj_ci_low.iloc[0], old.adj_ci_high.iloc[0])
    again = length_adjusted_tests(sc, metrics=["x"], groups=["a", "b"], length="words", seed=4, **KEYS)
    pd.testing.assert_frame_equal(new, again)
    with pytest.raises(ValueError):
        length_adjusted_tests(sc, metrics=["x"], groups=["a", "b"], length="words", ci_method="bca", **KEYS)


def test_a_fit_without_residual_spread_gets_no_interval_not_a_point():
    x = np.array([-3.0, 1.0, 2.0, 5.0, 7.0])
    for rng in (None, np.random.default_rng(0)):
        r = intercept_interval(0.4 + 0.1 * x, x, rng=rng)
        assert r["adj_diff"] == pytest.approx(0.4)
        assert math.isnan(r["adj_ci_low"]) and math.isnan(r["adj_ci_high"])
        assert math.isnan(r["adj_p"])  # no spread, no test: never p = 0 read as "significant"
        assert r["ci_method"].startswith("none:")
    r = intercept_interval(np.zeros(5), x, rng=np.random.default_rng(0))
    assert math.isnan(r["adj_ci_low"]) and r["ci_method"] == "none: the fit has no residual spread"
