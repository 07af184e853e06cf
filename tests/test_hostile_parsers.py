"""Unparseable judge replies are parse failures in every task's parser, never a default answer."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from cfbench.studies.contact_center_qa.coaching import parse_coaching, parse_coaching_frame
from cfbench.perturb.llm_tasks import parse_identify, parse_rewrite, parse_validate
from cfbench.studies.contact_center_qa.qa import parse_qa, parse_qa_frame
from cfbench.studies.shopflow.readiness import parse_readiness

# Replies no contract accepts: empty, binary, HTML error pages, broken or wrong JSON, huge, ambiguous.
UNPARSEABLE = [
    "", "   \n\t", "\x00\x01\x02", "\u2591\u2592 lorem ipsum \u2593", "{", "}", "null", "[]", '["Yes"]', "NaN",
    "<html><body>502 Bad Gateway</body></html>", "x" * 200_000, "Yes" * 50_000, "Yes and No",
    "The answer is not yes", "I would say no... actually yes", '{"answer": "perhaps", "confidence": 80}',
    '{"answer": null}', '{"answer": 1}', '{"score": 150}', '{"score": -3}', '{"score": NaN}',
    '{"score": "high"}', '{"score": Infinity}', '{"equivalent": "true"}', '{"trans_turn": ""}',
    '{"trans_turn": 5}',
]


def _ids(values):
    return [repr(v)[:30] for v in values]


@pytest.mark.parametrize("text", UNPARSEABLE, ids=_ids(UNPARSEABLE))
def test_qa_parser_fails_instead_of_guessing(text):
    out = parse_qa(text)
    assert out["parse_ok"] is False and out["answer"] is None and out["parse_error"]
    assert math.isnan(out["answer_yes"]) and math.isnan(out["confidence"])


@pytest.mark.parametrize("text", UNPARSEABLE, ids=_ids(UNPARSEABLE))
def test_coaching_parser_fails_instead_of_guessing(text):
    out = parse_coaching(text)
    assert out["parse_ok"] is False and math.isnan(out["score"]) and out["parse_error"]


@pytest.mark.parametrize("text", [t for t in UNPARSEABLE if not t.lstrip().startswith("{")],
                         ids=_ids([t for t in UNPARSEABLE if not t.lstrip().startswith("{")]))
def test_perturbation_parsers_fail_on_non_json(text):
    assert parse_identify(text, 5)["parse_ok"] is False
    assert parse_rewrite(text)["parse_ok"] is False
    assert parse_validate(text)["parse_ok"] is False


@pytest.mark.parametrize("text", UNPARSEABLE, ids=_ids(UNPARSEABLE))
def test_rewrite_and_validate_reject_wrong_json(text):
    assert parse_rewrite(text)["parse_ok"] is False
    assert parse_validate(text)["parse_ok"] is False


def _judgments(texts, ok=True):
    n = len(texts)
    return pd.DataFrame({"request_id": [f"r{i}" for i in range(n)], "text": texts, "top_logprobs": [None] * n,
                         "ok": ok, "error": None if ok else "JudgeError: boom"})


READINESS_UNPARSEABLE = [t for t in UNPARSEABLE if t != "Yes and No"]


def test_frames_count_every_unparseable_reply():
    texts = UNPARSEABLE + ["Yes 80", '{"score": 70, "analysis": "ok"}']
    qa = parse_qa_frame(_judgments(texts))
    coach = parse_coaching_frame(_judgments(texts))
    ready = parse_readiness(_judgments(READINESS_UNPARSEABLE + ["Yes", "No"]))
    assert int((~qa["parse_ok"]).sum()) == len(UNPARSEABLE) + 1  # the coaching JSON is not a QA reply
    assert int((~coach["parse_ok"]).sum()) == len(UNPARSEABLE) + 1  # "Yes 80" is not a coaching reply
    assert int((~ready["parse_ok"]).sum()) == len(READINESS_UNPARSEABLE)
    assert ready["raw"].tolist()[:3] == READINESS_UNPARSEABLE[:3]  # raw text kept


def test_failed_calls_are_parse_failures_with_the_call_error():
    frame = _judgments([None, None], ok=False)
    for parsed in (parse_qa_frame(frame), parse_coaching_frame(frame)):
        assert not parsed["parse_ok"].any()
        assert parsed["parse_error"].str.contains("call failed").all()
    ready = parse_readiness(frame)
    assert not ready["parse_ok"].any() and ready["score"].isna().all()


def test_readiness_logprobs_without_yes_or_no_fall_back_to_text_then_fail():
    frame = _judgments(["Maybe"])
    frame["top_logprobs"] = [json.dumps({"Maybe": -0.1, "Perhaps": -2.0})]
    out = parse_readiness(frame)
    assert not out["parse_ok"][0] and math.isnan(out["score"][0])


def test_readiness_rejects_a_corrupt_logprob_cell_by_name():
    from hostile_util import expect_input_error

    frame = _judgments(["Yes"])
    frame["top_logprobs"] = ["{not json"]
    expect_input_error(lambda: parse_readiness(frame), field="top_logprobs", record="r0")


# Lenient readings must not turn an invalid value into a plausible one.
def test_qa_negative_confidence_is_not_read_as_positive():
    out = parse_qa("Yes -20")
    assert math.isnan(out["confidence"])


def test_coaching_scientific_score_is_not_truncated():
    out = parse_coaching("Score: 1e9")
    assert out["parse_ok"] is False


def test_identify_rejects_json_without_its_keys():
    assert parse_identify('{"answer": 1}', 5)["parse_ok"] is False
