"""Issue 36: a lone surrogate in a transcript file (JSON ``"\\ud800"``: valid JSON, not storable as UTF-8)
is one line at load time naming the file, the record and the field."""

from __future__ import annotations

import json

import pytest

from cfbench.core.errors import InputError
from cfbench.io.dialogues import load_dialogues


def _record(rid: str, agent_text: str, meta: dict | None = None) -> dict:
    return {"id": rid, "turns": [{"speaker": "customer", "text": "hello"}, {"speaker": "agent", "text": agent_text}],
            "meta": meta or {}}


@pytest.mark.parametrize("record, field", [
    (_record("t2", "fine \ud800 then"), "turns[1].text"),
    (_record("t2", "fine", {"note": ["ok", "x\udfffy"]}), "meta.note[1]"),
])
def test_a_jsonl_transcript_with_a_lone_surrogate_names_file_record_and_field(tmp_path, record, field):
    path = tmp_path / "t.jsonl"
    lines = [json.dumps(_record("t1", "all good")), json.dumps(record)]  # json.dumps writes "\ud800" escaped
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_dialogues(path)
    msg = str(info.value)
    assert str(path) in msg and "record 't2'" in msg and f"field {field!r}" in msg and "lone surrogate" in msg
    assert "\n" not in msg


def test_a_star_dialogue_with_a_lone_surrogate_names_file_record_and_field(tmp_path):
    dialogue = {"DialogueID": 42, "Scenario": {"Domains": ["bank"]}, "Events": [
        {"Agent": "User", "Action": "utter", "Text": "hi"},
        {"Agent": "Wizard", "Action": "utter", "Text": "hello \ud83d there"}]}  # half of an emoji's pair
    path = tmp_path / "42.json"
    path.write_text(json.dumps(dialogue), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_dialogues(path)
    msg = str(info.value)
    assert str(path) in msg and "record 'star-42'" in msg and "field 'Events[1].Text'" in msg
    assert "U+D83D at character 6" in msg


def test_a_whole_emoji_is_fine(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_record("t1", "thanks \U0001F600")) + "\n", encoding="utf-8")
    assert load_dialogues(path)[0].turns[1].text == "thanks \U0001F600"
