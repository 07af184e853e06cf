"""Group rates and gaps on tidy frames: selection rate, TPR, FPR per slice, their gaps and intervals.

Pure functions of a frame with one row per decision. Every column is named
by the caller (no study defaults): ``selected`` holds the boolean decision
(e.g. "auto-served"), ``positive`` the boolean reference label (e.g. "reviewers
say ready"), ``by`` the slice.

Per slice: selection rate (selected / all), true positive rate (selected /
positives) and false positive rate (selected / negatives), with counts. Gaps
are max − min across slices. Per-slice rate intervals are exact Clopper-Pearson
(:func:`rate_table`; Wilson only on request, :func:`wilson_table`, because at the
small slices audits have it undercovers near 0 and 1, ``docs/statistics.md``);
Newcombe for a difference of two independent slices (:func:`gap_interval`) and,
for matched slices, :func:`paired_rate_diff_interval`.

>>> import pandas as pd
>>> f = pd.DataFrame({"v": ["a", "b", "a", "b"], "sel": [True, False, True, True],
...                   "pos": [True, True, False, False]})
>>> slice_rates(f, by="v", selected="sel", positive="pos")["tpr"].tolist()
[1.0, 0.0]
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.stats.bootstrap import percentile_interval, resample_indices
from cfbench.stats.intervals import clopper_pearson
from cfbench.stats.proportions import newcombe_interval, wilson_interval

__all__ = [
    "RATE_METRICS",
    "slice_rates",
    "metric_gap",
    "tpr_gap",
    "fpr_gap",
    "selection_gap",
    "pairwise_gaps",
    "RATE_CI_METHODS",
    "rate_table",
    "wilson_table",
    "gap_interval",
    "score_band_labels",
    "score_bands",
    "calibration_table",
    "intersection_rates",
    "paired_outcomes",
    "BootstrapInterval",
    "paired_rate_diff_bootstrap",
    "paired_rate_diff_interval",
]

#: The three rates, in display order.
RATE_METRICS = ("selection", "tpr", "fpr")

#: rate -> (numerator count column, denominator count column) in :func:`slice_rates`
_METRIC_COUNTS = {"selection": ("n_selected", "n"), "tpr": ("tp", "n_pos"), "fpr": ("fp", "n_neg")}


def _check_metric(metric: str) -> None:
    if metric not in RATE_METRICS:
        raise InputError(f"unknown rate (known: {list(RATE_METRICS)})", source="groups", field=metric)


def slice_rates(frame: pd.DataFrame, *, by: str | Sequence[str], selected: str, positive: str,
                order: Sequence[Any] | None = None) -> pd.DataFrame:
    """Selection rate, TPR and FPR per slice, with their counts.

    Returns columns ``n, n_selected, n_pos, tp, n_neg, fp, selection, tpr, fpr``
    indexed by the slice (first-appearance order unless ``order``). A slice
    without positives (negatives) has TPR (FPR) NaN.
    """
    keys = [by] if isinstance(by, str) else list(by)
    pos = frame[positive].astype(bool).to_numpy()
    sel = frame[selected].astype(bool).to_numpy()
    work = pd.DataFrame({**{k: frame[k].to_numpy() for k in keys}, "n": 1, "n_selected": sel.astype(int),
                         "n_pos": pos.astype(int), "tp": (sel & pos).astype(int), "n_neg": (~pos).astype(int),
                         "fp": (sel & ~pos).astype(int)})
    g = work.groupby(keys, sort=False)[["n", "n_selected", "n_pos", "tp", "n_neg", "fp"]].sum()
    if order is not None:
        g = g.loc[list(order)]
    with np.errstate(invalid="ignore", divide="ignore"):
        g["selection"] = g["n_selected"] / g["n"]
        g["tpr"] = np.where(g["n_pos"] > 0, g["tp"] / g["n_pos"].where(g["n_pos"] > 0, 1), np.nan)
        g["fpr"] = np.where(g["n_neg"] > 0, g["fp"] / g["n_neg"].where(g["n_neg"] > 0, 1), np.nan)
    g.index.name = keys[0] if len(keys) == 1 else None
    return g


def metric_gap(rates: pd.DataFrame, metric: str) -> float:
    """max − min of ``metric`` across slices (NaN if any slice's rate is undefined)."""
    _check_metric(metric)
    values = rates[metric].to_numpy(dtype=float)
    if len(values) < 2 or np.isnan(values).any():
        return math.nan
    return float(values.max() - values.min())


def tpr_gap(rates: pd.DataFrame) -> float:
    """Equal-opportunity gap: max − min TPR across slices."""
    return metric_gap(rates, "tpr")


def fpr_gap(rates: pd.DataFrame) -> float:
    """max − min FPR across slices (with the TPR gap: equalized odds)."""
    return metric_gap(rates, "fpr")


def selection_gap(rates: pd.DataFrame) -> float:
    """max − min selection rate across slices (demographic-parity gap)."""
    return metric_gap(rates, "selection")


def pairwise_gaps(rates: pd.DataFrame, metrics: Sequence[str] = RATE_METRICS) -> pd.DataFrame:
    """Every pairwise difference ``slice_a − slice_b`` (and its absolute value) per metric."""
    rows = []
    for a, b in itertools.combinations(list(rates.index), 2):
        for m in metrics:
            diff = float(rates.at[a, m] - rates.at[b, m])
            rows.append({"metric": m, "slice_a": a, "slice_b": b, "difference": diff, "gap": abs(diff)})
    return pd.DataFrame(rows, columns=["metric", "slice_a", "slice_b", "difference", "gap"])


#: ``method`` of :func:`rate_table` -> the ``ci_method`` text its rows carry
RATE_CI_METHODS = {
    "clopper-pearson": "clopper-pearson (exact)",
    "wilson": "wilson score (undercovers near 0 and 1 at small n; docs/statistics.md)",
}


def rate_table(rates: pd.DataFrame, metric: str, *, method: str = "clopper-pearson",
               confidence: float = 0.95) -> pd.DataFrame:
    """Interval per slice for ``metric`` (``selection``/``tpr``/``fpr``) of :func:`slice_rates`.

    ``method="clopper-pearson"`` (default): the exact binomial interval, whose
    one-sided misses stay at or below 2.5 % for every true rate and n (checked
    by simulation in ``tests/test_coverage_groups.py`` at the slice sizes
    audits use, 4-50 rows). ``method="wilson"``: the Wilson score interval,
    kept for reproducing texts that print it; at those sizes its coverage
    falls to about 83 % for true rates near 0 or 1.
    Columns ``slice, metric, successes, n, estimate, ci_low, ci_high, ci_method``;
    a slice with ``n == 0`` has NaN estimate and bounds and ``ci_method``
    ``none: no row in the denominator``.

    >>> import pandas as pd
    >>> r = pd.DataFrame({"tp": [0], "n_pos": [8]}, index=["a"])
    >>> row = rate_table(r, "tpr").iloc[0]
    >>> (float(row["ci_low"]), round(float(row["ci_high"]), 3), row["ci_method"])
    (0.0, 0.369, 'clopper-pearson (exact)')
    """
    _check_metric(metric)
    if method not in RATE_CI_METHODS:
        raise InputError(f"unknown interval method (known: {list(RATE_CI_METHODS)})", source="rate_table",
                         field="method")
    num, den = _METRIC_COUNTS[metric]
    rows = []
    for s, r in rates.iterrows():
        k, n = int(r[num]), int(r[den])
        if n == 0:
            low, high, how = math.nan, math.nan, "none: no row in the denominator"
        elif method == "wilson":
            (low, high), how = wilson_interval(k, n, confidence=confidence), RATE_CI_METHODS[method]
        else:
            lo, hi = clopper_pearson(np.array([k], float), np.array([n], float), confidence)
            low, high, how = float(lo[0]), float(hi[0]), RATE_CI_METHODS[method]
        rows.append({"slice": s, "metric": metric, "successes": k, "n": n,
                     "estimate": k / n if n else math.nan, "ci_low": low, "ci_high": high, "ci_method": how})
    return pd.DataFrame(rows, columns=["slice", "metric", "successes", "n", "estimate", "ci_low", "ci_high",
                                       "ci_method"])


def wilson_table(rates: pd.DataFrame, metric: str, *, confidence: float = 0.95) -> pd.DataFrame:
    """:func:`rate_table` with the Wilson score interval (for reproducing texts that print Wilson).

    Not the default of any cfbench table: at 4-50 rows per slice Wilson covers
    as little as 83 % for true rates near 0 or 1 (``docs/statistics.md``).
    """
    return rate_table(rates, metric, method="wilson", confidence=confidence)


def gap_interval(rates: pd.DataFrame, metric: str, a: Any, b: Any, *, confidence: float = 0.95) -> dict:
    """Newcombe interval of ``rate[a] − rate[b]`` and the upper bound it puts on the gap |a − b|.

    Newcombe's hybrid score interval treats the two slices as independent
    samples; for matched slices use :func:`paired_rate_diff_interval`. No
    cfbench table reports it (ShopFlow's contract refuses it for its matched
    pairs); ``docs/statistics.md`` gives its simulated coverage.
    Returns ``difference, ci_low, ci_high, gap_upper`` with
    ``gap_upper = max(|ci_low|, |ci_high|)``; all NaN when a slice has no rows
    in the rate's denominator.
    """
    _check_metric(metric)
    num, den = _METRIC_COUNTS[metric]
    k1, n1, k2, n2 = (int(rates.at[a, num]), int(rates.at[a, den]), int(rates.at[b, num]), int(rates.at[b, den]))
    if n1 == 0 or n2 == 0:
        return {"difference": math.nan, "ci_low": math.nan, "ci_high": math.nan, "gap_upper": math.nan}
    low, high = newcombe_interval(k1, n1, k2, n2, confidence=confidence)
    return {"difference": k1 / n1 - k2 / n2, "ci_low": low, "ci_high": high,
            "gap_upper": max(abs(low), abs(high))}


def score_band_labels(edges: Sequence[float]) -> list[str]:
    """Labels for the bands cut at ``edges``: ``below e0``, ``e0 to <e1``, …, ``ek and above``."""
    e = list(edges)
    labels = [f"below {e[0]:.2f}"]
    labels += [f"{a:.2f} to <{b:.2f}" for a, b in zip(e[:-1], e[1:])]
    labels.append(f"{e[-1]:.2f} and above")
    return labels


def score_bands(scores: Iterable[float], edges: Sequence[float]) -> pd.Categorical:
    """Band of each score: left-closed bins cut at ``edges`` (strictly increasing, inside (0, 1))."""
    e = [float(x) for x in edges]
    if not e or any(not 0.0 < x < 1.0 for x in e) or any(b <= a for a, b in zip(e, e[1:])):
        raise InputError(f"band edges must be strictly increasing numbers inside (0, 1), got {list(edges)!r}",
                         source="score_bands", field="edges")
    s = np.asarray(list(scores), dtype=float)
    idx = np.searchsorted(e, s, side="right")  # a score equal to an edge falls in the upper band
    return pd.Categorical.from_codes(idx, categories=score_band_labels(e), ordered=True)


def calibration_table(frame: pd.DataFrame, *, score: str, positive: str, by: str, edges: Sequence[float],
                      min_support: int, order: Sequence[Any] | None = None) -> pd.DataFrame:
    """Observed positive rate per (slice, score band), non-empty cells only.

    Columns ``<by>, band, n, n_ready, observed_ready, sufficient`` (``n_ready``
    counts positives); ``sufficient`` is ``n >= min_support``.
    """
    work = pd.DataFrame({by: frame[by].to_numpy(), "band": score_bands(frame[score], edges),
                         "ready": frame[positive].astype(int).to_numpy()})
    g = work.groupby([by, "band"], observed=True, sort=False)["ready"].agg(["size", "sum"]).reset_index()
    g.columns = [by, "band", "n", "n_ready"]
    g["observed_ready"] = g["n_ready"] / g["n"]
    g["sufficient"] = g["n"] >= min_support
    slice_order = list(order) if order is not None else list(dict.fromkeys(frame[by]))
    g["_s"] = g[by].map({s: i for i, s in enumerate(slice_order)})
    g = g.sort_values(["_s", "band"]).drop(columns="_s").reset_index(drop=True)
    g["band"] = g["band"].astype(str)
    return g


def intersection_rates(frame: pd.DataFrame, *, dims: Sequence[str], selected: str, positive: str,
                       min_positive: int, min_negative: int) -> pd.DataFrame:
    """Support and rates for every cell of ``dims`` (e.g. channel × variant), small cells suppressed.

    ``tpr_status`` is ``eligible`` when the cell has at least ``min_positive``
    positives, else ``insufficient`` and its TPR is NaN (never computed into
    the table, so no report built from it can show it); the same for FPR.
    """
    rates = slice_rates(frame, by=list(dims), selected=selected, positive=positive)
    out = rates[["n", "n_pos", "n_neg"]].reset_index()
    tpr_ok = rates["n_pos"].to_numpy() >= min_positive
    fpr_ok = rates["n_neg"].to_numpy() >= min_negative
    out["tpr_status"] = np.where(tpr_ok, "eligible", "insufficient")
    out["tpr"] = np.where(tpr_ok, rates["tpr"].to_numpy(), np.nan)
    out["fpr_status"] = np.where(fpr_ok, "eligible", "insufficient")
    out["fpr"] = np.where(fpr_ok, rates["fpr"].to_numpy(), np.nan)
    return out.sort_values(list(dims)).reset_index(drop=True)


def paired_outcomes(frame: pd.DataFrame, *, unit: str, by: str, variants: Sequence[str], outcome: str,
                    positive: str) -> pd.DataFrame:
    """Wide frame, one row per matched unit: ``a``/``b`` (the outcome under each variant) and ``positive``."""
    if len(variants) != 2:
        raise InputError(f"a paired comparison needs exactly two variants, got {list(variants)}",
                         source="paired_outcomes", field=by)
    wide = frame.pivot(index=unit, columns=by, values=outcome)
    order = list(dict.fromkeys(frame[unit]))
    wide = wide.loc[order, list(variants)].astype(bool)
    label = frame.groupby(unit, sort=False)[positive].first().loc[order].astype(bool)
    return pd.DataFrame({"a": wide[variants[0]].to_numpy(), "b": wide[variants[1]].to_numpy(),
                         "positive": label.to_numpy()}, index=pd.Index(order, name=unit))


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval and how it was obtained."""

    estimate: float
    ci_low: float
    ci_high: float
    n_boot: int
    n_valid: int     # resamples in which the statistic was defined
    confidence: float
    seed: int


def paired_rate_diff_bootstrap(paired: pd.DataFrame, *, among: bool, n_boot: int, seed: int,
                               confidence: float = 0.95) -> BootstrapInterval:
    """Percentile bootstrap of rate(a) − rate(b) among units whose ``positive`` equals ``among``.

    No cfbench table or finding reports it: its interval is ``[0, 0]`` when no
    unit is discordant and it undercovers at small n. Use
    :func:`paired_rate_diff_interval` (coverage simulated in ``docs/statistics.md``).

    ``paired`` is :func:`paired_outcomes`. ``among=True`` gives the TPR
    difference, ``among=False`` the FPR difference. Units are resampled whole,
    so both variants of a pair stay together. Resamples without any unit of
    the class leave the difference undefined and are left out (``n_valid``).
    The signed difference is bootstrapped, not |gap|, whose bootstrap
    distribution is biased away from zero.
    """
    if n_boot < 1:
        raise InputError("must be positive", source="paired_rate_diff_bootstrap", field="n_boot")
    cls = paired["positive"].to_numpy() == among
    if not cls.any():
        raise InputError(f"no unit with positive == {among}; the rate is undefined",
                         source="paired_rate_diff_bootstrap", field="positive")
    a = (paired["a"].to_numpy() & cls).astype(float)
    b = (paired["b"].to_numpy() & cls).astype(float)
    r = cls.astype(float)
    est = (a.sum() - b.sum()) / r.sum()
    idx = resample_indices(len(paired), n_boot, np.random.default_rng(seed))
    den = r[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        diffs = (a[idx].sum(axis=1) - b[idx].sum(axis=1)) / den
    valid = diffs[den > 0]
    low, high = percentile_interval(valid, confidence)
    return BootstrapInterval(float(est), float(low), float(high), int(n_boot), int(valid.size),
                             float(confidence), int(seed))


def paired_rate_diff_interval(paired: pd.DataFrame, *, among: bool, confidence: float = 0.95) -> dict:
    """rate(a) − rate(b) among units whose ``positive`` equals ``among``, with a paired interval that
    holds its level at small n: Tango's score interval for matched pairs on the units' discordant counts
    (:func:`cfbench.stats.intervals.paired_difference` with ``pairing="items"``, one 0/1 outcome per unit
    and variant). Until 2026-11-29 it was the MOVER of two Clopper-Pearson intervals with the matched
    outcomes' correlation capped at 0, which ignored the pairing: 1.26-1.63 sampling spreads wide at 8-60
    units where Tango takes 1.02-1.46, covering at least 95.7 % (``benchmarks/bench_matched_slices.py``).

    The alternative to :func:`paired_rate_diff_bootstrap`, whose percentile interval is ``[0, 0]``
    when neither variant is ever selected and undercovers at small n (``docs/statistics.md``).
    Returns ``estimate``, ``ci_low``, ``ci_high``, ``n_units``, ``ci_method``; fewer than two units
    of the class give NaN bounds and a ``none:`` method.
    """
    from cfbench.stats.intervals import paired_difference

    cls = paired["positive"].to_numpy() == among
    if not cls.any():
        raise InputError(f"no unit with positive == {among}; the rate is undefined",
                         source="paired_rate_diff_interval", field="positive")
    a = paired["a"].to_numpy()[cls].astype(float)
    b = paired["b"].to_numpy()[cls].astype(float)
    one = np.ones(a.size)
    d = paired_difference(a, one, b, one, kind="rate", confidence=confidence, pairing="items")
    return {"estimate": float(d["estimate"]), "ci_low": float(d["ci_low"]), "ci_high": float(d["ci_high"]),
            "n_units": int(a.size), "ci_method": str(d["ci_method"])}
