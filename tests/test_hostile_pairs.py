"""Hostile matched-pair files (ShopFlow, CSV and JSONL): one clear InputError each."""

from __future__ import annotations

import pytest
from hostile_util import CORPUS, expect_input_error

from cfbench.io.pairs import load_pairs, pairs_from_records

CASES = {
    "header_only.csv": (None, None),
    "missing_channel_column.csv": ("channel", "p1"),
    "empty_channel_cell.csv": ("channel", "p1"),
    "score_negative.csv": ("score", "p1/formal"),
    "score_above_one.csv": ("score", "p1/formal"),
    "score_nan.csv": ("score", "p1/formal"),
    "score_text.csv": ("score", "p1/formal"),
    "expected_ready_text.csv": ("expected_ready", "p1/formal"),
    "duplicate_row.csv": ("variant", "p1"),
    "missing_variant.csv": ("variant", "p2"),
    "variants_disagree.csv": ("expected_ready", "p1"),
    "empty.jsonl": (None, None),
    "blank_line.jsonl": (None, "line 2"),
    "line_is_array.jsonl": (None, "row 1"),
    "score_is_bool.jsonl": ("score", "p1/formal"),
    "score_nan_literal.jsonl": ("score", "p1/formal"),
    "pair_id_number.jsonl": ("pair_id", "row 1"),
    "empty.csv": (None, None),
    "latin1.csv": ("<encoding>", "line 2"),
    "latin1.jsonl": ("<encoding>", "line 1"),
    # issue 12 section 3: each of these was accepted (or misreported) before
    "duplicate_header.csv": ("score", "line 1"),          # silently used the first `score` column
    "ragged_row.csv": ("<row>", "p2/formal (line 4)"),    # a bare pandas ParserError
    "short_row.csv": ("<row>", "p2/formal (line 4)"),     # blamed the score cell, not the short row
    "score_is_string.jsonl": ("score", "p1/casual"),      # the JSON string "0.7" was read as 0.7
    "expected_ready_is_string.jsonl": ("expected_ready", "p1/formal"),  # the string "true" was read as true
    # a JSON list or object in a field: a pandas TypeError ("unhashable type: 'list'") with a traceback before
    "channel_is_list.jsonl": ("channel", "p1"),
    "expected_ready_is_object.jsonl": ("expected_ready", "p1/formal"),
    "pair_id_is_list.jsonl": ("pair_id", "row 1"),      # equal lists in every row: no nested array either
}



def test_every_corpus_file_has_a_case():
    assert sorted(p.name for p in (CORPUS / "pairs").iterdir()) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_pair_file_names_record_and_field(name):
    field, record = CASES[name]
    err = expect_input_error(lambda: load_pairs(CORPUS / "pairs" / name), field=field, record=record)
    assert str(CORPUS / "pairs" / name) in str(err)


def test_unsupported_suffix_and_missing_file(tmp_path):
    expect_input_error(lambda: load_pairs(tmp_path / "absent.csv"), field=None)
    (tmp_path / "pairs.xlsx").write_bytes(b"PK\x03\x04")
    expect_input_error(lambda: load_pairs(tmp_path / "pairs.xlsx"), field=None)


def test_huge_text_column_is_carried_unchanged(tmp_path):
    note = "x" * 2_000_000
    (tmp_path / "p.csv").write_text("pair_id,variant,expected_ready,channel,score,note\n"
                                    f"p1,a,true,chat,0.9,{note}\np1,b,true,chat,0.8,short\n", encoding="utf-8")
    frame = load_pairs(tmp_path / "p.csv")
    assert len(frame) == 2 and frame.loc[0, "note"] == note


@pytest.mark.parametrize("score", [-1e-9, 1.0000001, float("nan"), float("inf"), "0.5x", None, True])
def test_records_api_rejects_bad_scores(score):
    recs = [{"pair_id": "p1", "variant": "a", "expected_ready": True, "channel": "chat", "score": score},
            {"pair_id": "p1", "variant": "b", "expected_ready": True, "channel": "chat", "score": 0.5}]
    expect_input_error(lambda: pairs_from_records(recs), field="score", record="p1/a")


def test_json_numbers_and_booleans_must_be_typed():
    recs = [{"pair_id": "p1", "variant": "a", "expected_ready": True, "channel": "chat", "score": 0.5},
            {"pair_id": "p1", "variant": "b", "expected_ready": True, "channel": "chat", "score": "0.7"}]
    err = expect_input_error(lambda: pairs_from_records(recs), field="score", record="p1/b")
    assert "string" in str(err)


def test_csv_text_numbers_are_still_read(tmp_path):
    (tmp_path / "p.csv").write_text("pair_id,variant,expected_ready,channel,score\n"
                                    "p1,a,yes,chat, 0.70\np1,b,yes,chat,1\n", encoding="utf-8")
    assert load_pairs(tmp_path / "p.csv")["score"].tolist() == [0.7, 1.0]


def test_quoted_multiline_cells_keep_the_row_count(tmp_path):
    (tmp_path / "p.csv").write_text('pair_id,variant,expected_ready,channel,score,reply\n'
                                    'p1,a,true,chat,0.9,"line one\nline two, with a comma"\n'
                                    'p1,b,true,chat,0.8,plain\n', encoding="utf-8")
    frame = load_pairs(tmp_path / "p.csv")
    assert frame["reply"].tolist() == ["line one\nline two, with a comma", "plain"]
