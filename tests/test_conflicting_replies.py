"""A reply that states two verdicts, or two scores, or a score on another scale, is a parse failure - never
the first or the last of them (each case below once parsed as a verdict or a score)."""

from __future__ import annotations

import pytest

from cfbench.core.text import contradicting_verdict
from cfbench.studies.contact_center_qa.coaching import parse_coaching
from cfbench.studies.contact_center_qa.qa import parse_qa, parse_qa_evidence
from cfbench.studies.shopflow.readiness import parse_answer

BOTH = ["Yes\nNo", "Yes. No.", "Yes, but actually no.", "Yes - wait, no.", "Final answer: Yes\n\nAnswer: No",
        '{"answer": "Yes"} Final answer: No', '{"answer": "Yes", "verdict": "No"}', '{"answer": "Yes", "answer": "No"}',
        '{"answer": "Yes"}{"answer": "No"}']
ONE = {"Yes 100": "Yes", "No 70": "No", "Yes. The agent said no to the refund.": "Yes", "No. No issues.": "No",
       "Yes, no issues were left open.": "Yes", '{"answer": "Yes", "confidence": 90}': "Yes",
       "Confidence: 80\nHence, the final answer is: **Yes**.": "Yes",
       "Final answer: Yes. Hmm, let me reconsider. Final answer: No": "No"}  # a stated self-correction concludes


@pytest.mark.parametrize("reply", BOTH)
def test_auto_qa_reply_with_both_answers_is_a_parse_failure(reply):
    r = parse_qa(reply)
    assert not r["parse_ok"] and r["answer"] is None and r["parse_error"].startswith("conflicting answers")


@pytest.mark.parametrize("reply,answer", ONE.items())
def test_auto_qa_reply_with_one_answer_still_reads(reply, answer):
    r = parse_qa(reply)
    assert r["parse_ok"] and r["answer"] == answer, r["parse_error"]


def test_evidence_contract_with_a_final_answer_against_its_bare_line():
    r = parse_qa_evidence("Yes\nConfidence: 80\nRationale: ok\nEvidence: none\nFinal answer: No", "Agent: hi")
    assert not r["parse_ok"] and r["answer"] is None and "conflicting" in r["parse_error"]
    assert parse_qa_evidence("Yes\nConfidence: 80\nRationale: ok\nEvidence: none\nFinal answer: Yes",
                             "Agent: hi")["answer"] == "Yes"


@pytest.mark.parametrize("reply", ["Score: 7/10", "I would give a score of 7 out of 10.", "score 50/1000",
                                   "My score: 5 stars", '{"score": 10} {"score": 90}', "Score: 20. Score: 80",
                                   '{"score": 10, "score": 90}', '{"score": 72, "analysis": "ok"} Score: 40',
                                   'Score: 40\n{"score": 72}'])
def test_coaching_reply_on_another_scale_or_with_two_scores_is_a_parse_failure(reply):
    r = parse_coaching(reply)
    assert not r["parse_ok"] and r["score"] != r["score"], r  # NaN


@pytest.mark.parametrize("reply,score", [('{"score": 72, "analysis": "ok"}', 72.0), ("Score: 72/100", 72.0),
                                         ("score: 72%", 72.0), ('{"score": "72/100"}', 72.0), ("Score: 72", 72.0),
                                         ('{"score": 72, "analysis": "score 40 last time"} Score: 72/100', 72.0)])
def test_coaching_reply_with_one_score_on_the_scale_reads(reply, score):
    assert parse_coaching(reply)["score"] == score


@pytest.mark.parametrize("reply", ["Yes\nNo", "Yes. Final answer: No", "Yes - wait, no.", "Yes, no.",
                                   '{"answer": "Yes", "answer": "No"}'])
def test_readiness_reply_with_both_answers_is_no_answer(reply):
    assert parse_answer(reply) is None


def test_readiness_reply_with_one_answer_reads():
    assert parse_answer("Yes. The customer said no to the upgrade.") == 1.0
    assert parse_answer("No, the draft gives no date.") == 0.0 and parse_answer("No, no.") == 0.0


def test_the_second_verdict_finder():
    assert contradicting_verdict(". No.", "Yes") == ". No" and contradicting_verdict(". No.", "No") is None
    assert contradicting_verdict(" The agent said no.", "Yes") is None
    assert contradicting_verdict("\nFinal answer: yes", "No") == "Final answer: yes"
