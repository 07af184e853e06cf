"""Importing Batch output decodes lines a block at a time, with the per-line errors and results."""

from __future__ import annotations

import json

import pytest

from cfbench.core.errors import InputError
from cfbench.judges import Request, Response, ResponseCache
from cfbench.judges.batch import _line_outcome, _output_items, import_batch


def _line(i: int, content: str | None = "Yes") -> str:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop",
                         "logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": [
                             {"token": "Yes", "logprob": -0.1}, {"token": "Nö", "logprob": -2.5}]}]}}],
            "usage": {"prompt_tokens": 10 + i, "completion_tokens": 1}}
    return json.dumps({"id": f"b{i}", "custom_id": f"k{i}", "error": None,
                       "response": {"status_code": 200, "body": body}})


def _write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_block_decoding_yields_each_line_with_its_number(tmp_path):
    lines = [_line(i) for i in range(7)]
    path = _write(tmp_path / "out.jsonl", lines[:3] + ["", "   "] + lines[3:])
    got = list(_output_items(path, block=2))
    assert [n for n, _ in got] == [1, 2, 3, 6, 7, 8, 9]
    assert [item for _, item in got] == [json.loads(line) for line in lines]


@pytest.mark.parametrize("bad,lineno", [
    ('{"custom_id": "k9", "response": ', 4),        # cut short
    ('{"custom_id": "a"}, {"custom_id": "b"}', 4),   # two objects on one line
    ('[1, 2]', 4),                                   # not an object
])
def test_a_bad_line_is_named_whatever_block_it_is_in(tmp_path, bad, lineno):
    lines = [_line(0), _line(1), "", bad, _line(2)]
    path = _write(tmp_path / "out.jsonl", lines)
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(InputError, match=f"record 'line {lineno}'"):
        import_batch(cache, "openai:m", path)


def test_lines_that_balance_each_other_out_are_still_rejected(tmp_path):
    """Joined, '{"a":' + '1}' and a line holding two objects would make as many objects as lines."""
    path = _write(tmp_path / "out.jsonl", ['{"custom_id": "x", "a":', '1}', '{"custom_id": "y"}, {"custom_id": "z"}'])
    with pytest.raises(InputError, match="record 'line 1'"):
        list(_output_items(path))


def test_import_stores_what_the_line_says(tmp_path):
    lines = [_line(i) for i in range(5)] + [_line(5, content=None)]
    path = _write(tmp_path / "out.jsonl", lines)
    cache = ResponseCache(tmp_path / "c.sqlite")
    keys = [f"k{i}" for i in range(6)]
    cache.remember_requests("openai:m", [Request(k, ({"role": "user", "content": k},)) for k in keys], keys=keys)
    assert import_batch(cache, "openai:m", path) == (5, 1)
    for i in range(5):
        resp, _ = cache.get(f"k{i}")
        want, _ = _line_outcome(json.loads(lines[i]))
        assert resp == want and resp.prompt_tokens == 10 + i and resp.top_logprobs == {"Yes": -0.1, "Nö": -2.5}
    assert cache.get("k5") is None and "null content" in cache.failures_many(["k5"])["k5"]


def test_reply_json_is_what_json_dumps_writes():
    r = Response(text="Sí \"q\"", top_logprobs={"Sí": -0.5}, prompt_tokens=3, completion_tokens=1,
                 finish_reason="stop")
    assert r.to_json() == json.dumps({"text": r.text, "top_logprobs": r.top_logprobs, "prompt_tokens": 3,
                                      "completion_tokens": 1, "prompt_tokens_evaluated": None,
                                      "finish_reason": "stop"}, ensure_ascii=False)
    assert Response.from_json(r.to_json()) == r


def test_import_counts_every_line_once_whatever_mix_of_duplicates_conflicts_and_strangers(tmp_path):
    from cfbench.judges.batch import _import_lines

    lines = [_line(0), _line(0),                    # k0 twice alike: one reply, one duplicate
             _line(1), _line(1, content="No"), _line(1),  # k1 answered differently: a conflict
             _line(2),                               # k2 fine
             _line(7), _line(7), _line(7, content="No")]  # k7 not planned: all three lines refused
    path = _write(tmp_path / "out.jsonl", lines)
    cache = ResponseCache(tmp_path / "c.sqlite")
    counts = _import_lines(cache, "openai:m", [path], allowed={"k0": 5, "k1": 5, "k2": 5})
    assert {k: counts[k] for k in ("lines", "ok", "failed", "refused", "duplicate", "conflict")} == \
        {"lines": 9, "ok": 2, "failed": 1, "refused": 3, "duplicate": 1, "conflict": 1}
    assert counts["answered"] == {"k0", "k1", "k2"} and counts["usage"]["prompt_tokens"] == 10 + 12
    assert cache.get("k1") is None and "conflict: 2 different results" in cache.failures_many(["k1"])["k1"]
    assert cache.get("k7") is None and cache.failures_many(["k7"]) == {}
