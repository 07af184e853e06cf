"""The local judge's batch engine: several long replies decoded at once (loads the 1.1 GB GGUF)."""

from __future__ import annotations

import re

import pytest

from cfbench.judges import GenerationConfig, Request, get_judge, run_requests
from cfbench.judges.base import JudgeError

pytestmark = pytest.mark.local_model

SPEC = "local:qwen2.5-coder-1.5b"
SYSTEM = {"role": "system", "content": "You are a careful assistant. Start your reply with Yes or No, "
                                      "then explain in two sentences."}
QUESTIONS = {
    "paris": ("Is Paris the capital of France?", "Yes"),
    "ice": ("Is ice hotter than boiling water?", "No"),
    "week": ("Does a week have seven days?", "Yes"),
    "fish": ("Can a goldfish breathe on dry land for a week?", "No"),
    "sum": ("Is 2 + 2 equal to 4?", "Yes"),
}


def ask(rid: str, *, temperature: float = 0.0, max_tokens: int = 48) -> Request:
    q = QUESTIONS[rid][0]
    return Request(rid, (SYSTEM, {"role": "user", "content": q}),
                   GenerationConfig(temperature=temperature, top_p=0.9, max_tokens=max_tokens, seed=7,
                                    repeat_penalty=1.0))


def verdict(text: str) -> str | None:
    m = re.match(r"\W*(yes|no)\b", text, re.IGNORECASE)
    return m.group(1).capitalize() if m else None


@pytest.fixture(scope="module")
def judge():
    j = get_judge(SPEC, parallel=3)
    yield j
    j.close()


def test_batched_replies_match_the_one_at_a_time_path(judge):
    reqs = [ask(rid) for rid in QUESTIONS]  # 5 requests on 3 slots: slots are refilled as replies end
    assert all(judge._batchable(r) for r in reqs)
    res = run_requests(judge, reqs, cache=False, progress=False)
    j = res.judgments.set_index("request_id")
    assert j.ok.all(), j.error.tolist()
    single = get_judge(SPEC, parallel=1)  # greedy decoding through llama-cpp-python's own completion loop
    try:
        seq = run_requests(single, reqs, cache=False, progress=False).judgments.set_index("request_id")
    finally:
        single.close()
    for rid in QUESTIONS:
        assert verdict(j.loc[rid, "text"]) is not None, (rid, j.loc[rid, "text"])
        assert verdict(j.loc[rid, "text"]) == verdict(seq.loc[rid, "text"]), (rid, j.loc[rid, "text"],
                                                                             seq.loc[rid, "text"])
        assert 0 < j.loc[rid, "completion_tokens"] <= 48
        assert j.loc[rid, "prompt_tokens_evaluated"] == j.loc[rid, "prompt_tokens"]
    assert verdict(j.loc["paris", "text"]) == "Yes" and verdict(j.loc["sum", "text"]) == "Yes"
    assert res.stats["n_called"] == 5
    # the runner told the engine 5 replies were coming: no freed slot waited for a sixth
    assert judge._batch_engine.refill_timeouts == 0


def test_a_reply_does_not_depend_on_what_shared_its_batches(judge):
    alone = run_requests(judge, [ask("paris", temperature=0.2)], cache=False, progress=False).judgments
    mixed = run_requests(judge, [ask(r, temperature=0.2) for r in ("ice", "paris", "week")], cache=False,
                         progress=False).judgments.set_index("request_id")
    assert alone.text.iloc[0] == mixed.loc["paris", "text"]


def test_the_token_cap_ends_a_reply_as_length(judge):
    long = Request("long", ({"role": "user", "content": "Write a 300-word story about a lighthouse keeper."},),
                   GenerationConfig(temperature=0.0, max_tokens=32, seed=0, repeat_penalty=1.0))
    resp = judge._engine().submit(long, *judge._prompt_tokens(long), seed=0).result(timeout=300)
    assert resp.completion_tokens == 32 and resp.finish_reason == "length"
    assert len(resp.text.split()) >= 10


def test_short_answers_and_logprob_requests_keep_the_sequential_path(judge):
    short = ask("paris", max_tokens=3)
    logp = Request("lp", ask("paris").messages, ask("paris").config.replace(top_logprobs=5))
    assert not judge._batchable(short) and not judge._batchable(logp)


def test_parallel_must_be_positive():
    with pytest.raises(JudgeError, match="parallel"):
        get_judge(SPEC, parallel=0)
