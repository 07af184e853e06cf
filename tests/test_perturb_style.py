"""Style counterfactuals: exact re-realization of one dimension's slots on synthetic plans."""

from __future__ import annotations

import pytest

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import check_variant, get_perturber, identify_turns
from cfbench.studies.contact_center_qa.synth import STYLE_DIMENSIONS, generate_transcripts

PLAN = [
    {"speaker": "agent", "act": "greet", "pieces": [
        {"kind": "slot", "dim": "formality", "slot": "greeting", "choice": 0},
        {"kind": "text", "text": "This is Maria at Ledgerly."},
        {"kind": "slot", "dim": "directness", "slot": "offer", "choice": 1}]},
    {"speaker": "customer", "act": "state_issue", "pieces": [{"kind": "text", "text": "I was charged $30 twice."}]},
    {"speaker": "agent", "act": "verify", "pieces": [
        {"kind": "slot", "dim": "emotional_labor", "slot": "empathy", "choice": 0},
        {"kind": "slot", "dim": "directness", "slot": "request", "choice": 0}]},
    {"speaker": "customer", "act": "verify_answer", "pieces": [{"kind": "text", "text": "Sure, it's 555-0142."}]},
    {"speaker": "agent", "act": "outcome", "pieces": [
        {"kind": "slot", "dim": "politeness", "slot": "thanks", "choice": 0},
        {"kind": "text", "text": "I've refunded one of the $30 charges."}]},
]
TEXTS = [
    "Hi there! This is Maria at Ledgerly. How can I help you?",
    "I was charged $30 twice.",
    "Oh no, that's annoying. Would you mind sharing your phone number so I can look into this?",
    "Sure, it's 555-0142.",
    "Thanks. I've refunded one of the $30 charges.",
]
T = transcripts_from_records([{"id": "s1", "agent_name": "Maria", "meta": {
    "plan": PLAN, "context": {"company": "Ledgerly", "field": "phone number"}, "facts": ["Ledgerly", "$30"]},
    "turns": [{"speaker": p["speaker"], "text": x} for p, x in zip(PLAN, TEXTS)]}])[0]

EXPECTED = {
    ("formality", "neutral"): {0: "Hello. This is Maria at Ledgerly. How can I help you?"},
    ("formality", "formal"): {0: "Good day, and thank you for contacting us. This is Maria at Ledgerly. "
                                 "How can I help you?"},
    ("directness", "neutral"): {0: "Hi there! This is Maria at Ledgerly. What is the reason for your call?",
                                2: "Oh no, that's annoying. What is your phone number?"},
    ("directness", "direct"): {0: "Hi there! This is Maria at Ledgerly. Tell me what the problem is.",
                               2: "Oh no, that's annoying. Give me your phone number."},
    ("politeness", "neutral"): {4: "I've refunded one of the $30 charges."},
    ("politeness", "polite"): {4: "Thank you so much for providing that, I really appreciate it. "
                                  "I've refunded one of the $30 charges."},
    ("emotional_labor", "neutral"): {2: "Would you mind sharing your phone number so I can look into this?"},
    ("emotional_labor", "empathetic"): {2: "I'm so sorry you've had to deal with this, I can only imagine how "
                                           "stressful it has been. Would you mind sharing your phone number so I "
                                           "can look into this?"},
}


@pytest.mark.parametrize("dim,cond", sorted(EXPECTED))
def test_exact_re_realization(dim, cond):
    ident = identify_turns(T)
    assert ident.source == "plan"
    v = get_perturber(dim).perturb(T, ident, cond, seed=0)
    got = {e["turn"]: e["after"] for e in v.edits}
    assert got == EXPECTED[(dim, cond)]
    assert check_variant(T, v) == []


def test_original_condition_is_the_transcript():
    for dim in STYLE_DIMENSIONS:
        v = get_perturber(dim).perturb(T, identify_turns(T), "original", seed=0)
        assert v.turns == [x.to_dict() for x in T.turns] and v.edits == [] and v.operation == "none"


def test_only_the_dimensions_slots_change_on_synthetic_transcripts():
    for t in generate_transcripts(24, seed=5):
        ident = identify_turns(t)
        for dim in STYLE_DIMENSIONS:
            p = get_perturber(dim)
            for cond in p.dimension.conditions:
                v = p.perturb(t, ident, cond, seed=0)
                assert check_variant(t, v) == [], (t.id, dim, cond)
                assert {e["turn"] for e in v.edits} <= set(ident.style_turns(dim))
                for plan_turn, turn in zip(t.meta["plan"], v.turns):
                    for piece in plan_turn["pieces"]:
                        if piece["kind"] != "slot":
                            assert piece["text"] in turn["text"]


def test_user_transcript_without_plan_uses_the_style_rules():
    u = transcripts_from_records([{"id": "u", "turns": [{"speaker": "agent", "text": "Please hold."},
                                                        {"speaker": "agent", "text": "The table is ready."}]}])[0]
    ident = identify_turns(u)
    assert ident.politeness_turns == [0]
    neutral = get_perturber("politeness").perturb(u, ident, "neutral", seed=0)
    assert neutral.applicable and neutral.turns[0]["text"] == "Hold." and neutral.reason == "style rules"
    assert check_variant(u, neutral) == []
    polite = get_perturber("politeness").perturb(u, ident, "polite", seed=0)  # already polite: nothing to add
    assert not polite.applicable and "politeness rule" in polite.reason


def test_edited_plan_falls_back_to_rules():
    d = T.to_dict()
    d["turns"][0]["text"] = "Hello! This is Maria at Ledgerly. How can I help you?"
    t = transcripts_from_records([d])[0]
    assert identify_turns(t).source == "rules"
