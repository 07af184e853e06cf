"""Gender swap: grammatical pronoun/honorific rewriting, and only words that refer to the agent."""

from __future__ import annotations

import pytest

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import get_perturber, identify_turns, swap_gender_words
from cfbench.perturb.base import load_data
from cfbench.studies.contact_center_qa.synth import generate_transcripts

SENTENCES = [
    # object vs possessive "her"
    ("I will ask her to call me back.", "male", "I will ask him to call me back."),
    ("I will ask her about her refund.", "male", "I will ask him about his refund."),
    ("Give her the receipt, her manager said so.", "male", "Give him the receipt, his manager said so."),
    ("That was her.", "male", "That was him."),
    ("Her colleague told her that her own account was fine.", "male",
     "His colleague told him that his own account was fine."),
    ("She's checking; I'll let her finish her notes.", "male", "He's checking; I'll let him finish his notes."),
    ("Can you help her find her card?", "male", "Can you help him find his card?"),
    ("I saw her new address.", "male", "I saw his new address."),
    ("ask her 5 times", "male", "ask him 5 times"),
    ("here, hers, herself, where", "male", "here, his, himself, where"),
    # possessive "his" vs standalone "hers"
    ("He said his card is his, and he'll help him himself.", "female",
     "She said her card is hers, and she'll help her herself."),
    ("The fault is his.", "female", "The fault is hers."),
    ("I'll tell him his refund is on its way.", "female", "I'll tell her her refund is on its way."),
    # honorifics and case
    ("Thank you, Ma'am! MA'AM? madam", "male", "Thank you, Sir! SIR? sir"),
    ("Thanks, sir. Yes SIR.", "female", "Thanks, ma'am. Yes MA'AM."),
    ("Okay, thanks miss.", "male", "Okay, thanks sir."),
    # words already of the target gender stay
    ("She said she would.", "female", "She said she would."),
    # no false matches inside other words
    ("There is his theme; where is the shepherd?", "female", "There is her theme; where is the shepherd?"),
]


@pytest.mark.parametrize("text,target,expected", SENTENCES)
def test_swap_gender_words(text, target, expected):
    assert swap_gender_words(text, target) == expected


def test_swap_rejects_unknown_target():
    with pytest.raises(ValueError):
        swap_gender_words("he", "other")


USER = {"id": "u1", "domain": "fintech", "turns": [
    {"speaker": "agent", "text": "Hi, this is Maria with Ledgerly. How can I help, sir?"},
    {"speaker": "customer", "text": "Hi Maria. My wife opened this account, so her email is on it."},
    {"speaker": "agent", "text": "I can check that. What is your account number?"},
    {"speaker": "customer", "text": "It's 5521. Thank you, ma'am."},
    {"speaker": "agent", "text": "Thanks. I have updated the email."},
    {"speaker": "customer", "text": "Honey, Maria fixed it, she said she would send her notes to him later."},
    {"speaker": "customer", "text": "Thanks, Maria, bye."},
]}


def test_identification_keeps_only_words_about_the_agent():
    t = transcripts_from_records([USER])[0]
    ident = identify_turns(t)
    assert ident.agent_name == "Maria"
    assert ident.agent_gender == "female"  # from "ma'am"; Maria is not in the name lists
    assert ident.name_turns == [0, 1, 5, 6]
    # "sir" in turn 0 is the agent addressing the customer; "her" in turn 1 is the wife's;
    # "him" in turn 5 is not the agent's gender -> none of them is an agent reference
    assert ident.gender_turns == [3, 5, 5, 5]
    assert ident.agent_pronouns == ["ma'am", "she", "she", "her"]


def test_gender_perturber_exact_output():
    t = transcripts_from_records([USER])[0]
    ident = identify_turns(t)
    p = get_perturber("gender")
    male = p.perturb(t, ident, "male", seed=0)
    name = male.turns[0]["text"].split("this is ")[1].split(" with")[0]
    names = load_data("names.yaml")["ethnicity"]
    assert any(name in g["male"] for g in names.values())
    assert [x["text"] for x in male.turns] == [
        f"Hi, this is {name} with Ledgerly. How can I help, sir?",
        f"Hi {name}. My wife opened this account, so her email is on it.",
        "I can check that. What is your account number?",
        "It's 5521. Thank you, sir.",
        "Thanks. I have updated the email.",
        f"Honey, {name} fixed it, he said he would send his notes to him later.",
        f"Thanks, {name}, bye.",
    ]
    assert [e["turn"] for e in male.edits] == [0, 1, 3, 5, 6]
    female = p.perturb(t, ident, "female", seed=0)
    fname = female.turns[0]["text"].split("this is ")[1].split(" with")[0]
    group = next(g for g, v in names.items() if name in v["male"])
    assert fname in names[group]["female"]  # both conditions from one ethnicity group
    assert female.turns[3]["text"] == "It's 5521. Thank you, ma'am."
    assert female.turns[5]["text"] == f"Honey, {fname} fixed it, she said she would send her notes to him later."
    # deterministic
    assert p.perturb(t, ident, "male", seed=0).turns == male.turns


@pytest.mark.parametrize("agent_name", [None, "Priya"])  # a name given in the record but absent from the text
def test_gender_not_applicable_without_name_or_reference(agent_name):
    rec = {"id": "n", "turns": [{"speaker": "agent", "text": "Hello, how can I help?"},
                                {"speaker": "customer", "text": "My bill is wrong."}]}
    if agent_name:
        rec["agent_name"] = agent_name
    t = transcripts_from_records([rec])[0]
    v = get_perturber("gender").perturb(t, identify_turns(t), "male", seed=0)
    assert not v.applicable and "no agent name" in v.reason and v.turns is None


def test_identification_has_the_seed_structure():
    t = transcripts_from_records([USER])[0]
    d = identify_turns(t).to_dict()
    seed_keys = {"agent_name", "agent_gender", "agent_race", "agent_religion", "name_turns", "agent_pronouns",
                 "gender_turns", "race_turns", "religion_turns", "politeness_turns", "formality_turns",
                 "directness_turns", "emotional_labor_turns", "disfluency_turns", "disability_turns"}
    assert seed_keys <= set(d)
    assert len(d["agent_pronouns"]) == len(d["gender_turns"])
    assert d["politeness_turns"] == [4] and d["directness_turns"] == [2]


def test_synthetic_third_person_references_swap_and_distractors_stay():
    ts = generate_transcripts(60, seed=11)
    p = get_perturber("gender")
    checked_aside = checked_distractor = 0
    for t in ts:
        ident = identify_turns(t)
        assert ident.source == "plan"
        target = "male" if t.meta["agent_gender"] == "female" else "female"
        v = p.perturb(t, ident, target, seed=0)
        if not v.applicable:
            assert not t.agent_name and not ident.gender_words
            continue
        for i, (plan_turn, turn) in enumerate(zip(t.meta["plan"], v.turns)):
            kinds = {pc["kind"] for pc in plan_turn["pieces"]}
            if "agent_ref" in kinds:
                ref = next(pc["text"] for pc in plan_turn["pieces"] if pc["kind"] == "agent_ref")
                assert swap_gender_words(ref, target) in turn["text"]
                checked_aside += 1
            for pc in plan_turn["pieces"]:
                if pc.get("distractor"):
                    assert pc["text"] in turn["text"]  # the relative's pronoun is untouched
                    checked_distractor += 1
    assert checked_aside > 3 and checked_distractor > 3
