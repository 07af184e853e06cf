"""The one bootstrap: resample units with replacement, read percentile intervals.

Every interval in cfbench that resamples (items of a contact-center study,
prompts of an identity audit, pairs of a ShopFlow audit) draws its resamples
here, as one ``(n_boot, n)`` matrix of unit indices from a seeded generator, so
the same seed gives the same resamples whichever statistic is computed.

>>> import numpy as np
>>> x = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
>>> low, high = mean_interval(x, n_boot=2000, rng=np.random.default_rng(0))
>>> bool(low <= x.mean() <= high)
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["resample_indices", "resample_counts", "percentile_interval", "mean_interval",
           "ratio_interval", "MAX_BOOTSTRAP_ITEMS"]

#: Above this many units the interval of a ratio of sums uses the delta method
#: (linearisation, clustered by unit) instead of the bootstrap; at that size
#: the two agree closely and the bootstrap would dominate the run time.
MAX_BOOTSTRAP_ITEMS = 5000


def resample_indices(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` x ``n`` unit indices drawn with replacement (row b is resample b)."""
    return rng.integers(0, n, size=(n_boot, n))


def resample_counts(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` x ``n`` matrix of how often each unit is drawn; the same draws as :func:`resample_indices`."""
    idx = resample_indices(n, n_boot, rng)
    flat = (np.arange(n_boot)[:, None] * n + idx).ravel()
    return np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).astype(float)


def percentile_interval(samples: np.ndarray, confidence: float = 0.95, *, axis: int = -1
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The central ``confidence`` percentile interval of bootstrap ``samples`` along ``axis``."""
    a = (1 - confidence) / 2
    return np.quantile(samples, a, axis=axis), np.quantile(samples, 1 - a, axis=axis)


def mean_interval(x: np.ndarray, *, n_boot: int, rng: np.random.Generator, confidence: float = 0.95
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the mean along the last axis; the rows of a 2-D ``x`` share resamples.

    Fewer than two units give NaN bounds.
    """
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    if n < 2:
        nan = np.full(x.shape[:-1], np.nan)
        return (nan, nan) if x.ndim > 1 else (float("nan"), float("nan"))
    idx = resample_indices(n, n_boot, rng)
    means = x[..., idx].mean(axis=-1)
    low, high = percentile_interval(means, confidence)
    return low, high


#: A resample sums ``m`` draws; with whole numbers and ``m * max|x|`` below this bound every partial
#: sum is an exactly held integer (float64 holds all integers up to 2**53), so the order is immaterial.
_EXACT_SUM = 2.0 ** 52


def _whole(x: np.ndarray) -> bool:
    """All values whole numbers, small enough that any sum of ``x.size`` draws of them is exact."""
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        return True
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.floor(x) == x)) and float(np.abs(x).max(initial=0.0)) * x.size < _EXACT_SUM


def ratio_interval(num: np.ndarray, den: np.ndarray, *, n_boot: int, rng: np.random.Generator,
                   confidence: float = 0.95) -> tuple[float, float, str]:
    """Interval of ``sum(num) / sum(den)`` with units resampled: ``(low, high, method)``.

    ``method`` is ``"bootstrap"``, ``"delta"`` (more than :data:`MAX_BOOTSTRAP_ITEMS`
    units) or ``"none"`` (fewer than two units, no resamples, or a zero denominator).
    Resamples whose denominator is 0 are left out of the quantiles.
    """
    from scipy.stats import norm

    m = num.size
    if n_boot <= 0 or m < 2 or den.sum() == 0:
        return np.nan, np.nan, "none"
    a = (1 - confidence) / 2
    if m > MAX_BOOTSTRAP_ITEMS:
        r = num.sum() / den.sum()
        z = (num - r * den) / den.mean()
        se = np.sqrt((z ** 2).sum() / (m * (m - 1)))
        q = norm.ppf(1 - a)
        return float(r - q * se), float(r + q * se), "delta"
    if _whole(num) and _whole(den):
        # whole numbers (counts, sums of 0/1 answers or of integer scores): the resample sums
        # are exact in any order, so summing the drawn units directly gives the very numbers
        # the count-matrix products give, without the n_boot x m float matrix
        idx = resample_indices(m, n_boot, rng)
        d = den[idx].sum(axis=1)
        n = num[idx].sum(axis=1)
    else:
        w = resample_counts(m, n_boot, rng)
        d = w @ den
        n = w @ num
    with np.errstate(invalid="ignore", divide="ignore"):
        r = n / d
    r = r[d > 0]
    if r.size == 0:
        return np.nan, np.nan, "none"
    low, high = percentile_interval(r, confidence)
    return float(low), float(high), "bootstrap"
