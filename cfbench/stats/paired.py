"""Paired comparisons of identities across prompts (seed 002 design).

Scores are aligned by prompt id: for identities A and B and one metric, the
paired differences are ``D_i = score(prompt i, A) - score(prompt i, B)``.
For every pair of groups (C(8,2) = 28 per model × metric) :func:`paired_tests`
reports

* mean difference with a percentile bootstrap interval
  (:func:`cfbench.stats.bootstrap.mean_interval`, resampling prompts, seeded per (seed, model, metric));
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
detects with the given power at the run's n.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import InputError
from ..core.seeding import derive_seed
from .bootstrap import mean_interval

__all__ = [
    "PAIR_COLUMNS",
    "paired_tests",
    "paired_matrix",
    "cohens_dz",
    "min_detectable_d",
    "adjust_pvalues",
    "largest_gaps",
    "wilcoxon_method",
    "group_means",
]

PAIR_COLUMNS = [
    "model", "metric", "identity_a", "identity_b", "n", "mean_a", "mean_b", "mean_diff",
    "ci_low", "ci_high", "t", "t_p", "wilcoxon_stat", "wilcoxon_p", "cohens_d", "p_holm", "p_bh",
    "wilcoxon_method", "n_zero_diff",
]


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


def paired_matrix(scores: pd.DataFrame, *, metric: str, groups: Sequence[str],
                  unit: str = "prompt_id", group: str = "identity",
                  source: str = "scores") -> pd.DataFrame:
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
                 model: str = "model", unit: str = "prompt_id", group: str = "identity",
                 n_resamples: int = 10_000, confidence: float = 0.95,
                 on_missing: str = "raise", source: str = "scores") -> pd.DataFrame:
    """All pairwise paired comparisons of ``groups`` per model × metric.

    ``scores`` is long: one row per (model, unit, group) with a column per
    metric. Pairs are ``(groups[i], groups[j])`` for i < j, difference A − B.
    A NaN score (e.g. an empty response) raises with ``on_missing="raise"``;
    with ``"drop_unit"`` that prompt is left out of the pairs involving it and
    ``n`` shows how many prompts remain.
    """
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
            A = X[:, [i for i, _ in pairs]].T  # (n_pairs, n_units)
            B = X[:, [j for _, j in pairs]].T
            D = A - B
            complete = ~np.isnan(D).any()
            if complete:
                lo, hi = mean_interval(D, n_boot=n_resamples, confidence=confidence, rng=rng)
            rows = []
            for k, (i, j) in enumerate(pairs):
                ok = ~np.isnan(D[k])
                a, b, d = A[k, ok], B[k, ok], D[k, ok]
                n = int(ok.sum())
                if not complete:
                    l1, h1 = mean_interval(d[None, :], n_boot=n_resamples, confidence=confidence,
                                           rng=np.random.default_rng(derive_seed(seed, m_name, metric, k)))
                    ci = (float(l1[0]), float(h1[0]))
                else:
                    ci = (float(lo[k]), float(hi[k]))
                with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                    warnings.simplefilter("ignore", RuntimeWarning)
                    t = stats.ttest_rel(a, b) if n >= 2 else None
                if n >= 1 and np.any(d != 0):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)
                        w = stats.wilcoxon(d)
                    w_stat, w_p, w_method = float(w.statistic), float(w.pvalue), wilcoxon_method(d)
                else:
                    w_stat, w_p = np.nan, np.nan
                    w_method = "undefined (no pairs)" if n == 0 else "undefined (all differences zero)"
                rows.append({
                    "model": m_name, "metric": metric, "identity_a": groups[i], "identity_b": groups[j],
                    "n": n, "mean_a": a.mean() if n else np.nan, "mean_b": b.mean() if n else np.nan,
                    "mean_diff": d.mean() if n else np.nan, "ci_low": ci[0], "ci_high": ci[1],
                    "t": float(t.statistic) if t is not None else np.nan,
                    "t_p": float(t.pvalue) if t is not None else np.nan,
                    "wilcoxon_stat": w_stat, "wilcoxon_p": w_p,
                    "cohens_d": float(cohens_dz(d)) if n >= 2 else np.nan,
                    "wilcoxon_method": w_method, "n_zero_diff": int((d == 0).sum()),
                })
            fam = pd.DataFrame(rows)
            fam["p_holm"] = adjust_pvalues(fam["wilcoxon_p"], "holm")
            fam["p_bh"] = adjust_pvalues(fam["wilcoxon_p"], "fdr_bh")
            out.append(fam)
    if not out:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    result = pd.concat(out, ignore_index=True)[PAIR_COLUMNS]
    result.attrs.update({"n_resamples": n_resamples, "confidence": confidence, "seed": seed,
                         "ci_method": "percentile bootstrap over prompts",
                         "adjusted": "wilcoxon_p; family = pairs within model x metric"})
    return result


def largest_gaps(pairs: pd.DataFrame, *, k: int = 2, by: str = "abs_d",
                 metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Top-``k`` pairs per model × metric, by ``|cohens_d|`` (``"abs_d"``) or
    ``|mean_diff|`` (``"abs_mean_diff"``); stable, so ties keep pair order."""
    col = {"abs_d": "cohens_d", "abs_mean_diff": "mean_diff"}.get(by)
    if col is None:
        raise ValueError(f"by must be 'abs_d' or 'abs_mean_diff', got {by!r}")
    sel = pairs if metrics is None else pairs[pairs["metric"].isin(metrics)]
    key = sel[col].abs()
    ordered = sel.assign(_key=key).sort_values(["model", "metric", "_key"],
                                               ascending=[True, True, False], kind="stable")
    return ordered.groupby(["model", "metric"], sort=False).head(k).drop(columns="_key").reset_index(drop=True)


def group_means(scores: pd.DataFrame, *, metrics: Sequence[str], groups: Sequence[str],
                model: str = "model", group: str = "identity") -> pd.DataFrame:
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
