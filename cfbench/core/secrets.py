"""Keeping credentials out of everything cfbench writes (no imports from the rest of the package).

A careless or hostile server may echo the key: in an error body, a redirect, a
``\\u``-escaped JSON string, a URL-encoded query, or the reply itself. The rules:

* :func:`scrub` replaces every form of every credential in a text *before* it is
  clipped, and also any run of 12 or more consecutive characters of a credential
  (a server that cut the key itself leaves no piece behind either);
* :func:`echoed_credential` tells whether a text holds a credential; the judge runner
  then records the call as failed ("reply echoed a credential") and neither caches
  nor returns the text;
* :func:`find_secret_leaks` checks every file a run wrote (text, JSON, notebooks, and
  parquet through pyarrow, whose strings may be compressed on disk).

Credentials are the values of :data:`SECRET_ENV` plus any variable a backend names
(its ``api_key_env``), 8 characters or longer.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Iterable
from urllib.parse import quote, quote_plus

__all__ = ["SECRET_ENV", "secret_values", "scrub", "scrub_secrets", "clip", "credentials", "echoed_credential",
           "find_secret_leaks", "FRAGMENT"]

#: Environment variables whose values are secrets (API keys, tokens).
SECRET_ENV = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")


def secret_values(extra_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The secret values set in this environment (name -> value), those long enough to search for."""
    return {n: v for n in SECRET_ENV + tuple(extra_env) if (v := os.environ.get(n)) and len(v) >= 8}

#: Shortest run of a credential's characters that counts as a piece of it.
FRAGMENT = 12


@lru_cache(maxsize=64)
def _forms(value: str) -> tuple[str, ...]:
    """Every spelling of ``value`` a server or an encoder may produce, longest first."""
    forms = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=True)[1:-1],
        quote(value, safe=""),
        quote_plus(value),
        "".join(f"\\u{ord(c):04x}" for c in value),
        "".join(f"\\u{ord(c):04X}" for c in value),
        "".join(f"%{b:02X}" for b in value.encode("utf-8")),
        "".join(f"%{b:02x}" for b in value.encode("utf-8")),
    }
    return tuple(sorted(forms, key=len, reverse=True))


def _fragment_spans(text: str, value: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are runs of >= FRAGMENT consecutive characters of ``value``."""
    if len(value) < FRAGMENT:
        return []
    spans: list[tuple[int, int]] = []
    for i in range(len(value) - FRAGMENT + 1):
        window = value[i:i + FRAGMENT]
        start = text.find(window)
        while start != -1:
            # extend the match both ways along the credential
            a, b, va, vb = start, start + FRAGMENT, i, i + FRAGMENT
            while a > 0 and va > 0 and text[a - 1] == value[va - 1]:
                a, va = a - 1, va - 1
            while b < len(text) and vb < len(value) and text[b] == value[vb]:
                b, vb = b + 1, vb + 1
            spans.append((a, b))
            start = text.find(window, start + 1)
    return spans


def scrub(text: str, extra_env: Iterable[str] = ()) -> str:
    """``text`` with every credential (any form, or any piece of 12+ characters) replaced by ``<NAME>``."""
    if not text:
        return text
    for name, value in credentials(extra_env).items():
        for form in _forms(value):
            if form in text:
                text = text.replace(form, f"<{name}>")
        spans = _fragment_spans(text, value)
        if spans:
            spans.sort()
            merged: list[list[int]] = []
            for a, b in spans:
                if merged and a <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            for a, b in reversed(merged):
                text = text[:a] + f"<{name}>" + text[b:]
    return text


def clip(text: str, limit: int) -> str:
    """Scrub, then clip to ``limit`` characters (scrubbing first, so the cut cannot split a key)."""
    text = scrub(text.strip())
    return text[:limit] + "…" if len(text) > limit else text


_HEX_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2}")


def credentials(extra_env: Iterable[str] = ()) -> dict[str, str]:
    """The credentials set in the environment now (name -> value); pass to :func:`echoed_credential`
    when checking many texts."""
    return secret_values(tuple(extra_env))


def echoed_credential(text: str | None, extra_env: Iterable[str] = (), *,
                      creds: dict[str, str] | None = None) -> str | None:
    """The name of the credential ``text`` holds (any form, or a 12+ character piece), else None."""
    if not text:
        return None
    creds = credentials(extra_env) if creds is None else creds
    if not creds:
        return None
    for name, value in creds.items():
        if any(form in text for form in _forms(value)) or _fragment_spans(text, value):
            return name
    if _HEX_ESCAPE.search(text):  # mixed escapes: decode and look again
        decoded = _HEX_ESCAPE.sub(lambda m: _decode_escape(m.group(0)), text)
        if decoded != text:
            return echoed_credential(decoded, extra_env, creds=creds)
    return None


def _decode_escape(esc: str) -> str:
    if esc.startswith("\\u"):
        return chr(int(esc[2:], 16))
    return chr(int(esc[1:], 16))


#: The name most callers know: scrub every credential from a text.
scrub_secrets = scrub


def find_secret_leaks(directory: "os.PathLike[str] | str", extra_env: tuple[str, ...] = ()) -> list[str]:
    """Files under ``directory`` that hold a credential from the environment (any form, or a piece)."""
    from pathlib import Path

    creds = credentials(extra_env)
    if not creds:
        return []
    hits = []
    for path in sorted(Path(directory).rglob("*")):
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            text += "\n".join(map(str, pq.read_table(path).to_pylist()))
        if echoed_credential(text, creds=creds):
            hits.append(str(path))
    return hits
