"""Deterministic seeds derived from names, never from global state.

Every random choice in cfbench takes an explicit seed and the ids of what it is
about, so the same item always gets the same draw whatever else is in the run::

    >>> derive_seed(0, "item-7", "gender") == derive_seed(0, "item-7", "gender")
    True
    >>> 0 <= unit_interval("cc-qa", "item-7") < 1
    True
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["derive_seed", "unit_interval", "rng_for"]


def _digest(parts: tuple[object, ...]) -> bytes:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()


def derive_seed(*parts: object) -> int:
    """A 64-bit integer seed from ``parts`` (SHA-256 of their text, joined by a unit separator)."""
    return int.from_bytes(_digest(parts)[:8], "big")


def unit_interval(*parts: object) -> float:
    """A deterministic number in [0, 1) from ``parts``."""
    return derive_seed(*parts) / 2**64


def rng_for(*parts: object) -> np.random.Generator:
    """A numpy generator seeded by the full SHA-256 of ``parts`` (no global state)."""
    words = np.frombuffer(_digest(parts), dtype="<u4")
    return np.random.default_rng(np.random.SeedSequence(words.tolist()))
