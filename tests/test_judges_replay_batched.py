"""Batched keys and batched replay give exactly what the one-request-at-a-time paths give.

The pinned key values below were computed by the code *before* the batched key path existed
(commit aa6dbce, ``Request.cache_key``): a cache written then must still be hit now.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cfbench.judges import (PRESETS, CacheMissError, GenerationConfig, Request, Response, ResponseCache,
                            run_requests)
from cfbench.judges.base import request_key, request_keys
from cfbench.judges.runner import _hit_outcome, _hit_outcomes

CFG = GenerationConfig(temperature=0.0, max_tokens=8, seed=0, top_logprobs=5)
CFG_B = GenerationConfig(temperature=0.7, top_p=0.9, max_tokens=64, seed=None, stop=("\n", "END"),
                         json_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})

#: (judge spec, request, key computed by the pre-batching code)
PINNED = [
    ("openai:gpt-4o-mini",
     Request("a", ({"role": "system", "content": "You audit calls."},
                   {"role": "user", "content": "Agent: Hi — café \"quoted\"\n\tok? ✓"}), CFG),
     "732143f972128707c515ae94fe5e1e8ecea7640bbd974cb7d4107092870a7f9b"),
    ("openai:gpt-4o-mini@HTTP://LocalHost:80/v1/",
     Request("b", ({"role": "user", "content": "x", "name": "Lakisha"},), CFG_B, repeat=2),
     "aca8684419581bcf4256512fe47f61252a4ea538c4dcac4c33fd7188702b0b52"),
    ("local:qwen2.5-coder-1.5b",
     Request("c", ({"role": "user", "content": "Is 2 even? é \u2028 \x01"},), PRESETS["seed002"], repeat=3),
     "88733fec1ec3b53ddb640514e7120089cc2464113f101e7cb5f39fb38a55305d"),
    ("hf:meta/llama",
     Request("d", ({"role": "assistant", "content": ""}, {"role": "user", "content": "😀"}),
             PRESETS["seed000-reasoning-low"]),
     "0e72a7f7430a7b007e9f86aacbe963ed61e09fa1bc79d5b9c18c1b7722432983"),
]


@pytest.mark.parametrize("spec,request_,expected", PINNED, ids=[p[1].request_id for p in PINNED])
def test_keys_are_the_ones_the_previous_code_computed(spec, request_, expected):
    assert request_.cache_key(spec) == expected
    assert request_keys(spec, [request_]) == [expected]


def _assorted() -> list[Request]:
    """Requests that take every branch of the key encoding: two plain messages, one, three,
    a message with an extra field, repeats (int, bool-free), shared and distinct configs."""
    out = []
    for i in range(12):
        cfg = CFG if i % 3 else CFG_B
        if i % 4 == 0:
            msgs = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": f"q{i} \"é\"\n"})
        elif i % 4 == 1:
            msgs = ({"role": "user", "content": f"only {i}"},)
        elif i % 4 == 2:
            msgs = ({"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                    {"role": "assistant", "content": f"a{i}"})
        else:
            msgs = ({"role": "system", "content": "s"}, {"role": "user", "content": f"u{i}", "name": "Emily"})
        out.append(Request(f"r{i}", msgs, cfg, repeat=i % 2))
    return out


@pytest.mark.parametrize("spec", ["openai:m@http://h:8000/v1/", "local:qwen2.5-coder-1.5b", "scripted:yes"])
def test_batched_keys_equal_one_at_a_time_keys(spec):
    reqs = _assorted()
    assert request_keys(spec, reqs) == [r.cache_key(spec) for r in reqs]
    assert request_keys(spec, reqs) == [request_key(spec, r.messages, r.config, r.repeat) for r in reqs]
    assert len(set(request_keys(spec, reqs))) == len(reqs)


REPLIES = [
    Response(text="Yes", top_logprobs={"Yes": -0.10000000000000002, "No": -2.4}, prompt_tokens=900,
             completion_tokens=1, finish_reason="stop"),
    Response(text="No", top_logprobs=None, prompt_tokens=None, completion_tokens=None),
    Response(text="", top_logprobs={}, prompt_tokens=3, completion_tokens=0, prompt_tokens_evaluated=1),
    # non-ASCII tokens: json.dumps escapes them, to_json does not -> must be re-encoded
    Response(text="Sí", top_logprobs={"Sí": -0.3, " ja": -1.0, "是": -5.0}, prompt_tokens=7),
    # the field markers inside the text and inside a token
    Response(text='x", "top_logprobs": {"Yes": 0}, "prompt_tokens": 99, "y',
             top_logprobs={', "prompt_tokens": ': -1.5, '"top_logprobs": ': -0.5}, prompt_tokens=11),
    Response(text="n", top_logprobs={"Yes": float("-inf"), "No": 0}, prompt_tokens=1),
]


def test_batched_decoding_equals_one_reply_at_a_time():
    rows = [(f"k{i}", r.to_json(), 0.25 * i if i % 2 else None) for i, r in enumerate(REPLIES)]
    # a reply stored in another layout (compact, keys reordered) takes the full-decoding path
    rows.append(("kc", json.dumps({"top_logprobs": {"No": -0.7}, "text": "No", "prompt_tokens": 2},
                                  separators=(",", ":")), 1.0))
    got = _hit_outcomes(rows)
    want = {k: _hit_outcome(blob, lat) for k, blob, lat in rows}
    assert got == want
    assert got["k3"][1] == json.dumps({"Sí": -0.3, " ja": -1.0, "是": -5.0})
    assert got["k4"][0] == REPLIES[4].text and json.loads(got["k4"][1]) == REPLIES[4].top_logprobs


def test_a_damaged_cache_row_is_named():
    rows = [("good", REPLIES[0].to_json(), None), ("bad-key", '{"text": "Yes", "top_logprobs": nul', None)]
    with pytest.raises(ValueError, match="cache row bad-key: field 'response'"):
        _hit_outcomes(rows)
    with pytest.raises(ValueError, match="cache row nokey: field 'response'"):
        _hit_outcomes([("nokey", '{"top_logprobs": null, "prompt_tokens": 1}', None)])


def _expected_frame(cache: ResponseCache, spec: str, reqs: list[Request]) -> pd.DataFrame:
    """The judgments a per-request ``cache.get`` gives (the reference for replay)."""
    rows = []
    for r in reqs:
        key = r.cache_key(spec)
        resp, lat = cache.get(key)
        rows.append({"request_id": r.request_id, "key": key, "text": resp.text,
                     "top_logprobs": json.dumps(resp.top_logprobs) if resp.top_logprobs else None,
                     "prompt_tokens": resp.prompt_tokens, "completion_tokens": resp.completion_tokens,
                     "prompt_tokens_evaluated": resp.prompt_tokens_evaluated, "latency_s": lat})
    return pd.DataFrame(rows)


def _plain(value):
    """None for any missing value, int for any whole number: compares columns across dtypes."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value if isinstance(value, str) else int(value)


def test_replay_frame_equals_per_request_lookups(tmp_path):
    spec = "openai:m@http://127.0.0.1:9/v1"
    reqs = [Request(f"r{i}", ({"role": "user", "content": f"question {i % 5}"},), CFG, repeat=i // 5)
            for i in range(10)]
    reqs += [Request("dup", reqs[3].messages, CFG, repeat=reqs[3].repeat)]  # merged with r3
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many((r.cache_key(spec), spec, REPLIES[i % len(REPLIES)].to_json(), 0.5 + i) for i, r in
                   enumerate(reqs[:10]))
    res = run_requests(spec, reqs, cache=cache, mode="replay", progress=False)
    frame = res.judgments
    want = _expected_frame(cache, spec, reqs)
    assert list(frame.request_id) == [r.request_id for r in reqs]
    assert frame.ok.all() and frame.cache_hit.all() and res.stats["n_unique"] == 10
    for col in ("key", "text", "top_logprobs", "prompt_tokens", "completion_tokens", "prompt_tokens_evaluated"):
        assert [_plain(v) for v in frame[col]] == [_plain(v) for v in want[col]], col
    assert list(frame.latency_s) == list(want.latency_s)


def test_replay_still_raises_on_a_miss_and_shows_recorded_failures(tmp_path):
    spec = "openai:m@http://127.0.0.1:9/v1"
    reqs = [Request(f"r{i}", ({"role": "user", "content": f"q{i}"},), CFG) for i in range(4)]
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put_many((r.cache_key(spec), spec, REPLIES[0].to_json(), None) for r in reqs[:2])
    cache.record_failures(spec, [(reqs[2].cache_key(spec), "HTTP 400: bad request")])
    with pytest.raises(CacheMissError, match=r"1 of 4 distinct requests .*\['r3'\]"):
        run_requests(spec, reqs, cache=cache, mode="replay", progress=False)
    frame = run_requests(spec, reqs[:3], cache=cache, mode="replay", progress=False).judgments
    assert list(frame.ok) == [True, True, False] and list(frame.cache_hit) == [True, True, False]
    assert frame.error[2] == "recorded failure: HTTP 400: bad request"


def test_gc_is_enabled_again_after_a_run(tmp_path):
    import gc

    spec = "openai:m@http://127.0.0.1:9/v1"
    reqs = [Request("x", ({"role": "user", "content": "q"},), CFG)]
    assert gc.isenabled()
    with pytest.raises(CacheMissError):
        run_requests(spec, reqs, cache=tmp_path / "c.sqlite", mode="replay", progress=False)
    assert gc.isenabled()
