"""The runner's cache look-ups are scoped to the judge, and replay reports the cached replies' tokens and cost."""

from __future__ import annotations

import math

import pytest

from cfbench.judges import CacheMissError, GenerationConfig, Request, Response, ResponseCache, run_requests
from cfbench.judges.base import request_key
from cfbench.judges.pricing import estimate_cost, load_prices
from cfbench.judges.runner import plan_requests


def req(i: int) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": f"question {i}"},), GenerationConfig(max_tokens=8))


def test_a_row_stored_for_another_judge_never_answers(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    spec = "scripted:yes"
    r = req(0)
    key = request_key(spec, r.messages, r.config, r.repeat)
    # a poisoned row: judge A's key, stored as judge B's reply
    cache.put(key, "scripted:no", Response(text="INJECTED", prompt_tokens=1, completion_tokens=1))
    with pytest.raises(CacheMissError):
        run_requests(spec, [r], cache=cache, mode="replay", progress=False)
    assert plan_requests(spec, [r], cache=cache, remember=False)["n_cached"] == 0
    cache.record_failures("scripted:no", [(key, "a failure of another judge")])
    with pytest.raises(CacheMissError):  # nor does another judge's recorded failure
        run_requests(spec, [r], cache=cache, mode="replay", progress=False)
    res = run_requests(spec, [r], cache=cache, mode="live", progress=False)
    assert res.stats["n_cached"] == 0 and res.stats["n_called"] == 1
    assert res.judgments.text[0] != "INJECTED"


def test_replay_reports_the_cached_replies_tokens_and_cost(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    spec = "openai:gpt-4o-mini@https://api.openai.com/v1"
    reqs = [req(i) for i in range(3)]
    for r in reqs:
        cache.put(request_key(spec, r.messages, r.config, r.repeat), spec,
                  Response(text="Yes", prompt_tokens=1000, completion_tokens=10, finish_reason="stop"))
    res = run_requests(spec, reqs, cache=cache, mode="replay", progress=False)
    s = res.stats
    assert (s["n_cached"], s["n_called"]) == (3, 0)
    assert (s["prompt_tokens"], s["completion_tokens"]) == (3000, 30)
    expected = estimate_cost("gpt-4o-mini", 3000, 30, load_prices(), batch=False)["total_usd"]
    assert expected > 0 and s["cost_usd"] == pytest.approx(expected)
    assert "list price" in s["cost_note"]


def test_local_and_scripted_judges_cost_zero_stated_as_such(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    live = run_requests("scripted:yes", [req(0), req(1)], cache=cache, mode="live", progress=False)
    replay = run_requests("scripted:yes", [req(0), req(1)], cache=cache, mode="replay", progress=False)
    for s in (live.stats, replay.stats):
        assert s["cost_usd"] == 0.0 and "no API cost" in s["cost_note"]
    assert replay.stats["prompt_tokens"] == live.stats["prompt_tokens"]
    spec = "local:qwen2.5-coder-1.5b"
    r = req(5)
    cache.put(request_key(spec, r.messages, r.config, r.repeat), spec,
              Response(text="No", prompt_tokens=40, completion_tokens=2))
    s = run_requests(spec, [r], cache=cache, mode="replay", progress=False).stats
    assert (s["prompt_tokens"], s["cost_usd"]) == (40, 0.0) and "local model" in s["cost_note"]


def test_an_unpriced_model_is_nan_with_the_reason(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    spec = "openai:no-such-model@http://127.0.0.1:9/v1"
    r = req(0)
    cache.put(request_key(spec, r.messages, r.config, r.repeat), spec, Response(text="Yes", prompt_tokens=5))
    s = run_requests(spec, [r], cache=cache, mode="replay", progress=False).stats
    assert math.isnan(s["cost_usd"]) and "no price" in s["cost_note"]
