"""Issue 26: a reply with no verdict carries no P(Yes), even when its first token's log-probs exist."""

from __future__ import annotations

import math

import pytest

from cfbench.studies.contact_center_qa.qa import parse_qa, parse_qa_evidence

TOP = {"Yes": -0.1, "No": -2.4}


@pytest.mark.parametrize("text", ["Yes?", "No idea, the call is cut off.", "Yes or no, I cannot tell.",
                                  "No way to tell from this call"])
def test_parse_failures_carry_no_p_yes(text):
    out = parse_qa(text, TOP)
    assert not out["parse_ok"] and out["answer"] is None
    assert math.isnan(out["p_yes"])


@pytest.mark.parametrize("text", ["Yes?\nEvidence: none", "No idea\nEvidence: none"])
def test_evidence_contract_failures_carry_no_p_yes(text):
    out = parse_qa_evidence(text, "Agent: Hi.", TOP)
    assert not out["parse_ok"]
    assert math.isnan(out["p_yes"])


def test_a_verdict_keeps_its_p_yes():
    out = parse_qa("Yes, 90", TOP)
    assert out["parse_ok"] and out["answer"] == "Yes"
    assert out["p_yes"] == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))
    ev = parse_qa_evidence('Yes\nConfidence: 90\nRationale: ok.\nEvidence:\n- Agent: "refund is issued"',
                           "Agent: Your refund is issued.", TOP)
    assert ev["parse_ok"] and not math.isnan(ev["p_yes"])
