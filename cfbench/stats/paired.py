"""Paired comparisons of identities across prompts (seed 002 design).

Scores are aligned by prompt id: for identities A and B and one metric, the
paired differences are ``D_i = score(prompt i, A) - score(prompt i, B)``.
For every pair of groups (C(8,2) = 28 per model × metric) :func:`paired_tests`
reports

* mean difference with a 95 % interval: by default a bootstrap-t over units
  (:func:`bootstrap_t_interval`, seeded per (seed, model, metric); it held its level from 5 units
  on in the simulations of ``docs/statistics.md``, where the percentile bootstrap did not),
  with ``ci_method="paired_t"`` the paired-t interval mean(D) ± t_{n-1} sd(D)/sqrt(n), or with
  ``"bootstrap"`` the percentile bootstrap (:func:`cfbench.stats.bootstrap.mean_interval`; kept
  for reproductions, it undercovers at small n). Differences that are all equal (e.g. all 0)
  have no spread to resample, so the bootstrap-t gives NaN bounds for them rather than a point.
  A metric with a known range (``value_ranges``: a VADER compound lies in [-1, 1]) has its
  bounds held within the range of its differences (``[-2, 2]`` for that one): a bootstrap-t
  bound from a few units with one far outlier can lie beyond it (a committed sentiment row had
  -2.70 from ten prompts, one of them at -1.26), and such a row's ``ci_method`` says so;
* the paired t test (``scipy.stats.ttest_rel``);
* the Wilcoxon signed-rank test (``scipy.stats.wilcoxon`` with its defaults:
  ``zero_method="wilcox"`` drops zero differences, no continuity correction,
  ``method="auto"``: exact null distribution when there are no zeros and no
  ties, otherwise the tie-corrected normal approximation (or, for n <= 13, an
  exhaustive permutation test)); the method used is recorded per row;
* ``cohens_d`` = d_z = mean(D) / sd(D, ddof=1). (pingouin's
  ``compute_effsize(paired=True, eftype="cohen")`` is *not* this quantity: it
  divides by the pooled SD of the two samples, ignoring the pairing.)
* Holm and Benjamini–Hochberg adjusted Wilcoxon p-values
  (``statsmodels.stats.multitest.multipletests``); the family is the pairs of
  one model × metric.

:func:`min_detectable_d` gives the smallest d_z a two-sided paired t test
detects with the given power at the run's n. :func:`length_adjusted_tests`
gives each difference at equal reply length (intercept of the regression of
the metric's differences on the word-count differences) and
:func:`symmetry_checks` the median–mean alignment and extreme points of the
differences, which the signed-rank test assumes symmetric.

Column names are parameters with no defaults: the caller says which column
holds the model, the pairing unit and the group. Output columns are the
model column, ``metric``, ``<group>_a``, ``<group>_b`` and the statistics.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import InputError
from ..core.seeding import derive_seed
from .bootstrap import mean_interval

__all__ = [
    "PAIR_COLUMNS",
    "pair_columns",
    "CI_METHODS",
    "paired_t_interval",
    "bootstrap_t_interval",
    "clip_to_range",
    "difference_range",
    "length_adjusted_tests",
    "intercept_interval",
    "LENGTH_CI_METHODS",
    "symmetry_checks",
    "signed_rank_permutation",
    "paired_tests",
    "paired_matrix",
    "cohens_dz",
    "min_detectable_d",
    "adjust_pvalues",
    "largest_gaps",
    "wilcoxon_method",
    "group_means",
]

_STAT_COLUMNS = [
    "n", "mean_a", "mean_b", "mean_diff", "ci_low", "ci_high", "t", "t_p", "wilcoxon_stat", "wilcoxon_p",
    "cohens_d", "p_holm", "p_bh", "wilcoxon_method", "n_zero_diff", "ci_method",
]

#: ``ci_method`` values of :func:`paired_tests` -> the label written in ``result.attrs["ci_method"]``.
CI_METHODS = {"bootstrap_t": "bootstrap-t and paired t over units (union)", "bootstrap": "percentile bootstrap over units",
              "paired_t": "paired t over units"}


def bootstrap_t_interval(D: np.ndarray, *, n_boot: int, rng: np.random.Generator, confidence: float = 0.95,
                         value_range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap-t interval of the mean along the last axis; the rows of a 2-D ``D`` share resamples.

    The interval of :func:`cfbench.stats.intervals.bootstrap_t_rows` with one unit per item: each
    resample b (units drawn with replacement) gives ``t_b = (mean_b - mean) / se_b`` with ``se_b``
    floored (:func:`cfbench.stats.intervals.floored_se`: a resample with no spread keeps a finite t); the bounds
    ``mean - c t_(1-a) se`` and ``mean - c t_(a) se`` with ``c = (n / (n - 1))^2`` are widened to
    include the paired t interval. Fewer than 2 units, or a row without spread, give NaN bounds.
    ``value_range`` (the range of the differences, when the metric's own range is known) bounds the
    interval (:func:`clip_to_range`).

    >>> d = np.array([[-1.262, -0.474, 0.004, -0.309, -0.012, 0.017, -0.023, 0.031, -0.09, -0.063]])
    >>> lo, hi = bootstrap_t_interval(d, n_boot=2000, rng=np.random.default_rng(0), value_range=(-2.0, 2.0))
    >>> float(lo[0]), bool(hi[0] < 0.1)
    (-2.0, True)
    """
    from .bootstrap import resample_counts
    from .intervals import bootstrap_t_rows

    D = np.atleast_2d(np.asarray(D, dtype=float))
    n = D.shape[-1]
    nan = np.full(D.shape[0], np.nan)
    if n < 2:
        return nan, nan.copy()
    se = D.std(axis=1, ddof=1) / np.sqrt(n)
    lo, hi = bootstrap_t_rows(D, np.ones_like(D), resample_counts(n, n_boot, rng), confidence)
    flat = ~(se > 1e-12 * np.maximum(1.0, np.abs(D.mean(axis=1))))
    lo[flat] = hi[flat] = np.nan
    return clip_to_range(lo, hi, value_range)


def clip_to_range(lo: np.ndarray, hi: np.ndarray, value_range: tuple[float, float] | None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Bounds held within ``value_range`` (the range the mean of the differences can take; NaN stays NaN).

    A mean cannot leave the range its values lie in, so this never lowers coverage; it only removes the
    part of an interval no truth can occupy.

    >>> clip_to_range(np.array([-2.7, 0.1]), np.array([0.07, 2.5]), (-2.0, 2.0))
    (array([-2. ,  0.1]), array([0.07, 2.  ]))
    """
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if value_range is None:
        return lo, hi
    a, b = value_range
    if not a < b:
        raise ValueError(f"value_range must be (low, high) with low < high, got {value_range!r}")
    return np.clip(lo, a, b), np.clip(hi, a, b)


def _hold(ci: tuple[float, float], d_range: tuple[float, float] | None) -> tuple[tuple[float, float], str]:
    """``ci`` held within ``d_range``, and the note its row's ``ci_method`` gets when a bound moved ("" if none)."""
    if d_range is None:
        return ci, ""
    lo, hi = clip_to_range(np.array([ci[0]]), np.array([ci[1]]), d_range)
    held = (float(lo[0]), float(hi[0]))
    moved = held != ci and not any(np.isnan(ci))
    return held, (f"; bound held at the differences' range [{d_range[0]:g}, {d_range[1]:g}]" if moved else "")


def difference_range(score_range: tuple[float, float] | None) -> tuple[float, float] | None:
    """The range of ``score(A) - score(B)`` for scores in ``score_range``: ``(low - high, high - low)``.

    >>> difference_range((-1.0, 1.0))
    (-2.0, 2.0)
    """
    if score_range is None:
        return None
    a, b = (float(x) for x in score_range)
    return a - b, b - a


def pair_columns(*, model: str, group: str) -> list[str]:
    """Output columns of :func:`paired_tests` for these column names.

    >>> pair_columns(model="model", group="identity")[:4]
    ['model', 'metric', 'identity_a', 'identity_b']
    """
    return [model, "metric", f"{group}_a", f"{group}_b", *_STAT_COLUMNS]


#: Output columns for ``model="model", group="identity"``.
PAIR_COLUMNS = pair_columns(model="model", group="identity")


def cohens_dz(d: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean(D) / sd(D, ddof=1) along ``axis`` (NaN when sd is 0 and mean is 0).

    >>> float(cohens_dz(np.array([1.0, 2.0, 3.0])))
    2.0
    """
    d = np.asarray(d, dtype=float)
    mean = d.mean(axis=axis)
    sd = d.std(axis=axis, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return mean / sd


def min_detectable_d(n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest d_z a two-sided paired t test detects with ``power`` at ``n`` pairs.

    >>> round(min_detectable_d(30), 2)
    0.53
    """
    from statsmodels.stats.power import TTestPower

    if n < 2:
        return float("nan")
    return float(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power,
                                          alternative="two-sided"))


def adjust_pvalues(p: Sequence[float], method: str) -> np.ndarray:
    """Holm (``"holm"``) or Benjamini–Hochberg (``"fdr_bh"``) over the non-NaN p-values."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out


def wilcoxon_method(d: np.ndarray) -> str:
    """Which null distribution scipy's default ``wilcoxon`` uses for these differences."""
    d = np.asarray(d, dtype=float)
    if d.size > 50:
        return "asymptotic"
    nz = d[d != 0]
    has_ties = len(np.unique(np.abs(nz))) < len(nz)
    if not has_ties and len(nz) == len(d):
        return "exact"
    return "permutation" if d.size <= 13 else "asymptotic"


def paired_t_interval(d: np.ndarray, *, confidence: float = 0.95, axis: int = -1
                      ) -> tuple[np.ndarray, np.ndarray]:
    """mean(D) ± t_{n-1, (1+confidence)/2} · sd(D, ddof=1) / sqrt(n) along ``axis``.

    >>> lo, hi = paired_t_interval(np.array([1.0, 2.0, 3.0]))
    >>> round(float(lo), 3), round(float(hi), 3)
    (-0.484, 4.484)
    """
    d = np.asarray(d, dtype=float)
    n = d.shape[axis]
    if n < 2:
        nan = np.full(np.delete(d.shape, axis if axis >= 0 else d.ndim + axis), np.nan)
        return nan, nan.copy()
    mean = d.mean(axis=axis)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * d.std(axis=axis, ddof=1) / np.sqrt(n)
    return mean - half, mean + half


_SIGN_PATTERNS: dict[int, np.ndarray] = {}


def _sign_patterns(k: int) -> np.ndarray:
    if k not in _SIGN_PATTERNS:
        _SIGN_PATTERNS[k] = ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1).astype(float)
    return _SIGN_PATTERNS[k]


def signed_rank_permutation(d: np.ndarray) -> tuple[float, float]:
    """Two-sided signed-rank test by full enumeration of the 2^k sign patterns (k non-zero differences).

    The same test as scipy's default ``wilcoxon`` for n <= 13 with ties or
    zeros (zeros dropped, average ranks of |D|, statistic min(R+, R-),
    p = 2 min(P(R+ <= r), P(R+ >= r)) with scipy's relative tolerance), but
    enumerated in one matrix product instead of a generic permutation test
    (about 4 s per call on a shared 2-core machine; 336 calls per run).
    Returns (statistic, p-value).
    """
    d = np.asarray(d, dtype=float)
    nz = d[d != 0]
    if nz.size == 0:
        return float("nan"), float("nan")
    if nz.size > 20:
        raise ValueError("full enumeration is for small samples (at most 20 non-zero differences)")
    ranks = stats.rankdata(np.abs(nz))
    r_plus = float(ranks[nz > 0].sum())
    r_minus = float(ranks.sum() - r_plus)
    null = _sign_patterns(nz.size) @ ranks
    gamma = abs(np.finfo(float).eps * 100 * r_plus)
    p_less = float(np.mean(null <= r_plus + gamma))
    p_greater = float(np.mean(null >= r_plus - gamma))
    return min(r_plus, r_minus), min(1.0, 2 * min(p_less, p_greater))


def paired_matrix(scores: pd.DataFrame, *, metric: str, groups: Sequence[str],
                  unit: str, group: str, source: str = "scores") -> pd.DataFrame:
    """Wide frame: one row per unit (prompt), one column per group.

    Raises :class:`InputError` for a duplicate (unit, group), a unit missing a
    group, or a group that never occurs — naming the record and field.
    """
    for col in (unit, group, metric):
        if col not in scores.columns:
            raise InputError("column missing", source=source, field=col)
    dup = scores.duplicated([unit, group], keep=False)
    if dup.any():
        r = scores[dup].iloc[0]
        raise InputError(f"duplicate row for {group} {r[group]!r}", source=source, record=r[unit],
                         field=group)
    unknown = sorted(set(scores[group]) - set(groups))
    if unknown:
        rec = scores.loc[scores[group] == unknown[0], unit].iloc[0]
        raise InputError(f"unknown {group} {unknown[0]!r}", source=source, record=rec, field=group)
    wide = scores.pivot(index=unit, columns=group, values=metric)
    wide = wide.reindex(columns=list(groups))
    present = scores.groupby(unit)[group].apply(set)
    for u, have in present.items():
        missing = [g for g in groups if g not in have]
        if missing:
            raise InputError(f"no response for {group}(s) {missing}", source=source, record=u, field=group)
    return wide


def paired_tests(scores: pd.DataFrame, *, metrics: Sequence[str], groups: Sequence[str], seed: int,
                 model: str, unit: str, group: str,
                 n_resamples: int = 10_000, confidence: float = 0.95, ci_method: str = "bootstrap_t",
                 on_missing: str = "raise", source: str = "scores",
                 value_ranges: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """All pairwise paired comparisons of ``groups`` per model × metric.

    ``scores`` is long: one row per (model, unit, group) with a column per
    metric; ``model``, ``unit`` and ``group`` name those columns. Pairs are
    ``(groups[i], groups[j])`` for i < j, difference A − B. ``ci_method`` is
    ``"bootstrap_t"`` (:func:`bootstrap_t_interval`, ``n_resamples`` resamples of units),
    ``"bootstrap"`` (percentile) or ``"paired_t"`` (see :func:`paired_t_interval`; ``n_resamples`` unused).
    A NaN score (e.g. an empty response) raises with ``on_missing="raise"``;
    with ``"drop_unit"`` that prompt is left out of the pairs involving it and
    ``n`` shows how many prompts remain. ``value_ranges`` maps a metric to the range its scores lie in
    (:data:`cfbench.metrics.lexicon.TONE_RANGES`); that metric's bounds, by any ``ci_method``, are held
    within the range of its differences, and a row whose bound was moved there says so in ``ci_method``.
    """
    if ci_method not in CI_METHODS:
        raise ValueError(f"ci_method must be one of {sorted(CI_METHODS)}, got {ci_method!r}")
    if on_missing not in ("raise", "drop_unit"):
        raise ValueError(f"on_missing must be 'raise' or 'drop_unit', got {on_missing!r}")
    if model not in scores.columns:
        raise InputError("column missing", source=source, field=model)
    pairs = list(itertools.combinations(range(len(groups)), 2))
    out = []
    for m_name, sub in scores.groupby(model, sort=False):
        for metric in metrics:
            wide = paired_matrix(sub, metric=metric, groups=groups, unit=unit, group=group, source=source)
            X = wide.to_numpy(dtype=float)
            if np.isnan(X).any() and on_missing == "raise":
                r, c = np.argwhere(np.isnan(X))[0]
                raise InputError(f"score is missing ({metric}) for {group} {groups[c]!r}; "
                                 "pass on_missing='drop_unit' to leave the prompt out of its pairs",
                                 source=source, record=wide.index[r], field=metric)
            rng = np.random.default_rng(derive_seed(seed, m_name, metric))
            d_range = difference_range((value_ranges or {}).get(metric))
            A = X[:, [i for i, _ in pairs]].T  # (n_pairs, n_units)
            B = X[:, [j for _, j in pairs]].T
            D = A - B
            complete = ~np.isnan(D).any()
            if complete and ci_method == "bootstrap":
                lo, hi = mean_interval(D, n_boot=n_resamples, confidence=confidence, rng=rng)
            elif complete and ci_method == "bootstrap_t":
                lo, hi = bootstrap_t_interval(D, n_boot=n_resamples, confidence=confidence, rng=rng)
            rows = []
            for k, (i, j) in enumerate(pairs):
                ok = ~np.isnan(D[k])
                a, b, d = A[k, ok], B[k, ok], D[k, ok]
                n = int(ok.sum())
                if ci_method == "paired_t":
                    l1, h1 = paired_t_interval(d, confidence=confidence)
                    ci = (float(l1), float(h1))
                elif not complete:
                    one = mean_interval if ci_method == "bootstrap" else bootstrap_t_interval
                    l1, h1 = one(d[None, :], n_boot=n_resamples, confidence=confidence,
                                 rng=np.random.default_rng(derive_seed(seed, m_name, metric, k)))
                    ci = (float(l1[0]), float(h1[0]))
                else:
                    ci = (float(lo[k]), float(hi[k]))
                ci, held = _hold(ci, d_range)
                with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                    warnings.simplefilter("ignore", RuntimeWarning)
                    t = stats.ttest_rel(a, b) if n >= 2 else None
                if n >= 1 and np.any(d != 0):
                    w_method = wilcoxon_method(d)
                    if w_method == "permutation":
                        w_stat, w_p = signed_rank_permutation(d)
                    else:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", UserWarning)
                            w = stats.wilcoxon(d)
                        w_stat, w_p = float(w.statistic), float(w.pvalue)
                else:
                    w_stat, w_p = np.nan, np.nan
                    w_method = "undefined (no pairs)" if n == 0 else "undefined (all differences zero)"
                rows.append({
                    model: m_name, "metric": metric, f"{group}_a": groups[i], f"{group}_b": groups[j],
                    "n": n, "mean_a": a.mean() if n else np.nan, "mean_b": b.mean() if n else np.nan,
                    "mean_diff": d.mean() if n else np.nan, "ci_low": ci[0], "ci_high": ci[1],
                    "t": float(t.statistic) if t is not None else np.nan,
                    "t_p": float(t.pvalue) if t is not None else np.nan,
                    "wilcoxon_stat": w_stat, "wilcoxon_p": w_p,
                    "cohens_d": float(cohens_dz(d)) if n >= 2 else np.nan,
                    "wilcoxon_method": w_method, "n_zero_diff": int((d == 0).sum()),
                    "ci_method": CI_METHODS[ci_method] + held if np.isfinite(ci).all() else
                    ("none: fewer than 2 units" if n < 2 else "none: the differences have no spread"),
                })
            fam = pd.DataFrame(rows)
            fam["p_holm"] = adjust_pvalues(fam["wilcoxon_p"], "holm")
            fam["p_bh"] = adjust_pvalues(fam["wilcoxon_p"], "fdr_bh")
            out.append(fam)
    columns = pair_columns(model=model, group=group)
    if not out:
        return pd.DataFrame(columns=columns)
    result = pd.concat(out, ignore_index=True)[columns]
    result.attrs.update({"n_resamples": n_resamples if ci_method != "paired_t" else 0,
                         "confidence": confidence, "seed": seed, "ci_method": CI_METHODS[ci_method],
                         "adjusted": "wilcoxon_p; family = pairs within model x metric"})
    return result


def largest_gaps(pairs: pd.DataFrame, *, model: str, k: int = 2, by: str = "abs_d",
                 metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Top-``k`` pairs per model × metric, by ``|cohens_d|`` (``"abs_d"``) or
    ``|mean_diff|`` (``"abs_mean_diff"``); stable, so ties keep pair order.
    ``model`` names the model column of ``pairs``."""
    col = {"abs_d": "cohens_d", "abs_mean_diff": "mean_diff"}.get(by)
    if col is None:
        raise ValueError(f"by must be 'abs_d' or 'abs_mean_diff', got {by!r}")
    sel = pairs if metrics is None else pairs[pairs["metric"].isin(metrics)]
    key = sel[col].abs()
    ordered = sel.assign(_key=key).sort_values([model, "metric", "_key"],
                                               ascending=[True, True, False], kind="stable")
    return ordered.groupby([model, "metric"], sort=False).head(k).drop(columns="_key").reset_index(drop=True)


def group_means(scores: pd.DataFrame, *, metrics: Sequence[str], groups: Sequence[str],
                model: str, group: str) -> pd.DataFrame:
    """Mean of each metric per model × group (Table 2 layout), with ``n`` = rows
    with a non-missing value of the first metric; groups in the given order."""
    rows = []
    for m_name, sub in scores.groupby(model, sort=False):
        for g in groups:
            part = sub[sub[group] == g]
            row = {model: m_name, group: g, "n": int(part[metrics[0]].notna().sum())}
            row.update({mt: float(part[mt].mean()) for mt in metrics})
            rows.append(row)
    return pd.DataFrame(rows, columns=[model, group, "n", *metrics])


def _pair_differences(scores: pd.DataFrame, *, metric: str, groups: Sequence[str], unit: str, group: str,
                      source: str) -> tuple[list[tuple[int, int]], np.ndarray, pd.Index]:
    wide = paired_matrix(scores, metric=metric, groups=groups, unit=unit, group=group, source=source)
    X = wide.to_numpy(dtype=float)
    pairs = list(itertools.combinations(range(len(groups)), 2))
    D = X[:, [i for i, _ in pairs]].T - X[:, [j for _, j in pairs]].T
    return pairs, D, wide.index


#: ``ci_method`` values of :func:`length_adjusted_tests` -> the label written in each row's ``ci_method``.
LENGTH_CI_METHODS = {
    "residual_bootstrap_t": "residual bootstrap-t (x K/(K-1)) and OLS t over units (union)",
    "ols_t": "OLS t over units",
}


def length_adjusted_tests(scores: pd.DataFrame, *, metrics: Sequence[str], groups: Sequence[str],
                          length: str, model: str, unit: str, group: str, confidence: float = 0.95,
                          source: str = "scores", ci_method: str = "residual_bootstrap_t", seed: int = 0,
                          n_boot: int = 2000) -> pd.DataFrame:
    """Each pair's mean difference at equal reply length.

    For a pair and metric, ``D_i`` (metric) is regressed on ``L_i`` (the
    difference of the ``length`` column, e.g. word counts) by ordinary least
    squares over units: ``D_i = a + b L_i + e_i``. The intercept ``a`` is the
    expected difference when both replies have the same length; it is
    reported with its interval and the OLS t p-value (n − 2 degrees of
    freedom), next to the unadjusted mean difference and the slope.

    Interval (``ci_method``): ``"residual_bootstrap_t"`` (default,
    :func:`intercept_interval`): a bootstrap-t over the fit's residuals, its
    half-widths widened by ``K / (K - 1)`` and unioned with the OLS t interval
    (the t interval alone covered 91.5-93 % for skewed errors at 6-20 units;
    docs/statistics.md); ``n_boot`` resamples from a generator seeded by
    ``(seed, model, metric, pair)``. ``"ols_t"``: the textbook OLS t interval.
    Units with a missing value in either column are left out (``n`` says how
    many remain). When the length differences do not vary (all equal), or
    fewer than 3 units remain, ``adj_*`` are NaN; when the fit has no residual
    spread the interval is NaN (never a point). Each row names its interval in
    ``ci_method``.

    Columns: model column, ``metric``, ``<group>_a``, ``<group>_b``, ``n``,
    ``mean_diff``, ``mean_len_diff``, ``slope``, ``adj_diff``, ``adj_ci_low``,
    ``adj_ci_high``, ``adj_p``, ``ci_method``.
    """
    if ci_method not in LENGTH_CI_METHODS:
        raise ValueError(f"ci_method must be one of {sorted(LENGTH_CI_METHODS)}, got {ci_method!r}")
    if model not in scores.columns:
        raise InputError("column missing", source=source, field=model)
    rows = []
    for m_name, sub in scores.groupby(model, sort=False):
        pairs, L, _ = _pair_differences(sub, metric=length, groups=groups, unit=unit, group=group, source=source)
        for metric in metrics:
            _, D, _ = _pair_differences(sub, metric=metric, groups=groups, unit=unit, group=group, source=source)
            for k, (i, j) in enumerate(pairs):
                ok = ~(np.isnan(D[k]) | np.isnan(L[k]))
                y, x = D[k, ok], L[k, ok]
                row = {model: m_name, "metric": metric, f"{group}_a": groups[i], f"{group}_b": groups[j],
                       "n": int(ok.sum()), "mean_diff": y.mean() if ok.any() else np.nan,
                       "mean_len_diff": x.mean() if ok.any() else np.nan}
                rng = (np.random.default_rng(derive_seed(seed, m_name, metric, k))
                       if ci_method == "residual_bootstrap_t" else None)
                row.update(_intercept_fit(y, x, confidence, rng=rng, n_boot=n_boot))
                rows.append(row)
    return pd.DataFrame(rows)


def intercept_interval(y: np.ndarray, x: np.ndarray, *, rng: np.random.Generator | None, n_boot: int = 2000,
                       confidence: float = 0.95) -> dict[str, float | str]:
    """OLS of ``y`` on ``x`` (one unit per entry) and an interval for the intercept.

    With ``rng``: residual bootstrap-t. The centred residuals, rescaled by
    ``sqrt(K / (K - 2))`` to the variance of the errors, are resampled with
    replacement onto the fitted values (``x`` fixed) ``n_boot`` times; each
    resample gives ``t_b = (a_b - a) / se_b`` with the OLS standard error of
    that resample's fit. The bounds ``a - c t_(1-q) se`` and ``a - c t_(q) se``
    (``c = K / (K - 1)``, the small-sample widening the mean intervals use) are
    unioned with the OLS t interval ``a ± t_(K-2) se``: the bootstrap-t carries
    the skewness of the errors, which the t interval ignores, and the t interval
    the heavy symmetric tails a handful of resampled residuals understate.
    Without ``rng``: the OLS t interval alone. Returns ``slope``, ``adj_diff``,
    ``adj_ci_low``, ``adj_ci_high``, ``adj_p`` (OLS t test of the intercept) and
    ``ci_method``.
    """
    return _intercept_fit(np.asarray(y, float), np.asarray(x, float), confidence, rng=rng, n_boot=n_boot)


def _intercept_fit(y: np.ndarray, x: np.ndarray, confidence: float, *, rng: np.random.Generator | None = None,
                   n_boot: int = 2000) -> dict[str, float | str]:
    how = LENGTH_CI_METHODS["residual_bootstrap_t" if rng is not None else "ols_t"]
    nan = {"slope": np.nan, "adj_diff": np.nan, "adj_ci_low": np.nan, "adj_ci_high": np.nan, "adj_p": np.nan}
    n = len(y)
    sxx = float(((x - x.mean()) ** 2).sum()) if n else 0.0
    if n < 3:
        return {**nan, "ci_method": "none: fewer than 3 units (a slope and an intercept need 3)"}
    if sxx == 0.0:
        return {**nan, "ci_method": "none: the length differences do not vary"}
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    intercept = float(y.mean() - slope * x.mean())
    resid = y - intercept - slope * x
    s2 = float((resid ** 2).sum() / (n - 2))
    v0 = 1.0 / n + x.mean() ** 2 / sxx          # var(intercept) / sigma^2
    se = float(np.sqrt(s2 * v0))
    q = float(stats.t.ppf(0.5 + confidence / 2, n - 2))
    p = float(2 * stats.t.sf(abs(intercept) / se, n - 2)) if se > 0 else (0.0 if intercept else 1.0)
    out = {"slope": slope, "adj_diff": intercept, "adj_p": p}
    if not se > 1e-12 * max(1.0, abs(intercept)):
        return {**out, "adj_p": np.nan, "adj_ci_low": np.nan, "adj_ci_high": np.nan,  # no spread: no test either
                "ci_method": "none: the fit has no residual spread"}
    lo, hi = intercept - q * se, intercept + q * se
    if rng is not None:
        a = (1 - confidence) / 2
        intercept_weights = 1.0 / n - x.mean() * (x - x.mean()) / sxx   # intercept = weights @ y
        r0 = (resid - resid.mean()) * np.sqrt(n / (n - 2))
        u = r0[rng.integers(0, n, size=(n_boot, n))]          # resampled errors, x fixed
        da = u @ intercept_weights                             # a_b - a
        xc = x - x.mean()
        ub = u - u.mean(axis=1, keepdims=True)
        eb = ub - np.outer(ub @ xc / sxx, xc)                  # residuals of each resample's fit
        # floored as in intervals.floored_se: a resample that drew one residual throughout has no
        # spread, and its t must stay finite
        from .intervals import floored_se
        seb = floored_se(np.sqrt((eb ** 2).sum(axis=1) / (n - 2) * v0)[None, :], np.array([se]), n)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            tb = da / seb
        tb = np.where(np.isnan(tb), 0.0, tb)
        t_lo, t_hi = np.quantile(tb, [a, 1 - a])
        k = n / (n - 1)
        lo, hi = min(lo, intercept - k * t_hi * se), max(hi, intercept - k * t_lo * se)
    return {**out, "adj_ci_low": float(lo), "adj_ci_high": float(hi), "ci_method": how}


def symmetry_checks(scores: pd.DataFrame, *, metrics: Sequence[str], groups: Sequence[str], model: str,
                    unit: str, group: str, max_gap_sd: float = 0.25, extreme_z: float = 3.0,
                    source: str = "scores") -> pd.DataFrame:
    """Is each pair's distribution of differences roughly symmetric?

    The signed-rank test assumes differences symmetric about their centre.
    Per pair: ``mean``, ``median``, ``gap_sd`` = |mean − median| / sd(D),
    sample ``skewness`` (bias-corrected), ``n_extreme`` = differences more
    than ``extreme_z`` SDs from the mean (leverage points), and
    ``symmetric`` = ``gap_sd <= max_gap_sd`` and no extreme point. All-zero
    differences are symmetric trivially (``gap_sd`` 0). Missing values are
    left out.
    """
    if model not in scores.columns:
        raise InputError("column missing", source=source, field=model)
    rows = []
    for m_name, sub in scores.groupby(model, sort=False):
        for metric in metrics:
            pairs, D, _ = _pair_differences(sub, metric=metric, groups=groups, unit=unit, group=group,
                                            source=source)
            for k, (i, j) in enumerate(pairs):
                d = D[k][~np.isnan(D[k])]
                rows.append({model: m_name, "metric": metric, f"{group}_a": groups[i], f"{group}_b": groups[j],
                             **_symmetry(d, max_gap_sd=max_gap_sd, extreme_z=extreme_z)})
    return pd.DataFrame(rows)


def _symmetry(d: np.ndarray, *, max_gap_sd: float, extreme_z: float) -> dict[str, object]:
    n = len(d)
    if n < 3:
        return {"n": n, "mean": np.nan, "median": np.nan, "gap_sd": np.nan, "skewness": np.nan,
                "n_extreme": 0, "symmetric": False}
    mean, median, sd = float(d.mean()), float(np.median(d)), float(d.std(ddof=1))
    if sd == 0.0:
        return {"n": n, "mean": mean, "median": median, "gap_sd": 0.0, "skewness": 0.0,
                "n_extreme": 0, "symmetric": True}
    gap = abs(mean - median) / sd
    n_extreme = int((np.abs(d - mean) / sd > extreme_z).sum())
    skew = float(stats.skew(d, bias=False))
    return {"n": n, "mean": mean, "median": median, "gap_sd": gap, "skewness": skew,
            "n_extreme": n_extreme, "symmetric": bool(gap <= max_gap_sd and n_extreme == 0)}
