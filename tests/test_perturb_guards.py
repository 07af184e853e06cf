"""Deterministic guards: each one fails on the violation it exists for."""

from __future__ import annotations

import copy

from cfbench.io.transcripts import transcripts_from_records
from cfbench.perturb import Variant, check_variant, get_perturber, identify_turns, rejection_table
from cfbench.perturb.validate import fact_tokens

T = transcripts_from_records([{"id": "g1", "agent_name": "Omar", "meta": {"facts": ["Ledgerly", "Gold plan"]},
                               "turns": [
    {"speaker": "agent", "text": "Hello, this is Omar at Ledgerly."},
    {"speaker": "customer", "text": "My Gold plan charged me $42.10 on March 3rd."},
    {"speaker": "agent", "text": "I have refunded the $42.10."},
    {"speaker": "customer", "text": "Thanks."}]}])[0]


def _variant(new_texts, *, targets=(0, 1, 2, 3), **kw):
    turns = [x.to_dict() for x in T.turns]
    edits = []
    for i, s in new_texts.items():
        edits.append({"turn": i, "op": "replace", "speaker": turns[i]["speaker"], "before": turns[i]["text"], "after": s})
        turns[i] = {**turns[i], "text": s}
    return Variant(turns, edits=edits, checks={"target_turns": list(targets)}, **kw)


def test_a_clean_edit_passes():
    assert check_variant(T, _variant({2: "I've refunded the $42.10 for you."})) == []


def test_numbers_dates_and_facts():
    assert any("numbers/dates changed" in p for p in check_variant(T, _variant({2: "I have refunded the $42.00."})))
    assert any("numbers/dates changed" in p for p in check_variant(T, _variant({1: "My Gold plan charged me $42.10 on April 3rd."})))
    assert any("fact 'Gold plan'" in p for p in check_variant(T, _variant({1: "My plan charged me $42.10 on March 3rd."})))
    assert sorted(fact_tokens("May I help? On May 4 we paid 1,200.50").elements()) == ["1,200.50", "4", "may"]


def test_only_declared_and_target_turns_change():
    v = _variant({2: "Refunded: $42.10."}, targets=[0])
    assert any("non-target" in p for p in check_variant(T, v))
    sneaky = _variant({})
    sneaky.turns[3] = {"speaker": "customer", "text": "Not thanks."}
    assert check_variant(T, sneaky) == ["undeclared change at turn 3"]
    swapped = _variant({})
    swapped.turns[3] = {"speaker": "agent", "text": "Thanks."}
    assert "speaker changed at turn 3" in check_variant(T, swapped)
    lost = _variant({})
    lost.turns = lost.turns[:3]
    assert "turn count changed" in check_variant(T, lost)[0]
    bad_record = _variant({2: "I have refunded the $42.10!"})
    bad_record.edits[0]["before"] = "something else"
    assert "edit record for turn 2 does not match the texts" in check_variant(T, bad_record)


def test_length_ratio_and_llm_turn_ratio():
    long = _variant({2: "I have refunded the $42.10. " + "Really. " * 40})
    assert any("length ratio" in p for p in check_variant(T, long))
    v = _variant({2: "Refund $42.10 " + "done " * 30}, llm_made=True)
    assert any("turn 2 length ratio" in p for p in check_variant(T, v, max_ratio=10))


def test_old_name_must_be_gone_and_header_rules():
    ident = identify_turns(T)
    v = get_perturber("ethnicity_name").perturb(T, ident, "white", seed=0)
    assert check_variant(T, v) == []
    v2 = copy.deepcopy(v)
    v2.turns[3] = {"speaker": "customer", "text": "Thanks."}
    v2.turns[0]["text"] = T.turns[0].text  # name put back
    v2.edits = []
    assert any("original agent name still present" in p for p in check_variant(T, v2))
    h = _variant({}, header="Agent role: Trainee.")
    assert "header set on a variant whose operation does not add one" in check_variant(T, h)
    m = _variant({}, operation="metadata_header")
    assert "metadata variant has no header" in check_variant(T, m)


def test_rejection_table_counts_made_variants_only():
    import pandas as pd

    rows = [
        {"dimension": "original", "applicable": True, "operation": "none", "valid": True, "rejection_reason": ""},
        {"dimension": "politeness", "applicable": True, "operation": "none", "valid": True, "rejection_reason": ""},
        {"dimension": "politeness", "applicable": True, "operation": "turn_transformation", "valid": True,
         "rejection_reason": ""},
        {"dimension": "politeness", "applicable": True, "operation": "turn_transformation", "valid": False,
         "rejection_reason": "numbers/dates changed (missing ['3'], added [])"},
        {"dimension": "politeness", "applicable": False, "operation": "turn_transformation", "valid": False,
         "rejection_reason": "not applicable"},
    ]
    tab = rejection_table(pd.DataFrame(rows))
    assert tab.to_dict("records") == [{"dimension": "politeness", "label": "Politeness", "n_made": 2, "n_rejected": 1,
                                       "rejection_rate_pct": 50.0, "n_rejected_guard": 1, "n_rejected_llm": 0,
                                       "n_rejected_human": 0, "n_not_applicable": 1,
                                       "top_reason": "numbers/dates changed"}]


def test_rejection_table_splits_guard_llm_and_human():
    import pandas as pd

    base = {"dimension": "formality", "applicable": True, "operation": "turn_transformation"}
    rows = [{**base, "valid": True, "rejection_reason": "", "rejected_by": ""},
            {**base, "valid": False, "rejection_reason": "edit outside scope at turn 2: 'a' -> 'b'",
             "rejected_by": "guard"},
            {**base, "valid": False, "rejection_reason": "validator: not equivalent (x)", "rejected_by": "llm"},
            {**base, "valid": False, "rejection_reason": "human review", "rejected_by": "human"},
            {**base, "valid": False, "rejection_reason": "human review", "rejected_by": "human"}]
    r = rejection_table(pd.DataFrame(rows)).iloc[0]
    assert (r["n_made"], r["n_rejected"], r["n_rejected_guard"], r["n_rejected_llm"], r["n_rejected_human"]) == \
        (5, 4, 1, 1, 2)
    assert r["rejection_rate_pct"] == 80.0 and r["top_reason"] == "human review"
