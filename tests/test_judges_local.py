"""The embedded local judge on real transcripts (loads the 1.1 GB GGUF)."""

from __future__ import annotations

import json
import re

import pytest

from cfbench.judges import GenerationConfig, Request, run_requests, yes_probability

pytestmark = pytest.mark.local_model

SPEC = "local:qwen2.5-coder-1.5b"
SYSTEM = {"role": "system", "content": "You review customer-support calls. Reply with one word: Yes or No."}
RESOLVED = ("agent: Thanks for calling Brightline Energy, this is Maya. How can I help?\n"
            "customer: I was billed twice for October.\n"
            "agent: I see the duplicate charge of $84.20. I have reversed it; the refund posts in 3 days.\n"
            "customer: Perfect, that fixes it. Thank you!\n"
            "agent: You're welcome. Have a good day.")
UNRESOLVED = ("agent: Thanks for calling Brightline Energy, this is Maya. How can I help?\n"
              "customer: I was billed twice for October.\n"
              "agent: Billing is not my department. You will have to call back another time.\n"
              "customer: So nothing is fixed? This is ridiculous.\n"
              "agent: Sorry, I cannot help with that.")
QUESTION = "Did the agent resolve the customer's issue by the end of the call?"


def ask(transcript: str, rid: str, **cfg) -> Request:
    user = f"Question: {QUESTION}\n\nTranscript:\n{transcript}\n\nAnswer Yes or No."
    return Request(rid, (SYSTEM, {"role": "user", "content": user}),
                   GenerationConfig(temperature=0.0, max_tokens=3, seed=0, repeat_penalty=1.0, **cfg))


def verdict(text: str) -> str | None:
    m = re.match(r"\s*(yes|no)\b", text, re.IGNORECASE)
    return m.group(1).capitalize() if m else None


def test_verdicts_on_two_labelled_transcripts():
    res = run_requests(SPEC, [ask(RESOLVED, "resolved", top_logprobs=5), ask(UNRESOLVED, "unresolved", top_logprobs=5)],
                       progress=False)
    j = res.judgments.set_index("request_id")
    assert j.ok.all()
    assert verdict(j.loc["resolved", "text"]) == "Yes"
    assert verdict(j.loc["unresolved", "text"]) == "No"
    p_res = yes_probability(json.loads(j.loc["resolved", "top_logprobs"]))
    p_unres = yes_probability(json.loads(j.loc["unresolved", "top_logprobs"]))
    assert p_res > 0.5 > p_unres


def test_shared_prefix_is_not_evaluated_twice():
    reqs = [ask(RESOLVED, "a"), ask(RESOLVED.replace("Maya", "Omar"), "b")]
    res = run_requests(SPEC, reqs, cache=False, progress=False)
    later = res.judgments.sort_values("prompt_tokens_evaluated")
    # the second call re-evaluates only from the first differing token on
    assert later.prompt_tokens_evaluated.iloc[0] < later.prompt_tokens.iloc[0] // 2


def test_json_schema_constrains_output():
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["Yes", "No"]},
                                               "confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
              "required": ["answer", "confidence"]}
    req = Request("j", ask(UNRESOLVED, "j").messages, GenerationConfig(max_tokens=40, json_schema=schema))
    res = run_requests(SPEC, [req], cache=False, progress=False)
    parsed = json.loads(res.judgments.text[0])
    assert parsed["answer"] in {"Yes", "No"} and 0 <= parsed["confidence"] <= 100


def test_too_long_prompt_is_a_clear_failure():
    res = run_requests(SPEC, [ask("agent: hello\n" * 2000, "long")], cache=False, progress=False)
    assert not res.judgments.ok[0] and "exceeds the context" in res.judgments.error[0]


def test_sampling_is_reproducible_and_repeats_are_distinct_draws():
    cfg = GenerationConfig(temperature=1.0, max_tokens=24, seed=7, repeat_penalty=1.0)
    msgs = ({"role": "user", "content": "Write one unusual sentence about a lighthouse."},)
    reqs = [Request(f"r{k}", msgs, cfg, repeat=k) for k in range(3)]
    first = run_requests(SPEC, reqs, cache=False, progress=False).judgments.text.tolist()
    again = run_requests(SPEC, reqs[::-1], cache=False, progress=False).judgments.text.tolist()[::-1]
    assert first == again  # same seed and repeat index -> same text, whatever the order
    assert len(set(first)) > 1  # repeat r samples with seed + r
