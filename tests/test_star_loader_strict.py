"""A STAR file whose frame is not a STAR dialogue's is refused in one line naming the field - nothing coerced
(a domain string read as its letters, a DialogueID of true as "star-True") and nothing left out as "empty"
that is in fact malformed."""

from __future__ import annotations

import json

import pytest

from cfbench.core.errors import InputError
from cfbench.io.star import load_star, star_dialogue

TURN = {"Agent": "User", "Action": "utter", "Text": "Hi, I need a table for two."}


@pytest.mark.parametrize("frame,field", [
    ({"DialogueID": 1, "Scenario": {"Domains": "restaurant"}}, "Scenario.Domains"),
    ({"DialogueID": 1, "Scenario": {"Domains": {"x": 1}}}, "Scenario.Domains"),
    ({"DialogueID": 1, "Scenario": {"Domains": [5]}}, "Scenario.Domains"),
    ({"DialogueID": 1, "Scenario": ["bank"]}, "Scenario"),
    ({"DialogueID": True}, "DialogueID"), ({"DialogueID": None}, "DialogueID"),
    ({"DialogueID": 3.7}, "DialogueID"), ({"DialogueID": [1, 2]}, "DialogueID"), ({"DialogueID": " "}, "DialogueID"),
])
def test_a_malformed_frame_is_refused_naming_its_field(frame, field):
    with pytest.raises(InputError) as e:
        star_dialogue({**frame, "Events": [TURN]}, source="d.json")
    assert e.value.field == field and "d.json" in str(e.value)


def test_a_null_domain_names_none_and_real_ids_and_domains_read():
    t = star_dialogue({"DialogueID": 300, "Scenario": {"Domains": [None]}, "Events": [TURN]}, source="d.json")
    assert t.id == "star-300" and t.domain == "" and t.meta["domains"] == []
    t = star_dialogue({"DialogueID": 7, "Scenario": {"Domains": ["bank", "ride"]}, "Events": [TURN]}, source="d.json")
    assert t.domain == "bank" and t.meta["domains"] == ["bank", "ride"]


@pytest.mark.parametrize("obj,field", [({"Events": []}, "DialogueID"),
                                       ({"DialogueID": 6, "Events": [{"Agent": "User"}, "junk"]}, "Events[0].Action")])
def test_skip_empty_leaves_out_only_sound_dialogues_without_turns(tmp_path, obj, field):
    (tmp_path / "1.json").write_text(json.dumps({"DialogueID": 1, "Events": [TURN]}))
    (tmp_path / "2.json").write_text(json.dumps({"DialogueID": 2, "Events": [{"Agent": "Wizard", "Action": "query"}]}))
    with pytest.warns(UserWarning, match="2.json"):
        assert [t.id for t in load_star(tmp_path, skip_empty=True)] == ["star-1"]  # a sound empty one: left out
    (tmp_path / "3.json").write_text(json.dumps(obj))
    with pytest.raises(InputError) as e:
        load_star(tmp_path, skip_empty=True)
    assert e.value.field == field and "3.json" in str(e.value)
