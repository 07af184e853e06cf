"""A deterministic scripted judge: the test double.

``scripted:<name>`` replies with whatever the script registered under
``<name>`` returns for the request. It is for unit tests and the seconds-long
``smoke`` configs only; no headline number of a study comes from it.

Built-in scripts:

``echo``      the last user message, verbatim
``yes`` / ``no``  a bare "Yes" / "No" with first-token logprobs
``garbage``   text no task parser accepts
``fail``      raises a non-retryable error

Task modules register scripts for their own output contracts with
:func:`register_script`.
"""

from __future__ import annotations

import hashlib
import math
from typing import Callable

from .base import Judge, JudgeError, Request, Response

__all__ = ["ScriptedJudge", "register_script", "scripts", "stable_unit"]

Script = Callable[[Request], "Response | str"]
_SCRIPTS: dict[str, Script] = {}


def register_script(name: str, fn: Script) -> Script:
    """Register ``fn(request) -> Response | str`` as ``scripted:<name>``."""
    _SCRIPTS[name] = fn
    return fn


def scripts() -> list[str]:
    return sorted(_SCRIPTS)


def stable_unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the given parts (no global RNG)."""
    blob = "\x1f".join(map(str, parts)).encode("utf-8")
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") / 2**64


def _last_user(request: Request) -> str:
    return next((m["content"] for m in reversed(request.messages) if m["role"] == "user"), "")


def _bare(answer: str) -> Callable[[Request], Response]:
    other = "No" if answer == "Yes" else "Yes"

    def script(request: Request) -> Response:
        return Response(text=answer, top_logprobs={answer: math.log(0.9), other: math.log(0.1)},
                        prompt_tokens=0, completion_tokens=1)

    return script


def _fail(request: Request) -> Response:
    raise JudgeError(f"scripted failure for request {request.request_id!r}")


register_script("echo", lambda r: _last_user(r))
register_script("yes", _bare("Yes"))
register_script("no", _bare("No"))
register_script("garbage", lambda r: "\u2591\u2592 lorem ipsum \u2593")
register_script("fail", _fail)


class ScriptedJudge(Judge):
    """Replies from a registered script. Thread-safe, so it runs concurrently."""

    max_concurrency = 8
    supports_logprobs = True
    supports_json_schema = True

    def __init__(self, model: str, **options: object) -> None:
        if model not in _SCRIPTS:
            # task modules register their scripts on import
            import cfbench.tasks  # noqa: F401
        if model not in _SCRIPTS:
            raise JudgeError(f"no scripted judge named {model!r} (known: {', '.join(scripts())})")
        self._script = _SCRIPTS[model]
        self.spec = f"scripted:{model}"

    def complete(self, request: Request) -> Response:
        out = self._script(request)
        if isinstance(out, str):
            words = sum(len(m["content"].split()) for m in request.messages)
            out = Response(text=out, prompt_tokens=words, completion_tokens=len(out.split()))
        return out
