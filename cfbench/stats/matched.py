"""Intervals and tests for matched binary pairs: the same item observed under two conditions.

Each pair gives two yes/no outcomes (``a`` under condition A, ``b`` under B).
The difference of the two rates, ``mean(a) - mean(b)``, equals
``(n10 - n01) / n`` where ``n10`` counts pairs with only ``a`` positive and
``n01`` pairs with only ``b`` positive. Intervals for it must use the pairing:
an independent-sample interval (Newcombe's hybrid for two samples) ignores the
correlation within a pair, and a percentile bootstrap of pairs collapses to
[0, 0] when no pair is discordant.

Three intervals are offered, all vectorised over arrays of counts:

- :func:`tango_interval` — Tango's (1998) score interval: the set of
  differences not rejected by the score test that uses the restricted maximum
  likelihood estimate of the discordant cells. It depends only on ``n10``,
  ``n01`` and ``n``. With no discordant pair it is
  ``[-z²/(n+z²), +z²/(n+z²)]``, never [0, 0]. The bound between 0 and the
  estimate is found with the numerator ``n10 - n01 - nΔ`` moved half a pair
  towards 0 (a continuity correction on that side only): plain Tango misses on
  that side in up to 5 % of audits where one discordant cell is rare (exact
  sums, ``benchmarks/bench_tango_exact.py``); corrected, every one-sided miss
  at true differences within ±0.3 is at most 3.3 % at 8-200 pairs, for 2-7 %
  more width and the same interval with no discordant pair.
- :func:`exact_interval` — the exact unconditional interval on Tango's
  statistic: a difference is kept while the chance of a statistic at least as
  extreme as the observed one, maximised over the nuisance rate, stays above
  ``(1 - confidence) / 2`` on each side. Each bound therefore misses at most
  that often at every pair of cell rates (up to its grids: summed exactly, at
  most 2.50 % at 8-200 pairs). About as wide as the corrected Tango from 20
  pairs on, 7 % wider at 8; computed for every table of ``n`` pairs at once
  and cached, which costs about n² (7 s at 100 pairs), so it stops at
  :data:`EXACT_MAX_PAIRS`. A study may offer it as a choice; no default
  uses it.
- :func:`newcombe_paired_interval` — Newcombe's (1998) method 10: two Wilson
  intervals combined with the (continuity-corrected) correlation of the pair.
  Kept for comparison: at 4–44 pairs its coverage falls to 84–90 % and a gate
  on it passes a true gap at the limit up to 9 % of the time
  (``benchmarks/bench_gate_shopflow.py``), so no cfbench gate uses it.

:func:`matched_counts_pmf` gives the exact distribution of ``(n10, n01)`` so
coverage and false-pass rates of anything that depends only on those counts
can be computed exactly rather than simulated; :func:`draw_matched_counts`
draws seeded Monte-Carlo audits.

>>> lo, hi = tango_interval(0, 0, 10)
>>> round(float(lo), 3), round(float(hi), 3)
(-0.278, 0.278)
>>> lo, hi = exact_interval(0, 0, 10)
>>> round(float(lo), 3), round(float(hi), 3)
(-0.319, 0.319)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammaln
from scipy.stats import norm

from ..core.errors import InputError
from .mcnemar import mcnemar_exact

__all__ = ["MATCHED_METHODS", "MatchedDifference", "tango_interval", "exact_interval", "EXACT_MAX_PAIRS",
           "newcombe_paired_interval",
           "matched_interval", "matched_difference", "zero_position", "min_pairs_to_pass",
           "matched_counts_pmf", "draw_matched_counts"]

MATCHED_METHODS = ("tango", "exact", "newcombe_paired")

#: the most pairs :func:`exact_interval` is computed for: it enumerates every table of ``n`` pairs (about n²/2) at
#: 2,001 differences and 60 nuisance rates (0.8 s at 36 pairs, 7 s at 100 on a 2-core AMD EPYC)
EXACT_MAX_PAIRS = 200


def _z(confidence: float) -> float:
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise InputError(f"confidence must be in (0, 1), got {confidence!r}", source="matched", field="confidence")
    return float(norm.ppf(0.5 + confidence / 2))


def _tango_z(delta: np.ndarray, b: np.ndarray, c: np.ndarray, n: np.ndarray, shift=0.0) -> np.ndarray:
    """Tango's score statistic at difference ``delta`` (decreasing in delta), its numerator moved ``shift``
    towards 0 (and to 0 when it is smaller than ``shift``)."""
    # restricted MLE of the cell p01 given p10 - p01 = delta (root of 2n q² - B q - c·delta·(1-delta) = 0)
    big_b = (b + c) - delta * (2 * n - b + c)
    disc = np.maximum(big_b ** 2 + 8 * n * c * delta * (1 - delta), 0.0)
    q = (big_b + np.sqrt(disc)) / (4 * n)
    q = np.clip(q, np.maximum(0.0, -delta), np.maximum((1 - delta) / 2, 0.0))
    var = n * (2 * q + delta * (1 - delta))
    num = b - c - n * delta
    if np.any(shift):
        num = np.sign(num) * np.maximum(np.abs(num) - shift, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / np.sqrt(np.maximum(var, 0.0))
    return np.where(var <= 1e-15, np.sign(num) * np.inf, out)


TOWARD_ZERO = 0.5  # pairs the numerator moves towards 0 for the bound between 0 and the estimate


def tango_interval(n10, n01, n, *, confidence: float = 0.95, iterations: int = 60,
                   correction: float = TOWARD_ZERO):
    """Tango's score interval for ``(n10 - n01) / n`` (arrays broadcast; returns ``(low, high)``).

    The bounds solve ``Z(Δ) = ±z`` by bisection on each side of the estimate;
    a side whose extreme (−1 or +1) cannot be rejected ends there. The bound
    between 0 and the estimate (the lower one when ``n10 > n01``, the upper
    one when ``n01 > n10``; neither when they are equal) solves it with the
    numerator moved ``correction`` pairs towards 0 (module docstring);
    ``correction=0`` is Tango's plain interval.
    """
    b, c, nn = (np.asarray(x, dtype=float) for x in (n10, n01, n))
    b, c, nn = np.broadcast_arrays(b, c, nn)
    if (nn < 1).any() or (b < 0).any() or (c < 0).any() or (b + c > nn).any():
        raise InputError("need n >= 1 and 0 <= n10 + n01 <= n", source="tango_interval", field="n")
    if not (isinstance(correction, (int, float)) and 0 <= correction <= 1):
        raise InputError(f"correction must be in [0, 1] pairs, got {correction!r}", source="tango_interval",
                         field="correction")
    return _tango_bounds(b, c, nn, _z(confidence), np.where(b > c, float(correction), 0.0),
                         np.where(c > b, float(correction), 0.0), iterations)


def _tango_bounds(b, c, nn, z: float, low_shift, high_shift, iterations: int = 60):
    """The bounds solving ``Z(Δ) = ±z`` by bisection on each side of the estimate, the numerator of the lower
    one moved ``low_shift`` towards 0 and of the upper one ``high_shift`` (arrays of float, broadcast)."""
    est = (b - c) / nn
    eps = 1e-12

    def solve(lo, hi, target, shift):  # Z decreasing: find Δ in [lo, hi] with Z(Δ) = target
        lo, hi = lo.copy(), hi.copy()
        for _ in range(iterations):
            mid = (lo + hi) / 2
            above = _tango_z(mid, b, c, nn, shift) > target
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        return (lo + hi) / 2

    minus, plus = np.full_like(est, -1.0 + eps), np.full_like(est, 1.0 - eps)
    low = solve(minus, est, z, low_shift)
    low = np.where(_tango_z(minus, b, c, nn, low_shift) <= z, -1.0, low)
    high = solve(est, plus, -z, high_shift)
    high = np.where(_tango_z(plus, b, c, nn, high_shift) >= -z, 1.0, high)
    return np.minimum(low, est), np.maximum(high, est)


def exact_interval(n10, n01, n, *, confidence: float = 0.95):
    """The exact unconditional interval for ``(n10 - n01) / n`` on Tango's statistic (arrays broadcast; returns
    ``(low, high)``): every difference on a grid of 0.001 whose two one-sided p-values, each the largest over 60
    values of the nuisance rate ``p01``, are above ``(1 - confidence) / 2``; the bounds are the least and largest
    kept. A grid finds a maximum no larger than the true one, so the interval can only be narrower than the exact
    one, by at most a grid step; the misses summed exactly stay at most 2.50 % per side at 95 %
    (``benchmarks/bench_tango_exact.py``). At most :data:`EXACT_MAX_PAIRS` pairs."""
    b, c, nn = (np.asarray(x) for x in (n10, n01, n))
    b, c, nn = np.broadcast_arrays(b, c, nn)
    if any(not np.all(np.equal(np.mod(x, 1), 0)) for x in (b, c, nn)):
        raise InputError("the exact interval needs whole pair counts", source="exact_interval", field="n")
    b, c, nn = (x.astype(int) for x in (b, c, nn))
    if (nn < 1).any() or (b < 0).any() or (c < 0).any() or (b + c > nn).any():
        raise InputError("need n >= 1 and 0 <= n10 + n01 <= n", source="exact_interval", field="n")
    if (nn > EXACT_MAX_PAIRS).any():
        raise InputError(f"the exact interval is computed for at most {EXACT_MAX_PAIRS} pairs (its cost grows with "
                         f"the square of the pairs), got {int(nn.max())}; use method 'tango'",
                         source="exact_interval", field="n")
    _z(confidence)                                       # refuses a confidence outside (0, 1)
    low, high = np.empty(nn.shape), np.empty(nn.shape)
    for m in np.unique(nn):
        at = nn == m
        lo_tab, hi_tab = _exact_table(int(m), float(confidence))
        low[at], high[at] = lo_tab[b[at], c[at]], hi_tab[b[at], c[at]]
    return low, high


@lru_cache(maxsize=64)
def _exact_table(n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_interval` for every table of ``n`` pairs: ``(low, high)`` indexed ``[n10, n01]`` (NaN where
    ``n10 + n01 > n``)."""
    half = (1.0 - confidence) / 2.0
    bb, cc = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = bb + cc <= n
    b, c = bb[keep], cc[keep]
    counts = np.stack([b, c, n - b - c], axis=1).astype(float)
    log_coef = gammaln(n + 1) - gammaln(counts + 1).sum(axis=1)
    bf, cf, nf = b.astype(float), c.astype(float), np.full(len(b), float(n))
    low, high = np.full(len(b), np.inf), np.full(len(b), -np.inf)
    for d in np.round(np.linspace(-1.0, 1.0, 2001), 10):
        with np.errstate(invalid="ignore", over="ignore"):
            z = np.round(np.nan_to_num(_tango_z(np.full_like(bf, d), bf, cf, nf), nan=0.0, posinf=np.inf,
                                        neginf=-np.inf), 9)        # 0/0: the table is delta itself
        order = np.argsort(z, kind="stable")
        zs = z[order]
        q = np.linspace(max(0.0, -d), (1.0 - d) / 2.0, 60)
        rates = np.clip(np.stack([q + d, q, 1.0 - 2.0 * q - d], axis=1), 0.0, 1.0)
        pmf = np.exp(log_coef[None, :] + np.log(np.maximum(rates, 1e-300)) @ counts.T)  # a zero rate: exp(-690 k)
        cum = np.concatenate([np.zeros((len(q), 1)), np.cumsum(pmf[:, order], axis=1)], axis=1)
        at_most = cum[:, np.searchsorted(zs, zs, side="right")].max(axis=0)
        at_least = (1.0 - cum[:, np.searchsorted(zs, zs, side="left")]).max(axis=0)
        kept = np.empty(len(b), bool)
        kept[order] = (at_most > half) & (at_least > half)
        low = np.where(kept, np.minimum(low, d), low)
        high = np.where(kept, np.maximum(high, d), high)
    lo_tab, hi_tab = np.full((n + 1, n + 1), np.nan), np.full((n + 1, n + 1), np.nan)
    lo_tab[b, c], hi_tab[b, c] = low, high
    lo_tab.setflags(write=False)
    hi_tab.setflags(write=False)
    return lo_tab, hi_tab


def _wilson(k, n, z):
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return centre - half, centre + half


def newcombe_paired_interval(n11, n10, n01, n00, *, confidence: float = 0.95):
    """Newcombe's method 10 for paired proportions: ``p1 - p2`` with ``p1 = (n11+n10)/n``, ``p2 = (n11+n01)/n``.

    Wilson intervals of both margins, combined with the correlation ``phi`` of
    the 2×2 table; ``n11·n00 − n10·n01`` is reduced by ``n/2`` towards 0 when
    positive (Newcombe's continuity correction of phi), and ``phi = 0`` when a
    margin is empty.
    """
    a, b, c, d = (np.asarray(x, dtype=float) for x in (n11, n10, n01, n00))
    a, b, c, d = np.broadcast_arrays(a, b, c, d)
    n = a + b + c + d
    if (n < 1).any() or (np.minimum.reduce([a, b, c, d]) < 0).any():
        raise InputError("cells must be non-negative with at least one pair", source="newcombe_paired_interval",
                         field="n")
    z = _z(confidence)
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = _wilson(a + b, n, z)
    l2, u2 = _wilson(a + c, n, z)
    cross = a * d - b * c
    cross = np.where(cross > n / 2, cross - n / 2, np.where(cross > 0, 0.0, cross))
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(margins > 0, cross / np.sqrt(margins), 0.0)
    diff = p1 - p2
    dl = np.sqrt(np.maximum((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    du = np.sqrt(np.maximum((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return np.maximum(diff - dl, -1.0), np.minimum(diff + du, 1.0)


def matched_interval(n11, n10, n01, n00, *, method: str = "tango", confidence: float = 0.95):
    """The interval of ``method`` (``tango``, ``exact`` or ``newcombe_paired``) from the four cells."""
    if method in ("tango", "exact"):
        n = np.asarray(n11) + np.asarray(n10) + np.asarray(n01) + np.asarray(n00)
        make = tango_interval if method == "tango" else exact_interval
        return make(n10, n01, n, confidence=confidence)
    if method == "newcombe_paired":
        return newcombe_paired_interval(n11, n10, n01, n00, confidence=confidence)
    raise InputError(f"must be one of {list(MATCHED_METHODS)}, got {method!r}", source="matched_interval",
                     field="method")


def zero_position(low: float, high: float) -> str:
    """Where 0 lies relative to ``[low, high]``: ``inside``, ``outside`` or ``touches 0 (boundary)``."""
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return "undefined"
    if low == 0.0 or high == 0.0:
        return "touches 0 (boundary)"
    return "inside" if low < 0.0 < high else "outside"


@dataclass(frozen=True)
class MatchedDifference:
    """``mean(a) − mean(b)`` over matched pairs, its interval and the exact McNemar test."""

    n_pairs: int
    a_only: int          # pairs where only a is positive (n10)
    b_only: int          # pairs where only b is positive (n01)
    estimate: float      # (a_only − b_only) / n_pairs; NaN with no pair
    ci_low: float
    ci_high: float
    method: str
    confidence: float
    mcnemar_p: float     # exact two-sided; 1 with no discordant pair

    @property
    def zero(self) -> str:
        return zero_position(self.ci_low, self.ci_high)


def matched_difference(a, b, *, method: str = "tango", confidence: float = 0.95) -> MatchedDifference:
    """Difference of two paired boolean outcomes with its matched-pair interval and McNemar's p.

    With no pair every number is NaN (there is nothing to estimate).
    """
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    if x.shape != y.shape or x.ndim != 1:
        raise InputError(f"a and b must be 1-d and the same length, got {x.shape} and {y.shape}",
                         source="matched_difference", field="a")
    if method not in MATCHED_METHODS:
        raise InputError(f"must be one of {list(MATCHED_METHODS)}, got {method!r}", source="matched_difference",
                         field="method")
    n = int(x.size)
    if n == 0:
        nan = math.nan
        return MatchedDifference(0, 0, 0, nan, nan, nan, method, confidence, nan)
    n11, n10 = int((x & y).sum()), int((x & ~y).sum())
    n01, n00 = int((~x & y).sum()), int((~x & ~y).sum())
    lo, hi = matched_interval(n11, n10, n01, n00, method=method, confidence=confidence)
    return MatchedDifference(n, n10, n01, (n10 - n01) / n, float(lo), float(hi), method, confidence,
                             mcnemar_exact(x, y).p_value)


def min_pairs_to_pass(limit: float, *, method: str = "tango", confidence: float = 0.95,
                      n_max: int = 1_000_000) -> int:
    """Fewest pairs for which *any* outcome can put the interval inside ``[-limit, +limit]``.

    The narrowest interval at a given n is the one with no discordant pair
    (for ``newcombe_paired`` the narrowest over every split of the concordant
    pairs); below the returned n even a zero observed gap cannot pass. For
    ``exact`` an answer above :data:`EXACT_MAX_PAIRS` is an :class:`InputError`.
    """
    if not 0 < limit < 1:
        raise InputError(f"limit must be in (0, 1), got {limit!r}", source="min_pairs_to_pass", field="limit")
    if method not in MATCHED_METHODS:
        raise InputError(f"must be one of {list(MATCHED_METHODS)}, got {method!r}", source="min_pairs_to_pass",
                         field="method")

    def passes(n: int) -> bool:
        if method in ("tango", "exact"):
            lo, hi = (tango_interval if method == "tango" else exact_interval)(0, 0, n, confidence=confidence)
            return bool(lo >= -limit and hi <= limit)
        both = np.arange(n + 1)
        lo, hi = newcombe_paired_interval(both, 0, 0, n - both, confidence=confidence)
        return bool(((lo >= -limit) & (hi <= limit)).any())

    top = min(n_max, EXACT_MAX_PAIRS) if method == "exact" else n_max
    lo_n, hi_n = 0, 1  # lo_n fails (or is 0)
    while not passes(hi_n):
        if hi_n >= top:
            why = (f"; the exact interval is computed for at most {EXACT_MAX_PAIRS} pairs, use method 'tango'"
                   if method == "exact" and top == EXACT_MAX_PAIRS else "")
            raise InputError(f"no n up to {top} can pass a limit of {limit}{why}", source="min_pairs_to_pass",
                             field="limit")
        lo_n, hi_n = hi_n, min(2 * hi_n, top)
    while hi_n - lo_n > 1:
        mid = (lo_n + hi_n) // 2
        lo_n, hi_n = (lo_n, mid) if passes(mid) else (mid, hi_n)
    return hi_n


def matched_counts_pmf(n: int, p10: float, p01: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact distribution of ``(n10, n01)`` in ``n`` pairs with cell probabilities ``p10``, ``p01``.

    Returns arrays ``n10, n01, prob`` over every ``n10 + n01 <= n`` (the trinomial).
    """
    if p10 < 0 or p01 < 0 or p10 + p01 > 1 + 1e-12:
        raise InputError("need p10, p01 >= 0 and p10 + p01 <= 1", source="matched_counts_pmf", field="p10")
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    b, c = b[keep], c[keep]
    rest = n - b - c
    pc = max(1.0 - p10 - p01, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = (gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(rest + 1)
                + np.where(b > 0, b * np.log(p10 if p10 > 0 else 1.0), 0.0)
                + np.where(c > 0, c * np.log(p01 if p01 > 0 else 1.0), 0.0)
                + np.where(rest > 0, rest * np.log(pc if pc > 0 else 1.0), 0.0))
    prob = np.exp(logp)
    prob = np.where(((b > 0) & (p10 == 0)) | ((c > 0) & (p01 == 0)) | ((rest > 0) & (pc == 0)), 0.0, prob)
    return b, c, prob


def draw_matched_counts(n: int, p11: float, p10: float, p01: float, reps: int, *, seed: int) -> np.ndarray:
    """``reps`` seeded audits of ``n`` pairs: an array of shape (reps, 4) with cells n11, n10, n01, n00."""
    p00 = 1.0 - p11 - p10 - p01
    if min(p11, p10, p01) < 0 or p00 < -1e-12:
        raise InputError("cell probabilities must be non-negative and sum to at most 1",
                         source="draw_matched_counts", field="p11")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, [p11, p10, p01, max(p00, 0.0)], size=reps)
