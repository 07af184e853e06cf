"""``cfbench.judges.llama_server``: why the embedded server cannot start is said in one line, before any
process is started (the real start is exercised by tests/test_judges_real_server.py)."""

from __future__ import annotations

import importlib.util

import pytest

from cfbench.judges import llama_server as L


def _without(monkeypatch, *names):
    real = importlib.util.find_spec
    monkeypatch.setattr(L.importlib.util, "find_spec", lambda n, *a: None if n in names else real(n, *a))


def test_no_llama_cpp_is_named_and_nothing_starts(monkeypatch):
    _without(monkeypatch, "llama_cpp")
    assert "llama-cpp-python is not installed" in L.unavailable()
    with pytest.raises(L.ServerStartError, match="llama-cpp-python is not installed"):
        with L.embedded_server():
            pass


def test_a_missing_server_dependency_is_named(monkeypatch):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    monkeypatch.setattr("cfbench.judges.local.embedded_model_status", lambda: (True, ""))
    _without(monkeypatch, "sse_starlette")
    assert L.missing_server_deps() == ["sse_starlette"]
    assert L.unavailable() == "llama-cpp-python's server needs sse_starlette: pip install 'cfbench[server]'"
