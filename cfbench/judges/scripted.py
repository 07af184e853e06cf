"""A deterministic scripted judge: the test double.

``scripted:<name>`` replies with whatever the script registered under
``<name>`` returns for the request. It is for unit tests and the seconds-long
``smoke`` configs only; no headline number of a study comes from it.

Built-in scripts:

``echo``      the last user message, verbatim
``yes`` / ``no``  a bare "Yes" / "No" with first-token logprobs
``garbage``   text no task parser accepts
``fail``      raises a non-retryable error

A study registers scripts for its own output contracts with
:func:`register_script` when it is imported (the judge layer imports no study).
A spec may also name a script by import path, ``scripted:package.module:function``,
which is imported on first use.
"""

from __future__ import annotations

import math
from typing import Callable

from .base import Judge, JudgeError, Request, Response

__all__ = ["ScriptedJudge", "register_script", "scripts", "script_descriptions"]

Script = Callable[[Request], "Response | str"]
_SCRIPTS: dict[str, Script] = {}
_DOES: dict[str, str] = {}


def register_script(name: str, fn: Script, *, does: str = "") -> Script:
    """Register ``fn(request) -> Response | str`` as ``scripted:<name>``.

    ``does`` is the one line ``cfbench judges`` shows (default: the first line of ``fn``'s docstring).
    """
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise ValueError(f"script name must be non-empty without spaces, got {name!r}")
    _SCRIPTS[name] = fn
    doc = " ".join((getattr(fn, "__doc__", None) or "").strip().split("\n\n")[0].split())
    first = doc.split(". ")[0].rstrip(".") + "." if doc and getattr(fn, "__name__", "") != "<lambda>" else ""
    _DOES[name] = " ".join(does.split()) or first
    return fn


def scripts() -> list[str]:
    return sorted(_SCRIPTS)


def script_descriptions() -> dict[str, str]:
    """Script name -> the one line ``cfbench judges`` prints for it, sorted by name."""
    return {n: _DOES.get(n) or "(no description)" for n in sorted(_SCRIPTS)}


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


register_script("echo", lambda r: _last_user(r), does="replies with the last user message, verbatim")
register_script("yes", _bare("Yes"), does='a bare "Yes" with first-token log-probs (P(Yes) 0.9)')
register_script("no", _bare("No"), does='a bare "No" with first-token log-probs (P(Yes) 0.1)')
register_script("garbage", lambda r: "\u2591\u2592 lorem ipsum \u2593", does="text no task parser accepts")
register_script("fail", _fail, does="raises a non-retryable error on every request")


def _resolve(model: str) -> Script:
    if model in _SCRIPTS:
        return _SCRIPTS[model]
    if ":" in model:
        import importlib

        module_name, _, attr = model.partition(":")
        try:
            fn = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise JudgeError(f"scripted judge {model!r}: cannot import {attr!r} from {module_name!r} ({exc})") from None
        if not callable(fn):
            raise JudgeError(f"scripted judge {model!r}: {attr!r} is not callable")
        return fn
    raise JudgeError(f"no scripted judge named {model!r} (known: {', '.join(scripts())}); a study "
                     "registers its scripts when imported, e.g. `import cfbench.studies.shopflow`, or name "
                     "one as scripted:package.module:function")


class ScriptedJudge(Judge):
    """Replies from a registered script. Thread-safe, so it runs concurrently."""

    max_concurrency = 8
    supports_logprobs = True
    supports_json_schema = True

    def __init__(self, model: str, **options: object) -> None:
        self._script = _resolve(model)
        self.spec = f"scripted:{model}"

    def complete(self, request: Request) -> Response:
        out = self._script(request)
        if isinstance(out, str):
            words = sum(len(m["content"].split()) for m in request.messages)
            out = Response(text=out, prompt_tokens=words, completion_tokens=len(out.split()))
        return out
