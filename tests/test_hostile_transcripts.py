"""Hostile transcript files (JSONL and CSV): one clear InputError each, naming record and field."""

from __future__ import annotations

import json

import pytest
from hostile_util import CORPUS, expect_input_error

from cfbench.core.errors import InputError
from cfbench.io.transcripts import load_transcripts, transcripts_from_records, validate_transcripts

# file -> (field, record) the error must name
CASES = {
    "empty.jsonl": ("<file>", None),
    "only_blank_lines.jsonl": ("<file>", None),
    "not_json.jsonl": ("<json>", "line 2"),
    "top_level_array.jsonl": (None, "line 1"),
    "missing_id.jsonl": ("id", "line 1"),
    "id_is_list.jsonl": ("id", "line 1"),
    "missing_turns.jsonl": ("turns", "t1"),
    "turns_is_string.jsonl": ("turns", "t1"),
    "turns_empty.jsonl": ("turns", "t1"),
    "turn_text_null.jsonl": ("turns[0].text", "t1"),
    "turn_text_number.jsonl": ("turns[0].text", "t1"),
    "unknown_speaker.jsonl": ("turns[0].speaker", "t1"),
    "label_not_yes_no.jsonl": ("labels.issue_resolution", "t1"),
    "label_is_bool.jsonl": ("labels.issue_resolution", "t1"),
    "labels_is_list.jsonl": ("labels", "t1"),
    "meta_is_string.jsonl": ("meta", "t1"),
    "unknown_field.jsonl": ("score", "t1"),
    "duplicate_ids.jsonl": ("id", "t1"),
    "latin1.jsonl": ("<encoding>", "line 1"),
    "empty.csv": ("id", "header"),
    "header_only.csv": ("<file>", None),
    "missing_text_column.csv": ("text", "header"),
    "unknown_column.csv": ("score", "header"),
    "turn_not_integer.csv": ("turn", "t1"),
    "turn_repeated.csv": ("turn", "t1"),
    "ragged_row.csv": ("<row>", "row 2"),
    "empty_id.csv": ("id", "row 2"),
    "empty_text.csv": ("turns[0].text", "t1"),
    "conflicting_domain.csv": ("domain", "t1"),
    "labels_not_json.csv": ("labels", "t1"),
    "latin1.csv": ("<encoding>", "line 2"),
}


def test_every_corpus_file_has_a_case():
    assert sorted(p.name for p in (CORPUS / "transcripts").iterdir()) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_transcript_file_names_record_and_field(name):
    field, record = CASES[name]
    err = expect_input_error(lambda: load_transcripts(CORPUS / "transcripts" / name), field=field, record=record)
    assert str(CORPUS / "transcripts" / name) in str(err)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.endswith(".jsonl") and "empty" not in n
                                        and "blank" not in n))
def test_validate_reports_the_same_problem_without_raising(name):
    problems = validate_transcripts(CORPUS / "transcripts" / name)
    assert len(problems) == 1 and isinstance(problems[0], InputError)
    assert problems[0].field == CASES[name][0]


def test_missing_file_and_unknown_suffix(tmp_path):
    expect_input_error(lambda: load_transcripts(tmp_path / "nope.jsonl"), field="<path>")
    (tmp_path / "t.txt").write_text("x")
    expect_input_error(lambda: load_transcripts(tmp_path / "t.txt"), field="<path>")


def test_huge_jsonl_field_is_a_clear_error(tmp_path):
    text = "word " * 2_000_000  # 10 MB in one turn: not a transcript; judging it would take hours
    rec = {"id": "big", "turns": [{"speaker": "agent", "text": text}]}
    (tmp_path / "big.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    expect_input_error(lambda: load_transcripts(tmp_path / "big.jsonl"), field="turns[0].text", record="big")


def test_huge_csv_field_loads_or_is_a_clear_error(tmp_path):
    # Python's csv module refuses fields over 131,072 characters by default.
    text = "word " * 100_000
    (tmp_path / "big.csv").write_text(f"id,turn,speaker,text\nbig,0,agent,{text}\n", encoding="utf-8")
    try:
        [t] = load_transcripts(tmp_path / "big.csv")
    except InputError as err:
        assert err.record is not None and err.field is not None
    else:
        assert t.turns[0].text == text


def test_records_api_names_the_position_of_a_non_object():
    expect_input_error(lambda: transcripts_from_records([{"id": "a", "turns": [{"speaker": "agent", "text": "x"}]},
                                                         "just a string"]), field=None, record="#2")


@pytest.mark.parametrize("turn", ["1_0", "\u0661", "1.0", "0x1", "1e1", " "])
def test_csv_turn_numbers_are_plain_ascii_integers(tmp_path, turn):
    # int() reads "1_0" as 10 and the Arabic-Indic digit one as 1: a turn order the file never wrote.
    (tmp_path / "t.csv").write_text(f"id,turn,speaker,text\nt1,0,agent,hello\nt1,{turn},customer,hi\n",
                                    encoding="utf-8")
    err = expect_input_error(lambda: load_transcripts(tmp_path / "t.csv"), field="turn", record="t1")
    assert "row 3" in str(err)


def test_csv_turn_numbers_with_a_sign_still_read(tmp_path):
    (tmp_path / "t.csv").write_text("id,turn,speaker,text\nt1,+1,customer,hi\nt1,-1,agent,hello\n",
                                    encoding="utf-8")
    [t] = load_transcripts(tmp_path / "t.csv")
    assert [x.speaker for x in t.turns] == ["agent", "customer"]
