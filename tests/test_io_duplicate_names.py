"""Issue 26: a header (or JSON key) given twice is a one-line InputError in every loader, never
"the second column replaces the first"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cfbench.core.errors import InputError
from cfbench.io.pairs import load_pairs
from cfbench.io.star import load_star
from cfbench.io.transcripts import load_transcripts

ROOT = Path(__file__).resolve().parents[1]


def test_transcript_csv_with_text_twice_is_one_line_naming_file_and_field(tmp_path):
    p = tmp_path / "calls.csv"
    p.write_text("id,turn,speaker,text,text\nc1,1,agent,Hello there,INJECTED\nc1,2,customer,Hi,INJECTED\n")
    with pytest.raises(InputError) as info:
        load_transcripts(p)
    msg = str(info.value)
    assert str(p) in msg and "'text'" in msg and "twice" in msg and "\n" not in msg


def test_the_cli_prints_it_as_one_line_and_exits_2(tmp_path):
    p = tmp_path / "calls.csv"
    p.write_text("id,turn,speaker,text,text\nc1,1,agent,Hello there,INJECTED\n")
    out = subprocess.run([sys.executable, "-m", "cfbench.cli", "variants", str(p), "--out", str(tmp_path / "o"),
                          "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'text'" in lines[0] and "Traceback" not in out.stderr


def test_transcript_jsonl_with_a_key_twice(tmp_path):
    p = tmp_path / "calls.jsonl"
    p.write_text('{"id": "c1", "turns": [{"speaker": "agent", "text": "a", "text": "b"}]}\n')
    with pytest.raises(InputError, match=r"record 'line 1'.*field 'text'.*twice"):
        load_transcripts(p)


def test_transcript_csv_json_cell_with_a_key_twice(tmp_path):
    p = tmp_path / "calls.csv"
    p.write_text('id,turn,speaker,text,labels\nc1,1,agent,Hello,"{""resolved"": true, ""resolved"": false}"\n')
    with pytest.raises(InputError, match="twice"):
        load_transcripts(p)


def test_pairs_jsonl_with_a_key_twice(tmp_path):
    p = tmp_path / "pairs.jsonl"
    rows = [{"pair_id": "p1", "variant": "a", "score": 1}, {"pair_id": "p1", "variant": "b", "score": 0}]
    lines = [json.dumps(r) for r in rows]
    lines[1] = lines[1][:-1] + ', "score": 1}'
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 2.*'score'.*twice"):
        load_pairs(p)


def test_star_dialogue_with_a_key_twice(tmp_path):
    p = tmp_path / "1.json"
    p.write_text('{"DialogueID": 1, "DialogueID": 2, "Events": []}')
    with pytest.raises(InputError, match=r"1\.json.*'DialogueID'.*twice"):
        load_star(p)


def test_headers_that_differ_only_by_spaces_are_the_same_name(tmp_path):
    from cfbench.io.headers import check_header

    with pytest.raises(InputError, match="columns 1 and 3"):
        check_header(["text", "id", " text "], source="f.csv")
    check_header(["text", None, "", "id"], source="f.csv")  # blank cells are layout, not names
