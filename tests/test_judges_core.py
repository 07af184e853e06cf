"""Generation settings, cache keys, the registry and P(Yes)."""

from __future__ import annotations

import math

import pytest

from cfbench.judges import (GenerationConfig, Request, UnknownJudgeError, get_judge, parse_spec,
                            yes_probability)

MSG = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is 2 even?"})


def test_same_request_same_key():
    a = Request("a", MSG, GenerationConfig(max_tokens=5))
    b = Request("b", MSG, GenerationConfig(max_tokens=5))  # the id is a handle, not content
    assert a.cache_key("local:m") == b.cache_key("local:m")


@pytest.mark.parametrize("change", [
    dict(messages=(MSG[0], {"role": "user", "content": "Is 3 even?"})),
    dict(config=GenerationConfig(max_tokens=6)),
    dict(config=GenerationConfig(max_tokens=5, temperature=0.2)),
    dict(config=GenerationConfig(max_tokens=5, seed=1)),
    dict(config=GenerationConfig(max_tokens=5, top_logprobs=5)),
    dict(config=GenerationConfig(max_tokens=5, json_schema={"type": "object"})),
    dict(repeat=1),
])
def test_key_changes_with_what_determines_the_answer(change):
    base = dict(request_id="x", messages=MSG, config=GenerationConfig(max_tokens=5), repeat=0)
    assert Request(**base).cache_key("j:m") != Request(**{**base, **change}).cache_key("j:m")


def test_key_depends_on_judge():
    r = Request("x", MSG)
    assert r.cache_key("openai:a") != r.cache_key("openai:b")


@pytest.mark.parametrize("kwargs", [dict(temperature=-0.1), dict(top_p=0.0), dict(max_tokens=0),
                                    dict(top_logprobs=21)])
def test_bad_generation_settings_are_rejected(kwargs):
    with pytest.raises(ValueError, match="GenerationConfig"):
        GenerationConfig(**kwargs)


def test_bad_messages_name_the_request_and_field():
    with pytest.raises(ValueError, match=r"request 'r1'.*role"):
        Request("r1", ({"role": "robot", "content": "x"},))
    with pytest.raises(ValueError, match=r"request 'r2'.*messages"):
        Request("r2", ())


@pytest.mark.parametrize("spec", ["nope:model", "nocolon", "openai:", 42])
def test_unknown_or_malformed_spec(spec):
    with pytest.raises(UnknownJudgeError):
        parse_spec(spec)


def test_scripted_judge_unknown_script():
    from cfbench.judges import JudgeError

    with pytest.raises(JudgeError, match="no scripted judge named 'does-not-exist'"):
        get_judge("scripted:does-not-exist")


def test_yes_probability():
    assert yes_probability({"Yes": math.log(0.6), "No": math.log(0.2), "Maybe": math.log(0.2)}) == pytest.approx(0.75)
    assert yes_probability({" yes": math.log(0.3), "YES": math.log(0.3), "no": math.log(0.4)}) == pytest.approx(0.6)
    assert math.isnan(yes_probability({"Perhaps": -0.1}))
    assert math.isnan(yes_probability(None))


def test_presets_follow_the_seeds():
    from cfbench.judges import PRESETS

    assert (PRESETS["seed000"].temperature, PRESETS["seed000"].top_p, PRESETS["seed000"].max_tokens) == (0.0, 1.0, 1000)
    assert (PRESETS["seed002"].temperature, PRESETS["seed002"].top_p, PRESETS["seed002"].max_tokens) == (0.2, 0.9, 300)
