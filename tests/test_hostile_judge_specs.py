"""Hostile judge specs: unknown backends, malformed strings, unknown models, bad generation settings."""

from __future__ import annotations

import pytest

from cfbench.judges import (GenerationConfig, JudgeError, Request, UnknownJudgeError, get_judge, parse_spec,
                            run_requests)


@pytest.mark.parametrize("spec", ["", "local", "qwen2.5-coder-1.5b", "nobackend:model", "LOCAL:qwen2.5-coder-1.5b",
                                  " local:qwen2.5-coder-1.5b", "local:", "scripted:", ":model", "gpt-4o"])
def test_malformed_or_unknown_spec_is_one_clear_error(spec):
    with pytest.raises(UnknownJudgeError) as info:
        parse_spec(spec)
    msg = str(info.value)
    assert repr(spec) in msg
    if ":" in spec and spec.split(":", 1)[1] and spec.split(":", 1)[0]:
        assert "known:" in msg  # lists the registered backends


@pytest.mark.parametrize("spec", [None, 42, ["local", "qwen"], b"local:qwen"])
def test_spec_of_the_wrong_type(spec):
    with pytest.raises(UnknownJudgeError):
        parse_spec(spec)


def test_unknown_spec_fails_before_any_call(tmp_path):
    reqs = [Request("r0", ({"role": "user", "content": "hi"},))]
    with pytest.raises(UnknownJudgeError, match="nobackend"):
        run_requests("nobackend:x", reqs, cache=tmp_path / "c.sqlite", progress=False)


def test_unknown_scripted_name_lists_the_known_ones():
    with pytest.raises(JudgeError, match="no scripted judge named 'does-not-exist'.*known:"):
        get_judge("scripted:does-not-exist")


def test_local_model_that_is_neither_embedded_nor_a_file(tmp_path):
    pytest.importorskip("llama_cpp")
    with pytest.raises(JudgeError, match="neither an embedded model"):
        get_judge(f"local:{tmp_path / 'missing.gguf'}")


def test_local_model_file_that_is_not_a_gguf(tmp_path):
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "garbage.gguf"
    bad.write_bytes(b"\x00" * 1024)
    with pytest.raises(Exception) as info:  # llama.cpp refuses it; it must not be a crash of the interpreter
        get_judge(f"local:{bad}")
    assert "garbage.gguf" in str(info.value) or "load" in str(info.value).lower()


@pytest.mark.parametrize("changes,field", [({"temperature": -0.1}, "temperature"), ({"temperature": float("nan")}, "temperature"),
                                           ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"),
                                           ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 2.5}, "max_tokens"),
                                           ({"top_logprobs": -1}, "top_logprobs"), ({"top_logprobs": 21}, "top_logprobs")])
def test_generation_settings_out_of_range_name_the_setting(changes, field):
    with pytest.raises(ValueError, match=field):
        GenerationConfig(**changes)


@pytest.mark.parametrize("messages,needle", [((), "messages"), (({"role": "robot", "content": "x"},), "role"),
                                             (({"role": "user", "content": None},), "content"),
                                             (({"role": "user"},), "content")])
def test_malformed_request_names_the_request_and_field(messages, needle):
    with pytest.raises(ValueError, match=needle) as info:
        Request("req-7", messages)
    assert "req-7" in str(info.value)


def test_duplicate_request_ids_in_one_run(tmp_path):
    reqs = [Request("same", ({"role": "user", "content": "a"},)), Request("same", ({"role": "user", "content": "b"},))]
    with pytest.raises(ValueError, match="'same' appears more than once"):
        run_requests("scripted:yes", reqs, cache=False, progress=False)
