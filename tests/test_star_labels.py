"""The STAR loader turns the customer's questionnaire answer into the issue_resolution label."""

from __future__ import annotations

import json
import warnings

import pytest

from cfbench.core.errors import InputError
from cfbench.io.dialogues import load_dialogues
from cfbench.io.star import star_dialogue



def need_star():
    """``shared/data/star/dialogues`` beside the checkout or any folder above it (a worktree sits deeper)."""
    from pathlib import Path

    for up in Path(__file__).resolve().parents:
        d = up / "shared" / "data" / "star" / "dialogues"
        if d.is_dir():
            return d
    pytest.skip("STAR dialogues not found in shared/data/star beside the checkout (the project does not commit them)")


def _dialogue(questionnaire):
    obj = {"DialogueID": 7, "Scenario": {"Domains": ["hotel"]},
           "Events": [{"Agent": "User", "Action": "utter", "Text": "Book me a room."},
                      {"Agent": "Wizard", "Action": "utter", "Text": "Done, booked."}]}
    if questionnaire is not ...:
        obj["UserQuestionnaire"] = questionnaire
    return obj


def test_task_question_becomes_the_label_and_is_recorded():
    t = star_dialogue(_dialogue([{"Question": "Did the assistant stay calm and helpful throughout the dialogue?",
                                  "Answer": True},
                                 {"Question": "Did the assistant reserve your hotel?", "Answer": False}]),
                      source="x.json")
    assert t.labels == {"issue_resolution": "No"}
    assert t.meta["label_question"] == {"issue_resolution": "Did the assistant reserve your hotel?"}
    assert [a["answer"] for a in t.meta["user_questionnaire"]] == [True, False]


def test_first_task_question_wins_over_a_follow_up():
    t = star_dialogue(_dialogue([{"Question": "Did the AI Assistant tell you the weather?", "Answer": True},
                                 {"Question": "Did the AI Assistant say something about rain?", "Answer": False}]),
                      source="x.json")
    assert t.labels == {"issue_resolution": "Yes"}
    assert t.meta["label_question"]["issue_resolution"].endswith("tell you the weather?")


@pytest.mark.parametrize("q", [..., [], [{"Question": "Did you enjoy this task?", "Answer": True}]])
def test_no_task_question_means_no_label(q):
    t = star_dialogue(_dialogue(q), source="x.json")
    assert t.labels == {} and "label_question" not in t.meta


@pytest.mark.parametrize("q, field", [
    ({"Question": "x"}, "UserQuestionnaire"),
    (["no"], "UserQuestionnaire[0]"),
    ([{"Question": "Did the assistant reserve your hotel?", "Answer": "yes"}], "UserQuestionnaire[0].Answer"),
    ([{"Question": "Did the assistant reserve your hotel?", "Answer": None}], "UserQuestionnaire[0].Answer"),
    ([{"Answer": True}], "UserQuestionnaire[0].Question"),
])
def test_bad_questionnaire_is_one_clear_error(q, field):
    with pytest.raises(InputError) as e:
        star_dialogue(_dialogue(q), source="bad.json")
    assert e.value.field == field and e.value.source == "bad.json" and e.value.record == "star-7"


def test_labels_round_trip_through_the_transcript_dict(tmp_path):
    path = tmp_path / "7.json"
    path.write_text(json.dumps(_dialogue([{"Question": "Did the assistant reserve your hotel?", "Answer": True}])))
    (t,) = load_dialogues(path)
    assert t.to_dict()["labels"] == {"issue_resolution": "Yes"}


def test_real_star_labels_match_the_raw_answers():
    root = need_star()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ts = load_dialogues(root)
    labelled = [t for t in ts if t.labels]
    yes = sum(t.labels["issue_resolution"] == "Yes" for t in labelled)
    no = len(labelled) - yes
    assert yes > 50 and no > 30  # enough of both for a balanced arm
    for t in labelled[:: max(1, len(labelled) // 40)]:  # every ~40th, against the raw file
        raw = json.loads((root / f"{t.meta['dialogue_id']}.json").read_text())
        q = t.meta["label_question"]["issue_resolution"]
        answer = next(x["Answer"] for x in raw["UserQuestionnaire"] if x["Question"].strip() == q)
        assert t.labels["issue_resolution"] == ("Yes" if answer else "No")
        assert "calm" not in q and "enjoy" not in q
    unlabelled = [t for t in ts if not t.labels]
    for t in unlabelled[:: max(1, len(unlabelled) // 40)]:
        raw = json.loads((root / f"{t.meta['dialogue_id']}.json").read_text())
        qs = [x["Question"] for x in raw.get("UserQuestionnaire") or []]
        assert all("calm" in q or "enjoy" in q for q in qs)
