"""Wilson intervals agree with statsmodels' independent implementation."""

import pytest
from statsmodels.stats.proportion import proportion_confint

from cfbench.core.errors import InputError
from cfbench.metrics.groups import wilson_table
from cfbench.studies.shopflow import rates, route_rows
from cfbench.stats import wilson_interval

import pandas as pd


@pytest.mark.parametrize("n", [1, 2, 6, 17, 50, 333])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_matches_statsmodels(n, alpha):
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        if k < 0:
            continue
        lo, hi = wilson_interval(k, n, confidence=1 - alpha)
        slo, shi = proportion_confint(k, n, alpha=alpha, method="wilson")
        assert lo == pytest.approx(slo, abs=1e-9) and hi == pytest.approx(shi, abs=1e-9), (k, n)


def test_seed_printed_intervals():
    lo, hi = wilson_interval(5, 6)
    assert (round(100 * lo, 1), round(100 * hi, 1)) == (43.6, 97.0)
    lo, hi = wilson_interval(3, 6)
    assert (round(100 * lo, 1), round(100 * hi, 1)) == (18.8, 81.2)


@pytest.mark.parametrize("k,n", [(1, 0), (-1, 5), (6, 5), (2.5, 5)])
def test_bad_counts_raise(k, n):
    with pytest.raises(InputError):
        wilson_interval(k, n)


def test_table_uses_the_right_counts_and_handles_empty_slices():
    f = pd.DataFrame({"pair_id": list("abcde"), "variant": ["x", "x", "x", "y", "y"],
                      "expected_ready": [True, True, False, False, False],
                      "score": [0.9, 0.1, 0.8, 0.9, 0.2], "channel": "chat", "evidence_passed": True})
    r = rates(route_rows(f, 0.5))
    t = wilson_table(r, "tpr").set_index("slice")
    assert (t.at["x", "successes"], t.at["x", "n"]) == (1, 2)
    assert t.at["x", "ci_low"] == pytest.approx(proportion_confint(1, 2, method="wilson")[0])
    assert t.at["y", "n"] == 0 and pd.isna(t.at["y", "ci_low"])
    fp = wilson_table(r, "fpr").set_index("slice")
    assert (fp.at["y", "successes"], fp.at["y", "n"]) == (1, 2)
