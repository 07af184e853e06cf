"""The shared reply corpus (tests/data/replies_corpus.yaml) through the contact-center parsers.

Answers must be read as stated; every non-answer must be a parse failure that keeps no verdict or score.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cfbench.studies.contact_center_qa.coaching import parse_coaching
from cfbench.studies.contact_center_qa.qa import parse_qa

CORPUS = yaml.safe_load((Path(__file__).parent / "data" / "replies_corpus.yaml").read_text(encoding="utf-8"))


def test_corpus_size():
    qa, co = CORPUS["qa"], CORPUS["coaching"]
    assert len(qa["answers"]) + len(co["answers"]) >= 60
    assert len(qa["non_answers"]) + len(co["non_answers"]) >= 60
    assert len(qa["answers"]) >= 60 and len(qa["non_answers"]) >= 60


@pytest.mark.parametrize("case", CORPUS["qa"]["answers"], ids=lambda c: repr(c["reply"][:40]))
def test_qa_answer_is_read_as_stated(case):
    r = parse_qa(case["reply"])
    assert r["parse_ok"], r["parse_error"]
    assert r["answer"] == case["answer"]
    if case["confidence"] is None:
        assert math.isnan(r["confidence"])
    else:
        assert r["confidence"] == pytest.approx(case["confidence"])


@pytest.mark.parametrize("reply", CORPUS["qa"]["non_answers"], ids=lambda r: repr(r[:40]))
def test_qa_non_answer_is_a_parse_failure(reply):
    r = parse_qa(reply)
    assert not r["parse_ok"] and r["answer"] is None and math.isnan(r["answer_yes"])
    assert r["parse_error"]


@pytest.mark.parametrize("case", CORPUS["coaching"]["answers"], ids=lambda c: repr(c["reply"][:40]))
def test_coaching_answer_is_read_as_stated(case):
    r = parse_coaching(case["reply"])
    assert r["parse_ok"], r["parse_error"]
    assert r["score"] == pytest.approx(case["score"])


@pytest.mark.parametrize("reply", CORPUS["coaching"]["non_answers"], ids=lambda r: repr(r[:40]))
def test_coaching_non_answer_is_a_parse_failure(reply):
    r = parse_coaching(reply)
    assert not r["parse_ok"] and math.isnan(r["score"]) and r["parse_error"]


def test_frame_parsers_keep_the_raw_text_of_non_answers():
    from cfbench.studies.contact_center_qa.qa import parse_qa_frame

    j = pd.DataFrame({"text": CORPUS["qa"]["non_answers"][:5], "ok": True, "error": None})
    parsed = parse_qa_frame(j)
    assert not parsed["parse_ok"].any() and parsed["answer"].isna().all()
    assert j["text"].tolist() == CORPUS["qa"]["non_answers"][:5]  # the caller's raw text is untouched
