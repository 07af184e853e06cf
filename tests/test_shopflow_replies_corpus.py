"""Readiness replies: every answer in the corpus states its value; every non-answer is a parse failure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cfbench.studies.shopflow.readiness import parse_answer, parse_readiness

CORPUS = yaml.safe_load((Path(__file__).parent / "data" / "replies_shopflow.yaml").read_text(encoding="utf-8"))
ANSWERS = [(text, float(value)) for text, value in CORPUS["answers"]]
NON_ANSWERS = CORPUS["non_answers"]


def test_corpus_is_large_and_has_no_duplicates():
    assert len(ANSWERS) >= 60 and len(NON_ANSWERS) >= 60
    texts = [t for t, _ in ANSWERS] + NON_ANSWERS
    assert len(set(texts)) == len(texts)
    assert {v for _, v in ANSWERS} == {0.0, 1.0}


@pytest.mark.parametrize("text,value", ANSWERS, ids=[repr(t)[:40] for t, _ in ANSWERS])
def test_answer_is_read(text, value):
    assert parse_answer(text) == value


@pytest.mark.parametrize("text", NON_ANSWERS, ids=[repr(t)[:40] for t in NON_ANSWERS])
def test_non_answer_is_a_parse_failure(text):
    assert parse_answer(text) is None


def _frame(texts, top=None):
    n = len(texts)
    return pd.DataFrame({"request_id": [f"r{i}" for i in range(n)], "text": texts,
                         "top_logprobs": [top] * n, "ok": True, "error": None})


def test_non_answer_with_a_no_first_token_is_not_scored():
    """Before: "No idea." scored 0.0 (its first token is "No"); the logprobs must not rescue a non-answer."""
    top = json.dumps({"No": math.log(0.8), "Yes": math.log(0.1)})
    out = parse_readiness(_frame(["No idea.", "No way to tell", "No"], top=top))
    assert out["parse_ok"].tolist() == [False, False, True]
    assert math.isnan(out.at[0, "score"]) and math.isnan(out.at[1, "score"])
    assert out.at[2, "score"] == pytest.approx(0.1 / 0.9)
    assert out["raw"].tolist()[:2] == ["No idea.", "No way to tell"]


def test_whole_corpus_through_the_frame_parser():
    texts = [t for t, _ in ANSWERS] + NON_ANSWERS
    out = parse_readiness(_frame(texts))
    assert out["parse_ok"].sum() == len(ANSWERS)
    assert out.loc[out["parse_ok"], "score"].tolist() == [v for _, v in ANSWERS]
    assert (out.loc[~out["parse_ok"], "score_source"].isna()).all()
