"""Strict parsers of the judge-bias tasks on hostile replies: anything but a clear answer is a parse failure."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cfbench.studies.judge_bias.tasks import p_a_from_logprobs, parse_judgments, parse_pairwise, parse_pointwise


@pytest.mark.parametrize("text,expected", [("A", "A"), ("B", "B"), (" b\n", "B"), ("A.", "A"), ("Reply B", "B"),
                                           ("B)", "B")])
def test_pairwise_accepts_only_a_clear_letter(text, expected):
    assert parse_pairwise(text) == expected


@pytest.mark.parametrize("text", ["", " ", "AB", "A or B", "Both", "Neither", "I prefer A", "A because it is polite",
                                  "C", "Answer: A", "A\nB", "**A**", "1", None, 1, "Α", "reply", "A B"])
def test_pairwise_hostile_replies_are_parse_failures(text):
    assert parse_pairwise(text) is None


@pytest.mark.parametrize("text,expected", [("7", 7), ("10", 10), (" 1 ", 1), ("8/10", 8), ("9.", 9)])
def test_pointwise_accepts_only_an_integer_1_to_10(text, expected):
    assert parse_pointwise(text) == expected


@pytest.mark.parametrize("text", ["0", "11", "7.5", "-3", "seven", "7 or 8", "Score: 7", "10/100", "", "100", None,
                                  "7\n8", "١٠"])
def test_pointwise_hostile_replies_are_parse_failures(text):
    assert parse_pointwise(text) is None


def test_p_a_from_first_token_logprobs():
    assert p_a_from_logprobs({"A": math.log(0.6), " B": math.log(0.2), "x": 0.0}) == pytest.approx(0.75)
    assert p_a_from_logprobs('{"A": -0.5, "B": -0.5}') == pytest.approx(0.5)
    assert math.isnan(p_a_from_logprobs({"Yes": -0.1}))
    assert math.isnan(p_a_from_logprobs(None)) and math.isnan(p_a_from_logprobs("not json"))


def test_parse_judgments_keeps_failures_and_never_reads_them_as_verdicts():
    j = pd.DataFrame({"request_id": ["s-1-draft/pairwise/baseline/realA", "s-1-draft/pairwise/baseline/realB",
                                     "s-1-draft/pointwise/authority/real", "s-1-draft/pairwise/source/realA"],
                      "text": ["A", "Both are fine", "7", None], "top_logprobs": ['{"A": -0.1, "B": -2.4}', None, None, None],
                      "ok": [True, True, True, False], "error": [None, None, None, "timeout"]})
    p = parse_judgments(j)
    assert list(p["parse_ok"]) == [True, False, True, False]
    assert p.loc[0, "answer"] == "A" and p.loc[0, "p_a"] > 0.9
    assert pd.isna(p.loc[1, "answer"]) and math.isnan(p.loc[1, "p_a"])
    assert p.loc[2, "score"] == 7 and p.loc[2, "item_id"] == "s-1-draft"
    assert p.loc[3, "raw"].startswith("<failed")
