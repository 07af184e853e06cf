"""The interval rule in the audit is exactly the simulated gate: same stratum, same interval, same pass rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cfbench.stats.matched import tango_interval
from cfbench.studies.shopflow import FairnessContract, audit_pairs, gap_gate, shipped

V = ["formal", "conversational"]


def _frame(outcomes_ready, outcomes_review):
    rows = []
    for tag, ready, outcomes in (("p", True, outcomes_ready), ("n", False, outcomes_review)):
        for i, (fa, ca) in enumerate(outcomes):
            for v, sel in zip(V, (fa, ca)):
                rows.append({"pair_id": f"{tag}{i}", "variant": v, "expected_ready": ready, "channel": "chat",
                             "evidence_passed": True, "score": 0.9 if sel else 0.1})
    return pd.DataFrame(rows)


def _draw(rng, n, p10, p01):
    u = rng.random(n)
    fa = (u < p10) | (u >= p10 + p01 + (1 - p10 - p01) / 2)
    ca = (u >= p10) & (u < p10 + p01) | (u >= p10 + p01 + (1 - p10 - p01) / 2)
    return list(zip(fa.tolist(), ca.tolist()))


@pytest.fixture(scope="module")
def contract():
    return FairnessContract.from_yaml(shipped("contract.yaml"))


@pytest.mark.parametrize("seed", range(12))
def test_audit_rows_equal_the_gate_on_counts(seed, contract):
    rng = np.random.default_rng(seed)
    n_ready, n_review = int(rng.integers(3, 120)), int(rng.integers(3, 80))
    ready = _draw(rng, n_ready, float(rng.uniform(0, 0.15)), float(rng.uniform(0, 0.1)))
    review = _draw(rng, n_review, float(rng.uniform(0, 0.1)), float(rng.uniform(0, 0.15)))
    audit = audit_pairs(_frame(ready, review), contract, threshold=0.5, variants=V)
    iv = audit.interval_checks.set_index("check")
    for check, pairs in (("tpr_gap", ready), ("fpr_gap", review)):
        n10 = sum(a and not b for a, b in pairs)
        n01 = sum(b and not a for a, b in pairs)
        lo, hi = tango_interval(n10, n01, len(pairs))
        row = iv.loc[check]
        assert (row["n_pairs"], row["a_only"], row["b_only"]) == (len(pairs), n10, n01)
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
        assert row["value"] == pytest.approx((n10 - n01) / len(pairs))
        assert (row["status"] == "PASS") is bool(gap_gate(lo, hi, 0.10))
        assert bool(row["pass_possible"]) == (len(pairs) >= 35)
        if not row["pass_possible"]:
            assert row["status"] == "FAIL"
            assert row["verdict"].startswith(("not decidable at this n", "gap shown to exceed"))


def test_verdicts_name_each_case(contract):
    fair = [(True, True)] * 60 + [(False, False)] * 40  # 100 identical pairs: passes
    unfair = [(True, False)] * 30 + [(True, True)] * 70  # +0.30 on 100 pairs: shown to exceed
    few = [(True, True)] * 10  # 10 pairs: not decidable
    a = audit_pairs(_frame(fair, unfair), contract, threshold=0.5, variants=V).interval_checks.set_index("check")
    assert a.at["tpr_gap", "status"] == "PASS" and a.at["tpr_gap", "verdict"] == "gap shown to lie within ±0.1"
    assert a.at["fpr_gap", "status"] == "FAIL" and a.at["fpr_gap", "zero"] == "outside"
    assert a.at["fpr_gap", "verdict"] == "gap shown to exceed ±0.1 (the whole interval lies outside)"
    b = audit_pairs(_frame(few, few), contract, threshold=0.5, variants=V).interval_checks.set_index("check")
    assert b.at["tpr_gap", "verdict"] == "not decidable at this n (10 pairs; even a zero gap needs at least 35)"
    assert b.at["tpr_gap", "n_needed"] == 35 and b.at["tpr_gap", "ci_low"] < 0 < b.at["tpr_gap", "ci_high"]


def test_a_stratum_with_no_pairs_is_undefined_and_fails(contract):
    a = audit_pairs(_frame([(True, True)] * 40, []), contract, threshold=0.5, variants=V)
    row = a.interval_checks.set_index("check").loc["fpr_gap"]
    assert row["n_pairs"] == 0 and row["status"] == "FAIL" and row["verdict"].startswith("undefined")
