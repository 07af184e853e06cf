"""Monte-Carlo checks of cfbench's intervals and gate: simulated audits with a known truth.

Each function draws ``reps`` audits of ``n_items`` items from a seeded
generator, runs the interval cfbench reports on each, and returns the share
of audits whose interval covers the truth (``coverage``), misses it below
(``miss_low``: the whole interval above the truth) or above (``miss_high``:
the upper bound below the truth - the miss a gate on the upper bound turns
into a false pass), and the share of audits with no interval (``no_ci``).
The simulated designs are the tool's: one or several pairs per item, items
differing in how often they flip (``pairs_per_item > 1`` correlates an item's
pairs), zero true effect included. Used by ``tests/test_coverage_*.py`` and
``benchmarks/bench_coverage.py``.
"""

from __future__ import annotations

import numpy as np

from .bootstrap import resample_counts
from .intervals import (bootstrap_t_rows, clustered_rate_intervals, paired_difference, worst_case_bound)

__all__ = ["rate_coverage", "mean_coverage", "paired_mean_coverage", "net_cfr_coverage", "gate_false_pass", "judge_delta_coverage",
           "matched_net_cfr", "length_adjusted_coverage",
           "MEAN_SHAPES", "LENGTH_ERRORS", "mean_truth"]


def _summary(lo: np.ndarray, hi: np.ndarray, truth: float) -> dict[str, float]:
    ok = ~(np.isnan(lo) | np.isnan(hi))
    lo, hi = lo[ok], hi[ok]
    n = max(int(ok.sum()), 1)
    return {"coverage": float(np.sum((lo <= truth) & (truth <= hi)) / n),
            "miss_low": float(np.sum(lo > truth) / n), "miss_high": float(np.sum(hi < truth) / n),
            "no_ci": float(1 - ok.mean()), "reps": int(ok.sum())}


def _item_weights(rng: np.random.Generator, shape: tuple[int, ...], spread: float) -> np.ndarray:
    """Per-item multipliers of mean 1: 1 - spread or 1 + spread with equal odds (items differ)."""
    return 1.0 + spread * rng.choice([-1.0, 1.0], size=shape)


def _clustered_flips(rng, p: float, reps: int, n_items: int, m: int, spread: float,
                     w: np.ndarray | None = None) -> np.ndarray:
    """Events per item: ``m`` pairs each flipping with the item's probability ``p * w_i``."""
    w = _item_weights(rng, (reps, n_items), spread) if w is None else w
    return rng.binomial(m, np.clip(p * w, 0.0, 1.0)).astype(float)


def rate_coverage(*, n_items: int, p: float, pairs_per_item: int = 1, spread: float = 0.5, reps: int = 2000,
                  seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Coverage of the flip-rate interval (:func:`clustered_rate_intervals`) at true rate ``p``.

    With several pairs per item the items' own rates are ``p (1 ± spread)``, so
    the pairs of an item are correlated.
    """
    rng = np.random.default_rng(seed)
    m = pairs_per_item
    x = _clustered_flips(rng, p, reps, n_items, m, spread if m > 1 else 0.0)
    group = np.repeat(np.arange(reps), n_items)
    _, lo, hi, _ = clustered_rate_intervals(x.ravel(), np.full(x.size, float(m)), group, n_groups=reps,
                                            confidence=confidence)
    return _summary(lo, hi, p)


#: shapes of the per-pair values (points of 0..100): ``halfnormal`` |differences| with items
#: alike (item scales Gamma(8)), ``skewed`` the same with items very unlike (Gamma(2) scales: a
#: few items carry most of the movement), ``zero_inflated`` (half the pairs do not move) and
#: ``signed`` shifts for direction rows and paired differences (symmetric, heavy-tailed)
MEAN_SHAPES = ("halfnormal", "skewed", "zero_inflated", "signed")


def mean_truth(shape: str, effect: float) -> float:
    """The true mean of :func:`_mean_draws` for ``shape`` scaled to ``effect``."""
    return effect


def _mean_draws(rng, shape: str, effect: float, reps: int, n_items: int, m: int) -> np.ndarray:
    """Per-item sums of ``m`` pair values with true mean ``effect`` per pair."""
    k = 8.0 if shape == "halfnormal" else 2.0
    s = rng.gamma(k, 1.0 / k, size=(reps, n_items, 1))  # item scale, mean 1
    if shape in ("halfnormal", "skewed"):
        v = np.abs(rng.normal(0.0, 1.0, size=(reps, n_items, m))) * s / np.sqrt(2 / np.pi)
        return (effect * v).sum(axis=2)
    if shape == "zero_inflated":
        v = np.abs(rng.normal(0.0, 1.0, size=(reps, n_items, m))) * s / np.sqrt(2 / np.pi)
        moved = rng.random((reps, n_items, m)) < 0.5
        return (2 * effect * v * moved).sum(axis=2)
    if shape == "signed":
        v = effect + 3.0 * s * rng.normal(0.0, 1.0, size=(reps, n_items, m))
        return v.sum(axis=2)
    raise ValueError(f"unknown shape {shape!r}")


def _mean_rows(num: np.ndarray, den: np.ndarray, *, n_boot: int, rng, confidence: float,
               value_range: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mean_interval_t` on every row, vectorised (the rows share one resample matrix)."""
    reps, K = num.shape
    w = resample_counts(K, n_boot, rng)
    lo, hi = bootstrap_t_rows(num, den, w, confidence)
    y = num / den
    flat = np.ptp(y, axis=1) <= 1e-12 * np.maximum(1.0, np.abs(y.mean(axis=1)))
    if flat.any():
        r = num[flat].sum(axis=1) / den[flat].sum(axis=1)
        u = worst_case_bound(K, confidence)
        lo[flat] = r - (r - value_range[0]) * u
        hi[flat] = r + (value_range[1] - r) * u
    return np.maximum(lo, value_range[0]), np.minimum(hi, value_range[1])


def mean_coverage(*, n_items: int, effect: float, shape: str = "halfnormal", pairs_per_item: int = 1,
                  reps: int = 2000, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95,
                  value_range: tuple[float, float] = (-100.0, 100.0)) -> dict[str, float]:
    """Coverage of the MASD / mean-shift interval (bootstrap-t over items, worst-case rule) at mean ``effect``."""
    rng = np.random.default_rng(seed)
    m = pairs_per_item
    num = _mean_draws(rng, shape, effect, reps, n_items, m)
    num = np.clip(num, value_range[0] * m, value_range[1] * m)
    den = np.full(num.shape, float(m))
    lo, hi = _mean_rows(num, den, n_boot=n_boot, rng=rng, confidence=confidence, value_range=value_range)
    return _summary(lo, hi, mean_truth(shape, effect))


def _net_draws(rng, p_cf: float, p_rep: float, reps: int, n_items: int, rep_pairs: int, spread: float):
    w = _item_weights(rng, (reps, n_items), spread)  # shared: an unstable item flips in both
    x1 = _clustered_flips(rng, p_cf, reps, n_items, 1, spread, w)
    x2 = _clustered_flips(rng, p_rep, reps, n_items, rep_pairs, spread, w)
    return x1, x2


def _paired_rows(x1, m1, x2, m2, kind="rate", **kw) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = np.empty(len(x1)), np.empty(len(x1))
    for i in range(len(x1)):
        d = paired_difference(x1[i], m1[i], x2[i], m2[i], kind=kind, **kw)
        lo[i], hi[i] = d["ci_low"], d["ci_high"]
    return lo, hi


def net_cfr_coverage(*, n_items: int, net: float, p_rep: float = 0.05, rep_pairs: int = 3, spread: float = 0.5,
                     reps: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Coverage of the net-CFR interval (MOVER, :func:`paired_difference`): one counterfactual pair
    per item flipping at ``p_rep + net``, ``rep_pairs`` repeat pairs per item flipping at ``p_rep``,
    both scaled by the same item factor (so the two terms are correlated)."""
    rng = np.random.default_rng(seed)
    x1, x2 = _net_draws(rng, p_rep + net, p_rep, reps, n_items, rep_pairs, spread)
    lo, hi = _paired_rows(x1, np.ones_like(x1), x2, np.full(x2.shape, float(rep_pairs)), confidence=confidence)
    return _summary(lo, hi, net)


def gate_false_pass(*, n_items: int, max_net: float, p_rep: float = 0.0, rep_pairs: int = 3,
                    spread: float = 0.5, reps: int = 2000, seed: int = 0, confidence: float = 0.95) -> float:
    """Share of simulated audits whose net-CFR upper bound lies below ``max_net`` when the true net
    CFR *equals* ``max_net``: the gate's false-pass rate."""
    rng = np.random.default_rng(seed)
    x1, x2 = _net_draws(rng, p_rep + max_net, p_rep, reps, n_items, rep_pairs, spread)
    _, hi = _paired_rows(x1, np.ones_like(x1), x2, np.full(x2.shape, float(rep_pairs)), confidence=confidence)
    return float(np.mean(np.nan_to_num(hi, nan=np.inf) < max_net))


def _matched_draws(rng, reps: int, n_items: int, m: int, p_rep: float, net: float, identical: bool):
    """Counterfactual and repeat flips that match item by item: each item has a latent
    instability ``u_i ~ Beta(0.5, 0.5 (1 - p_rep) / p_rep)`` (mean ``p_rep``); repeat pair ``j``
    flips with probability ``u_i``; counterfactual pair ``j`` flips whenever repeat pair ``j`` does,
    plus extra flips at ``net / (1 - p_rep)`` so the true net CFR is exactly ``net``
    (``identical``: the counterfactual flips are the repeat flips, net 0)."""
    if p_rep > 0:
        u = rng.beta(0.5, 0.5 * (1 - p_rep) / p_rep, size=(reps, n_items, 1))
    else:
        u = np.zeros((reps, n_items, 1))
    rep = rng.random((reps, n_items, m)) < u
    if identical:
        return rep.sum(axis=2).astype(float), rep.sum(axis=2).astype(float), 0.0
    cf = rep | (rng.random((reps, n_items, m)) < net / (1 - p_rep))
    return cf.sum(axis=2).astype(float), rep.sum(axis=2).astype(float), float(net)


def matched_net_cfr(*, n_items: int, net: float = 0.10, p_rep: float = 0.3, pairs_per_item: int = 1,
                    identical: bool = False, reps: int = 1000, seed: int = 0, confidence: float = 0.95,
                    gate_max: float = 0.10) -> dict[str, float]:
    """Net-CFR interval when the two sides match item by item (:func:`_matched_draws`): the
    coverage summary plus ``false_pass`` (share of audits whose upper bound lies below
    ``gate_max``) and ``zero_width`` (share of intervals with no width)."""
    rng = np.random.default_rng(seed)
    x1, x2, truth = _matched_draws(rng, reps, n_items, pairs_per_item, p_rep, net, identical)
    den = np.full(x1.shape, float(pairs_per_item))
    lo, hi = _paired_rows(x1, den, x2, den, confidence=confidence)
    out = _summary(lo, hi, truth)
    out["false_pass"] = float(np.mean(np.nan_to_num(hi, nan=np.inf) < gate_max))
    out["zero_width"] = float(np.mean(hi - lo <= 0))
    return out


def judge_delta_coverage(*, n_items: int, delta: float, kind: str = "rate", base: float = 0.1,
                         pairs_per_item: int = 1, spread: float = 0.5, reps: int = 1000, n_boot: int = 500,
                         seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Coverage of judge A minus judge B on the same items: ``kind="rate"`` (CFR, accuracy: judge A
    flips at ``base + delta``, B at ``base``, item factor shared) or ``"mean"`` (MASD in points:
    A's pair values have mean ``base + delta``, B's ``base``, item scales shared)."""
    rng = np.random.default_rng(seed)
    m = pairs_per_item
    if kind == "rate":
        w = _item_weights(rng, (reps, n_items), spread)
        x1 = _clustered_flips(rng, base + delta, reps, n_items, m, spread, w)
        x2 = _clustered_flips(rng, base, reps, n_items, m, spread, w)
        kw = {}
    else:
        s = rng.gamma(2.0, 0.5, size=(reps, n_items, 1))
        v1 = np.abs(rng.normal(size=(reps, n_items, m))) * s / np.sqrt(2 / np.pi)
        v2 = np.abs(rng.normal(size=(reps, n_items, m))) * s / np.sqrt(2 / np.pi)
        x1, x2 = ((base + delta) * v1).sum(axis=2), (base * v2).sum(axis=2)
        kw = {"n_boot": n_boot, "rng": rng, "value_range": (0.0, 100.0)}
    den = np.full(x1.shape, float(m))
    lo, hi = _paired_rows(x1, den, x2, den, kind=kind, confidence=confidence, **kw)
    return _summary(lo, hi, delta)


def paired_mean_coverage(*, n_units: int, effect: float, reps: int = 2000, n_boot: int = 1000, seed: int = 0,
                         confidence: float = 0.95) -> dict[str, float]:
    """Coverage of the paired tone-difference interval (:func:`cfbench.stats.paired.bootstrap_t_interval`,
    the default of ``paired_tests``) for differences with mean ``effect`` (shape ``signed``)."""
    from .paired import bootstrap_t_interval

    rng = np.random.default_rng(seed)
    d = _mean_draws(rng, "signed", effect, reps, n_units, 1)
    lo, hi = bootstrap_t_interval(d, n_boot=n_boot, rng=rng, confidence=confidence)
    return _summary(lo, hi, effect)



#: error shapes of :func:`length_adjusted_coverage`: ``normal``, ``t3`` (heavy symmetric tails),
#: ``skewed`` (centred exponential: a few replies far more positive than the rest) and
#: ``hetero`` (normal, spread growing with the length difference)
LENGTH_ERRORS = ("normal", "t3", "skewed", "hetero")


def length_adjusted_coverage(*, n_units: int, errors: str = "skewed", intercept: float = 0.5, slope: float = 0.3,
                             len_center: float = 1.0, reps: int = 1000, n_boot: int = 2000, seed: int = 0,
                             ci_method: str = "residual_bootstrap_t", confidence: float = 0.95) -> dict[str, float]:
    """Coverage of the length-adjusted difference (:func:`cfbench.stats.paired.intercept_interval`, the
    interval of ``paired.length_adjusted_tests``): per prompt a length difference ``L ~ N(len_center, 1)``
    (centred away from 0, so the intercept is an extrapolation, as when one identity's replies run
    longer) and a tone difference ``D = intercept + slope L + e`` with errors of shape ``errors``
    (:data:`LENGTH_ERRORS`, unit variance). The truth is ``intercept``."""
    from .paired import LENGTH_CI_METHODS, intercept_interval

    if ci_method not in LENGTH_CI_METHODS:
        raise ValueError(f"ci_method must be one of {sorted(LENGTH_CI_METHODS)}, got {ci_method!r}")
    rng = np.random.default_rng(seed)
    x = rng.normal(len_center, 1.0, size=(reps, n_units))
    if errors == "normal":
        e = rng.normal(size=x.shape)
    elif errors == "t3":
        e = rng.standard_t(3, size=x.shape) / np.sqrt(3.0)
    elif errors == "skewed":
        e = rng.exponential(size=x.shape) - 1.0
    elif errors == "hetero":
        e = rng.normal(size=x.shape) * (0.5 + np.abs(x))
    else:
        raise ValueError(f"unknown errors {errors!r}")
    y = intercept + slope * x + e
    boot = rng if ci_method == "residual_bootstrap_t" else None
    lo, hi = np.empty(reps), np.empty(reps)
    for i in range(reps):
        r = intercept_interval(y[i], x[i], rng=boot, n_boot=n_boot, confidence=confidence)
        lo[i], hi[i] = r["adj_ci_low"], r["adj_ci_high"]
    return _summary(lo, hi, intercept)
