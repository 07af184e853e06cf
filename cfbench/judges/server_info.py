"""Which server answered: provenance of the OpenAI-compatible judges of a run.

:func:`server_provenance` asks each ``openai:`` judge's server, once, for the models it serves
(``GET {base_url}/models``) and records what it says about itself, for ``run_info.json`` and the
notebooks' provenance cell:

``base_url``        the server, credentials stripped (:func:`public_url`)
``model``           the model the spec asks for
``served_models``   the ids ``/models`` lists (a llama.cpp server lists the GGUF path it loaded)
``server``          the HTTP ``Server`` header, and ``version`` where the server answers ``/version``
                    (vLLM does), so the backend's version is on record
``client``          the cfbench backend and the aiohttp version that spoke to it
``error``           why the server could not be asked, when it could not

Nothing here is secret: the key is sent in the ``Authorization`` header and never recorded; URLs
lose any ``user:password@``, query and fragment. A server that does not answer is a recorded
``error``, never a failed run.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any, Iterable
from urllib.parse import urlsplit, urlunsplit

from ..core.secrets import scrub

__all__ = ["public_url", "server_provenance", "server_specs"]

_TIMEOUT_S = 5.0


def public_url(url: str) -> str:
    """``url`` without credentials: no ``user:password@``, no query, no fragment.

    >>> public_url("https://me:s3cret@gw.example/v1?api_key=s3cret#x")
    'https://gw.example/v1'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _get(url: str, key: str | None, timeout: float) -> tuple[Any, str | None]:
    req = urllib.request.Request(url, headers={"Accept": "application/json",
                                               **({"Authorization": f"Bearer {key}"} if key else {})})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's own judge server
        return json.loads(resp.read().decode("utf-8", "replace")), resp.headers.get("Server")


def _one(spec: str, timeout: float) -> dict[str, Any]:
    from .openai_backend import DEFAULT_BASE_URL, OpenAIJudge
    from .registry import canonical_spec

    spec = canonical_spec(spec)
    model, _, url = spec.partition(":")[2].partition("@")
    url = url or DEFAULT_BASE_URL
    judge = OpenAIJudge(f"{model}@{url}")
    key_env = judge.api_key_env
    key = os.environ.get(key_env)
    import aiohttp  # noqa: F401 - recorded below; the backend needs it anyway

    out: dict[str, Any] = {"judge": f"openai:{model}@{public_url(url)}", "base_url": public_url(url),
                           "model": model, "client": f"cfbench openai backend (aiohttp {aiohttp.__version__})"}
    try:
        data, server = _get(url.rstrip("/") + "/models", key, timeout)
        out["served_models"] = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
        out["server"] = server
    except (urllib.error.URLError, OSError, ValueError, AttributeError) as exc:
        out["error"] = scrub(f"GET /models: {type(exc).__name__}: {exc}", (key_env,))
        return out
    root = url.rstrip("/").removesuffix("/v1")
    try:
        version, _ = _get(root + "/version", key, timeout)
        if isinstance(version, dict) and version.get("version"):
            out["version"] = str(version["version"])
    except (urllib.error.URLError, OSError, ValueError):
        pass  # most servers have no /version: the Server header and served_models say what they can
    return out


def server_provenance(specs: Iterable[str], *, timeout: float = _TIMEOUT_S) -> list[dict[str, Any]]:
    """One record per distinct ``openai:`` spec in ``specs`` (others are not servers); never raises
    for a server that does not answer (its record holds the ``error``)."""
    seen: dict[str, dict[str, Any]] = {}
    for spec in specs:
        if not isinstance(spec, str) or not spec.startswith("openai:") or spec in seen:
            continue
        try:
            seen[spec] = _one(spec, timeout)
        except Exception as exc:  # noqa: BLE001 - provenance must never sink the run it describes
            head, _, url = spec.partition("@")
            seen[spec] = {"judge": f"{head}@{public_url(url)}" if url else head, "error": scrub(f"{type(exc).__name__}: {exc}", ("OPENAI_API_KEY",))}
    return list(seen.values())


def server_specs(params: Any) -> list[str]:
    """The ``openai:`` judge specs among a run's parameters (any value, or item of a list value, that
    is such a spec: ``judge``, ``judges``, ``rewrite_judge`` ...)."""
    values = params.values() if isinstance(params, dict) else ()
    out: list[str] = []
    for v in values:
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(item, str) and item.startswith("openai:") and item not in out:
                out.append(item)
    return out
