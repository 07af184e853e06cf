"""Hugging Face Inference (``huggingface_hub.InferenceClient.chat_completion``).

Spec: ``hf:<model-id>``. The token comes from ``HF_TOKEN`` only.
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..core.secrets import scrub
from .base import Judge, JudgeError, Request, Response, RetryableError

__all__ = ["HFJudge"]


def _seconds(value: object) -> float | None:
    """Retry-After in seconds; None when absent, an HTTP date or not a finite number (never raises)."""
    try:
        seconds = float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


class HFJudge(Judge):
    supports_logprobs = True
    supports_json_schema = True

    def __init__(self, model: str, *, token_env: str = "HF_TOKEN", max_concurrency: int = 4,
                 request_timeout_s: float = 120.0, **_: Any) -> None:
        self.model = model
        self.token_env = token_env
        self.max_concurrency = max_concurrency
        self.request_timeout_s = request_timeout_s
        self._client = None

    def _get_client(self):
        if self._client is None:
            try:
                from huggingface_hub import InferenceClient
            except ImportError as exc:  # pragma: no cover
                raise JudgeError("the hf backend needs huggingface_hub: pip install 'cfbench[api]'") from exc
            token = os.environ.get(self.token_env)
            if not token:
                raise JudgeError(f"{self.spec}: set the environment variable {self.token_env}")
            self._client = InferenceClient(model=self.model, token=token, timeout=self.request_timeout_s)
        return self._client

    def complete(self, request: Request) -> Response:
        cfg = request.config
        kw: dict[str, Any] = {"messages": list(request.messages), **cfg.chat_params()}
        if cfg.json_schema is not None:  # huggingface_hub's form of a JSON-schema constraint
            kw["response_format"] = {"type": "json_object", "value": dict(cfg.json_schema)}
        try:
            out = self._get_client().chat_completion(**kw)
        except JudgeError:
            raise
        except Exception as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            text = scrub(str(exc), (self.token_env,))  # a server may echo the token, in any spelling
            if status == 429 or (status is not None and status >= 500):
                retry = getattr(getattr(exc, "response", None), "headers", {}).get("retry-after")
                raise RetryableError(f"{status}: {text}", retry_after=_seconds(retry),
                                     overload=status in (429, 503)) from None
            if status is None and isinstance(exc, (TimeoutError, ConnectionError)):
                raise RetryableError(f"{type(exc).__name__}: {text}") from None
            raise JudgeError(f"{type(exc).__name__}: {text}") from None
        choice = out.choices[0]
        top = None
        if getattr(choice, "logprobs", None) and choice.logprobs.content:
            top = {alt.token: alt.logprob for alt in choice.logprobs.content[0].top_logprobs}
        usage = getattr(out, "usage", None)
        return Response(text=choice.message.content or "", top_logprobs=top,
                        prompt_tokens=getattr(usage, "prompt_tokens", None),
                        completion_tokens=getattr(usage, "completion_tokens", None),
                        finish_reason=choice.finish_reason)
