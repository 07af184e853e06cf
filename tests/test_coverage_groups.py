"""Coverage of the paired rate difference of matched slices (metrics.groups.paired_rate_diff_interval)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cfbench.metrics.groups import paired_rate_diff_interval


def _coverage(n: int, pa: float, pb: float, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        u = rng.random(n)  # a shared latent per matched pair: the two variants' outcomes correlate
        a = u < pa
        b = np.where(rng.random(n) < 0.5, u < pb, rng.random(n) < pb)
        d = paired_rate_diff_interval(pd.DataFrame({"a": a, "b": b, "positive": True}), among=True)
        hits += d["ci_low"] <= pa - pb <= d["ci_high"]
    return hits / reps


@pytest.mark.parametrize("n", [8, 20, 60])
def test_paired_rate_difference_covers(n):
    reps = 1000
    floor = 0.95 - 0.02 - 3 * math.sqrt(0.95 * 0.05 / reps)
    for pa, pb in ((0.0, 0.0), (0.1, 0.1), (0.3, 0.1), (0.5, 0.5)):
        assert _coverage(n, pa, pb, reps, seed=n) >= floor, (n, pa, pb)


def test_no_selection_is_not_a_point():
    d = paired_rate_diff_interval(pd.DataFrame({"a": [False] * 8, "b": [False] * 8, "positive": True}), among=True)
    assert d["estimate"] == 0 and d["ci_low"] < 0 < d["ci_high"]
    one = paired_rate_diff_interval(pd.DataFrame({"a": [True], "b": [False], "positive": True}), among=True)
    assert math.isnan(one["ci_low"]) and one["ci_method"].startswith("none")
