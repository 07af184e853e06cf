"""OpenAI and any OpenAI-compatible server (vLLM, TGI, Ollama, llama.cpp server).

Spec: ``openai:<model>`` or ``openai:<model>@<base_url>``. The key is read from
the environment only (``OPENAI_API_KEY`` by default, or the variable named by
the ``api_key_env`` option); it is never a parameter, never cached, never
written anywhere. A server given by ``@base_url`` that needs no key gets a
placeholder.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .base import Judge, JudgeError, Request, Response, RetryableError

__all__ = ["OpenAIJudge"]


def _retry_after(exc: Any) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAIJudge(Judge):
    supports_logprobs = True
    supports_json_schema = True

    def __init__(self, model: str, *, api_key_env: str = "OPENAI_API_KEY", max_concurrency: int = 16,
                 request_timeout_s: float = 120.0, **_: Any) -> None:
        self.model, _, base_url = model.partition("@")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.request_timeout_s = request_timeout_s
        self._clients: dict[int, Any] = {}

    def _key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url:
            return "not-needed"  # most self-hosted servers ignore it
        raise JudgeError(f"{self.spec}: set the environment variable {self.api_key_env} (keys are never parameters)")

    def _client(self):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise JudgeError("the openai backend needs the 'openai' package: pip install 'cfbench[api]'") from exc
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._clients:  # an AsyncOpenAI client is bound to its event loop
            self._clients[loop_id] = openai.AsyncOpenAI(api_key=self._key(), base_url=self.base_url,
                                                        timeout=self.request_timeout_s, max_retries=0)
        return self._clients[loop_id]

    def _kwargs(self, request: Request) -> dict[str, Any]:
        return {"model": self.model, "messages": list(request.messages), **request.config.chat_params()}

    async def arelease(self) -> None:
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.close()

    def complete(self, request: Request) -> Response:
        async def once() -> Response:
            try:
                return await self.acomplete(request)
            finally:
                await self.arelease()

        return asyncio.run(once())

    async def acomplete(self, request: Request) -> Response:
        import openai

        try:
            out = await self._client().chat.completions.create(**self._kwargs(request))
        except openai.RateLimitError as exc:
            raise RetryableError(f"429 rate limited: {exc.message}", retry_after=_retry_after(exc)) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 408:
                raise RetryableError(f"{exc.status_code}: {exc.message}", retry_after=_retry_after(exc)) from None
            raise JudgeError(f"{exc.status_code}: {exc.message}") from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise RetryableError(f"{type(exc).__name__}: {exc}") from None
        except openai.APIResponseValidationError as exc:
            raise RetryableError(f"malformed response: {exc}") from None
        if not out.choices:
            raise RetryableError("response had no choices")
        choice = out.choices[0]
        text = choice.message.content
        if text is None:
            raise JudgeError(f"empty message (finish_reason={choice.finish_reason})")
        top = None
        lp = getattr(choice, "logprobs", None)
        if lp is not None and lp.content:
            top = {alt.token: alt.logprob for alt in lp.content[0].top_logprobs}
        usage = out.usage
        return Response(
            text=text,
            top_logprobs=top,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            finish_reason=choice.finish_reason,
        )
