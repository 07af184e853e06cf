"""Readiness task: prompts, P(ready) parsing, parse failures, score attachment."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.io.pairs import load_pairs
from cfbench.judges import run_requests
from cfbench.studies.shopflow import readiness as R

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pairs():
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/pairs.jsonl", score_column=None)
    return f[f.pair_id.isin(["sf01", "sf02", "sf03"])].reset_index(drop=True)


def test_case_text_comes_last_and_prefix_is_shared(pairs):
    reqs = R.build_requests(pairs)
    assert len(reqs) == 6 and len({r.request_id for r in reqs}) == 6
    users = [r.messages[-1]["content"] for r in reqs]
    row = pairs.iloc[0]
    assert row.request in users[0] and row.reply in users[0]
    assert users[0].index(row.request) < users[0].index(row.reply)
    prefix = users[0].split("Customer message:")[0]
    assert all(u.startswith(prefix) for u in users)
    assert reqs[0].messages[0] == reqs[5].messages[0]
    assert reqs[0].config.max_tokens == 1 and reqs[0].config.top_logprobs >= 2


def test_register_blind_prompt_differs_only_by_its_note(pairs):
    a = R.build_requests(pairs, prompt="baseline")[0].messages[-1]["content"]
    b = R.build_requests(pairs, prompt="register_blind")[0].messages[-1]["content"]
    assert a != b and b.replace(R._REGISTER_NOTE, "") == a
    with pytest.raises(InputError):
        R.build_requests(pairs, prompt="nope")


def test_missing_or_empty_text_is_an_input_error(pairs):
    with pytest.raises(InputError) as e:
        R.build_requests(pairs.drop(columns="reply"))
    assert e.value.field == "reply"
    bad = pairs.copy()
    bad.loc[1, "request"] = "  "
    with pytest.raises(InputError) as e:
        R.build_requests(bad)
    assert e.value.field == "request" and e.value.record == f"{bad.pair_id[1]}/{bad.variant[1]}"


def _j(rid, text, top, ok=True, error=None):
    return {"request_id": rid, "text": text, "top_logprobs": top, "ok": ok, "error": error}


def test_parse_prefers_logprobs_then_text_and_never_turns_garbage_into_no():
    rows = [
        _j("a", "No", json.dumps({"Yes": math.log(0.3), "No": math.log(0.6), " Yes": math.log(0.06)})),
        _j("b", "Yes", {"yes": math.log(0.2), "NO": math.log(0.2)}),
        _j("c", "No.", None),
        _j("d", "Yes, it is ready", json.dumps({"Sure": -0.1})),
        _j("e", "I cannot tell", None),
        _j("f", "", None, ok=False, error="timeout"),
    ]
    p = R.parse_readiness(pd.DataFrame(rows)).set_index("request_id")
    assert p.at["a", "score"] == pytest.approx(0.36 / 0.96) and p.at["a", "score_source"] == "logprobs"
    assert p.at["a", "yes_no_mass"] == pytest.approx(0.96)
    assert p.at["b", "score"] == pytest.approx(0.5)
    assert (p.at["c", "score"], p.at["c", "score_source"]) == (0.0, "text")
    assert (p.at["d", "score"], p.at["d", "score_source"]) == (1.0, "text")
    for rid in ("e", "f"):
        assert not p.at[rid, "parse_ok"] and math.isnan(p.at[rid, "score"])
    assert p.at["e", "raw"] == "I cannot tell"


def test_malformed_logprobs_are_an_input_error():
    with pytest.raises(InputError) as e:
        R.parse_readiness(pd.DataFrame([_j("a", "Yes", "{not json")]))
    assert e.value.record == "a" and e.value.field == "top_logprobs"


def test_attach_scores_excludes_whole_pairs_with_a_failed_variant(pairs):
    rows = []
    for r in pairs.itertuples():
        rid = R.request_id(r.pair_id, r.variant, "baseline")
        if r.pair_id == "sf02" and r.variant == "conversational":
            rows.append(_j(rid, "hmm", None))
        else:
            rows.append(_j(rid, "Yes", {"Yes": math.log(0.8), "No": math.log(0.2)}))
    s = R.attach_scores(pairs, R.parse_readiness(pd.DataFrame(rows)))
    assert set(s.frame.pair_id) == {"sf01", "sf03"} and len(s.frame) == 4
    assert s.frame.score.tolist() == pytest.approx([0.8] * 4)
    assert s.excluded.to_dict(orient="records") == [
        {"pair_id": "sf02", "variant": "conversational", "reason": "unparseable reply 'hmm'",
         "failure": "unparseable"}]
    assert len(s.parsed) == 6


def test_a_missing_score_says_why_timeouts_are_not_parse_failures(pairs):
    """Issue 37: each unscored request carries its failure kind; a call that timed out or was never sent is
    not an unparseable reply."""
    why = {("sf01", "formal"): _j("x", None, None, ok=False, error="RetryableError: timeout: no reply within "
                                   "timeout_s=120 s (gave up after 3 attempt(s))"),
           ("sf02", "formal"): _j("x", None, None, ok=False, error="not sent (plan only): recorded"),
           ("sf02", "conversational"): _j("x", "I'm sorry, I can't judge that.", None),
           ("sf03", "formal"): _j("x", "hmm", None)}
    rows = []
    for r in pairs.itertuples():
        rid = R.request_id(r.pair_id, r.variant, "baseline")
        j = why.get((r.pair_id, r.variant), _j("x", "Yes", {"Yes": math.log(0.8), "No": math.log(0.2)}))
        rows.append(dict(j, request_id=rid))
    parsed = R.parse_readiness(pd.DataFrame(rows))
    with pytest.raises(InputError, match="no pair has every variant scored"):
        R.attach_scores(pairs, parsed)
    kinds = dict(zip(parsed["request_id"], parsed["failure"]))
    assert kinds[R.request_id("sf01", "formal", "baseline")] == "timeout"
    assert kinds[R.request_id("sf02", "formal", "baseline")] == "not sent (plan only)"
    assert kinds[R.request_id("sf02", "conversational", "baseline")] == "refusal"
    assert kinds[R.request_id("sf03", "formal", "baseline")] == "unparseable"
    assert parsed["failure"].isna().sum() == len(parsed) - 4 and (parsed["failure"].isna() == parsed["parse_ok"]).all()


def test_attach_scores_requires_a_judgment_per_row(pairs):
    rid = R.request_id("sf01", "formal", "baseline")
    with pytest.raises(InputError) as e:
        R.attach_scores(pairs, R.parse_readiness(pd.DataFrame([_j(rid, "Yes", None)])))
    assert e.value.field == "request_id"


def test_scripted_double_through_the_runner(pairs):
    res = run_requests("scripted:shopflow-ready", R.build_requests(pairs), cache=False, progress=False)
    p = R.parse_readiness(res.judgments)
    assert len(p) == 6
    ok = p[p.parse_ok]
    assert (ok.score_source == "logprobs").all() and ok.score.between(0, 1).all()
    again = R.parse_readiness(run_requests("scripted:shopflow-ready", R.build_requests(pairs), cache=False,
                                           progress=False).judgments)
    pd.testing.assert_frame_equal(p, again)
