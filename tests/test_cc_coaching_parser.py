"""Coaching-note replies: JSON scores, messy JSON, and failures kept as failures."""

from __future__ import annotations

import math

import pytest

from cfbench.studies.contact_center_qa import coaching


@pytest.mark.parametrize("text, score", [
    ('{"score": 72, "analysis": "- clearer next steps"}', 72.0),
    ('```json\n{\n  "analysis": "- Improve empathy.\n- Avoid scripts.",\n  "score": 64\n}\n```', 64.0),
    ('{"score": "88", "analysis": ["calm", "clear"]}', 88.0),
    ('{"score": "90/100", "analysis": "x"}', 90.0),
    ('{"Score": 0, "analysis": "no strengths"}', 0.0),
    ("Strengths: patient.\nScore: 81", 81.0),
])
def test_scores_read(text, score):
    r = coaching.parse_coaching(text)
    assert r["parse_ok"] and r["score"] == score


def test_text_fallback_is_noted():
    r = coaching.parse_coaching("Strengths: patient.\nScore: 81")
    assert r["parse_note"] and "free text" in r["parse_note"]


@pytest.mark.parametrize("text", [
    "", None, "The agent did fine.", '{"analysis": "- good"}', '{"score": 140, "analysis": "x"}',
    '{"score": -5, "analysis": "x"}', '{"score": "high", "analysis": "x"}', '{"score": true}',
])
def test_failures(text):
    r = coaching.parse_coaching(text)
    assert r["parse_ok"] is False and math.isnan(r["score"]) and r["parse_error"]


def test_schema_puts_score_first_and_bounds_it():
    s = coaching.coaching_json_schema(100)
    assert list(s["properties"]) == ["score", "analysis"]
    assert s["properties"]["score"]["minimum"] == 0 and s["properties"]["score"]["maximum"] == 100
    assert s["properties"]["analysis"]["maxLength"] == 100


def test_kinds_have_distinct_prompts():
    a = coaching.coaching_messages("Agent: hi", "positives")[1]["content"]
    b = coaching.coaching_messages("Agent: hi", "improvement")[1]["content"]
    assert a != b and a.startswith(b[:20])  # same transcript prefix
    with pytest.raises(ValueError):
        coaching.coaching_messages("Agent: hi", "tone")


def test_recorded_local_model_replies():
    from cc_fixtures import LOCAL_COACHING_REPLIES

    for text, score in LOCAL_COACHING_REPLIES:
        r = coaching.parse_coaching(text)
        assert r["parse_ok"] and r["score"] == score and r["analysis"]


def test_customer_behaviour_is_a_third_coaching_kind():
    from cfbench.studies.contact_center_qa.coaching import COACHING_KINDS, coaching_messages

    assert "customer" in COACHING_KINDS
    system, user = coaching_messages("Agent: Hi.\nCustomer: My router is down.", "customer")
    assert "customer's behaviour" in user["content"] and '"score"' in user["content"]
    fair_system, _ = coaching_messages("Agent: Hi.", "customer", fairness=True)
    assert "even-handed" in fair_system["content"]


def test_fair_qa_prompt_keeps_the_no_evidence_means_no_rule():
    from cfbench.studies.contact_center_qa.prompts import load_prompt

    text = load_prompt("system_fair_qa")
    assert "no clear evidence" in text and "the answer is No" in text
