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

import functools

import numpy as np

from .bootstrap import resample_counts
from .intervals import (bootstrap_t_rows, clustered_rate_intervals, paired_difference, worst_case_bound)

__all__ = ["rate_coverage", "mean_coverage", "paired_mean_coverage", "net_cfr_coverage", "gate_false_pass", "judge_delta_coverage",
           "matched_net_cfr", "length_adjusted_coverage", "NET_PAIRING",
           "MEAN_SHAPES", "LENGTH_ERRORS", "mean_truth", "FAMILIES", "family_coverage", "family_spread",
           "SPREAD_AUDITS", "placebo_contrast_coverage"]


def _summary(lo: np.ndarray, hi: np.ndarray, truth: float, est: np.ndarray | None = None, *,
             spread: float | None = None) -> dict[str, float]:
    """Coverage, one-sided misses and share without interval; with the audits' point estimates
    ``est`` also ``mean_width`` and ``width_ratio``: the mean width over the estimator's own sampling spread (the
    2.5-97.5 % range of ``est`` over the simulated audits, or ``spread`` when given: the same range
    from more audits), and the largest absolute bound."""
    ok = ~(np.isnan(lo) | np.isnan(hi))
    out_lo, out_hi = lo[ok], hi[ok]
    n = max(int(ok.sum()), 1)
    out = {"coverage": float(np.sum((out_lo <= truth) & (truth <= out_hi)) / n),
           "miss_low": float(np.sum(out_lo > truth) / n), "miss_high": float(np.sum(out_hi < truth) / n),
           "no_ci": float(1 - ok.mean()), "reps": int(ok.sum())}
    if est is not None:
        est = np.asarray(est, float)
        if spread is None:
            spread = float(np.diff(np.nanquantile(est, [0.025, 0.975]))[0])
        width = float(np.mean(out_hi - out_lo)) if ok.any() else np.nan
        out["mean_width"] = width
        out["width_ratio"] = width / spread if spread > 0 else np.inf
        out["max_abs_bound"] = float(np.max(np.abs(np.concatenate([out_lo, out_hi])), initial=0.0))
    return out


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


#: the ``pairing`` of :func:`paired_difference` the net-CFR tables use (``cfr_minus_robustness``)
NET_PAIRING = "corrected"


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
                     reps: int = 1000, seed: int = 0, confidence: float = 0.95,
                     pairing: str = NET_PAIRING) -> dict[str, float]:
    """Coverage of the net-CFR interval (MOVER, :func:`paired_difference`): one counterfactual pair
    per item flipping at ``p_rep + net``, ``rep_pairs`` repeat pairs per item flipping at ``p_rep``,
    both scaled by the same item factor (so the two terms are correlated)."""
    rng = np.random.default_rng(seed)
    x1, x2 = _net_draws(rng, p_rep + net, p_rep, reps, n_items, rep_pairs, spread)
    lo, hi = _paired_rows(x1, np.ones_like(x1), x2, np.full(x2.shape, float(rep_pairs)), confidence=confidence,
                          pairing=pairing)
    return _summary(lo, hi, net, x1.mean(axis=1) - x2.sum(axis=1) / (rep_pairs * n_items))


def gate_false_pass(*, n_items: int, max_net: float, p_rep: float = 0.0, rep_pairs: int = 3,
                    spread: float = 0.5, reps: int = 2000, seed: int = 0, confidence: float = 0.95,
                    pairing: str = NET_PAIRING) -> float:
    """Share of simulated audits whose net-CFR upper bound lies below ``max_net`` when the true net
    CFR *equals* ``max_net``: the gate's false-pass rate."""
    rng = np.random.default_rng(seed)
    x1, x2 = _net_draws(rng, p_rep + max_net, p_rep, reps, n_items, rep_pairs, spread)
    _, hi = _paired_rows(x1, np.ones_like(x1), x2, np.full(x2.shape, float(rep_pairs)), confidence=confidence,
                         pairing=pairing)
    return float(np.mean(np.nan_to_num(hi, nan=np.inf) < max_net))


def _matched_draws(rng, reps: int, n_items: int, m: int, p_rep: float, net: float, identical: bool,
                   m_rep: int | None = None):
    """Counterfactual and repeat flips that match item by item: each item has a latent
    instability ``u_i ~ Beta(0.5, 0.5 (1 - p_rep) / p_rep)`` (mean ``p_rep``); repeat pair ``j``
    flips with probability ``u_i``; counterfactual pair ``j`` flips whenever repeat pair ``j`` does,
    plus extra flips at ``net / (1 - p_rep)`` so the true net CFR is exactly ``net``
    (``identical``: the counterfactual flips are the repeat flips, net 0). ``m_rep`` repeat pairs per
    item (default ``m``); the first ``min(m, m_rep)`` of them are the ones the counterfactual pairs follow."""
    m_rep = m if m_rep is None else m_rep
    if p_rep > 0:
        u = rng.beta(0.5, 0.5 * (1 - p_rep) / p_rep, size=(reps, n_items, 1))
    else:
        u = np.zeros((reps, n_items, 1))
    rep = rng.random((reps, n_items, max(m, m_rep))) < u
    if identical:
        return rep[:, :, :m].sum(axis=2).astype(float), rep[:, :, :m_rep].sum(axis=2).astype(float), 0.0
    cf = rep[:, :, :m] | (rng.random((reps, n_items, m)) < net / (1 - p_rep))
    return cf.sum(axis=2).astype(float), rep[:, :, :m_rep].sum(axis=2).astype(float), float(net)


def matched_net_cfr(*, n_items: int, net: float = 0.10, p_rep: float = 0.3, pairs_per_item: int = 1,
                    identical: bool = False, reps: int = 1000, seed: int = 0, confidence: float = 0.95,
                    gate_max: float = 0.10, repeat_pairs: int | None = None,
                    pairing: str = NET_PAIRING) -> dict[str, float]:
    """Net-CFR interval when the two sides match item by item (:func:`_matched_draws`): the
    coverage summary plus ``false_pass`` (share of audits whose upper bound lies below
    ``gate_max``) and ``zero_width`` (share of intervals with no width)."""
    rng = np.random.default_rng(seed)
    m_rep = pairs_per_item if repeat_pairs is None else repeat_pairs
    x1, x2, truth = _matched_draws(rng, reps, n_items, pairs_per_item, p_rep, net, identical, m_rep)
    d1, d2 = np.full(x1.shape, float(pairs_per_item)), np.full(x2.shape, float(m_rep))
    lo, hi = _paired_rows(x1, d1, x2, d2, confidence=confidence, pairing=pairing)
    out = _summary(lo, hi, truth, x1.sum(axis=1) / d1.sum(axis=1) - x2.sum(axis=1) / d2.sum(axis=1))
    out["false_pass"] = float(np.mean(np.nan_to_num(hi, nan=np.inf) < gate_max))
    out["zero_width"] = float(np.mean(hi - lo <= 0))
    return out


def judge_delta_coverage(*, n_items: int, delta: float, kind: str = "rate", base: float = 0.1,
                         pairs_per_item: int = 1, spread: float = 0.5, reps: int = 1000, n_boot: int = 500,
                         seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Coverage of judge A minus judge B on the same items (``paired_difference(pairing="items")``, as
    ``judge_differences`` calls it): ``kind="rate"`` (CFR, accuracy: judge A
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
    lo, hi = _paired_rows(x1, den, x2, den, kind=kind, confidence=confidence, pairing="items", **kw)
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


# --- the families of data the studies produce (issue 33) -----------------------------------------------

#: name -> (what the study produces, which cfbench interval reports it). Every family is simulated by
#: :func:`family_coverage` with a known truth, 1 pair per item unless said.
FAMILIES = {
    "coaching_mostly_zero": ("MASD of 1-10 coaching scores, absolute differences 0/1/2/3 with odds .70/.20/.08/.02 "
                             "(truth 0.42)", "mean_interval_t, range 0..9"),
    "coaching_rare": ("MASD of 1-10 coaching scores, absolute differences 0/1/2 with odds .90/.08/.02 (truth 0.12)",
                      "mean_interval_t, range 0..9"),
    "pyes_heavy_tail": ("MASD of P(Yes), lognormal shifts min(1, 0.03 e^Z) (heavy right tail)",
                        "mean_interval_t, range 0..1"),
    "pyes_rare_large": ("MASD of P(Yes), abs(N(0, .03)) plus, on 30 % of items, a large shift U(.1, .4)",
                        "mean_interval_t, range 0..1"),
    "variants_hetero": ("MASD over 1-5 variants per item (unequal), item scales Gamma(1) (items very unlike), "
                        "half the variants do not move", "mean_interval_t (ratio), range 0..100"),
    "tone_skewed": ("paired tone difference, Gamma(0.5, 2) - 1 per prompt (right-skewed, truth 0)",
                    "paired.bootstrap_t_interval (no range)"),
    "tone_skewed_left": ("paired tone difference, 1 - Gamma(0.5, 2) per prompt (left-skewed, truth 0)",
                         "paired.bootstrap_t_interval (no range)"),
    "judges_masd": ("judge A - judge B, MASD of P(Yes) on the same items (item correlation ~0.85), A 20 % higher",
                    "paired_difference(kind='mean', pairing='items')"),
    "judges_masd_capped": ("the same, with the capped MOVER used before issue 33",
                           "paired_difference(kind='mean', pairing='capped')"),
    "judges_cfr": ("judge A - judge B CFR, 1 pair per item, flips share a uniform per item "
                   "(correlated judges), truth 0.045", "paired_difference(kind='rate', pairing='items'): Tango"),
    "judges_cfr_3pairs": ("the same with 3 pairs per item", "paired_difference(kind='rate', pairing='items'): "
                          "Tango scaled by the items' design effect"),
    "judges_cfr_3pairs_clustered": ("3 pairs per item; judge A also flips every pair of 6 % of items (whole items "
                                    "biased), truth 0.054", "paired_difference(kind='rate', pairing='items'): "
                                    "Tango scaled by the items' design effect"),
    "judges_cfr_capped": ("judge A - judge B CFR, 1 pair per item, capped MOVER (before)",
                          "paired_difference(kind='rate', pairing='capped')"),
    "cfr_correlated_flips": ("CFR with 3 pairs per item flipping together (item rate Beta(0.5, 4.5), mean 0.1)",
                             "clustered_rate_intervals"),
    "net_cfr_repeat_noise": ("net CFR 0.1 with repeat flips 0.2 (1 counterfactual + 3 repeat pairs per item)",
                             "paired_difference(kind='rate', pairing='corrected')"),
    "net_cfr_matched": ("net CFR 0.1, counterfactual flips whenever the repeat flips (repeat flips 0.1), "
                        "1 pair per item on both sides (the committed default's design)",
                        "paired_difference(kind='rate', pairing='corrected'): Tango at one pair per side"),
    "net_cfr_matched_capped": ("the same through the capped MOVER (before 2026-11-29)",
                               "paired_difference(kind='rate', pairing='capped')"),
    "net_cfr_matched_3rep": ("net CFR 0.1, the counterfactual pair flips whenever the first repeat pair does "
                             "(repeat flips 0.3; 1 counterfactual + 3 repeat pairs per item, repeats: 3 at T=0)",
                             "paired_difference(kind='rate', pairing='corrected'): continuity-corrected MOVER"),
    "net_cfr_matched_3rep_capped": ("the same through the capped MOVER (before)",
                                    "paired_difference(kind='rate', pairing='capped')"),
}


def _lognormal_truth(c: float) -> float:
    """E[min(1, c e^Z)] for standard normal Z."""
    from scipy.stats import norm

    z0 = np.log(1.0 / c)
    return float(c * np.exp(0.5) * norm.cdf(z0 - 1.0) + norm.sf(z0))


def _family_means(rng, name: str, reps: int, K: int) -> tuple[np.ndarray, np.ndarray, float, tuple[float, float]]:
    """(num, den, truth, value range) of the mean families."""
    ones = np.ones((reps, K))
    if name == "coaching_mostly_zero":
        v = rng.choice([0.0, 1.0, 2.0, 3.0], p=[0.70, 0.20, 0.08, 0.02], size=(reps, K))
        return v, ones, 0.42, (0.0, 9.0)
    if name == "coaching_rare":
        return rng.choice([0.0, 1.0, 2.0], p=[0.90, 0.08, 0.02], size=(reps, K)), ones, 0.12, (0.0, 9.0)
    if name == "pyes_heavy_tail":
        return np.minimum(1.0, 0.03 * np.exp(rng.normal(size=(reps, K)))), ones, _lognormal_truth(0.03), (0.0, 1.0)
    if name == "pyes_rare_large":
        v = np.abs(rng.normal(0, 0.03, (reps, K))) + (rng.random((reps, K)) < 0.3) * rng.uniform(0.1, 0.4, (reps, K))
        return v, ones, 0.03 * np.sqrt(2 / np.pi) + 0.3 * 0.25, (0.0, 1.0)
    if name == "variants_hetero":
        m = rng.integers(1, 6, size=(reps, K, 1))
        s = rng.gamma(1.0, 1.0, size=(reps, K, 1))
        v = 2 * np.abs(rng.normal(size=(reps, K, 5))) * s / np.sqrt(2 / np.pi) * (rng.random((reps, K, 5)) < 0.5)
        use = np.arange(5)[None, None, :] < m
        return (v * use).sum(axis=2), m[..., 0].astype(float), 1.0, (0.0, 100.0)
    raise ValueError(f"unknown family {name!r}")


def _judges(rng, name: str, reps: int, K: int, n_boot: int):
    """Rows of two judges' item sums on the same items: (x1, d1, x2, d2, truth, kind, pairing, kw)."""
    pairing = "capped" if name.endswith("_capped") else "items"
    if name.startswith("judges_masd"):
        s = 0.1 * rng.gamma(2.0, 0.5, size=(reps, K))          # the item's own movability, shared
        a = 1.2 * s * np.exp(rng.normal(0, 0.2, (reps, K)))
        b = s * np.exp(rng.normal(0, 0.2, (reps, K)))
        truth = 0.2 * 0.1 * np.exp(0.02)
        return a, np.ones_like(a), b, np.ones_like(b), truth, "mean", pairing, {"n_boot": n_boot,
                                                                                "value_range": (0.0, 1.0)}
    m = 3 if "3pairs" in name else 1
    u = rng.beta(0.5, 4.5, size=(reps, K, 1))                   # item flippiness, mean 0.1
    draw = rng.random((reps, K, m))                             # shared: the judges flip on the same pairs
    if name.endswith("clustered"):                              # A flips every pair of 6 % of items as well
        flips_a, truth = (draw < u) | (rng.random((reps, K, 1)) < 0.06), 0.06 * 0.9
    else:
        flips_a, truth = draw < u + 0.05 * (1 - u), 0.05 * 0.9
    a = flips_a.sum(axis=2).astype(float)
    b = (draw < u).sum(axis=2).astype(float)
    den = np.full(a.shape, float(m))
    return a, den, b, den, truth, "rate", pairing, {"n_boot": n_boot}


#: audits whose estimates give the sampling spread of :func:`family_coverage` (drawn apart from the audits whose
#: intervals are scored): the 2.5-97.5 % range of a discrete estimate sits on a few values, and from the 1,000-2,000
#: scored audits alone a quantile near the edge of one value moved a width ratio by up to 0.26 (coaching scores)
SPREAD_AUDITS = 100_000
#: the families whose interval is the mean interval (:func:`_family_means` draws them)
_MEAN_FAMILIES = ("coaching_mostly_zero", "coaching_rare", "pyes_heavy_tail", "pyes_rare_large", "variants_hetero")


def _family_draw(rng, name: str, reps: int, K: int, n_boot: int) -> tuple[str, tuple, float, np.ndarray]:
    """One family's audits: ``(kind, data for the interval, truth, estimates)``; ``kind`` says which interval
    :func:`family_coverage` runs on the data."""
    if name in _MEAN_FAMILIES:
        num, den, truth, vr = _family_means(rng, name, reps, K)
        return "mean", (num, den, vr), truth, num.sum(axis=1) / den.sum(axis=1)
    if name.startswith("tone_skewed"):
        d = rng.gamma(0.5, 2.0, size=(reps, K)) - 1.0
        d = -d if name.endswith("left") else d
        return "tone", (d,), 0.0, d.mean(axis=1)
    if name.startswith("judges_"):
        x1, d1, x2, d2, truth, kind, pairing, kw = _judges(rng, name, reps, K, n_boot)
        return "judges", (x1, d1, x2, d2, kind, pairing, kw), truth, (x1.sum(axis=1) / d1.sum(axis=1)
                                                                       - x2.sum(axis=1) / d2.sum(axis=1))
    if name == "cfr_correlated_flips":
        u = rng.beta(0.5, 4.5, size=(reps, K, 1))
        x = (rng.random((reps, K, 3)) < u).sum(axis=2).astype(float)
        return "rate", (x,), 0.1, x.sum(axis=1) / (3 * K)
    if name == "net_cfr_repeat_noise":
        x1, x2 = _net_draws(rng, 0.3, 0.2, reps, K, 3, 0.5)
        return "net", (x1, x2, 3, NET_PAIRING), 0.1, x1.mean(axis=1) - x2.sum(axis=1) / (3 * K)
    if name.startswith("net_cfr_matched"):
        m_rep, p_rep = (3, 0.3) if "3rep" in name else (1, 0.1)
        pairing = "capped" if name.endswith("_capped") else NET_PAIRING
        x1, x2, truth = _matched_draws(rng, reps, K, 1, p_rep, 0.1, False, m_rep)
        return "net", (x1, x2, m_rep, pairing), truth, x1.mean(axis=1) - x2.sum(axis=1) / (m_rep * K)
    raise ValueError(f"unknown family {name!r}; known: {sorted(FAMILIES)}")



@functools.lru_cache(maxsize=None)
def family_spread(name: str, *, n_items: int, audits: int = SPREAD_AUDITS, seed: int = 0, chunk: int = 20_000) -> float:
    """The estimator's own sampling spread for family ``name`` at ``n_items`` items: the 2.5-97.5 % range of
    its estimate over ``audits`` audits (drawn in chunks; estimates only, no interval). Cached: the same
    arguments draw the same audits, and the families table asks again for its ``before`` rows."""
    rng = np.random.default_rng(seed)
    est = np.concatenate([_family_draw(rng, name, min(chunk, audits - k), n_items, 1)[3]
                          for k in range(0, audits, chunk)])
    return float(np.diff(np.nanquantile(est, [0.025, 0.975]))[0])


def family_coverage(name: str, *, n_items: int, reps: int = 1000, n_boot: int = 1000, seed: int = 0,
                    confidence: float = 0.95, spread_audits: int = SPREAD_AUDITS) -> dict[str, float]:
    """Coverage, one-sided misses and width over sampling spread of the interval cfbench reports for
    the data family ``name`` (:data:`FAMILIES`) at ``n_items`` items, ``reps`` seeded audits. The spread is
    :func:`family_spread` over ``spread_audits`` other audits (seed ``seed + 10**6``); ``spread_audits=0`` takes
    it from the ``reps`` audits themselves, as before 2026-11-29."""
    from .paired import bootstrap_t_interval

    rng = np.random.default_rng(seed)
    K = n_items
    kind, data, truth, est = _family_draw(rng, name, reps, K, n_boot)
    if kind == "mean":
        num, den, vr = data
        lo, hi = _mean_rows(num, den, n_boot=n_boot, rng=rng, confidence=confidence, value_range=vr)
    elif kind == "tone":
        lo, hi = bootstrap_t_interval(data[0], n_boot=n_boot, rng=rng, confidence=confidence)
    elif kind == "judges":
        x1, d1, x2, d2, how, pairing, kw = data
        lo, hi = _paired_rows(x1, d1, x2, d2, kind=how, confidence=confidence, rng=rng, pairing=pairing, **kw)
    elif kind == "rate":
        x = data[0]
        group = np.repeat(np.arange(reps), K)
        _, lo, hi, _ = clustered_rate_intervals(x.ravel(), np.full(x.size, 3.0), group, n_groups=reps,
                                                confidence=confidence)
    else:
        x1, x2, m_rep, pairing = data
        lo, hi = _paired_rows(x1, np.ones_like(x1), x2, np.full(x2.shape, float(m_rep)), confidence=confidence,
                              pairing=pairing)
    spread = family_spread(name, n_items=K, audits=spread_audits, seed=seed + 10**6) if spread_audits else None
    return _summary(lo, hi, truth, est, spread=spread)


def _placebo_draws(rng, reps: int, n_items: int, m1: int, m2: int, p_any: float, zero_share: float,
                   effect: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Identity and placebo flips sharing each item's sensitivity to *any* edit: with probability
    ``zero_share`` an item never flips on an edit (u = 0), else ``u ~ Beta(0.5, 0.5 (1 - p_any) / p_any)``;
    each of the ``m2`` placebo pairs flips with probability ``u``, each of the ``m1`` identity pairs with
    ``u + (1 - u) e`` (an identity effect on top of the edit), ``e`` set so that the true difference of the
    two expected flip rates is exactly ``effect``."""
    if p_any > 0:
        u = rng.beta(0.5, 0.5 * (1 - p_any) / p_any, size=(reps, n_items, 1))
        u = np.where(rng.random((reps, n_items, 1)) < zero_share, 0.0, u)
    else:
        u = np.zeros((reps, n_items, 1))
    mean_u = (1 - zero_share) * p_any
    e = effect / (1 - mean_u)
    x1 = (rng.random((reps, n_items, m1)) < u + (1 - u) * e).sum(axis=2).astype(float)
    x2 = (rng.random((reps, n_items, m2)) < u).sum(axis=2).astype(float)
    return x1, x2, float(effect)


def placebo_contrast_coverage(*, n_items: int, effect: float = 0.0, p_any: float = 0.3, zero_share: float = 0.5,
                              identity_pairs: int = 1, placebo_pairs: int = 1, reps: int = 1000,
                              n_boot: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict[str, float]:
    """Coverage and width ratio of the paired interval of "identity flip rate minus placebo flip rate"
    (:func:`paired_difference` with ``pairing="items"``) on audits drawn by :func:`_placebo_draws`: flips
    of both sides correlated through each item's sensitivity to any edit, many items that never flip
    (``zero_share``; ``p_any = 0``: no flip anywhere), ``identity_pairs`` / ``placebo_pairs`` pairs per item."""
    rng = np.random.default_rng(seed)
    x1, x2, truth = _placebo_draws(rng, reps, n_items, identity_pairs, placebo_pairs, p_any, zero_share, effect)
    d1, d2 = np.full(x1.shape, float(identity_pairs)), np.full(x2.shape, float(placebo_pairs))
    lo, hi = _paired_rows(x1, d1, x2, d2, n_boot=n_boot, rng=rng, confidence=confidence, pairing="items")
    est = x1.sum(axis=1) / d1.sum(axis=1) - x2.sum(axis=1) / d2.sum(axis=1)
    return _summary(lo, hi, truth, est)
