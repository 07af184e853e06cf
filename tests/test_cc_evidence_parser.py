"""The fairness arm's answer / rationale / evidence replies: strict reading, quotes checked against the call."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from cfbench.studies.contact_center_qa.qa import (parse_qa_evidence, parse_qa_frame, qa_messages, qa_request,
                                                  quote_in_transcript)

CALL = """Agent: Thanks for calling, this is Priya. How can I help today?
Customer: My bill shows a late fee but I paid on the 3rd.
Agent: I\u2019ve checked your account and removed the late fee; you\u2019ll see the credit within two days.
Customer: Great, thanks.
Agent: Is there anything else I can help you with?"""

LP = {"Yes": math.log(0.7), "No": math.log(0.3)}


def _yes(evidence: str, head: str = "Yes\nConfidence: 85\nRationale: The agent removed the fee.\n") -> str:
    return head + evidence


# (reply, answer, evidence_status, evidence_found, rule_violated, n_quotes, n_found)
READABLE = [
    (_yes('Evidence:\n- Agent: "I\'ve checked your account and removed the late fee"'),
     "Yes", "quoted", True, False, 1, 1),
    # curly quotes around the quote, straight apostrophes inside where the call has curly ones
    (_yes("Evidence:\n- Agent: \u201cyou'll see the credit within two days\u201d"), "Yes", "quoted", True, False, 1, 1),
    # the quote repeats the speaker tag; punctuation and case differ from the call
    (_yes('Evidence:\n- "agent: I\'ve checked your account, and removed the late fee!"'),
     "Yes", "quoted", True, False, 1, 1),
    # shortened with an ellipsis: each piece is in the call, in order
    (_yes('Evidence:\n- Agent: "I\u2019ve checked your account \u2026 within two days"'), "Yes", "quoted", True, False, 1, 1),
    # on the same line as the marker
    (_yes('Evidence: Agent: "removed the late fee"'), "Yes", "quoted", True, False, 1, 1),
    # two quotes, one real and one the call does not contain: not all found, but the Yes has evidence
    (_yes('Evidence:\n- Agent: "removed the late fee"\n- Agent: "I have refunded you fifty dollars"'),
     "Yes", "quoted", False, False, 2, 1),
    # the only quote is not in the call: a Yes without evidence from the call
    (_yes('Evidence:\n- Agent: "I have escalated this to my supervisor"'), "Yes", "quoted", False, True, 1, 0),
    # a paraphrase instead of a quote is checked like a quote and not found
    (_yes("Evidence:\n- The agent confirmed the fee was removed."), "Yes", "quoted", False, True, 1, 0),
    # a quote too short to count as evidence, though the call contains it
    (_yes('Evidence:\n- Agent: "fee"'), "Yes", "quoted", False, True, 1, 0),
    # Yes with no evidence: the rule is recorded as violated, the answer stays Yes
    (_yes("Evidence: none"), "Yes", "none", None, True, 0, 0),
    (_yes(""), "Yes", "missing", None, True, 0, 0),
    ("No\nConfidence: 70\nRationale: Nothing shows the issue was fixed.\nEvidence: none", "No", "none", None, False, 0, 0),
    ("No\nConfidence: 70\nRationale: No confirmation.\nEvidence:\nNone - the agent never confirmed a fix.",
     "No", "none", None, False, 0, 0),
    # the seed's numbered layout with Markdown emphasis
    ('1. **Answer:** Yes\n2. **Rationale (one concise sentence):** The fee was removed.\n'
     '3. **Evidence:** Agent: "removed the late fee"', "Yes", "quoted", True, False, 1, 1),
    # extra prose before and after; the answer is still the one bare answer line
    ('Here is my assessment.\n\nNo\nConfidence: 60\nRationale: The customer had to ask twice.\nEvidence:\n'
     '- Customer: "My bill shows a late fee"\nLet me know if you need more.', "No", "quoted", False, False, 2, 1),
]


@pytest.mark.parametrize("reply, answer, status, found, violated, n_q, n_found", READABLE)
def test_readable_replies_and_their_evidence_checks(reply, answer, status, found, violated, n_q, n_found):
    r = parse_qa_evidence(reply, CALL, LP)
    assert r["parse_ok"] is True, r["parse_error"]
    assert r["answer"] == answer and r["answer_yes"] == (1.0 if answer == "Yes" else 0.0)
    assert r["evidence_status"] == status
    assert r["evidence_found"] is found
    assert r["evidence_rule_violated"] is violated
    assert (r["n_quotes"], r["n_quotes_found"]) == (n_q, n_found)
    assert len(json.loads(r["evidence_quotes"])) == n_q


def test_fields_and_notes():
    r = parse_qa_evidence(READABLE[0][0], CALL, LP)
    assert r["confidence"] == 85.0 and r["rationale"] == "The agent removed the fee." == r["synthesis"]
    assert r["p_yes"] == pytest.approx(0.7) and r["parse_note"] is None
    # missing parts are notes on a readable answer, never invented values
    r = parse_qa_evidence("Yes", CALL)
    assert r["parse_ok"] and math.isnan(r["confidence"]) and r["rationale"] is None
    assert r["parse_note"] == "no confidence; no rationale; no evidence section"
    # prose before the answer: readable, noted, and the first token is not the answer, so no P(Yes)
    r = parse_qa_evidence(READABLE[-1][0], CALL, LP)
    assert "not on the first line" in r["parse_note"] and "1 of 2 quotes not in the transcript" in r["parse_note"]
    assert math.isnan(r["p_yes"])
    r = parse_qa_evidence("Yes\nConfidence: 0.9\nEvidence: none", CALL)
    assert math.isnan(r["confidence"]) and "fraction" in r["parse_note"]


@pytest.mark.parametrize("reply, why", [
    (None, "empty"), ("", "empty"), ("   \n", "empty"),
    ("No idea\nEvidence: none", "bare Yes or No"),
    ("Answer: No idea", "bare Yes or No"),
    ("Yes?\nConfidence: 50", "bare Yes or No"),
    ("Yes or No\nConfidence: 50", "bare Yes or No"),
    ("Yes/No", "bare Yes or No"),
    ("Maybe\nRationale: hard to say.", "bare Yes or No"),
    ("Yes, because the agent removed the fee.\nEvidence: none", "bare Yes or No"),
    ("Nobody confirmed anything.", "bare Yes or No"),
    ("I cannot tell from this call.", "bare Yes or No"),
    ("Yes\nConfidence: 80\nRationale: fixed.\nEvidence: none\nNo", "conflicting"),
])
def test_unreadable_replies_are_failures_never_no(reply, why):
    r = parse_qa_evidence(reply, CALL, LP)
    assert r["parse_ok"] is False and why in r["parse_error"]
    assert r["answer"] is None and math.isnan(r["answer_yes"])
    assert r["evidence_status"] == "unparsed" and r["evidence_rule_violated"] is None


def test_quote_matching_is_not_fooled():
    assert quote_in_transcript("removed the late fee", CALL)
    assert not quote_in_transcript("removed the late fees", CALL)      # whole words only
    assert not quote_in_transcript("emoved the late fe", CALL)
    assert not quote_in_transcript("the late fee ... Thanks for calling", CALL)  # pieces out of order
    assert not quote_in_transcript("...", CALL) and not quote_in_transcript("", CALL)


def test_frame_parser_routes_evidence_replies_and_keeps_call_failures():
    j = pd.DataFrame({"text": [READABLE[0][0], "Yes 80", None], "ok": [True, True, False],
                      "error": [None, None, "timeout"]})
    p = parse_qa_frame(j, transcripts=pd.Series([CALL, CALL, CALL]), evidence=pd.Series([True, False, True]))
    assert p.loc[0, "evidence_found"] is True and p.loc[0, "answer"] == "Yes"
    assert p.loc[1, "answer"] == "Yes" and pd.isna(p.loc[1, "evidence_status"])
    assert not p.loc[2, "parse_ok"] and p.loc[2, "evidence_status"] == "unparsed"
    assert "timeout" in p.loc[2, "parse_error"]


def test_evidence_prompt_starts_with_the_bare_answer_and_states_the_rule():
    from cfbench.studies.contact_center_qa.prompts import load_rubric

    q = load_rubric().set_index("question_id").loc["issue_resolution"].to_dict()
    system, user = qa_messages(CALL, q, mode="evidence", fairness=True)
    task = user["content"].split(">>>", 1)[1]
    assert "alone on the first line" in task and "Evidence: none" in task and "the answer is No" in task
    assert "even-handed" in system["content"]
    req = qa_request("r", CALL, q, mode="evidence", fairness=True)
    assert req.config.top_logprobs and req.config.json_schema is None and req.config.max_tokens <= 200


@pytest.mark.parametrize("mode", ["free", "json", "compact", "evidence"])
def test_reasoning_model_settings_pass_through_every_qa_contract(mode):
    """Seed 000 Table 8's GPT-5 settings (temperature 1, a reasoning effort) reach the QA requests: no
    logprobs asked (those models refuse them) and no short output cap (it would be spent on reasoning)."""
    from cfbench.judges.base import PRESETS
    from cfbench.studies.contact_center_qa.qa import qa_config

    base = PRESETS["seed000-reasoning-medium"]
    cfg = qa_config(mode, base)
    assert cfg.reasoning_effort == "medium" and cfg.temperature == 1.0
    assert cfg.top_logprobs == 0 and cfg.max_tokens == base.max_tokens
    assert (cfg.json_schema is not None) == (mode == "json")


def test_plan_with_a_reasoning_config_builds_both_arms():
    from cfbench.judges.base import PRESETS
    from cfbench.studies.contact_center_qa.requests import plan_evaluation

    turns = [{"speaker": "agent", "text": "Hi, I'm Ana."}, {"speaker": "customer", "text": "My bill is wrong."}]
    v = pd.DataFrame({"item_id": ["c1", "c1"], "dimension": ["original", "gender"],
                      "condition": ["original", "male"], "variant_id": ["c1/o", "c1/m"], "turns": [turns, turns]})
    p = plan_evaluation(v, judges=["openai:gpt-5"], questions=["issue_resolution"], qa_mode="free",
                        config=PRESETS["seed000-reasoning-low"], repeats=0, fairness=True)
    reqs = p.requests["openai:gpt-5"]
    assert {r.config.reasoning_effort for r in reqs} == {"low"} and {r.config.top_logprobs for r in reqs} == {0}
    assert p.settings["fairness_contract"] == "evidence"


# ----------------------------------------------------------------------------- real STAR text

def _star_call():
    from star_util import star

    from cfbench.core.render import render_transcript

    t = next(t for t in star(40) if sum(1 for x in t.turns if x.speaker == "agent"
                                         and len(x.text.split()) >= 10) >= 2)
    turns = [{"speaker": x.speaker, "text": x.text} for x in t.turns]
    return t, render_transcript(turns)


def test_quotes_from_a_real_star_dialogue_are_found_and_a_fabricated_one_is_not():
    t, call = _star_call()
    agent = [x.text for x in t.turns if x.speaker == "agent" and len(x.text.split()) >= 10]
    words = agent[0].split()
    real = " ".join(words[2:9])
    curly = "\u201c" + " ".join(agent[1].split()[:8]).replace("'", "\u2019") + "\u201d"
    reply = f'Yes\nConfidence: 77\nRationale: It is in the call.\nEvidence:\n- Agent: "{real}"\n- Agent: {curly}'
    r = parse_qa_evidence(reply, call)
    assert r["evidence_found"] is True and r["n_quotes_found"] == 2 and not r["evidence_rule_violated"]
    # the same line with one word changed, and a sentence the dialogue never contains
    changed = " ".join(words[2:8] + ["zebra"])
    for fake in (changed, "I have escalated this to my supervisor personally"):
        r = parse_qa_evidence(f'Yes\nEvidence:\n- Agent: "{fake}"', call)
        assert r["evidence_found"] is False and r["evidence_rule_violated"] is True


def test_scripted_judge_answers_the_fairness_arm_in_the_evidence_layout_on_star():
    from cfbench.studies.contact_center_qa.prompts import load_rubric
    from cfbench.studies.contact_center_qa.scripted import scripted_judge

    _, call = _star_call()
    rubric = load_rubric().set_index("question_id")
    seen, verified = set(), 0
    for qid in rubric.index[:12]:
        req = qa_request(f"s/{qid}", call, rubric.loc[qid].to_dict(), mode="evidence", fairness=True)
        resp = scripted_judge(req)
        r = parse_qa_evidence(resp.text, call, resp.top_logprobs)
        if not r["parse_ok"]:
            continue
        seen.add(r["answer"])
        assert resp.text.splitlines()[0] == r["answer"] and not math.isnan(r["p_yes"])
        if r["answer"] == "Yes" and r["evidence_status"] == "quoted" and "supervisor personally" not in resp.text:
            assert r["evidence_found"] is True
            verified += 1
    assert seen and verified  # readable replies, and Yes answers quoting the real dialogue
