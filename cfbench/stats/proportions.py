"""Intervals for proportions and their differences.

>>> tuple(round(x, 3) for x in wilson_interval(5, 6))
(0.436, 0.97)
>>> tuple(round(x, 3) for x in newcombe_interval(24, 27, 20, 27))
(-0.064, 0.349)
"""

from __future__ import annotations

import math

from scipy.stats import binomtest

from ..core.errors import InputError

__all__ = ["wilson_interval", "newcombe_interval"]


def _check_counts(successes: float, total: float, source: str) -> None:
    if int(total) != total or total < 1:
        raise InputError(f"total must be a positive integer, got {total!r}", source=source, field="total")
    if int(successes) != successes or not 0 <= successes <= total:
        raise InputError(f"successes must be an integer in [0, {total}], got {successes!r}",
                         source=source, field="successes")


def wilson_interval(successes: int, total: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (scipy's implementation)."""
    _check_counts(successes, total, "wilson_interval")
    ci = binomtest(int(successes), int(total)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def newcombe_interval(k1: int, n1: int, k2: int, n2: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for ``k1/n1 - k2/n2`` from two Wilson intervals.

    For independent samples; with matched pairs it is conservative when the
    pairs are positively correlated (use the paired bootstrap for those).
    """
    l1, u1 = wilson_interval(k1, n1, confidence=confidence)
    l2, u2 = wilson_interval(k2, n2, confidence=confidence)
    p1, p2 = k1 / n1, k2 / n2
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return float(max(-1.0, low)), float(min(1.0, high))


