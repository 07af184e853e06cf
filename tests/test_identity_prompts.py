"""Advice task: requests, the scripted double, collecting replies (errors and blanks kept)."""

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.judges import PRESETS, run_requests
from cfbench.metrics.refusal import classify_refusal
from cfbench.perturb.stimuli import identity_variants
from cfbench.studies.identity_tone import prompts as advice


def test_prompts_and_contract_are_shipped_and_versioned():
    p = advice.load_prompts()
    assert len(p) >= 30 and p.prompt_id.is_unique and p.task.str.len().gt(20).all()
    assert p.prompt_version.nunique() == 1 and p.prompt_version.iloc[0]
    # identity-free: no descriptor words in the tasks
    assert not p.task.str.contains(r"\b(?:immigrant|US-born|female|male|older|younger)\b", regex=True).any()
    version, text = advice.load_contract()
    assert version and "120" in text and "150" in text
    assert len(advice.load_prompts(6)) == 6
    with pytest.raises(InputError):
        advice.load_prompts(0)


def test_config_is_the_seed_protocol_with_a_lower_cap():
    cfg = advice.advice_config(seed=5, max_tokens=200)
    assert (cfg.temperature, cfg.top_p, cfg.seed, cfg.max_tokens) == (0.2, 0.9, 5, 200)
    assert PRESETS["seed002"].max_tokens == 300


def test_requests_put_the_contract_first_and_the_descriptor_in_the_user_turn():
    v = identity_variants(advice.load_prompts(2), seed=0)
    reqs = advice.build_advice_requests(v, config=advice.advice_config())
    assert [r.request_id for r in reqs] == v.variant_id.tolist()
    contract = advice.load_contract()[1]
    assert all(r.messages[0] == {"role": "system", "content": contract} for r in reqs)
    assert reqs[0].messages[1]["content"].startswith("I am a older female US-born professional. ")
    bare = advice.build_advice_requests(v.head(1), config=advice.advice_config(), system="")
    assert len(bare[0].messages) == 1


def test_scripted_double_is_deterministic_and_varies_with_identity():
    v = identity_variants(advice.load_prompts(3), seed=0)
    reqs = advice.build_advice_requests(v, config=advice.advice_config())
    a = run_requests("scripted:identity-advice", reqs, cache=False, progress=False).judgments
    b = run_requests("scripted:identity-advice", reqs, cache=False, progress=False).judgments
    assert a.text.tolist() == b.text.tolist()
    assert a.text.nunique() > len(reqs) // 2
    assert all(t.startswith(("1) Three actions", "I am not")) for t in a.text)


def test_collect_responses_keeps_errors_and_blank_replies():
    v = identity_variants([{"prompt_id": "p1", "task": "I want a mentor."}], seed=0)
    j = pd.DataFrame({"request_id": v.variant_id, "ok": [True] * 6 + [False, True],
                      "text": ["Advice here."] * 5 + ["I'm sorry, but I can't help with that.", None, "  "],
                      "completion_tokens": 3, "cache_hit": False,
                      "error": [None] * 6 + ["JudgeError: boom", None]})
    r = advice.collect_responses(v, j, model="m")
    assert len(r) == 8
    assert r.status.tolist() == ["ok"] * 6 + ["error", "empty"]
    assert r.refusal.tolist() == ["none"] * 5 + ["full", "error", "empty"]
    assert r.error.iloc[6] == "JudgeError: boom"


def test_collect_responses_rejects_missing_or_non_text_replies():
    v = identity_variants([{"prompt_id": "p1", "task": "x"}], seed=0)
    j = pd.DataFrame({"request_id": v.variant_id[:-1], "ok": True, "text": "fine"})
    with pytest.raises(InputError) as err:
        advice.collect_responses(v, j, model="m")
    assert err.value.record == v.variant_id.iloc[-1]
    j = pd.DataFrame({"request_id": v.variant_id, "ok": True, "text": ["fine"] * 7 + [42]})
    with pytest.raises(InputError) as err:
        advice.collect_responses(v, j, model="m")
    assert err.value.field == "text"


def test_generate_advice_end_to_end_with_the_double():
    v = identity_variants(advice.load_prompts(2), seed=1)
    responses, stats = advice.generate_advice(["scripted:identity-advice"], v, config=advice.advice_config(),
                                              cache=False)
    assert len(responses) == 16 and set(responses.status) == {"ok"}
    assert stats["scripted:identity-advice"]["n_failed"] == 0
    assert all(classify_refusal(t) == lab for t, lab in zip(responses.text, responses.refusal))


@pytest.mark.local_model
def test_local_model_writes_advice():
    v = identity_variants(advice.load_prompts(1), seed=0).head(1)
    responses, stats = advice.generate_advice(["local:qwen2.5-coder-1.5b"], v,
                                              config=advice.advice_config(max_tokens=48), cache=False)
    assert responses.status.iloc[0] == "ok"
    assert len(responses.text.iloc[0].split()) >= 10


def test_judge_options_build_a_dedicated_judge_with_the_same_replies():
    v = identity_variants(advice.load_prompts(1), seed=0)
    plain, _ = advice.generate_advice(["scripted:identity-advice"], v, config=advice.advice_config(), cache=False)
    opted, _ = advice.generate_advice(["scripted:identity-advice"], v, config=advice.advice_config(), cache=False,
                                      judge_options={"scripted:identity-advice": {"n_threads": 1}})
    assert opted.text.tolist() == plain.text.tolist()


def test_contract_constrains_structure_and_length_only():
    """Seed 002 §3.1: the system instruction is a task-agnostic output contract with no demographic,
    stylistic, affective or behavioural guidance (issue 17: 1.0 told the model not to comment on the user)."""
    version, text = advice.load_contract()
    assert version == "cfbench-advice-contract-1.1"
    low = text.lower()
    for banned in ("who the user is", "identity", "comment", "polite", "friendly", "tone", "concrete", "specific"):
        assert banned not in low, banned
    for part in ("three actions", "two phrases", "one mistake", "plan"):
        assert part in low
