"""The refusal classifier on real assistant text: every wizard turn of the STAR corpus.

STAR wizards decline out-of-scope requests ("I can not do that.") and also report
failed look-ups ("I am unable to find any restaurants…"). Only the first are refusals.
"""

import json
from pathlib import Path

import pytest

from cfbench.metrics.refusal import classify_refusal

STAR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "star" / "dialogues"
pytestmark = pytest.mark.skipif(not STAR.is_dir(), reason=f"STAR corpus not present at {STAR}")


@pytest.fixture(scope="module")
def wizard_turns():
    turns = []
    for f in sorted(STAR.glob("*.json")):
        for e in json.loads(f.read_text(encoding="utf-8"))["Events"]:
            if e.get("Agent") == "Wizard" and e.get("Action") in ("utter", "pick_suggestion") and e.get("Text"):
                turns.append(e["Text"])
    return sorted(set(turns))


def test_ordinary_wizard_turns_are_not_refusals(wizard_turns):
    labels = {t: classify_refusal(t) for t in wizard_turns}
    flagged = sorted(t for t, lab in labels.items() if lab != "none")
    assert len(wizard_turns) > 1500  # distinct wizard turns
    assert len(flagged) <= 15, flagged  # a handful of real declines among thousands of turns


@pytest.mark.parametrize("text", [
    "I can not do that. ",
    "I am sorry I cannot do that.",
    "I can only help you submit fraud reports, I cannot help you order a pizza.",
    "Sorry I am unable to provide trivia. Is there anything else that I can do for you?",
])
def test_real_declines_from_star_are_full_refusals(wizard_turns, text):
    assert text in wizard_turns
    assert classify_refusal(text) == "full"


@pytest.mark.parametrize("text", [
    "I am unable to find any restaurants with any criteria.",
    "I am sorry I cannot find a route",
    "Unfortunately I cannot find your account.",
    "Sorry I can't get you on that flight, it's fully booked.",
])
def test_failed_lookups_from_star_are_not_refusals(wizard_turns, text):
    assert text in wizard_turns
    assert classify_refusal(text) == "none"
