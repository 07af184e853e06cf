"""Auto-QA reply parsing: the three contracts, messy replies, and failures that stay failures."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cfbench.studies.contact_center_qa.qa import parse_qa, parse_qa_frame

FREE = """To answer the given question, let's think step by step:
Evidences:
- Agent: "I have corrected it and issued a credit" shows an action was completed.
Synthesis:
The agent fixed the bill and the customer thanked them.
Confidence: 92
Hence, the final answer is: Yes"""


@pytest.mark.parametrize("text, answer, conf", [
    (FREE, "Yes", 92.0),
    ("Confidence: 80\nHence, the final answer is: **No**.", "No", 80.0),
    ("**Final Answer:** yes\n**Confidence:** 75%", "Yes", 75.0),
    ("The final answer is no.\n\nConfidence level: 60/100", "No", 60.0),
    ('{"answer": "Yes", "confidence": 85}', "Yes", 85.0),
    ('```json\n{"answer": "no", "confidence": "70%"}\n```', "No", 70.0),
    ('Sure! {"Answer": "YES", "confidence": 55, "evidence": "line 4"} hope that helps', "Yes", 55.0),
    ('{"answer": true, "confidence": 40}', "Yes", 40.0),
    ("Yes 85", "Yes", 85.0),
    ("No, 30", "No", 30.0),
    ("no (confidence 45)", "No", 45.0),
    ("1. Answer: No\n2. Rationale: the agent never named themselves.\n3. Evidence: none", "No", math.nan),
])
def test_readable_replies(text, answer, conf):
    r = parse_qa(text)
    assert r["parse_ok"] and r["answer"] == answer
    assert r["answer_yes"] == (1.0 if answer == "Yes" else 0.0)
    assert (math.isnan(conf) and math.isnan(r["confidence"])) or r["confidence"] == conf


def test_free_text_sections_kept():
    r = parse_qa(FREE)
    assert "credit" in r["evidence"] and "thanked" in r["synthesis"]


@pytest.mark.parametrize("text", [
    "", None, "I cannot tell from this call.",
    "Hence, the final answer is: (add your answer here)",
    "Hence, the final answer is: Yes/No",
    "final answer is Yes or No depending on policy",
    '{"answer": "maybe", "confidence": 50}',
    '{"answer": "N/A"}',
    "Yesterday the agent called back.",
    "Nobody answered.",
    "Final answer: Yes.\n" + "x " * 60 + "\nFinal answer: No, because" + " y" * 60,
])
def test_unreadable_replies_are_failures_not_no(text):
    r = parse_qa(text)
    assert r["parse_ok"] is False
    assert r["answer"] is None and math.isnan(r["answer_yes"])
    assert r["parse_error"]


def test_confidence_problems_do_not_invent_numbers():
    r = parse_qa("Answer: Yes\nConfidence: 0.85")
    assert r["parse_ok"] and math.isnan(r["confidence"]) and "fraction" in r["parse_note"]
    r = parse_qa('{"answer": "No", "confidence": 150}')
    assert r["parse_ok"] and math.isnan(r["confidence"]) and "above 100" in r["parse_note"]
    r = parse_qa("Hence, the final answer is: Yes")
    assert r["parse_ok"] and math.isnan(r["confidence"]) and r["parse_note"] == "no confidence"


def test_p_yes_from_first_token_logprobs():
    r = parse_qa("Yes 80", {"Yes": math.log(0.75), "No": math.log(0.25), "The": -5.0})
    assert r["p_yes"] == pytest.approx(0.75)
    assert math.isnan(parse_qa("Yes 80")["p_yes"])


def test_frame_parser_keeps_call_failures_as_failures():
    j = pd.DataFrame({"text": ['{"answer": "No", "confidence": 60}', None, "Yes 70"],
                      "top_logprobs": [None, None, '{"Yes": -0.1, "No": -2.5}'],
                      "ok": [True, False, True], "error": [None, "timeout", None]})
    p = parse_qa_frame(j)
    assert list(p["parse_ok"]) == [True, False, True]
    assert pd.isna(p.loc[1, "answer"]) and "timeout" in p.loc[1, "parse_error"]
    assert p.loc[2, "p_yes"] == pytest.approx(1 / (1 + math.exp(-2.4)))


def test_recorded_local_model_replies():
    from cc_fixtures import LOCAL_QA_REPLIES

    for text, answer, conf in LOCAL_QA_REPLIES:
        r = parse_qa(text)
        assert r["parse_ok"] and r["answer"] == answer and r["confidence"] == conf


def test_p_yes_only_when_the_reply_starts_with_the_answer():
    lp = {"{": -0.01, "No": -6.0, "Yes": -7.0}
    assert math.isnan(parse_qa('{"answer": "Yes", "confidence": 90}', lp)["p_yes"])
    assert parse_qa("No 70", {"No": -0.3, "Yes": -1.35})["p_yes"] == pytest.approx(
        math.exp(-1.35) / (math.exp(-1.35) + math.exp(-0.3)))
