"""Transcripts are bounded and meaningful: oversized input and agent-less calls are errors naming the record."""

from __future__ import annotations

import pytest

from cfbench.core.errors import InputError
from cfbench.io import transcripts as T


def _rec(turns):
    return {"id": "call-7", "turns": turns}


def test_a_ten_megabyte_turn_is_refused_before_anything_is_judged():
    rec = _rec([{"speaker": "agent", "text": "x" * 10_000_000}])
    with pytest.raises(InputError) as err:
        T.transcripts_from_records([rec])
    assert err.value.record == "call-7" and err.value.field == "turns[0].text"
    assert "10,000,000 characters" in str(err.value)


def test_too_many_turns_and_too_much_text_are_refused():
    many = [{"speaker": "agent" if i % 2 else "customer", "text": "ok"} for i in range(T.MAX_TURNS + 1)]
    with pytest.raises(InputError, match="turns; a transcript may have at most") as err:
        T.transcripts_from_records([_rec(many)])
    assert err.value.field == "turns"
    long = [{"speaker": "agent", "text": "y" * (T.MAX_TURN_CHARS - 1)}] * (T.MAX_TRANSCRIPT_CHARS // T.MAX_TURN_CHARS + 1)
    with pytest.raises(InputError, match="characters of text"):
        T.transcripts_from_records([_rec(long)])


def test_the_seed_scale_is_well_inside_the_limits():
    # seed 000's longest call: 918 turns, ~6,460 tokens (~26,000 characters)
    turns = [{"speaker": "agent" if i % 2 else "customer", "text": "w" * 28} for i in range(918)]
    assert T.transcripts_from_records([_rec(turns)])[0].n_turns == 918


def test_a_call_without_an_agent_turn_is_an_error_not_an_audited_item():
    with pytest.raises(InputError, match="no agent turn") as err:
        T.transcripts_from_records([_rec([{"speaker": "customer", "text": "Hello? Anyone there?"}])])
    assert err.value.record == "call-7" and err.value.field == "turns"
