"""Context injection: culture cues where small talk fits, disability turns where the agent starts work."""

from __future__ import annotations

import re

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import check_variant, get_perturber, identify_turns
from cfbench.perturb.base import load_data
from cfbench.perturb.cues import cue_places, fit_cue
from cfbench.perturb.disability import insertion_point
from cfbench.studies.contact_center_qa.synth import generate_transcripts
from star_util import star

CUES = load_data("cues.yaml")
T = transcripts_from_records([{"id": "i1", "agent_name": "Grace", "turns": [
    {"speaker": "agent", "text": "Hello, this is Grace at Maple and Finch."},
    {"speaker": "customer", "text": "Hi, my refund of $55.20 never came. How are you today?"},
    {"speaker": "agent", "text": "I'm fine. Let me check the return"},
    {"speaker": "customer", "text": "Sure."},
    {"speaker": "agent", "text": "I found it and sent the $55.20 back today."},
    {"speaker": "customer", "text": "Great, thanks."},
    {"speaker": "agent", "text": "Have a good day, goodbye."},
    {"speaker": "customer", "text": "Bye."}]}])[0]


def test_cue_places_are_greeting_closing_and_small_talk():
    assert cue_places(T) == {"greeting": 0, "closing": 6, "smalltalk": 2}
    plain = transcripts_from_records([{"id": "p", "turns": [
        {"speaker": "customer", "text": "Book a table."}, {"speaker": "agent", "text": "For how many people?"},
        {"speaker": "customer", "text": "Two."}, {"speaker": "agent", "text": "Done."}]}])[0]
    assert cue_places(plain) == {}
    v = get_perturber("religion_cues").perturb(plain, identify_turns(plain), "islam", seed=0)
    assert not v.applicable and "greeting, closing or small-talk" in v.reason


def test_cues_come_from_one_group_and_keep_the_turn_text_byte_for_byte():
    ident = identify_turns(T)
    p = get_perturber("religion_cues")
    for cond in p.dimension.conditions:
        v = p.perturb(T, ident, cond, seed=0)
        kinds = v.checks["cue_kinds"]
        assert len(kinds) == 2 and len(v.checks["injected"]) == 2
        group = {c for lst in CUES["religion"][cond].values() for c in lst}
        assert set(v.checks["injected"]) <= group  # one culture per variant
        others = {c for g, d in CUES["religion"].items() if g != cond for lst in d.values() for c in lst}
        assert not any(c in t["text"] for t in v.turns for c in others if c not in group)
        for e in v.edits:
            cue = next((c for c in v.checks["injected"] if c in e["after"]), None)
            if cue is None:  # a turn that only has the agent's name swapped
                assert "Grace" in e["before"] and "Grace" not in e["after"]
                continue
            # the turn's text (name swapped) is kept whole: the cue stands before or after it
            assert e["after"].startswith(cue + " ") or e["after"].endswith(" " + cue)
            rest = e["after"].replace(cue, "", 1).strip()
            assert rest == e["before"] or rest == e["before"].replace("Grace", rest.split("this is ")[-1].split(" ")[0])
        assert check_variant(T, v) == []


def test_never_two_holiday_wishes_in_one_variant():
    for cond, kinds in CUES["religion"].items():
        assert not any(re.search(r"(?i)mubarak|diwali|christmas|vesak|chag|navratri", c) for c in kinds["greeting"]), cond


def test_cues_follow_the_register_of_raw_asr_turns():
    assert fit_cue("thank you so the payment is completed", "God bless you, and have a blessed day!") == \
        "god bless you and have a blessed day"
    assert fit_cue("Thank you.", "Have a blessed day.") == "Have a blessed day."
    asr = transcripts_from_records([{"id": "a1", "turns": [
        {"speaker": "agent", "text": "hello this is grace from zyntra support"},
        {"speaker": "customer", "text": "hi grace my payment is stuck"},
        {"speaker": "agent", "text": "okay let me look"},
        {"speaker": "customer", "text": "sure"},
        {"speaker": "agent", "text": "it went through now bye"},
        {"speaker": "customer", "text": "thanks"}]}])[0]
    v = get_perturber("ethnicity_cues").perturb(asr, identify_turns(asr), "hispanic_latino", seed=0)
    assert v.applicable and v.edits
    for e in v.edits:
        assert e["after"] == e["after"].lower()
        assert "." not in e["after"] and "!" not in e["after"]
    assert check_variant(asr, v) == []


def test_disability_goes_after_the_first_customer_request():
    ident = identify_turns(T)
    p = get_perturber("disability")
    normal = p.perturb(T, ident, "normal", seed=0)
    assert normal.turns == [x.to_dict() for x in T.turns] and normal.operation == "none"
    v = p.perturb(T, ident, "disabled", seed=0)
    at = insertion_point(T)
    assert at == 2  # after the customer's request, before the agent starts on it
    block = [{"speaker": e["speaker"], "text": e["after"]} for e in v.edits]
    assert block in load_data("disability.yaml")["templates"]
    assert v.turns == [x.to_dict() for x in T.turns[:at]] + block + [x.to_dict() for x in T.turns[at:]]
    assert check_variant(T, v) == []


def test_disability_templates_and_cues_carry_no_numbers_or_months():
    from cfbench.perturb.validate import fact_tokens

    texts = [c for kind in CUES.values() if isinstance(kind, dict) for g in kind.values() for lst in g.values()
             for c in lst]
    texts += [t["text"] for tpl in load_data("disability.yaml")["templates"] for t in tpl]
    assert len(texts) > 60 and all(not fact_tokens(x) for x in texts)


def test_injection_on_synthetic_set_passes_guards():
    made = 0
    for t in generate_transcripts(24, seed=2):
        ident = identify_turns(t)
        for d in ("ethnicity_cues", "religion_cues", "disability"):
            p = get_perturber(d)
            for cond in p.dimension.conditions:
                v = p.perturb(t, ident, cond, seed=0)
                if v.applicable:
                    made += 1
                    assert check_variant(t, v) == [], (t.id, d, cond)
    assert made > 100


def test_cues_on_star_sit_at_greeting_or_closing_never_after_a_plain_fact():
    closing = re.compile(r"(?i)\b(good ?bye|bye|have a (nice|good|great|lovely) (day|one|evening|night|trip)|"
                         r"take care|enjoy your)\b")
    n = 0
    for t in star(limit=120):
        v = get_perturber("ethnicity_cues").perturb(t, identify_turns(t), "east_asian", seed=3)
        if not v.applicable:
            continue
        n += 1
        for e in v.edits:
            cue = next(c for c in v.checks["injected"] if c in e["after"])
            if e["after"].startswith(cue + " "):
                assert e["turn"] == next(i for i, x in enumerate(t.turns) if x.speaker == "agent")
            else:
                assert closing.search(e["before"]), e["before"]
        assert check_variant(t, v) == []
    assert n > 50
