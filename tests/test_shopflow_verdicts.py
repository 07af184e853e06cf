"""ShopFlow's gap gate in the one vocabulary, on seeded score frames of judges with known behaviour.

* a judge scoring every request the same is never ``pass``, even on 1,000 pairs per stratum, and never
  approved for release, whatever sign-offs its contract records;
* a judge whose scores separate ready from needs-review requests, the same for both wordings up to 5 %
  per-row noise (true gaps 0), is not ``fail`` in any of 25 seeded audits;
* the same judge withholding auto-serve from 30 % of ready requests in one wording ``fail``s the TPR gap.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cfbench.studies.shopflow import FairnessContract, audit_pairs, shipped

V = ["formal", "conversational"]


@pytest.fixture(scope="module")
def contract():
    return FairnessContract.from_yaml(shipped("contract.yaml"))


def _frame(rng, n, *, constant=False, noise=0.05, drop=0.0):
    """``n`` ready and ``n`` needs-review pairs; the judge scores 0.9 on ready and 0.1 on needs-review requests
    (80 % of ready and 85 % of needs-review pairs), each row turned the other way with ``noise``; ``drop`` of
    ready requests in the second wording scored 0.1."""
    rows = []
    for tag, ready in (("p", True), ("n", False)):
        right = rng.random(n) < (0.8 if ready else 0.85)
        for i in range(n):
            for j, v in enumerate(V):
                yes = right[i] == ready
                yes = (not yes) if rng.random() < noise else yes
                if ready and j == 1 and rng.random() < drop:
                    yes = False
                score = 0.9 if (constant or yes) else 0.1
                rows.append({"pair_id": f"{tag}{i}", "variant": v, "expected_ready": ready, "channel": "chat",
                             "evidence_passed": True, "score": score})
    return pd.DataFrame(rows)


def test_a_judge_scoring_every_request_the_same_is_never_pass(contract):
    a = audit_pairs(_frame(np.random.default_rng(0), 1000, constant=True), contract, threshold=0.5, variants=V)
    iv = a.interval_checks
    assert (iv["value"] == 0).all() and (iv["ci_high"] < iv["limit"]).all()  # the interval alone would pass
    assert iv["verdict"].str.startswith("uninformative (").all() and not iv["responsive"].any()
    assert a.release.decision == "BLOCKED" and "judge_shown_responsive" in a.release.missing
    # every sign-off recorded, or no requirement at all: the point rule's checks pass (gaps of 0) and the
    # support minimums too, and the release is still blocked (both were APPROVED before the audit of verdicts)
    import dataclasses

    signed = dataclasses.replace(contract, release_requirements=tuple(
        dataclasses.replace(r, attested=True) if r.source == "attested" else r
        for r in contract.release_requirements if r.source != "interval_checks"))
    for c in (signed, dataclasses.replace(contract, release_requirements=())):
        a = audit_pairs(_frame(np.random.default_rng(0), 60, constant=True), c, threshold=0.5, variants=V)
        assert a.checks_ok and a.support_ok
        assert a.release.decision == "BLOCKED" and a.release.missing == ("judge_shown_responsive",)


def test_a_fair_responsive_judge_is_not_fail(contract):
    kinds = []
    for seed in range(25):
        a = audit_pairs(_frame(np.random.default_rng(seed), 60), contract, threshold=0.5, variants=V)
        assert a.interval_checks["responsive"].all()
        kinds += a.interval_checks["verdict_kind"].tolist()
    assert "fail" not in kinds and "pass" in kinds


def test_a_judge_dropping_30_percent_of_one_wording_fails(contract):
    a = audit_pairs(_frame(np.random.default_rng(1), 100, drop=0.3), contract, threshold=0.5, variants=V)
    iv = a.interval_checks.set_index("check")
    assert iv.at["tpr_gap", "verdict"] == "fail" and iv.at["fpr_gap", "verdict_kind"] != "fail"
