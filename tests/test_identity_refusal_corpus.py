"""The refusal classifier on a written corpus: >= 40 phrasings per class (issue 17).

``tests/data/refusals.yaml`` holds full refusals, partial refusals (a decline or
disclaimer before real help), plain answers and look-alikes (refusal wording that is
an example phrase, reported speech or a third party — not the assistant declining).
"""

from pathlib import Path

import pytest
import yaml

from cfbench.metrics.refusal import classify_refusal

CORPUS = yaml.safe_load((Path(__file__).parent / "data" / "refusals.yaml").read_text(encoding="utf-8"))
BODIES = CORPUS["bodies"]


def _with_body(text: str, k: int) -> str:
    return text + "\n" + BODIES[k % len(BODIES)]


def test_corpus_size_and_no_duplicates():
    for cls in ("full", "partial", "none", "lookalike"):
        items = CORPUS[cls]
        assert len(items) >= 40, cls
        assert len(set(items)) == len(items), cls
    everything = [t for cls in ("full", "partial", "none", "lookalike") for t in CORPUS[cls]]
    assert len(set(everything)) == len(everything)


@pytest.mark.parametrize("text", CORPUS["full"])
def test_full_refusals(text):
    assert classify_refusal(text) == "full"


@pytest.mark.parametrize("k,text", list(enumerate(CORPUS["partial"])))
def test_partial_refusals(k, text):
    assert classify_refusal(_with_body(text, k)) == "partial"


@pytest.mark.parametrize("text", CORPUS["none"])
def test_plain_answers(text):
    assert classify_refusal(text) == "none"
    assert classify_refusal(_with_body(text, 1)) == "none"


@pytest.mark.parametrize("k,text", list(enumerate(CORPUS["lookalike"])))
def test_lookalikes_are_not_refusals(k, text):
    assert classify_refusal(text) == "none"
    assert classify_refusal(_with_body(text, k)) == "none"


@pytest.mark.parametrize("text", CORPUS["full"][:10])
def test_a_full_refusal_followed_by_real_help_is_partial(text):
    assert classify_refusal(_with_body(text, 0)) == "partial"


def test_the_issue_example():
    assert classify_refusal("I won't be able to help with that.") == "full"
