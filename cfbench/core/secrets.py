"""Keeping secret values out of anything cfbench writes (no imports from the rest of the package)."""

from __future__ import annotations

import os

__all__ = ["SECRET_ENV", "scrub_secrets", "secret_values", "find_secret_leaks"]

#: Environment variables whose values are secrets (API keys, tokens).
SECRET_ENV = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")


def scrub_secrets(text: str, extra_env: tuple[str, ...] = ()) -> str:
    """Replace the values of known secret environment variables in ``text``."""
    for name in SECRET_ENV + tuple(extra_env):
        value = os.environ.get(name)
        if value and len(value) >= 8:
            text = text.replace(value, f"<{name}>")
    return text


def secret_values(extra_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The secret values set in this environment (name -> value), those long enough to search for."""
    return {n: v for n in SECRET_ENV + tuple(extra_env) if (v := os.environ.get(n)) and len(v) >= 8}


def _forms(value: str) -> set[bytes]:
    """The ways a value can appear in a written file: plain, JSON-escaped, \\u-escaped, URL-encoded."""
    import json
    from urllib.parse import quote

    forms = {value, json.dumps(value)[1:-1], quote(value, safe=""),
             "".join(f"\\u{ord(c):04x}" for c in value)}
    return {f.encode("utf-8") for f in forms}


def find_secret_leaks(directory: "os.PathLike[str] | str", extra_env: tuple[str, ...] = ()) -> list[str]:
    """Files under ``directory`` that contain a secret value from the environment, in any common form.

    Every file is read: text files as bytes, parquet files through pyarrow (their strings
    may be compressed on disk, so a byte search alone could miss them).
    """
    from pathlib import Path

    secrets = secret_values(extra_env)
    if not secrets:
        return []
    needles = set().union(*(_forms(v) for v in secrets.values()))
    hits = []
    for path in sorted(Path(directory).rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            data += "\n".join(map(str, pq.read_table(path).to_pylist())).encode("utf-8", "replace")
        if any(n in data for n in needles):
            hits.append(str(path))
    return hits
