"""The judge interface: requests in, responses out.

A *judge* is any backend that turns chat messages plus generation settings
into text (and, where the backend allows, first-token log-probabilities and
token usage). Everything that talks to a language model goes through here.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from json.encoder import encode_basestring as _json_str
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "GenerationConfig",
    "Request",
    "Response",
    "Judge",
    "JudgeError",
    "RetryableError",
    "PRESETS",
    "yes_probability",
    "REASONING_EFFORTS",
    "request_key",
    "request_keys",
    "canonical_base_url",
]

#: Values of ``GenerationConfig.reasoning_effort`` (OpenAI reasoning models; seed 000 Table 8 uses low, medium).
REASONING_EFFORTS = ("minimal", "low", "medium", "high")


class JudgeError(RuntimeError):
    """A judge call failed for a reason retrying will not fix."""


class RetryableError(JudgeError):
    """A judge call failed for a transient reason (429, 5xx, timeout).

    ``retry_after`` carries the server's Retry-After in seconds when it sent one;
    ``overload`` says the server is saturated (429, 503): an adaptive runner sends fewer
    calls at once.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, overload: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.overload = overload


@dataclass(frozen=True)
class GenerationConfig:
    """Generation settings. All of them are part of the cache key.

    ``json_schema`` asks the backend to constrain output to that JSON schema
    (grammar-constrained decoding on the local backend, ``response_format``
    on OpenAI-compatible servers). ``top_logprobs`` > 0 asks for that many
    alternatives for the *first* generated token (used for P(Yes)).
    ``repeat_penalty`` is honoured where the backend supports it.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = 0
    repeat_penalty: float | None = 1.0
    stop: tuple[str, ...] = ()
    json_schema: Mapping[str, Any] | None = None
    top_logprobs: int = 0
    reasoning_effort: str | None = None

    def __post_init__(self) -> None:
        # 0 and 0.0 are the same setting: store floats, so keys and bodies never split on the spelling
        for name in ("temperature", "top_p", "repeat_penalty"):
            value = getattr(self, name)
            if isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, name, float(value))
        if not (0.0 <= self.temperature <= 2.0):
            raise ValueError(f"GenerationConfig.temperature must be in [0, 2], got {self.temperature!r}")
        if not (0.0 < self.top_p <= 1.0):
            raise ValueError(f"GenerationConfig.top_p must be in (0, 1], got {self.top_p!r}")
        if not (isinstance(self.max_tokens, int) and self.max_tokens > 0):
            raise ValueError(f"GenerationConfig.max_tokens must be a positive int, got {self.max_tokens!r}")
        if self.top_logprobs < 0 or self.top_logprobs > 20:
            raise ValueError(f"GenerationConfig.top_logprobs must be in [0, 20], got {self.top_logprobs!r}")
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.reasoning_effort is not None:
            self._check_reasoning()

    def _check_reasoning(self) -> None:
        """Reasoning models take only the default sampling (temperature 1, top_p 1) and no logprobs."""
        if self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"GenerationConfig.reasoning_effort must be one of {REASONING_EFFORTS} or None, "
                             f"got {self.reasoning_effort!r}")
        if self.temperature != 1.0 or self.top_p != 1.0:
            raise ValueError("GenerationConfig.reasoning_effort is set: reasoning models accept only "
                             f"temperature=1 and top_p=1, got temperature={self.temperature!r}, top_p={self.top_p!r}")
        if self.top_logprobs:
            raise ValueError("GenerationConfig.reasoning_effort is set: reasoning models return no logprobs; "
                             "set top_logprobs=0")

    def replace(self, **changes: Any) -> "GenerationConfig":
        data = asdict(self)
        data.update(changes)
        return GenerationConfig(**data)

    def chat_params(self) -> dict[str, Any]:
        """These settings as OpenAI chat-completions parameters (also what TGI/vLLM/HF accept);
        ``repeat_penalty`` has no counterpart there and is not sent.

        With ``reasoning_effort`` set (GPT-5 / o-series), the body carries ``reasoning_effort``,
        ``temperature=1`` (the only value those models accept), no ``top_p``, and the output cap
        as ``max_completion_tokens`` (it covers reasoning and visible tokens).
        """
        if self.reasoning_effort is not None:
            kw: dict[str, Any] = {"temperature": 1.0, "max_completion_tokens": self.max_tokens,
                                  "reasoning_effort": self.reasoning_effort}
        else:
            kw = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}
        if self.seed is not None:
            kw["seed"] = self.seed
        if self.stop:
            kw["stop"] = list(self.stop)
        if self.top_logprobs:
            kw["logprobs"] = True
            kw["top_logprobs"] = self.top_logprobs
        if self.json_schema is not None:
            kw["response_format"] = {"type": "json_schema",
                                     "json_schema": {"name": "reply", "schema": dict(self.json_schema)}}
        return kw

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop"] = list(self.stop)
        data["json_schema"] = dict(self.json_schema) if self.json_schema is not None else None
        return data

    def key_dict(self) -> dict[str, Any]:
        """All settings, for the cache key of backends that use every one of them (the local model).

        Settings added after the first release are left out while unset, so keys of the
        committed results stay what they were.
        """
        data = self.as_dict()
        if data["reasoning_effort"] is None:
            del data["reasoning_effort"]
        return data


#: Named presets for the seeds' protocols.
PRESETS: dict[str, GenerationConfig] = {
    # Seed 000, Table 8: temperature 0, top_p 1, at most 1000 new tokens.
    "seed000": GenerationConfig(temperature=0.0, top_p=1.0, max_tokens=1000, seed=0, repeat_penalty=1.0),
    # Seed 002, section 3.1: temperature 0.2, nucleus 0.9, at most 300 new tokens.
    "seed002": GenerationConfig(temperature=0.2, top_p=0.9, max_tokens=300, seed=0, repeat_penalty=1.0),
    # Seed 000, Table 8, GPT-5 family: temperature 1 (the only value they accept), reasoning effort low / medium.
    "seed000-reasoning-low": GenerationConfig(temperature=1.0, top_p=1.0, max_tokens=1000, seed=None,
                                              reasoning_effort="low"),
    "seed000-reasoning-medium": GenerationConfig(temperature=1.0, top_p=1.0, max_tokens=1000, seed=None,
                                                 reasoning_effort="medium"),
}

#: Backends whose requests are OpenAI chat-completions bodies: their key holds exactly the
#: settings :meth:`GenerationConfig.chat_params` sends (an unsent ``repeat_penalty`` splits nothing).
CHAT_BACKENDS = frozenset({"openai", "hf"})


def canonical_base_url(url: str) -> str:
    """One spelling per server: scheme and host lower-cased, default port and trailing ``/`` dropped.

    >>> canonical_base_url("HTTP://LocalHost:80/v1/")
    'http://localhost/v1'
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return url.strip().rstrip("/")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in {("http", 80), ("https", 443)} else f"{host}:{port}"
    if parts.username:
        raise ValueError("a base URL must not carry credentials; the key comes from the environment")
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


@lru_cache(maxsize=256)
def canonical_judge(spec: str) -> str:
    """The judge part of a key: ``backend:model@url`` with the URL in its canonical form."""
    head, at, url = spec.partition("@")
    return f"{head}@{canonical_base_url(url)}" if at and url else spec


def _message_key(message: Mapping[str, Any]) -> list[Any]:
    """``[role, content]``, plus every other field (``name`` ...) when a message carries one."""
    extra = {k: v for k, v in message.items() if k not in ("role", "content")}
    return [message["role"], message["content"], extra] if extra else [message["role"], message["content"]]


def key_settings(backend: str, config: GenerationConfig) -> dict[str, Any]:
    """The settings that reach ``backend``'s server, in the form the cache key hashes."""
    return config.chat_params() if backend in CHAT_BACKENDS else config.key_dict()


_COMPACT = {"ensure_ascii": False, "separators": (",", ":")}
_SETTINGS_MEMO: dict[tuple[int, str], tuple[GenerationConfig, str, str]] = {}


def _settings_json(backend: str, config: GenerationConfig) -> tuple[str, str]:
    """(key JSON of the settings, chat-params JSON without braces), memoised per config object."""
    memo = _SETTINGS_MEMO.get((id(config), backend))
    if memo is not None and memo[0] is config:
        return memo[1], memo[2]
    if len(_SETTINGS_MEMO) > 4096:
        _SETTINGS_MEMO.clear()
    key_json = json.dumps(key_settings(backend, config), sort_keys=True, **_COMPACT)
    body_json = json.dumps(config.chat_params(), **_COMPACT)[1:-1]
    _SETTINGS_MEMO[(id(config), backend)] = (config, key_json, body_json)
    return key_json, body_json


def encode_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(the messages as the key hashes them, the messages as a chat body sends them), as JSON.

    Each content string is encoded once and shared by both forms.
    """
    key_parts, body_parts = [], []
    for m in messages:
        if len(m) == 2:
            role = _json_str(m["role"])
            content = _json_str(m["content"])  # == json.dumps(content, ensure_ascii=False)
            key_parts.append(f"[{role},{content}]")
            body_parts.append(f'{{"role":{role},"content":{content}}}')
        else:
            key_parts.append(json.dumps(_message_key(m), sort_keys=True, **_COMPACT))
            body_parts.append(json.dumps(dict(m), **_COMPACT))
    return "[" + ",".join(key_parts) + "]", "[" + ",".join(body_parts) + "]"


def key_from_parts(judge: str, settings_json: str, messages_key_json: str, repeat: int) -> str:
    """SHA-256 of ``{"config":…,"judge":…,"messages":…,"repeat":…}`` (sorted keys, compact) from parts."""
    blob = (f'{{"config":{settings_json},"judge":{_json_str(judge)},'
            f'"messages":{messages_key_json},"repeat":{int(repeat)}}}')
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_ROLES_JSON = {role: _json_str(role) for role in ("system", "user", "assistant")}


def _messages_key_json(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages as the key hashes them (the first half of :func:`encode_messages`, alone)."""
    parts = []
    for m in messages:
        if len(m) == 2:
            parts.append(f"[{_json_str(m['role'])},{_json_str(m['content'])}]")
        else:
            parts.append(json.dumps(_message_key(m), sort_keys=True, **_COMPACT))
    return "[" + ",".join(parts) + "]"


def request_keys(judge_spec: str, requests: Iterable["Request"]) -> list[str]:
    """:meth:`Request.cache_key` of many requests at once (the same values, a few µs less each).

    The judge, the settings JSON of each distinct config and the JSON head of the key are
    worked out once per call instead of once per request, and the common two-message chat is
    encoded in a single f-string. The bytes hashed are exactly those of :func:`request_key`.
    """
    judge = canonical_judge(judge_spec)
    backend = judge.partition(":")[0]
    tail = f',"judge":{_json_str(judge)},"messages":'
    heads: dict[int, str] = {}  # id(config) -> '{"config":…,"judge":…,"messages":' (configs live in `requests`)
    enc, sha256, roles = _json_str, hashlib.sha256, _ROLES_JSON
    firsts: dict[str, str] = {}  # JSON of recent first-message contents
    out = []
    append = out.append
    for r in requests:
        cfg = r.config
        head = heads.get(id(cfg))
        if head is None:
            head = heads[id(cfg)] = '{"config":' + _settings_json(backend, cfg)[0] + tail
        msgs = r.messages
        rep = r.repeat
        if type(rep) is not int:
            rep = int(rep)
        try:
            if len(msgs) != 2 or len(msgs[0]) != 2 or len(msgs[1]) != 2:
                raise KeyError
            m0, m1 = msgs
            first = m0["content"]  # usually one system prompt shared by every request
            first_json = firsts.get(first)
            if first_json is None:
                if len(firsts) > 64:
                    firsts.clear()
                first_json = firsts[first] = enc(first)
            blob = (f'{head}[[{roles[m0["role"]]},{first_json}],'
                    f'[{roles[m1["role"]]},{enc(m1["content"])}]],"repeat":{rep}}}')
        except KeyError:  # not a plain (role, content) pair of messages: the general encoding
            blob = f'{head}{_messages_key_json(msgs)},"repeat":{rep}}}'
        append(sha256(blob.encode("utf-8")).hexdigest())
    return out


def request_key(judge_spec: str, messages: Sequence[Mapping[str, Any]], config: GenerationConfig,
                repeat: int = 0) -> str:
    """The cache key: SHA-256 of the canonical form of everything sent.

    That is the judge (backend, model, canonical server URL), the whole messages (every field,
    ``name`` included), the generation settings that reach the backend (floats as floats) and the
    repeat index, as sorted compact JSON. Operational settings (timeouts, concurrency, retries)
    are not part of it.
    """
    judge = canonical_judge(judge_spec)
    settings_json, _ = _settings_json(judge.partition(":")[0], config)
    return key_from_parts(judge, settings_json, _messages_key_json(messages), repeat)


@dataclass(frozen=True)
class Request:
    """One call to make. ``request_id`` is the caller's handle (unique in a run);
    ``repeat`` distinguishes deliberate repeats of the same prompt, so a
    robustness baseline never reads one cached answer back k times."""

    request_id: str
    messages: tuple[Mapping[str, str], ...]
    config: GenerationConfig = field(default_factory=GenerationConfig)
    repeat: int = 0

    def __post_init__(self) -> None:
        if not self.request_id:
            raise ValueError("Request.request_id must be a non-empty string")
        msgs = tuple(dict(m) for m in self.messages)
        if not msgs:
            raise ValueError(f"request {self.request_id!r}: field 'messages' is empty")
        for i, m in enumerate(msgs):
            if m.get("role") not in {"system", "user", "assistant"}:
                raise ValueError(f"request {self.request_id!r}: messages[{i}].role must be system/user/assistant, got {m.get('role')!r}")
            if not isinstance(m.get("content"), str):
                raise ValueError(f"request {self.request_id!r}: messages[{i}].content must be a string")
        object.__setattr__(self, "messages", msgs)
        if self.repeat < 0:
            raise ValueError(f"request {self.request_id!r}: field 'repeat' must be >= 0")

    def cache_key(self, judge_spec: str) -> str:
        """See :func:`request_key`: everything sent, canonically, plus the repeat index."""
        return request_key(judge_spec, self.messages, self.config, self.repeat)


_REPLY_ENCODER = json.JSONEncoder(ensure_ascii=False)


@dataclass
class Response:
    """What a backend returned for one request."""

    text: str
    top_logprobs: dict[str, float] | None = None  # first generated token: token -> logprob
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_evaluated: int | None = None  # after KV-cache reuse (local backend)
    finish_reason: str | None = None

    def to_json(self) -> str:
        """The reply as the cache stores it: ``json.dumps(..., ensure_ascii=False)`` of its fields in
        declaration order (one shared encoder: ``json.dumps`` with options builds one per call)."""
        return _REPLY_ENCODER.encode({"text": self.text, "top_logprobs": self.top_logprobs,
                                      "prompt_tokens": self.prompt_tokens,
                                      "completion_tokens": self.completion_tokens,
                                      "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
                                      "finish_reason": self.finish_reason})

    @classmethod
    def from_json(cls, blob: str) -> "Response":
        return cls(**json.loads(blob))


class Judge:
    """Base class of all backends.

    Subclasses set ``spec`` (the registry string that names them, e.g.
    ``local:qwen2.5-coder-1.5b``) and implement :meth:`complete`. Backends
    that are safe to call from several threads at once set
    ``max_concurrency`` > 1; the runner never exceeds it.
    """

    spec: str = ""
    max_concurrency: int = 1
    supports_logprobs: bool = False
    supports_json_schema: bool = False

    @classmethod
    def canonical_spec(cls, spec: str) -> str:
        """The spec recorded with results and cache entries for a judge built from ``spec``.

        Backends that read part of their identity from the environment (a server URL) put it
        into the spec here, so replies from two different servers never share cache entries.
        """
        return spec

    def complete(self, request: Request) -> Response:  # pragma: no cover - interface
        raise NotImplementedError

    async def acomplete(self, request: Request) -> Response:
        """Async entry point; the default runs :meth:`complete` in a thread."""
        import asyncio

        return await asyncio.to_thread(self.complete, request)

    def order_key(self, request: Request) -> Sequence[Any]:
        """Sort key the runner uses to order uncached requests. The default
        groups requests sharing a prefix (useful for KV-cache reuse)."""
        return tuple(m["content"] for m in request.messages)

    def expect_calls(self, requests: Sequence[Request]) -> None:
        """The calls a run is about to make, in the order it will make them. The runner calls it once
        per run, before the first call; the default does nothing (the local judge tells its batch
        engine how many long replies are coming, so the end of a run waits for none)."""

    async def arelease(self) -> None:
        """Release what this judge holds for the running event loop (HTTP sessions).
        The runner calls it when a run ends; the default does nothing."""

    def close(self) -> None:
        """Release resources (models, HTTP sessions)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


def yes_probability(top_logprobs: Mapping[str, float] | None) -> float:
    """P(Yes) / (P(Yes) + P(No)) from first-token alternatives.

    Tokens are compared after stripping whitespace and case-folding, so
    ``"Yes"``, ``" yes"`` and ``"YES"`` all count as *yes*. Returns NaN when
    neither a yes nor a no token is among the alternatives.

    >>> round(yes_probability({"Yes": -0.1, "No": -2.4}), 3)
    0.909
    """
    if not top_logprobs:
        return math.nan
    p_yes = p_no = 0.0
    for token, lp in top_logprobs.items():
        t = token.strip().lower()
        if t == "yes":
            p_yes += math.exp(lp)
        elif t == "no":
            p_no += math.exp(lp)
    if p_yes + p_no == 0.0:
        return math.nan
    return p_yes / (p_yes + p_no)
