"""Transcript format: loading JSONL/CSV, round trips, and one clear error per bad record."""

from __future__ import annotations

import json

import pytest

from cfbench.core.errors import InputError
from cfbench.io.transcripts import (load_transcripts, save_transcripts, transcripts_from_records,
                                    validate_transcripts)

GOOD = {"id": "t1", "domain": "fintech", "agent_name": "Omar",
        "turns": [{"speaker": "agent", "text": "Hello, this is Omar."},
                  {"speaker": "customer", "text": "Hi Omar, I need help."}],
        "labels": {"greeting_name": "Yes"}, "meta": {"source": "test"}}


def _write_jsonl(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_jsonl_loads_all_fields(tmp_path):
    p = _write_jsonl(tmp_path / "a.jsonl", [GOOD, {"id": 2, "turns": [{"speaker": "agent", "text": "x"}]}])
    ts = load_transcripts(p)
    assert [t.id for t in ts] == ["t1", "2"]
    t = ts[0]
    assert t.domain == "fintech" and t.agent_name == "Omar"
    assert [(x.speaker, x.text) for x in t.turns] == [("agent", "Hello, this is Omar."),
                                                      ("customer", "Hi Omar, I need help.")]
    assert t.labels == {"greeting_name": "Yes"} and t.meta == {"source": "test"}
    assert ts[1].agent_name is None and ts[1].labels == {}


def test_csv_one_row_per_turn_and_round_trip(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text(
        "id,turn,speaker,text,domain,agent_name,labels,meta\n"
        't1,1,customer,"Hi Omar, I need help.",,,,\n'
        't1,0,agent,"Hello, this is Omar.",fintech,Omar,"{""greeting_name"": ""Yes""}",\n'
        "t2,0,agent,Hi,,,,\n", encoding="utf-8")
    ts = load_transcripts(p)
    assert [t.id for t in ts] == ["t1", "t2"]
    assert [x.text for x in ts[0].turns] == ["Hello, this is Omar.", "Hi Omar, I need help."]  # ordered by turn
    assert ts[0].labels == {"greeting_name": "Yes"} and ts[0].domain == "fintech"
    # round trip through both forms keeps everything
    for suffix in ("jsonl", "csv"):
        q = save_transcripts(ts, tmp_path / f"b.{suffix}")
        assert [x.to_dict() for x in load_transcripts(q)] == [x.to_dict() for x in ts]


BAD = [
    ({"id": "b1", "turns": [{"text": "hello"}]}, "b1", "turns[0].speaker"),
    ({"id": "b2", "turns": [{"speaker": "agent", "text": "  "}]}, "b2", "turns[0].text"),
    ({"id": "b3", "turns": [{"speaker": "supervisor", "text": "hi"}]}, "b3", "turns[0].speaker"),
    ({"id": "b4", "turns": []}, "b4", "turns"),
    ({"id": "b5"}, "b5", "turns"),
    ({"turns": [{"speaker": "agent", "text": "hi"}]}, "line 1", "id"),
    ({"id": "b7", "turns": [{"speaker": "agent", "text": "hi"}], "labels": {"issue_resolution": "maybe"}},
     "b7", "labels.issue_resolution"),
    ({"id": "b8", "turn": []}, "b8", "turn"),
    ({"id": "b9", "turns": [{"speaker": "agent", "text": "hi", "time": 3}]}, "b9", "turns[0].time"),
    ({"id": "b10", "turns": [{"speaker": "agent", "text": 5}]}, "b10", "turns[0].text"),
    ({"id": "b11", "turns": [{"speaker": "agent", "text": "hi"}], "meta": []}, "b11", "meta"),
]


@pytest.mark.parametrize("record,rid,field", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_record_names_record_and_field(tmp_path, record, rid, field):
    p = _write_jsonl(tmp_path / "bad.jsonl", [record])
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert ei.value.record == rid
    assert ei.value.field == field
    assert str(p) in str(ei.value)


def test_duplicate_id(tmp_path):
    p = _write_jsonl(tmp_path / "dup.jsonl", [GOOD, GOOD])
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert (ei.value.record, ei.value.field) == ("t1", "id")
    assert "duplicate" in str(ei.value)
    with pytest.raises(InputError):
        transcripts_from_records([GOOD, GOOD])


def test_non_utf8_and_bad_json(tmp_path):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(json.dumps(GOOD).encode() + b"\n" + '{"id": "x", "turns": [{"speaker": "agent", "text": "caf\xe9"}]}'
                  .encode("latin-1") + b"\n")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert ei.value.record == "line 2" and "UTF-8" in str(ei.value)
    q = tmp_path / "broken.jsonl"
    q.write_text(json.dumps(GOOD) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(q)
    assert (ei.value.record, ei.value.field) == ("line 2", "<json>")


def test_csv_errors(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("id,speaker,text\nt1,agent,hi\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert ei.value.field == "turn"
    p.write_text("id,turn,speaker,text,domain\nt1,0,agent,hi,fintech\nt1,1,customer,yo,insurance\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert (ei.value.record, ei.value.field) == ("t1", "domain")
    p.write_text("id,turn,speaker,text\nt1,0,agent,hi\nt1,0,customer,yo\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert (ei.value.record, ei.value.field) == ("t1", "turn")
    p.write_text("id,turn,speaker,text\nt1,0,,hi\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert (ei.value.record, ei.value.field) == ("t1", "turns[0].speaker")


def test_validate_lists_one_error_per_bad_record(tmp_path):
    records = [GOOD] + [b[0] for b in BAD[:4]]
    p = _write_jsonl(tmp_path / "many.jsonl", records)
    errs = validate_transcripts(p)
    assert [(e.record, e.field) for e in errs] == [(b[1], b[2]) for b in BAD[:4]]


@pytest.mark.parametrize("name,text", [("empty.jsonl", ""), ("blank.jsonl", "\n  \n"),
                                       ("header.csv", "id,turn,speaker,text\n")])
def test_validate_reports_a_file_with_no_records_as_load_does(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    errs = validate_transcripts(p)
    assert [(e.problem, e.field) for e in errs] == [(ei.value.problem, ei.value.field)]


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(InputError):
        load_transcripts(tmp_path / "nope.jsonl")
    p = tmp_path / "a.txt"
    p.write_text("x", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_transcripts(p)
    assert ei.value.field == "<path>"
