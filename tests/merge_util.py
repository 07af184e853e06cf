"""Shared pieces of the chunk-and-merge tests (one per study): random chunk boundaries, and merging states
in a random order or as a random tree. Each draws from the caller's generator in a fixed order, so a test
seeded the same way sees the same chunks and merges."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def cuts(rng: np.random.Generator, n: int, k: int) -> list[tuple[int, int]]:
    """``k`` consecutive chunks of ``range(n)``: some empty (at both ends), one of one row, the rest random."""
    inner = sorted(rng.integers(0, n + 1, size=max(k - 4, 0)).tolist())
    one = int(rng.integers(0, max(n - 1, 1)))
    edges = sorted([0, 0, min(one, n), min(one + 1, n), *inner, n, n])
    return list(zip(edges[:-1], edges[1:]))


def merge_in_random_order(states: Sequence[Any], rng: np.random.Generator) -> Any:
    """Merge every state into the one drawn first, the others in a random order; returns the merged state."""
    order = rng.permutation(len(states))
    merged = states[order[0]]
    for i in order[1:]:
        merged.merge(states[i])
    return merged


def merge_as_random_tree(states: Sequence[Any], rng: np.random.Generator) -> Any:
    """Shuffle the states, then merge two drawn at random until one is left; returns it."""
    pool = [states[i] for i in rng.permutation(len(states))]
    while len(pool) > 1:
        i, j = sorted(rng.choice(len(pool), size=2, replace=False))
        pool[i].merge(pool.pop(j))
    return pool[0]
