"""OpenAI and any OpenAI-compatible server (vLLM, TGI, Ollama, llama.cpp server).

Spec: ``openai:<model>`` or ``openai:<model>@<base_url>``. The server is the
spec's ``@base_url``, else ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
The key is read from the environment only (``OPENAI_API_KEY`` by default, or
the variable named by the ``api_key_env`` option); it is never a parameter,
never cached, never written anywhere, and scrubbed from error messages. A
server named by a base URL that needs no key gets a placeholder.

The transport is a direct aiohttp POST to ``{base_url}/chat/completions``, one
``ClientSession`` per event loop. No SDK: the openai SDK's httpx + pydantic
layers cost ~4.5 ms of CPU per call, which capped a 64-way run at a fraction
of what the server could answer (see ``benchmarks/bench_runner.py``).
aiohttp is imported on the first call, so building the judge never needs it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from types import ModuleType
from typing import Any

from .base import Judge, JudgeError, Request, Response, RetryableError, canonical_base_url
from ..core.secrets import scrub

__all__ = ["OpenAIJudge", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_SNIPPET = 300  # characters of a server's error text kept in a message
_CONNECT_TIMEOUT_S = 30.0  # opening a connection; the reply's own limit is the runner's timeout_s
_SINGLE_CALL_TIMEOUT_S = 600.0  # complete() outside the runner, without request_timeout_s


def _aiohttp() -> ModuleType:
    try:
        import aiohttp
    except ImportError as exc:
        raise JudgeError("the openai backend needs aiohttp: pip install 'cfbench[api]'") from exc
    return aiohttp


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds; None when absent, an HTTP date, or not a finite number."""
    try:
        seconds = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


class OpenAIJudge(Judge):
    """Chat completions over HTTP; see the module docstring for the spec, the key and the transport."""

    supports_logprobs = True
    supports_json_schema = True
    adaptive_concurrency = True

    def __init__(self, model: str, *, api_key_env: str = "OPENAI_API_KEY", max_concurrency: int = 256,
                 initial_concurrency: int = 1, request_timeout_s: float | None = None, **_: Any) -> None:
        self.model, _, spec_url = model.partition("@")
        named_url = spec_url or os.environ.get("OPENAI_BASE_URL")
        self.base_url = canonical_base_url(named_url or DEFAULT_BASE_URL)
        self._keyless_ok = bool(named_url)  # self-hosted servers mostly ignore the key
        self._url = self.base_url + "/chat/completions"
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.initial_concurrency = min(initial_concurrency, max_concurrency)
        self.request_timeout_s = request_timeout_s
        self._sessions: dict[int, tuple[asyncio.AbstractEventLoop, Any]] = {}

    @classmethod
    def canonical_spec(cls, spec: str) -> str:
        """``openai:<model>@<url>`` (URL in canonical form, see :func:`canonical_base_url`), also when
        the server comes from ``$OPENAI_BASE_URL``; a trailing ``/`` never makes a second judge."""
        head, at, url = spec.partition("@")
        env_url = os.environ.get("OPENAI_BASE_URL")
        if not at and env_url:
            url = env_url
        return f"{head}@{canonical_base_url(url)}" if url else spec

    def _key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self._keyless_ok:
            return "not-needed"
        raise JudgeError(f"{self.spec}: set the environment variable {self.api_key_env} (keys are never parameters)")

    def _scrub(self, text: str) -> str:
        return scrub(text, (self.api_key_env,))

    def _session(self, aiohttp: ModuleType) -> Any:
        """This loop's session (an aiohttp session is bound to the loop that made it);
        the key goes into its default headers, read once per session."""
        loop = asyncio.get_running_loop()
        entry = self._sessions.get(id(loop))
        if entry is not None and entry[0] is loop and not entry[1].closed:
            return entry[1]
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.max_concurrency),
            # the runner times each attempt from the moment it is sent (``timeout_s``); a backend limit
            # only where one was asked for (``request_timeout_s``), plus a bound on connecting
            timeout=aiohttp.ClientTimeout(total=self.request_timeout_s, sock_connect=_CONNECT_TIMEOUT_S),
            headers={"Authorization": f"Bearer {self._key()}", "Accept": "application/json"},
        )
        self._sessions[id(loop)] = (loop, session)
        return session

    async def arelease(self) -> None:
        entry = self._sessions.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].close()

    def complete(self, request: Request) -> Response:
        async def once() -> Response:
            try:
                return await asyncio.wait_for(self.acomplete(request), self.request_timeout_s or _SINGLE_CALL_TIMEOUT_S)
            except asyncio.TimeoutError:
                raise RetryableError(f"timeout: no reply within {self.request_timeout_s or _SINGLE_CALL_TIMEOUT_S:g} s"
                                     ) from None
            finally:
                await self.arelease()

        return asyncio.run(once())

    def _snippet(self, body: bytes | str) -> str:
        """Server text fit for an error message: scrubbed first (a careless server may echo the key,
        in any encoding), then clipped, so the cut can never leave a piece of the key behind."""
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        text = scrub(text.strip(), (self.api_key_env,))
        text = text[:_SNIPPET] + "…" if len(text) > _SNIPPET else text
        return text or "(empty body)"

    def _server_message(self, raw: bytes) -> str:
        """The ``error.message`` of an OpenAI-style error body, else the body's start."""
        try:
            data = json.loads(raw)
        except ValueError:
            return self._snippet(raw)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return self._snippet(err["message"])
        return self._snippet(err if isinstance(err, str) else raw)

    def _parse(self, raw: bytes) -> Response:
        """A chat-completions reply as a Response. A 2xx body that is not a completion is a
        RetryableError (proxies and overloaded servers send those transiently)."""
        try:
            data = json.loads(raw)
        except ValueError:
            raise RetryableError(f"malformed response (not JSON): {self._snippet(raw)}") from None
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise RetryableError(f"malformed response (no choices[0].message): {self._snippet(raw)}")
        finish_reason = choice.get("finish_reason")
        text = message.get("content")
        if text is None:
            raise JudgeError(f"empty message (finish_reason={finish_reason})")
        if not isinstance(text, str):
            raise RetryableError(f"malformed response (message.content is {type(text).__name__}): "
                                 f"{self._snippet(raw)}")
        top = None
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and logprobs.get("content"):
            try:
                top = {alt["token"]: float(alt["logprob"]) for alt in logprobs["content"][0]["top_logprobs"] or ()}
            except (KeyError, IndexError, TypeError, ValueError):
                raise RetryableError(f"malformed response (logprobs): {self._snippet(raw)}") from None
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return Response(text=text, top_logprobs=top, prompt_tokens=usage.get("prompt_tokens"),
                        completion_tokens=usage.get("completion_tokens"), finish_reason=finish_reason)

    async def acomplete(self, request: Request) -> Response:
        aiohttp = _aiohttp()
        session = self._session(aiohttp)
        body = {"model": self.model, "messages": list(request.messages), **request.config.chat_params()}
        try:
            async with session.post(self._url, json=body, allow_redirects=False) as resp:
                raw = await resp.read()
        except asyncio.TimeoutError:
            what = (f"no complete reply within request_timeout_s={self.request_timeout_s:g} s"
                    if self.request_timeout_s else f"no connection within {_CONNECT_TIMEOUT_S:g} s")
            raise RetryableError(f"timeout: {what}") from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise RetryableError(self._scrub(f"{type(exc).__name__}: {exc}")) from None
        except aiohttp.ClientError as exc:
            raise JudgeError(self._scrub(f"{type(exc).__name__}: {exc}")) from None
        status = resp.status
        if 200 <= status < 300:
            return self._parse(raw)
        if 300 <= status < 400:
            location = self._scrub(resp.headers.get("Location", "?"))
            raise JudgeError(f"{status}: redirected to {location}; give the final API URL as base_url")
        message = self._server_message(raw)
        retry_after = _retry_after(resp.headers.get("Retry-After"))
        if status == 429:
            raise RetryableError(f"429 rate limited: {message}", retry_after=retry_after, overload=True)
        if status >= 500 or status == 408:
            raise RetryableError(f"{status}: {message}", retry_after=retry_after, overload=status == 503)
        raise JudgeError(f"{status}: {message}")
