"""Context injection: identity cues in sampled agent turns, disability turns inserted."""

from __future__ import annotations

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import check_variant, get_perturber, identify_turns
from cfbench.perturb.base import load_data
from cfbench.perturb.inject import cue_turns, insertion_point
from cfbench.studies.contact_center_qa.synth import generate_transcripts

CUES = load_data("cues.yaml")
T = transcripts_from_records([{"id": "i1", "agent_name": "Grace", "turns": [
    {"speaker": "agent", "text": "Hello, this is Grace at Maple and Finch."},
    {"speaker": "customer", "text": "Hi, my refund of $55.20 never came."},
    {"speaker": "agent", "text": "Let me check the return"},
    {"speaker": "customer", "text": "Sure."},
    {"speaker": "agent", "text": "I found it and sent the $55.20 back today."},
    {"speaker": "customer", "text": "Great, thanks."},
    {"speaker": "agent", "text": "Have a good day."},
    {"speaker": "customer", "text": "Bye."}]}])[0]


def test_cues_go_to_the_same_sampled_agent_turns_for_every_condition():
    ident = identify_turns(T)
    pos = cue_turns(T, seed=0, kind="religion")
    assert len(pos) == 2 and set(pos) <= {2, 4, 6}  # agent turns after the greeting
    p = get_perturber("religion_cues")
    for cond in p.dimension.conditions:
        v = p.perturb(T, ident, cond, seed=0)
        for i in pos:
            before = T.turns[i].text
            after = v.turns[i]["text"]
            stem = before if before.endswith((".", "!", "?")) else before + "."
            assert after.startswith(stem + " ")
            assert after[len(stem) + 1:] in CUES["religion"][cond]
        untouched = set(range(len(T.turns))) - set(pos) - {0}
        assert all(v.turns[i] == T.turns[i].to_dict() for i in untouched)
        assert check_variant(T, v) == []


def test_disability_inserts_one_template_after_a_customer_turn():
    ident = identify_turns(T)
    p = get_perturber("disability")
    normal = p.perturb(T, ident, "normal", seed=0)
    assert normal.turns == [x.to_dict() for x in T.turns] and normal.operation == "none"
    v = p.perturb(T, ident, "disabled", seed=0)
    at = insertion_point(T, seed=0)
    assert T.turns[at - 1].speaker == "customer" and 2 <= at <= len(T.turns) - 2
    block = [{"speaker": e["speaker"], "text": e["after"]} for e in v.edits]
    assert block in load_data("disability.yaml")["templates"]
    assert v.turns == [x.to_dict() for x in T.turns[:at]] + block + [x.to_dict() for x in T.turns[at:]]
    assert all(e["op"] == "insert" for e in v.edits) and [e["turn"] for e in v.edits] == list(range(at, at + len(block)))
    assert check_variant(T, v) == []
    assert p.perturb(T, ident, "disabled", seed=0).turns == v.turns


def test_disability_templates_and_cues_carry_no_numbers_or_months():
    from cfbench.perturb.validate import fact_tokens

    texts = [c for kind in CUES.values() if isinstance(kind, dict) for lst in kind.values() for c in lst]
    texts += [t["text"] for tpl in load_data("disability.yaml")["templates"] for t in tpl]
    assert texts and all(not fact_tokens(x) for x in texts)


def test_injection_on_synthetic_set_passes_guards():
    for t in generate_transcripts(24, seed=2):
        ident = identify_turns(t)
        for d in ("ethnicity_cues", "religion_cues", "disability"):
            p = get_perturber(d)
            for cond in p.dimension.conditions:
                v = p.perturb(t, ident, cond, seed=0)
                if v.applicable:
                    assert check_variant(t, v) == [], (t.id, d, cond)


def test_cues_follow_the_register_of_raw_asr_turns():
    from cfbench.perturb.inject import fit_cue

    assert fit_cue("thank you so the payment is completed", "God bless you, and have a blessed day!") == \
        "god bless you and have a blessed day"
    assert fit_cue("Thank you.", "Have a blessed day.") == "Have a blessed day."
    asr = transcripts_from_records([{"id": "a1", "turns": [
        {"speaker": "agent", "text": "hello this is grace from zyntra support"},
        {"speaker": "customer", "text": "hi grace my payment is stuck"},
        {"speaker": "agent", "text": "okay let me look"},
        {"speaker": "customer", "text": "sure"},
        {"speaker": "agent", "text": "it went through now"},
        {"speaker": "customer", "text": "thanks"}]}])[0]
    v = get_perturber("ethnicity_cues").perturb(asr, identify_turns(asr), "hispanic_latino", seed=0)
    for e in v.edits:
        assert e["after"] == e["after"].lower()
        assert "." not in e["after"] and "!" not in e["after"]
    assert check_variant(asr, v) == []
