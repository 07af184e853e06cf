"""Name swaps: ethnicity- and religion-coded names, case handling, applicability, shared names."""

from __future__ import annotations

import pytest

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import check_variant, get_perturber, identify_turns, replace_name
from cfbench.perturb.base import load_data

NAMES = load_data("names.yaml")


@pytest.mark.parametrize("text,old,new,expected", [
    ("Hello, this is Omar.", "Omar", "Wei", "Hello, this is Wei."),
    ("hello this is monica, Monica's desk", "Monica", "Rivka", "hello this is rivka, Rivka's desk"),
    ("THIS IS OMAR", "Omar", "Wei", "THIS IS WEI"),
    ("Omari and Omar", "Omar", "Wei", "Omari and Wei"),            # whole words only
    ("I'm Maria Lopez, Maria here", "Maria Lopez", "Aisha", "I'm Aisha, Aisha here"),
])
def test_replace_name(text, old, new, expected):
    assert replace_name(text, old, new) == expected


T = transcripts_from_records([{"id": "n1", "agent_name": "Omar", "turns": [
    {"speaker": "agent", "text": "Hello, this is Omar at Harborline. What can I do for you?"},
    {"speaker": "customer", "text": "Hi Omar, my claim for $120 is stuck."},
    {"speaker": "agent", "text": "I see it. I've approved the $120 now."},
    {"speaker": "customer", "text": "Thanks, sir."}]}])[0]


@pytest.mark.parametrize("kind", ["ethnicity", "religion"])
def test_every_condition_uses_a_name_of_that_group_and_the_agents_gender(kind):
    ident = identify_turns(T)
    assert ident.agent_gender == "male" and ident.agent_religion == "islam"
    p = get_perturber(f"{kind}_name")
    assert set(p.dimension.conditions) == set(NAMES[kind])
    seen = set()
    for cond in p.dimension.conditions:
        v = p.perturb(T, ident, cond, seed=0)
        name = v.turns[0]["text"].split("this is ")[1].split(" at")[0]
        assert name in NAMES[kind][cond]["male"] and name != "Omar"
        assert v.turns[1]["text"] == f"Hi {name}, my claim for $120 is stuck."
        assert v.turns[2:] == [x.to_dict() for x in T.turns[2:]]
        assert [e["turn"] for e in v.edits] == [0, 1]
        seen.add(name)
    assert len(seen) == len(p.dimension.conditions)


def test_cues_variant_uses_the_same_name_as_name_only():
    ident = identify_turns(T)
    for cond in NAMES["ethnicity"]:
        a = get_perturber("ethnicity_name").perturb(T, ident, cond, seed=3)
        b = get_perturber("ethnicity_cues").perturb(T, ident, cond, seed=3)
        cue = next(c for c in b.checks["injected"] if c in b.turns[0]["text"])
        assert b.turns[0]["text"] == f"{cue} {a.turns[0]['text']}"  # same name, the greeting cue before it


def test_seed_changes_the_choice_and_same_seed_repeats():
    ident = identify_turns(T)
    p = get_perturber("religion_name")
    runs = {p.perturb(T, ident, "christianity", seed=s).turns[0]["text"] for s in range(12)}
    assert len(runs) > 1
    assert p.perturb(T, ident, "christianity", seed=5).turns == p.perturb(T, ident, "christianity", seed=5).turns


def test_not_applicable_without_a_name_in_the_text():
    t = transcripts_from_records([{"id": "n2", "turns": [{"speaker": "agent", "text": "Thanks for calling."},
                                                          {"speaker": "customer", "text": "Hi."}]}])[0]
    for d in ("ethnicity_name", "religion_name"):
        v = get_perturber(d).perturb(t, identify_turns(t), get_perturber(d).dimension.conditions[0], seed=0)
        assert not v.applicable and v.reason == "no agent name: the agent never introduces one and the record gives none"
    # with-cues variants need no name: without a name they carry the cues only, and say so
    t2 = transcripts_from_records([{"id": "n2b", "turns": [{"speaker": "agent", "text": "Hello, how can I help?"},
                                                           {"speaker": "customer", "text": "Hi."}]}])[0]
    v = get_perturber("religion_cues").perturb(t2, identify_turns(t2), "judaism", seed=0)
    assert v.applicable and v.reason == "cues only: the agent gives no name to swap"
    assert check_variant(t2, v) == []


def test_name_found_from_introduction_when_agent_name_missing():
    t = transcripts_from_records([{"id": "n3", "turns": [
        {"speaker": "agent", "text": "hello this is monica from zyntra support can i have your name"},
        {"speaker": "customer", "text": "yes its dana thanks monica"}]}])[0]
    ident = identify_turns(t)
    assert ident.agent_name == "monica" and ident.name_turns == [0, 1]
    v = get_perturber("ethnicity_name").perturb(t, ident, "east_asian", seed=0)
    new = v.turns[0]["text"].split("this is ")[1].split(" from")[0]
    assert new == new.lower() and new in {n.lower() for g in NAMES["ethnicity"]["east_asian"].values() for n in g}
