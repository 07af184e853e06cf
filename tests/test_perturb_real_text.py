"""Perturbers on real text: identification rules, the edit-scope guard, style rules, the STAR loader."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.io.star import load_star, star_dialogue
from cfbench.io.transcripts import Transcript, Turn, transcripts_from_records
from cfbench.perturb import check_variant, get_perturber, identify_turns, make_variants
from cfbench.perturb.base import Variant
from cfbench.perturb.identify import find_gender_words, guess_agent_name, miss_is_address
from cfbench.perturb.style_rules import restyle
from star_util import STAR_DIR, need_star, star


def _t(*turns, **kw):
    return Transcript(id=kw.pop("id", "x"), turns=tuple(Turn(s, x) for s, x in turns), **kw)


# --------------------------------------------------------------------------- identification

@pytest.mark.parametrize("text,name", [
    ("I am only able to help you reserve a flight.", ""),
    ("I am sorry, I don't quite understand what you mean.", ""),
    ("I'm not able to do that.", ""),
    ("Hello, this is Omar from Harborline.", "Omar"),
    ("Hi, my name is Priya and I'll help you today.", "Priya"),
    ("You've reached Summit Auto Care support.", ""),
    ("This is Summit Auto Care, how can I help?", ""),
    ("Good morning, Maria speaking.", "Maria"),
    ("hello this is monica from zyntra support", "monica"),
    ("I'm Alexis, how can I help?", "Alexis"),
])
def test_agent_name_only_from_an_introduction(text, name):
    assert guess_agent_name(_t(("agent", text)))[0] == name


def test_record_name_wins_and_says_so():
    assert guess_agent_name(_t(("agent", "Hi there."), agent_name="Dana")) == ("Dana", "record")


@pytest.mark.parametrize("text,words", [
    ("I do not want to miss this fight", []),
    ("yeah can I just cancel my taxi? I dont want to miss it", []),
    ("It was a good pet. I miss her.", []),
    ("Thank you, miss.", ["miss"]),
    ("Excuse me miss, one more thing", ["miss"]),
    ("My name is John. I was named after Sir John of Gaunt.", []),
    ("My cat, Sir Pouncealot III Esquire is jumping on the couch.", []),
    ("Thanks sir, that helps.", ["sir"]),
    ("Please call me ma'am, not miss.", []),
    ("Yes ma'am.", ["ma'am"]),
])
def test_gender_words_only_where_they_address_someone(text, words):
    assert [w["word"] for w in find_gender_words(text, kinds=("vocative", "title"))] == words


def test_miss_address_rule():
    assert miss_is_address("Thanks, miss!", 8, 12)
    assert not miss_is_address("I'll miss the bus", 5, 9)


def test_customer_gender_words_swap_but_agent_self_reference_does_not():
    t = _t(("agent", "Hello, this is Omar. What is your date of birth sir?"),
           ("customer", "Thanks sir, it is May 3 1990. I do not want to miss my flight."),
           ("agent", "Thank you, sir."))
    ident = identify_turns(t)
    assert ident.gender_turns == [1]  # only the customer's "sir"; the agent's "sir" addresses the customer
    v = get_perturber("gender").perturb(t, ident, "female", seed=0)
    assert v.turns[1]["text"].startswith("Thanks ma'am,") and "miss my flight" in v.turns[1]["text"]
    assert v.turns[2]["text"] == "Thank you, sir." and check_variant(t, v) == []


def test_no_name_dimensions_on_star_rows_kept_with_a_reason():
    ts = list(star(limit=40))
    v = make_variants(ts, dimensions=["gender", "ethnicity_name", "religion_name"], seed=0, progress=False)
    rows = v[v["dimension"] != "original"]
    assert len(rows) == len(ts) * (2 + 6 + 5) and not rows["applicable"].any()  # never dropped
    assert rows["reason"].str.startswith("no agent name").all()


# --------------------------------------------------------------------------- edit-scope guard

def test_scope_guard_rejects_a_false_name_swap_and_a_verb_swap():
    t = _t(("agent", "I am only able to help you reserve a flight."),
           ("customer", "I do not want to miss this fight, thanks."))
    fake_name = Variant([{"speaker": "agent", "text": "I am megan able to help you reserve a flight."},
                         t.turns[1].to_dict()],
                        edits=[{"turn": 0, "op": "replace", "speaker": "agent", "before": t.turns[0].text,
                                "after": "I am megan able to help you reserve a flight."}],
                        checks={"target_turns": [0], "scope": {"swaps": [["only", "megan"]], "inserted": [],
                                                               "name": "only"}})
    assert any("lower-case 'only'" in p for p in check_variant(t, fake_name))
    verb = Variant([t.turns[0].to_dict(), {"speaker": "customer", "text": "I do not want to sir this fight, thanks."}],
                   edits=[{"turn": 1, "op": "replace", "speaker": "customer", "before": t.turns[1].text,
                           "after": "I do not want to sir this fight, thanks."}],
                   checks={"target_turns": [1], "scope": {"swaps": [["miss", "sir"]], "inserted": [], "gender": True}})
    assert any("the verb 'miss'" in p for p in check_variant(t, verb))


def test_scope_guard_rejects_changes_next_to_a_cue():
    t = _t(("agent", "Hello, how can I help?"), ("customer", "Book a table."), ("agent", "Thank you and goodbye."))
    v = get_perturber("religion_cues").perturb(t, identify_turns(t), "hinduism", seed=0)
    assert check_variant(t, v) == []
    bad = Variant([dict(x) for x in v.turns], edits=[dict(e) for e in v.edits], operation=v.operation,
                  checks=v.checks)
    last = bad.turns[2]["text"].replace("Thank you", "Thanks")
    bad.turns[2]["text"] = last
    bad.edits[-1]["after"] = last
    assert any("edit outside scope at turn 2" in p for p in check_variant(t, bad))


def test_style_guard_rejects_content_outside_the_lexicon():
    t = _t(("agent", "May I have your name, please?"), ("customer", "Dana."))
    v = get_perturber("directness").perturb(t, identify_turns(t), "direct", seed=0)
    assert v.turns[0]["text"] == "Give me your name." and check_variant(t, v) == []
    v.turns[0]["text"] = "Give me your phone number."
    v.edits[0]["after"] = v.turns[0]["text"]
    assert any("outside the style lexicon" in p for p in check_variant(t, v))


@pytest.mark.parametrize("text,dim,level,expected", [
    ("Could you provide your date of birth, please?", "directness", "direct", "Give me your date of birth."),
    ("Is there anything else that I can do for you?", "directness", "neutral", "Do you need anything else?"),
    ("Right, and your PIN as well please.", "politeness", "neutral", "Right, and your PIN as well."),
    ("Would you like me to book it for you?", "politeness", "polite", "Would you like me to book it for you?"),
    ("May I have your name, please?", "formality", "neutral", "Could I get your name, please?"),
    ("Could I get your full name, please?", "formality", "formal", "May I have your full name, please?"),
    ("OK, I found it.", "formality", "neutral", "Okay, I found it."),
    ("We will call you ASAP.", "formality", "formal", "We will call you as soon as possible."),
    ("I'm sorry, but your booking request failed.", "emotional_labor", "neutral", "Your booking request failed."),
    ("I am sorry I cannot do that.", "emotional_labor", "empathetic", "I am sorry I cannot do that."),
    ("All booked! The ride ID is 481.", "emotional_labor", "empathetic", "All booked! The ride ID is 481."),
])
def test_style_rules_on_star_sentences(text, dim, level, expected):
    assert restyle(text, dim, "neutral" if level == "neutral" else "marked") == expected


def test_every_rule_variant_on_star_is_valid_and_guarded():
    ts = list(star(limit=150))
    v = make_variants(ts, seed=0, progress=False)
    made = v[v["applicable"] & (v["operation"] != "none")]
    assert made["valid"].all(), made.loc[~made["valid"], "rejection_reason"].head().tolist()
    for dim in ("directness", "politeness", "formality", "emotional_labor", "ethnicity_cues", "disability"):
        assert (made["dimension"] == dim).sum() > 30, dim  # style and context dimensions apply to real text
    assert set(made["perturber"].str.split("@").str[0]) <= set(v["dimension"])


# --------------------------------------------------------------------------- STAR loader

def test_load_star_maps_speakers_and_counts_skipped_events():
    need_star()
    t = load_star(STAR_DIR / "10.json")[0]
    raw = json.loads((STAR_DIR / "10.json").read_text())
    turns = [e for e in raw["Events"] if e["Action"] in ("utter", "pick_suggestion")]
    assert t.id == "star-10" and len(t.turns) == len(turns)
    assert [x.speaker for x in t.turns] == [{"Wizard": "agent", "User": "customer"}[e["Agent"]] for e in turns]
    assert sum(t.meta["star_skipped"].values()) == len(raw["Events"]) - len(turns)
    assert t.meta["domains"] == raw["Scenario"]["Domains"]


def test_load_star_folder_and_empty_dialogues():
    need_star()
    with pytest.raises(InputError, match="skip_empty=True"):
        load_star(STAR_DIR)
    with pytest.warns(UserWarning, match="without any turn left out"):
        ts = load_star(STAR_DIR, skip_empty=True)
    assert len(ts) == len(list(STAR_DIR.glob("*.json"))) - 30 and len({t.id for t in ts}) == len(ts)


@pytest.mark.parametrize("obj,field", [
    ({"Events": []}, "DialogueID"),
    ({"DialogueID": 1, "Events": "x"}, "Events"),
    ({"DialogueID": 1, "Events": [{"Agent": "User"}]}, "Events[0].Action"),
    ({"DialogueID": 1, "Events": [{"Agent": "User", "Action": "utter", "Text": " "}]}, "Events[0].Text"),
])
def test_star_bad_input_names_the_field(obj, field):
    with pytest.raises(InputError) as e:
        star_dialogue(obj, source="f.json")
    assert e.value.field == field


# --------------------------------------------------------------------------- gold

def test_gold_annotations_match_the_current_variants():
    from pathlib import Path

    from cfbench.perturb.report import gold_table

    gold = pd.read_csv(Path(__file__).parent / "gold" / "star_variants_gold.csv", dtype=str, keep_default_na=False)
    assert len(gold) >= 150 and set(gold["changes_beyond_intended"]) <= {"yes", "no"}
    items = sorted({v.split("::")[0] for v in gold["variant_id"]})
    ts = [t for t in star() if t.id in items]
    v = make_variants(ts, seed=0, progress=False)
    tab = gold_table(gold, v)
    assert tab["n_stale"].sum() == 0, "the perturbers changed since the gold was annotated: re-annotate"
    assert tab["n_annotated"].sum() == len(gold)
    valid = v.set_index("variant_id").loc[gold["variant_id"], "valid"]
    assert valid.all()  # the gold sample holds valid variants only
