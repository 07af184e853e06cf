"""Exact McNemar on discordant pairs vs brute-force enumeration and statsmodels."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from cfbench.studies.shopflow import paired_mcnemar, route_rows


def _brute_force_p(a_only, b_only):
    """Two-sided exact p: enumerate every way the discordant pairs could split
    under a fair coin and sum the probability of outcomes at least as extreme
    (no more likely) than the observed one."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    probs = {}
    for signs in itertools.product((0, 1), repeat=n):
        k = sum(signs)
        probs[k] = probs.get(k, 0) + 1
    p_obs = probs[a_only]
    return sum(c for c in probs.values() if c <= p_obs) / 2 ** n


def _paired(a_sel, b_sel, ready=None):
    n = len(a_sel)
    ready = ready if ready is not None else [True] * n
    rows = []
    for i in range(n):
        for v, s in (("formal", a_sel[i]), ("conversational", b_sel[i])):
            rows.append({"pair_id": f"q{i}", "variant": v, "expected_ready": ready[i], "channel": "chat",
                         "evidence_passed": True, "score": 0.9 if s else 0.1})
    return route_rows(pd.DataFrame(rows), 0.5)


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_and_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 15))
    a = rng.random(n) < 0.6
    b = rng.random(n) < 0.4
    res = paired_mcnemar(_paired(a.tolist(), b.tolist()), ["formal", "conversational"])
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    assert (res.a_only, res.b_only, res.n_pairs) == (a_only, b_only, n)
    assert res.p_value == pytest.approx(_brute_force_p(a_only, b_only), rel=1e-12)
    table = [[int((a & b).sum()), a_only], [b_only, int((~a & ~b).sum())]]
    if a_only + b_only:
        assert res.p_value == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_known_values():
    # 3 discordant pairs all one way: p = 2 * (1/2)^3 = 0.25 (the seed's flips)
    res = paired_mcnemar(_paired([1, 1, 1, 1], [0, 0, 0, 1]), ["formal", "conversational"])
    assert (res.a_only, res.b_only) == (3, 0) and res.p_value == pytest.approx(0.25)
    # no discordant pairs: nothing to test against, p = 1
    assert paired_mcnemar(_paired([1, 0], [1, 0]), ["formal", "conversational"]).p_value == 1.0


def test_restrict_to_ready_pairs():
    f = _paired([1, 1, 0], [0, 1, 1], ready=[True, True, False])
    res = paired_mcnemar(f, ["formal", "conversational"], ready=True)
    assert (res.n_pairs, res.a_only, res.b_only) == (2, 1, 0)
    res = paired_mcnemar(f, ["formal", "conversational"], ready=False)
    assert (res.n_pairs, res.a_only, res.b_only) == (1, 0, 1)
    assert math.isclose(res.p_value, 1.0)
