"""LLM paths: prompt contracts, parsers, regeneration on failed guards/validator (scripted doubles)."""

from __future__ import annotations

import json

import pytest

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import make_variants
from cfbench.perturb.llm import identify_turns_llm
from cfbench.perturb.llm_tasks import (numbered_transcript, parse_identify, parse_rewrite, parse_validate,
                                       rewrite_messages, validate_messages)
from perturb_doubles import (each, failed, from_spec, garbage, identify_name_after_this_is, rewrite_drops_name,
                             rewrite_flaky, rewrite_negates, rewrite_tag, validate_no, validate_yes)

U = transcripts_from_records([{"id": "u1", "turns": [
    {"speaker": "agent", "text": "Hello, this is Omar from Ledgerly. How can I help?"},
    {"speaker": "customer", "text": "I was charged $40 twice on May 3."},
    {"speaker": "agent", "text": "I am sorry about that. Could you please give me your account number?"},
    {"speaker": "customer", "text": "It is 4471."},
    {"speaker": "agent", "text": "Thank you. I have refunded the duplicate $40 charge."},
    {"speaker": "customer", "text": "Thanks, sir."}]}])


def test_parse_rewrite():
    assert parse_rewrite('{"trans_turn": "Agent: Please hold."}')["text"] == "Please hold."
    assert parse_rewrite('```json\n{"trans_turn": ["One line."]}\n```')["text"] == "One line."
    for bad in ("", "Sure! Here you go", '{"trans_turn": ""}', '{"other": "x"}', "[1, 2]",
                '{"trans_turn": "N/A"}', '{"trans_turn": "Not sure."}', '{"trans_turn": "I can\'t help with that."}'):
        r = parse_rewrite(bad)
        assert r["parse_ok"] is False and r["text"] is None and r["parse_error"]


def test_parse_validate_needs_a_boolean():
    assert parse_validate('{"equivalent": false, "reason": "amount differs"}') == {
        "parse_ok": True, "parse_error": None, "equivalent": False, "reason": "amount differs"}
    for bad in ('{"equivalent": "no", "reason": "x"}', "No.", '{"reason": "x"}'):
        assert parse_validate(bad)["parse_ok"] is False


def test_parse_identify_converts_to_zero_based_and_checks_ranges():
    obj = {"agent_name": "Omar", "agent_gender": "male", "agent_race": "", "agent_religion": "",
           "name_turns": [1], "gender_turns": [6], "agent_pronouns": ["sir"], "race_turns": [],
           "religion_turns": [], "politeness_turns": [3, 5], "formality_turns": [], "directness_turns": [3],
           "emotional_labor_turns": [3]}
    r = parse_identify(json.dumps(obj), 6)
    assert r["parse_ok"] and r["identification"]["name_turns"] == [0]
    assert r["identification"]["politeness_turns"] == [2, 4] and r["identification"]["gender_turns"] == [5]
    assert "outside 1..6" in parse_identify(json.dumps({**obj, "name_turns": [7]}), 6)["parse_error"]
    assert "differ in length" in parse_identify(json.dumps({**obj, "agent_pronouns": []}), 6)["parse_error"]
    assert parse_identify("I think the agent is Omar.", 6)["parse_ok"] is False


def test_prompts_put_the_varying_text_last():
    r = rewrite_messages(dimension="politeness", condition="polite", target="Hold on.", left="Hi", right="Ok")
    assert r[0]["role"] == "system" and "Hold on." not in r[0]["content"]
    assert r[1]["content"].rstrip().endswith("Target line (Agent): Hold on.")
    r2 = rewrite_messages(dimension="politeness", condition="polite", target="Hold on.", left="Hi", right="Ok",
                          attempt=2)
    assert "Attempt 3" in r2[0]["content"] and r2[1] == r[1]  # a retry is a different chat, same varying text
    v = validate_messages("A text", "B text")
    assert v[1]["content"].index("A text") < v[1]["content"].index("B text")
    assert numbered_transcript([{"speaker": "agent", "text": "Hi"}]) == "[1] Agent: Hi"
    assert parse_rewrite('{"trans_turn": "I cannot authenticate you with that PIN."}')["parse_ok"]


def test_perturb_never_imports_the_judge_layer():
    import ast
    from pathlib import Path

    import cfbench.perturb as pkg

    for f in Path(pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("cfbench.judges"), f.name


def _llm(rewrite, validate):
    return make_variants(U, dimensions=["politeness"], rewrite_judge=each(rewrite),
                         validate_judge=each(validate) if validate else None, progress=False)


def test_rewrite_validated_on_first_attempt():
    v = _llm(rewrite_tag, validate_yes)
    polite = v[v["condition"] == "polite"].iloc[0]
    assert polite["applicable"] and polite["valid"] and polite["reason"] == "LLM rewrite, attempt 1"
    assert [e["turn"] for e in polite["edits"]] == [2, 4]  # the agent turns with politeness markers
    assert polite["turns"][2]["text"] == ("[politeness: polite] I am sorry about that. Could you please give me "
                                          "your account number?")


def test_guard_failure_triggers_regeneration():
    v = _llm(rewrite_flaky, validate_yes)
    row = v[v["condition"] == "neutral"].iloc[0]
    assert row["valid"] and row["reason"] == "LLM rewrite, attempt 2"
    assert "999" not in " ".join(t["text"] for t in row["turns"])


def test_validator_rejection_is_kept_with_reason_after_three_regenerations():
    v = _llm(rewrite_tag, validate_no)
    row = v[v["condition"] == "polite"].iloc[0]
    assert row["applicable"] and not row["valid"]
    assert row["rejection_reason"] == "validator: not equivalent (outcome differs); rejected after 4 attempt(s)"
    assert row["turns"] is not None  # the rejected text is kept
    once = make_variants(U, dimensions=["politeness"], rewrite_judge=each(rewrite_tag),
                         validate_judge=each(validate_no), max_regenerations=0, progress=False)
    assert once[once["condition"] == "polite"].iloc[0]["rejection_reason"].endswith("after 1 attempt(s)")


def test_llm_check_all_validates_deterministic_variants():
    from cfbench.perturb import rejection_table
    from cfbench.studies.contact_center_qa.synth import generate_transcripts

    ts = generate_transcripts(2, seed=0)
    ok = make_variants(ts, dimensions=["gender", "priming"], validate_judge=each(validate_yes),
                       llm_check_all=True, progress=False)
    assert ok[ok["applicable"]]["valid"].all()
    bad = make_variants(ts, dimensions=["gender", "priming"], validate_judge=each(validate_no),
                        llm_check_all=True, progress=False)
    g = bad[(bad["dimension"] == "gender") & bad["applicable"]]
    assert len(g) and (~g["valid"]).all() and (g["rejection_reason"] == "validator: not equivalent (outcome differs)").all()
    assert bad[bad["dimension"] == "priming"]["valid"].all()  # headers are not Operation 1/2
    tab = rejection_table(bad).set_index("dimension")
    assert tab.loc["gender", "rejection_rate_pct"] == 100.0 and tab.loc["priming", "rejection_rate_pct"] == 0.0
    with pytest.raises(ValueError):
        make_variants(ts, dimensions=["gender"], llm_check_all=True, progress=False)


def test_without_rewrite_judge_style_uses_the_rules():
    v = make_variants(U, dimensions=["politeness"], progress=False)
    neutral = v[v["condition"] == "neutral"].iloc[0]
    assert neutral["applicable"] and neutral["valid"] and neutral["reason"] == "style rules"
    assert neutral["perturber"] == "politeness@2"


def test_a_rewrite_that_loses_the_content_is_rejected_by_the_guards():
    v = make_variants(U, dimensions=["politeness"], rewrite_judge=each(rewrite_drops_name), max_regenerations=1,
                      progress=False)
    row = v[v["condition"] == "polite"].iloc[0]
    assert row["applicable"] and not row["valid"] and row["rejected_by"] == "guard"
    assert "a question became a statement" in row["rejection_reason"]


def test_a_rewrite_that_flips_meaning_is_rejected_by_the_guards():
    from cfbench.io.transcripts import transcripts_from_records

    t = transcripts_from_records([{"id": "s", "turns": [
        {"speaker": "customer", "text": "Can you book a hotel?"},
        {"speaker": "agent", "text": "I am sorry, I don't quite understand what you mean. I am only able to help "
                                     "you issue fraud reports."}]}])
    v = make_variants(t, dimensions=["formality"], rewrite_judge=each(rewrite_negates), max_regenerations=0,
                      progress=False)
    row = v[v["condition"] == "formal"].iloc[0]
    assert not row["valid"] and "negation/limiting words changed" in row["rejection_reason"]


def test_failed_calls_are_failures_not_rewrites():
    v = make_variants(U, dimensions=["politeness"], rewrite_judge=each(failed), max_regenerations=0,
                      progress=False)
    row = v[v["condition"] == "polite"].iloc[0]
    assert not row["valid"] and "rewrite call failed" in row["rejection_reason"]
    with pytest.raises(TypeError, match="judge callable"):
        make_variants(U, dimensions=["politeness"], rewrite_judge="scripted:x", progress=False)


def test_llm_identifier_contract():
    out = identify_turns_llm(U, each(identify_name_after_this_is), progress=False)
    assert out[0]["parse_ok"] and out[0]["identification"]["name_turns"] == [0]
    assert out[0]["identification"]["agent_name"] == "Omar"
    bad = identify_turns_llm(U, each(garbage), progress=False)
    assert bad[0]["parse_ok"] is False and bad[0]["identification"] is None and bad[0]["raw"]


@pytest.mark.local_model
def test_local_model_rewrites_one_line_and_validator_answers():
    complete = from_spec("local:qwen2.5-coder-1.5b")
    chat = rewrite_messages(dimension="politeness", condition="polite", target="Give me your account number.",
                            left="I was charged twice.", right="It is 4471.")
    text = complete([chat])[0]
    parsed = parse_rewrite(text)
    assert parsed["parse_ok"], text
    assert "account number" in parsed["text"].lower()
    v = complete([validate_messages("Agent: The refund is $40.", "Agent: The refund is $90.")])[0]
    assert parse_validate(v)["parse_ok"], v


def test_llm_identification_drives_the_perturbers():
    from cfbench.perturb import TurnIdentification

    t = U[0]
    data = {"agent_name": "Omar", "agent_gender": "male", "agent_race": "", "agent_religion": "",
            "name_turns": [0], "gender_turns": [5, 5], "agent_pronouns": ["sir", "she"],
            "race_turns": [], "religion_turns": [], "politeness_turns": [2], "formality_turns": [],
            "directness_turns": [2], "emotional_labor_turns": [2]}
    ident = TurnIdentification.from_llm(data, t)
    assert ident.source == "llm"
    assert ident.gender_words == [{"turn": 5, "start": 8, "end": 11, "word": "sir"}]  # "she" is not in the turn
    v = make_variants(U, dimensions=["gender"], identify_judge=each(identify_name_after_this_is), progress=False)
    # the scripted identifier reports the name in turn 1 only and no gender words
    female = v[v["condition"] == "female"].iloc[0]
    assert [e["turn"] for e in female["edits"]] == [0]
    v2 = make_variants(U, dimensions=["gender"], identify_judge=each(garbage), progress=False)
    row = v2[v2["condition"] == "female"].iloc[0]
    assert "rule-based identification used" in row["reason"]
    assert [e["turn"] for e in row["edits"]] == [0, 5]  # rules: name + "sir"


def test_validator_calibration_pairs():
    from cfbench.perturb.llm import validator_calibration
    from cfbench.studies.contact_center_qa.synth import generate_transcripts

    ts = [t for t in generate_transcripts(10, seed=0) if t.agent_name and t.meta["outcome"] == "resolved"][:2]
    assert len(ts) == 2
    cal = validator_calibration(ts, each(validate_yes), progress=False)
    assert list(cal["kind"].value_counts().sort_index().items()) == [("corrupted", 4), ("preserving", 4)]
    assert cal["parse_ok"].all() and cal["equivalent"].all()  # this double accepts everything
    changed = cal[cal["variant"].str.startswith("number_changed")]
    assert len(changed) == 2
    # the deterministic guards pass every preserving pair and catch every corruption
    assert cal.loc[cal["kind"] == "preserving", "guards_pass"].all()
    assert not cal.loc[cal["kind"] == "corrupted", "guards_pass"].any()
    assert cal.loc[changed.index, "guard_failures"].str.startswith("numbers/dates changed").all()
    rej = validator_calibration(ts, each(validate_no), progress=False)
    assert (~rej["equivalent"].astype(bool)).all()
