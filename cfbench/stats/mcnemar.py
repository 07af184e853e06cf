"""Exact McNemar test for paired binary outcomes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

__all__ = ["McNemarResult", "mcnemar_exact"]


@dataclass(frozen=True)
class McNemarResult:
    """Outcome of :func:`mcnemar_exact`."""

    n_pairs: int
    a_only: int      # pairs where only outcome a is positive
    b_only: int      # pairs where only outcome b is positive
    p_value: float   # exact two-sided (binomial on the discordant pairs)


def mcnemar_exact(a, b) -> McNemarResult:
    """Exact two-sided McNemar test of two paired boolean outcomes.

    Under the null each discordant pair is equally likely to favour either
    side, so ``a_only ~ Binomial(a_only + b_only, 1/2)``. With no discordant
    pair the p-value is 1.

    Parameters
    ----------
    a, b : array-like of bool
        The outcome of each pair under condition a and condition b.

    Examples
    --------
    >>> mcnemar_exact([True, True, False], [False, False, False]).p_value
    0.5
    """
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-d and the same length, got {x.shape} and {y.shape}")
    a_only = int((x & ~y).sum())
    b_only = int((~x & y).sum())
    n_disc = a_only + b_only
    p = 1.0 if n_disc == 0 else float(binomtest(a_only, n_disc, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(int(x.size), a_only, b_only, p)
