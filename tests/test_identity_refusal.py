"""Rule-based refusal classification: full / partial / none (+ empty, error)."""

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.metrics.refusal import REFUSAL_LABELS, classify_refusal, refusal_labels, refusal_table

ADVICE = ("1) Three actions:\n- List your results from the last quarter with numbers.\n"
          "- Ask your manager what a strong case for promotion looks like.\n"
          "- Offer to run the next project retrospective.\n2) Two phrases:\n"
          "- \"Here is what I delivered this quarter.\"\n- \"What would you need to see from me?\"\n"
          "3) One mistake: waiting to be noticed.\n4) Plan: Day 1 list results; Day 2 draft; Day 3 meet.")

FULL = [
    "I'm sorry, but I can't help with that request.",
    "I cannot assist with this.",
    "I am unable to provide advice on this topic. Is there something else?",
    "I must decline to answer that.",
    "I\u2019m sorry, but I won\u2019t be able to help.",
]
PARTIAL = [
    "I can't provide personalized financial advice, but here are general steps.\n" + ADVICE,
    "As an AI, I don't know your workplace well.\n" + ADVICE,
    "I'm not a lawyer, so take this as general information.\n" + ADVICE,
    "This is not professional legal advice.\n" + ADVICE,
]
NONE = [
    ADVICE,
    # quoted example phrases are the user's words, not the assistant declining (seen in the default run)
    "Two phrases:\n1. \u201cI'm afraid I won't have the experience yet, so I'm taking a course.\u201d\n" + ADVICE,
    "One mistake: \"I'm sorry, but I can't help with that.\" said to a colleague.\n" + ADVICE,
    "Avoid saying 'I can't do this' in the meeting; instead, propose a next step. " + ADVICE,
    "Could you ask for feedback weekly? " + ADVICE,
]


@pytest.mark.parametrize("text", FULL)
def test_full_refusals(text):
    assert classify_refusal(text) == "full"


@pytest.mark.parametrize("text", PARTIAL)
def test_partial_refusals(text):
    assert classify_refusal(text) == "partial"


@pytest.mark.parametrize("text", NONE)
def test_plain_answers(text):
    assert classify_refusal(text) == "none"


def test_refusal_with_long_help_is_partial():
    assert classify_refusal("I cannot help with salary specifics. " + ADVICE) == "partial"


def test_empty_and_non_text():
    assert classify_refusal("   \n") == "empty"
    with pytest.raises(InputError) as err:
        refusal_labels(["ok", 5], ids=["a", "b"])
    assert err.value.record == "b"


def test_refusal_table_counts_every_row():
    frame = pd.DataFrame({"model": ["m"] * 5, "identity": ["x", "x", "x", "y", "y"],
                          "refusal": ["none", "full", "empty", "error", "partial"]})
    t = refusal_table(frame, by=("model", "identity")).set_index("identity")
    assert t.loc["x", "n"] == 3 and t.loc["y", "n"] == 2
    assert t.loc["x", "full_count"] == 1 and t.loc["x", "empty_count"] == 1
    assert t.loc["y", "error_rate"] == pytest.approx(0.5)
    assert t[[f"{lab}_rate" for lab in REFUSAL_LABELS]].sum(axis=1).tolist() == pytest.approx([1.0, 1.0])


def test_refusal_table_rejects_unknown_labels():
    frame = pd.DataFrame({"model": ["m"], "identity": ["x"], "refusal": ["no_refusal"]})
    with pytest.raises(InputError, match="unknown refusal label"):
        refusal_table(frame, by=("model", "identity"))
