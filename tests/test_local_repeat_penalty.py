"""A repeat penalty other than 1.0 reaches llama.cpp on the local batch engine.

Found while sizing the identity-tone default (issue 21): with ``repeat_penalty=1.1`` every request on
the batch engine failed with ``TypeError: this function takes at least 5 arguments (4 given)``; the
fake llama.cpp of test_judges_local_batch_engine accepts any arguments, so the suite never saw it.
"""

from __future__ import annotations

import ctypes

import pytest

from cfbench.judges import GenerationConfig, Request, run_requests
from cfbench.judges.local_batch import PENALTY_LAST_N, penalty_sampler


class _Recorder:
    """A binding with declared ``argtypes`` (4 or 5 of them) that records what it was called with."""

    def __init__(self, n_args: int):
        self.calls: list[tuple] = []

        def fn(*args):
            if len(args) != n_args:
                raise TypeError(f"this function takes {n_args} arguments ({len(args)} given)")
            self.calls.append(args)
            return "sampler"

        fn.argtypes = [ctypes.c_int32] * (n_args - 3) + [ctypes.c_float] * 3
        self.llama_sampler_init_penalties = fn
        self.llama_vocab_n_tokens = lambda vocab: 151_936


@pytest.mark.parametrize("n_args, expected", [
    (5, (151_936, PENALTY_LAST_N, 1.1, 0.0, 0.0)),  # llama-cpp-python 0.3.x: n_vocab first
    (4, (PENALTY_LAST_N, 1.1, 0.0, 0.0)),           # headers without n_vocab
])
def test_the_penalty_sampler_follows_the_declared_signature(n_args, expected):
    L = _Recorder(n_args)
    assert penalty_sampler(L, object(), 1.1) == "sampler"
    assert L.calls == [expected]


def test_the_installed_binding_takes_the_arguments_we_pass():
    llama_cpp = pytest.importorskip("llama_cpp.llama_cpp")
    declared = llama_cpp.llama_sampler_init_penalties.argtypes
    L = _Recorder(len(declared))
    penalty_sampler(L, object(), 1.1)
    assert len(L.calls[0]) == len(declared)


@pytest.mark.local_model
def test_a_repeat_penalty_request_completes_on_the_local_model():
    cfg = GenerationConfig(temperature=0.2, top_p=0.9, max_tokens=12, seed=0, repeat_penalty=1.1)
    reqs = [Request(f"r{k}", ({"role": "user", "content": "Name three colours."},), cfg.replace(seed=k))
            for k in range(2)]
    j = run_requests("local:qwen2.5-coder-1.5b", reqs, cache=False, progress=False).judgments
    assert j["ok"].all(), j["error"].tolist()
    assert (j["completion_tokens"] > 0).all()
