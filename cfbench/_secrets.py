"""Keeping secret values out of anything cfbench writes (no imports from the rest of the package)."""

from __future__ import annotations

import os

__all__ = ["SECRET_ENV", "scrub_secrets"]

#: Environment variables whose values are secrets (API keys, tokens).
SECRET_ENV = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")


def scrub_secrets(text: str, extra_env: tuple[str, ...] = ()) -> str:
    """Replace the values of known secret environment variables in ``text``."""
    for name in SECRET_ENV + tuple(extra_env):
        value = os.environ.get(name)
        if value and len(value) >= 8:
            text = text.replace(value, f"<{name}>")
    return text
