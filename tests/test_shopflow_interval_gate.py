"""The interval rule in the audit is exactly the simulated gate: same stratum, same interval, same pass rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cfbench.stats.matched import tango_interval
from cfbench.studies.shopflow import FairnessContract, audit_pairs, gap_gate, shipped
from cfbench.studies.shopflow.gate import responsiveness_check

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
    responsive = responsiveness_check(audit.routed, 0.5)["responsive"]
    for check, pairs in (("tpr_gap", ready), ("fpr_gap", review)):
        n10 = sum(a and not b for a, b in pairs)
        n01 = sum(b and not a for a, b in pairs)
        lo, hi = tango_interval(n10, n01, len(pairs))
        row = iv.loc[check]
        assert (row["n_pairs"], row["a_only"], row["b_only"]) == (len(pairs), n10, n01)
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(float(lo)), pytest.approx(float(hi)))
        assert row["value"] == pytest.approx((n10 - n01) / len(pairs))
        # PASS needs the interval inside the limits and a responsive judge; the interval rule holds either way
        assert (row["status"] == "PASS") is (bool(gap_gate(lo, hi, 0.10)) and responsive)
        assert (row["verdict"] == "pass") is (row["status"] == "PASS")
        assert (row["verdict"] == "fail") is bool(lo > 0.10 or hi < -0.10)
        assert bool(row["pass_possible"]) == (len(pairs) >= 35)
        if not row["pass_possible"]:
            assert row["status"] == "FAIL" and row["verdict"] != "pass"


def test_verdicts_name_each_case(contract):
    fair = [(True, True)] * 60 + [(False, False)] * 40  # 100 identical pairs: passes
    unfair = [(True, False)] * 30 + [(False, False)] * 70  # +0.30 on 100 pairs: shown to exceed
    few = [(True, True)] * 10  # 10 pairs: inconclusive
    a = audit_pairs(_frame(fair, unfair), contract, threshold=0.5, variants=V).interval_checks.set_index("check")
    assert a.at["tpr_gap", "status"] == "PASS" and a.at["tpr_gap", "verdict"] == "pass"
    assert bool(a.at["tpr_gap", "responsive"])  # TPR 0.6, TNR 0.85 on 100 pairs each
    assert a.at["fpr_gap", "status"] == "FAIL" and a.at["fpr_gap", "zero"] == "outside"
    assert a.at["fpr_gap", "verdict"] == "fail"
    b = audit_pairs(_frame(few, [(False, False)] * 10), contract, threshold=0.5,
                    variants=V).interval_checks.set_index("check")
    # 10 pairs: neither shown; the forecast comes from the observed interval, not from "even a zero gap"
    assert b.at["tpr_gap", "verdict"] == "inconclusive" and b.at["tpr_gap", "status"] == "FAIL"
    assert b.at["tpr_gap", "forecast"].startswith("about ") and b.at["tpr_gap", "items_needed"] > 10
    assert b.at["tpr_gap", "n_needed"] == 35 and b.at["tpr_gap", "ci_low"] < 0 < b.at["tpr_gap", "ci_high"]
    # every request scored the same: the scores do not separate ready from needs-review - never a pass
    c = audit_pairs(_frame(fair, fair), contract, threshold=0.5, variants=V).interval_checks.set_index("check")
    assert (c["verdict"].str.startswith("uninformative (")).all() and (c["status"] == "FAIL").all()


def test_a_stratum_with_no_pairs_is_undefined_and_fails(contract):
    a = audit_pairs(_frame([(True, True)] * 40, []), contract, threshold=0.5, variants=V)
    row = a.interval_checks.set_index("check").loc["fpr_gap"]
    assert row["n_pairs"] == 0 and row["status"] == "FAIL" and row["verdict"] == "inconclusive"
    assert row["forecast"] == "no forecast: no pair in this stratum"


def test_the_audit_checks_responsiveness_once_and_its_gate_rows_and_release_read_that_one(contract, monkeypatch):
    """The audit computes the responsiveness check once; the interval rows and the release decision read the same
    result (a check answering "not responsive" stops every pass, though the scores separate the classes)."""
    from cfbench.studies.shopflow import gate

    frame = _frame([(True, True)] * 60, [(False, False)] * 60)  # no gap; ready scored high, needs-review low
    calls = []

    def stub(routed, threshold, **kw):
        calls.append(threshold)
        return {"responsive": False, "why": "stub: not shown", "balanced_accuracy": 0.5, "ci_low": 0.4,
                "ci_high": 0.6}

    assert responsiveness_check(gate.route_rows(frame, 0.5), 0.5)["responsive"]
    monkeypatch.setattr(gate, "responsiveness_check", stub)
    audit = audit_pairs(frame, contract, threshold=0.5, variants=V)
    assert calls == [0.5]
    assert (audit.interval_checks["verdict"] != "pass").all()
    assert set(audit.interval_checks["responsiveness"]) == {"stub: not shown"}
    assert audit.release.decision == "BLOCKED" and audit.release.requirements["judge_shown_responsive"] is False


def test_the_exact_interval_is_a_contract_choice_the_audit_reads(contract):
    """``gap_interval: {method: exact}``: the audit's rows carry ``exact_interval`` on the same counts, the pairs
    before a pass are the exact interval's (36 at 0.10, one more than Tango's), and a stratum beyond the pairs
    it is computed for is refused naming the contract's field rather than read with another method."""
    from dataclasses import replace

    from cfbench.core.errors import InputError
    from cfbench.stats.matched import exact_interval

    exact = replace(contract, gap_interval=replace(contract.gap_interval, method="exact"))
    rng = np.random.default_rng(5)
    ready, review = _draw(rng, 40, 0.08, 0.02), _draw(rng, 30, 0.02, 0.08)
    iv = audit_pairs(_frame(ready, review), exact, threshold=0.5, variants=V).interval_checks.set_index("check")
    for check, pairs in (("tpr_gap", ready), ("fpr_gap", review)):
        n10 = sum(a and not b for a, b in pairs)
        n01 = sum(b and not a for a, b in pairs)
        lo, hi = exact_interval(n10, n01, len(pairs))
        row = iv.loc[check]
        assert (row["ci_low"], row["ci_high"], row["method"]) == (float(lo), float(hi), "exact")
        assert bool(row["pass_possible"]) == (len(pairs) >= 36)
        assert (row["verdict"] == "fail") is bool(lo > 0.10 or hi < -0.10)
    big = _draw(rng, 201, 0.05, 0.05)
    with pytest.raises(InputError, match="ready pairs stratum of tpr has 201 pairs.*at most 200") as info:
        audit_pairs(_frame(big, review), exact, threshold=0.5, variants=V)
    assert (info.value.source, info.value.record, info.value.field) == ("contract", "gap_interval", "method")
