"""JSON Lines are split at newlines only: cfbench reads back what it wrote, whatever a record's text holds,
and a file that is not one record per line is refused whatever its records add up to."""

from __future__ import annotations

import pytest

from cfbench.core.errors import InputError
from cfbench.core.files import jsonl_lines
from cfbench.io.pairs import load_pairs
from cfbench.io.transcripts import Transcript, Turn, load_transcripts, save_transcripts


def test_lines_split_at_newlines_only():
    assert jsonl_lines('{"a": "x\u2028y\u0085z"}\r\n{"b": 1}\n') == ['{"a": "x\u2028y\u0085z"}', '{"b": 1}']
    assert jsonl_lines("") == [] and jsonl_lines("a") == ["a"] and jsonl_lines("a\n\nb") == ["a", "", "b"]


@pytest.mark.parametrize("odd", ["\u2028", "\u2029", "\u0085", "\x1c", "\x0b"])
def test_a_transcript_holding_a_line_separator_reads_back(tmp_path, odd):
    t = Transcript("t1", (Turn("customer", f"hello{odd}there"), Turn("agent", "hi")), labels={})
    path = save_transcripts([t], tmp_path / "calls.jsonl")
    back = load_transcripts(path)
    assert [x.id for x in back] == ["t1"] and back[0].turns[0].text == f"hello{odd}there"


def test_pairs_split_and_joined_across_lines_are_refused(tmp_path):
    good = ('{"pair_id": "p1", "variant": "formal", "score": 0.9, "expected_ready": true, "channel": "chat"}\n'
            '{"pair_id": "p1", "variant": "conversational", "score": 0.8, "expected_ready": true, "channel": "chat"}\n')
    (tmp_path / "ok.jsonl").write_text(good)
    load_pairs(tmp_path / "ok.jsonl", variants=["formal", "conversational"])  # the well-formed file loads
    split = ('{"pair_id": "p1", "variant": "formal"\n"score": 0.9, "expected_ready": true, "channel": "chat"}\n'
             '{"pair_id": "p2", "variant": "formal", "score": 0.9, "expected_ready": true, "channel": "chat"}, '
             '{"pair_id": "p2", "variant": "conversational", "score": 0.8, "expected_ready": true, "channel": "chat"}\n')
    (tmp_path / "bad.jsonl").write_text(split)
    with pytest.raises(InputError, match="line 1"):
        load_pairs(tmp_path / "bad.jsonl", variants=["formal", "conversational"])
