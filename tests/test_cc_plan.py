"""Evaluation planning: expansion, deduplication, dry-run counts, skipped rows, running."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cc_fixtures import variants_frame
from cfbench.core.errors import InputError
from cfbench.studies.contact_center_qa.items import labels_frame, select_items
from cfbench.studies.contact_center_qa.judging import run_plan
from cfbench.studies.contact_center_qa.requests import estimate_cost, plan_evaluation
from cfbench.studies.contact_center_qa.tables import study_tables


def _plan(**kw):
    args = dict(judges=["scripted:cc-qa"], questions=["issue_resolution", "greeting_name"], repeats=3)
    args.update(kw)
    return plan_evaluation(variants_frame(), **args)


def test_original_is_judged_once_per_question():
    p = _plan(repeats=0)
    rows = p.rows
    # per item and question: original row, gender/original row (same prompt), gender/male, 2 headers
    assert len(rows) == 3 * 2 * 5
    assert len(p.requests["scripted:cc-qa"]) == 3 * 2 * 4
    shared = rows[rows["variant_id"].str.endswith("/original")]
    assert shared.groupby(["item_id", "question_id"])["key"].nunique().eq(1).all()
    s = p.summary().iloc[0]
    assert (s["n_rows"], s["n_requests"], s["n_shared"]) == (30, 24, 6)


def test_repeats_have_distinct_keys_and_repeat0_at_eval_temperature_is_the_original():
    p = _plan(repeats=3)
    rob = p.rows[p.rows["dimension"] == "robustness"]
    orig = p.rows[p.rows["dimension"] == "original"]
    assert rob.groupby(["item_id", "question_id"])["key"].nunique().eq(3).all()
    r0 = rob[rob["repeat"] == 0].set_index(["item_id", "question_id"])["key"]
    assert (r0 == orig.set_index(["item_id", "question_id"])["key"]).all()
    reqs = {r.request_id: r for r in p.requests["scripted:cc-qa"]}
    assert {reqs[i].repeat for i in rob["request_id"]} == {0, 1, 2}


def test_sampling_baseline_is_its_own_pseudo_dimension():
    p = _plan(repeats=2, robustness_temperature=[0.0, 0.7])
    dims = set(p.rows["dimension"])
    assert {"robustness", "robustness_t0.7"} <= dims
    hot = p.rows[p.rows["dimension"] == "robustness_t0.7"]
    assert (hot["temperature"] == 0.7).all()


def test_not_applicable_rows_are_listed_not_dropped():
    p = _plan()
    assert len(p.skipped) == 3
    assert p.skipped["skip_reason"].str.contains("not applicable").all()
    assert "disability" not in set(p.rows["dimension"])


def test_compared_set_filters_conditions():
    p = _plan(repeats=0, compared={"gender": ["male"]})
    g = p.rows[p.rows["dimension"] == "gender"]
    assert set(g["condition"]) == {"male"}


def test_missing_original_and_unknown_question_are_input_errors():
    v = variants_frame()
    with pytest.raises(InputError) as e:
        plan_evaluation(v[v["condition"] != "original"], judges=["scripted:cc-qa"], questions=["issue_resolution"])
    assert e.value.field == "condition"
    with pytest.raises(InputError) as e:
        plan_evaluation(v, judges=["scripted:cc-qa"], questions=["nope"])
    assert e.value.record == "nope"


def test_fairness_and_coaching_subsets():
    p = _plan(repeats=0, fairness=True, fairness_dimensions=["gender"], coaching=True,
              coaching_items=["c1"], coaching_dimensions=["past_performance"])
    fair = p.rows[p.rows["arm"] == "fairness"]
    assert set(fair["dimension"]) == {"original", "gender"}
    coach = p.rows[p.rows["task"] != "qa"]
    assert set(coach["item_id"]) == {"c1"}
    assert set(coach["dimension"]) == {"original", "past_performance"}
    assert set(coach["question_id"]) == {"positives", "improvement", "customer"}
    sysmsgs = {r.messages[0]["content"] for r in p.requests["scripted:cc-qa"]}
    assert len(sysmsgs) == 3  # baseline, fair QA, fair coaching


def test_cost_estimate_rewards_prefix_sharing():
    p = _plan(repeats=0)
    with_reuse = estimate_cost(p).iloc[0]
    without = estimate_cost(p, reuse_prefix=False).iloc[0]
    assert with_reuse["prompt_tokens_after_reuse"] < without["prompt_tokens_after_reuse"]
    assert with_reuse["n_requests"] == 24


def test_run_plan_parses_and_never_turns_failures_into_no():
    p = _plan(repeats=3, robustness_temperature=0.7, fairness=True, coaching=True)
    labels = pd.DataFrame({"item_id": ["c1", "c2", "c3"], "question_id": "issue_resolution",
                           "label": ["Yes", "No", "Yes"]})
    j, rows, stats = run_plan(p, labels=labels, cache=False, progress=False)
    assert len(j) == p.n_requests and stats["scripted:cc-qa"]["n_failed"] == 0
    failed = j[~j["parse_ok"]]
    assert failed["answer"].isna().all() and failed["score"].isna().all()
    assert j.loc[j["parse_ok"] & (j["task"] == "qa"), "answer"].isin(["Yes", "No"]).all()
    assert rows["label"].notna().sum() > 0 and rows["category"].notna().any()
    T = study_tables(rows, n_boot=50)
    assert {"cfr", "masd", "robustness", "accuracy", "fairness_prompting_delta"} <= set(T)
    masd = T["masd"]
    # JSON contract in the baseline arm: its first token is "{", no P(Yes); the fairness arm's
    # answer / rationale / evidence reply opens with the bare answer word, so it carries P(Yes)
    assert set(masd.loc[masd["arm"] == "baseline", "score"]) == {"confidence", "positives", "improvement", "customer"}
    assert set(masd.loc[masd["arm"] == "fairness", "score"]) == {"confidence", "p_yes", "positives", "improvement",
                                                                 "customer"}
    fair_qa = j[(j["task"] == "qa") & (j["arm"] == "fairness")]
    assert fair_qa["evidence_status"].isin(["quoted", "none", "unparsed"]).all()
    assert j.loc[(j["task"] == "qa") & (j["arm"] == "baseline"), "evidence_status"].isna().all()
    assert not math.isnan(T["accuracy"]["accuracy"].iloc[0])


def test_parse_ok_column_agrees_with_the_parser():
    from cfbench.studies.contact_center_qa.qa import parse_qa

    p = _plan(repeats=0)
    j, _, _ = run_plan(p, cache=False, progress=False)
    for text, ok in zip(j["text"], j["parse_ok"]):
        assert ok == parse_qa(text)["parse_ok"]


def test_select_items_requires_names_and_balances():
    class T:
        def __init__(self, i, name, lab):
            self.id, self.agent_name, self.labels = i, name, {"issue_resolution": lab}

    ts = [T("a", "Ana", "Yes"), T("b", None, "No"), T("c", "Bo", "Yes"), T("d", "Cy", "No")]
    assert [t.id for t in select_items(ts, 2, balance_label="issue_resolution")] == ["a", "d"]
    with pytest.raises(InputError):
        select_items(ts, 4)
    lf = labels_frame(ts)
    assert len(lf) == 4 and set(lf["label"]) == {"Yes", "No"}


def test_rubric_paraphrases_form_a_wording_robustness_row():
    """Issue 17: the question asked in the rubric's other wordings, on each original, is a robustness row
    (wording0 = the rubric text, shared with the original's request; wording1..k = paraphrases)."""
    p = _plan(repeats=0, paraphrases=2)
    w = p.rows[p.rows["dimension"] == "robustness_wording"]
    assert len(w) == 3 * 2 * 3 and set(w["condition"]) == {"wording0", "wording1", "wording2"}
    orig = p.rows[p.rows["dimension"] == "original"].set_index(["item_id", "question_id"])["key"]
    w0 = w[w["condition"] == "wording0"].set_index(["item_id", "question_id"])["key"]
    assert (w0 == orig.loc[w0.index]).all()  # slot 0 is the original's own request
    w1 = w[w["condition"] == "wording1"]
    assert not w1["key"].isin(orig).any()
    reqs = {r.request_id: r for r in p.requests["scripted:cc-qa"]}
    rubric = __import__("cfbench.studies.contact_center_qa.prompts", fromlist=["x"]).load_rubric()
    para = rubric.set_index("question_id").loc["issue_resolution", "paraphrases"][0]
    one = w1[w1["question_id"] == "issue_resolution"].iloc[0]
    assert para in reqs[one["request_id"]].messages[1]["content"]
    _, rows, _ = run_plan(p, cache=False, progress=False)
    T = study_tables(rows, n_boot=50)
    assert "robustness_wording" in set(T["robustness"]["baseline"])
    assert "robustness_wording" in set(T["cfr_minus_robustness"]["baseline"])
    assert "robustness_wording" in set(T["kappa"]["baseline"])
