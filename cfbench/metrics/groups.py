"""Group metrics for matched-pair routing audits (ShopFlow, seed 001).

Everything here is a pure function of a validated pair frame
(:func:`cfbench.io.pairs.load_pairs`): one row per (pair_id, variant) with
``expected_ready``, ``score``, ``channel`` and ``evidence_passed``.

Routing: a row whose evidence gate failed is ``blocked_by_evidence``;
otherwise it is ``auto_serve`` when ``score >= threshold`` and
``human_review`` below. "Selected" means routed to ``auto_serve``; a
*positive* is a row reviewers marked ready (``expected_ready``).

Per slice (a variant, by default) we report the selection rate
(auto-served / all rows), the true positive rate (auto-served / ready rows)
and the false positive rate (auto-served / needs-review rows) with their
counts; gaps are max − min across slices (and every pairwise difference).
Intervals are Wilson score intervals from :func:`scipy.stats.binomtest`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from cfbench.core.errors import InputError
from cfbench.stats.bootstrap import percentile_interval, resample_indices
from cfbench.stats.proportions import wilson_interval

__all__ = [
    "ROUTES",
    "route_rows",
    "pair_flips",
    "slice_rates",
    "metric_gap",
    "tpr_gap",
    "fpr_gap",
    "selection_gap",
    "pairwise_gaps",
    "wilson_table",
    "support_check",
    "FairnessContract",
    "ReleaseRequirement",
    "metric_checks",
    "score_band_labels",
    "score_bands",
    "calibration_table",
    "intersection_table",
    "stage_attribution",
    "compare_candidate",
    "ReleaseDecision",
    "release_decision",
    "McNemarResult",
    "mcnemar_exact",
    "BootstrapInterval",
    "paired_bootstrap_tpr_diff",
    "threshold_sweep",
    "PairAudit",
    "audit_pairs",
]

#: The three routes, in display order.
ROUTES = ("auto_serve", "human_review", "blocked_by_evidence")

_RATE_METRICS = ("selection", "tpr", "fpr")


def _check_threshold(threshold: float, *, name: str = "threshold") -> float:
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise InputError(f"expected a number in [0, 1], got {threshold!r}", source="routing",
                         field=name) from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InputError(f"threshold {threshold!r} is outside [0, 1]", source="routing", field=name)
    return value


def _variants(frame: pd.DataFrame, variants: Sequence[str] | None) -> list[str]:
    return list(variants) if variants is not None else list(dict.fromkeys(frame["variant"]))


def route_rows(frame: pd.DataFrame, threshold: float, *, score_column: str = "score") -> pd.DataFrame:
    """Return a copy of ``frame`` with ``route`` and ``selected`` columns.

    >>> import pandas as pd
    >>> f = pd.DataFrame({"score": [0.7, 0.69, 0.9], "evidence_passed": [True, True, False]})
    >>> route_rows(f, 0.70)["route"].tolist()
    ['auto_serve', 'human_review', 'blocked_by_evidence']
    """
    t = _check_threshold(threshold)
    scores = frame[score_column].to_numpy(dtype=float)
    if np.isnan(scores).any():
        i = int(np.flatnonzero(np.isnan(scores))[0])
        rec = frame.iloc[i].get("pair_id", i)
        raise InputError("score is NaN; cannot route an unscored row", source="routing",
                         record=rec, field=score_column)
    evidence = frame["evidence_passed"].to_numpy(dtype=bool)
    out = frame.copy()
    out["route"] = np.where(~evidence, "blocked_by_evidence",
                            np.where(scores >= t, "auto_serve", "human_review"))
    out["selected"] = out["route"].eq("auto_serve")
    return out


def _routed(frame: pd.DataFrame) -> pd.DataFrame:
    if "route" not in frame.columns or "selected" not in frame.columns:
        raise InputError("frame has no routes; call route_rows(frame, threshold) first",
                         source="routing", field="route")
    return frame


def pair_flips(routed: pd.DataFrame, *, variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Pairs whose variants received different routes.

    Returns one row per flipped pair (in first-appearance order) with
    ``pair_id`` and one ``route_<variant>`` column per variant.
    """
    _routed(routed)
    vs = _variants(routed, variants)
    wide = routed.pivot(index="pair_id", columns="variant", values="route")
    order = list(dict.fromkeys(routed["pair_id"]))
    wide = wide.loc[order, vs]
    flipped = wide.nunique(axis=1) > 1
    out = wide.loc[flipped].reset_index()
    out.columns = ["pair_id"] + [f"route_{v}" for v in vs]
    return out


def slice_rates(routed: pd.DataFrame, *, by: str | Sequence[str] = "variant",
                order: Sequence[Any] | None = None) -> pd.DataFrame:
    """Selection rate, TPR and FPR per slice, with their counts.

    Columns: ``n, n_selected, n_pos, tp, n_neg, fp, selection, tpr, fpr``;
    the index is the slice (first-appearance order unless ``order`` is given).
    A slice without positives (negatives) has TPR (FPR) NaN.
    """
    _routed(routed)
    keys = [by] if isinstance(by, str) else list(by)
    pos = routed["expected_ready"].astype(bool)
    sel = routed["selected"].astype(bool)
    work = pd.DataFrame({
        **{k: routed[k] for k in keys},
        "one": 1, "sel": sel.astype(int), "pos": pos.astype(int),
        "tp": (sel & pos).astype(int), "neg": (~pos).astype(int), "fp": (sel & ~pos).astype(int),
    })
    g = work.groupby(keys, sort=False)[["one", "sel", "pos", "tp", "neg", "fp"]].sum()
    g.columns = ["n", "n_selected", "n_pos", "tp", "n_neg", "fp"]
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
    if metric not in _RATE_METRICS:
        raise ValueError(f"metric must be one of {_RATE_METRICS}, got {metric!r}")
    values = rates[metric].to_numpy(dtype=float)
    if len(values) < 2 or np.isnan(values).any():
        return math.nan
    return float(values.max() - values.min())


def tpr_gap(rates: pd.DataFrame) -> float:
    """Equal-opportunity gap: max − min TPR across slices."""
    return metric_gap(rates, "tpr")


def fpr_gap(rates: pd.DataFrame) -> float:
    """max − min FPR across slices (the equalized-odds guardrail)."""
    return metric_gap(rates, "fpr")


def selection_gap(rates: pd.DataFrame) -> float:
    """max − min selection rate across slices (demographic-parity gap)."""
    return metric_gap(rates, "selection")


def pairwise_gaps(rates: pd.DataFrame, metrics: Sequence[str] = _RATE_METRICS) -> pd.DataFrame:
    """Every pairwise difference ``slice_a − slice_b`` (and its absolute value) per metric."""
    rows = []
    for a, b in itertools.combinations(list(rates.index), 2):
        for m in metrics:
            diff = float(rates.at[a, m] - rates.at[b, m])
            rows.append({"metric": m, "slice_a": a, "slice_b": b, "difference": diff, "gap": abs(diff)})
    return pd.DataFrame(rows, columns=["metric", "slice_a", "slice_b", "difference", "gap"])


_METRIC_COUNTS = {"selection": ("n_selected", "n"), "tpr": ("tp", "n_pos"), "fpr": ("fp", "n_neg")}


def wilson_table(rates: pd.DataFrame, metric: str = "tpr", *, confidence: float = 0.95) -> pd.DataFrame:
    """Wilson interval per slice for ``metric`` (selection/tpr/fpr).

    Columns ``slice, metric, successes, n, estimate, ci_low, ci_high``; a slice
    with ``n == 0`` has NaN estimate and bounds.
    """
    num, den = _METRIC_COUNTS[metric]
    rows = []
    for s, r in rates.iterrows():
        k, n = int(r[num]), int(r[den])
        low, high = wilson_interval(k, n, confidence=confidence) if n > 0 else (math.nan, math.nan)
        rows.append({"slice": s, "metric": metric, "successes": k, "n": n,
                     "estimate": k / n if n else math.nan, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- contract


@dataclass(frozen=True)
class ReleaseRequirement:
    """One line of a release gate.

    ``source`` is ``"metric_checks"`` or ``"minimum_support"`` for a
    requirement computed from the audit, or ``"attested"`` for one a person
    signs off (its value is ``attested``).
    """

    name: str
    source: str
    attested: bool | None = None

    _SOURCES = ("metric_checks", "minimum_support", "attested")

    def __post_init__(self) -> None:
        if not self.name:
            raise InputError("requirement needs a name", source="contract", field="release_requirements")
        if self.source not in self._SOURCES:
            raise InputError(f"source must be one of {self._SOURCES}, got {self.source!r}",
                             source="contract", record=self.name, field="source")
        if self.source == "attested" and not isinstance(self.attested, bool):
            raise InputError("an attested requirement needs attested: true or false",
                             source="contract", record=self.name, field="attested")
        if self.source != "attested" and self.attested is not None:
            raise InputError("only attested requirements carry a value; computed ones are measured",
                             source="contract", record=self.name, field="attested")


@dataclass(frozen=True)
class FairnessContract:
    """A release contract: which metric matters, how much gap is tolerated,
    how much support each slice needs, and what else must be true to ship.

    ``primary_metric`` is ``"equal_opportunity"`` (TPR gap primary, FPR gap a
    guardrail) or ``"equalized_odds"`` (both primary). Both gaps are checked
    either way; the role is reported.
    """

    primary_metric: str
    max_tpr_gap: float
    max_fpr_gap: float
    min_positive_per_slice: int
    min_negative_per_slice: int
    release_requirements: tuple[ReleaseRequirement, ...] = field(default=())

    _PRIMARY = ("equal_opportunity", "equalized_odds")

    def __post_init__(self) -> None:
        src = "contract"
        if self.primary_metric not in self._PRIMARY:
            raise InputError(f"must be one of {self._PRIMARY}, got {self.primary_metric!r}",
                             source=src, field="primary_metric")
        for name in ("max_tpr_gap", "max_fpr_gap"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or not 0 <= v <= 1:
                raise InputError(f"must be a number in [0, 1], got {v!r}", source=src, field=name)
        for name in ("min_positive_per_slice", "min_negative_per_slice"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"must be a non-negative integer, got {v!r}", source=src, field=name)
        reqs = tuple(self.release_requirements)
        names = [r.name for r in reqs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InputError("requirement listed twice", source=src, record=dup, field="release_requirements")
        object.__setattr__(self, "release_requirements", reqs)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "contract") -> "FairnessContract":
        known = {"primary_metric", "max_tpr_gap", "max_fpr_gap", "min_positive_per_slice",
                 "min_negative_per_slice", "release_requirements"}
        if not isinstance(data, Mapping):
            raise InputError(f"expected a mapping, got {type(data).__name__}", source=source)
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown key (known: {sorted(known)})", source=source, field=unknown[0])
        missing = sorted(known - {"release_requirements"} - set(data))
        if missing:
            raise InputError("missing", source=source, field=missing[0])
        reqs = []
        for i, item in enumerate(data.get("release_requirements") or []):
            if not isinstance(item, Mapping) or set(item) - {"name", "source", "attested"}:
                raise InputError("each requirement is a mapping with name, source and (if attested) attested",
                                 source=source, record=f"release_requirements[{i}]", field="release_requirements")
            reqs.append(ReleaseRequirement(name=item.get("name", ""), source=item.get("source", ""),
                                           attested=item.get("attested")))
        try:
            return cls(primary_metric=data["primary_metric"], max_tpr_gap=data["max_tpr_gap"],
                       max_fpr_gap=data["max_fpr_gap"], min_positive_per_slice=data["min_positive_per_slice"],
                       min_negative_per_slice=data["min_negative_per_slice"], release_requirements=tuple(reqs))
        except InputError as exc:
            raise InputError(exc.problem, source=source, record=exc.record, field=exc.field) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> "FairnessContract":
        """Load a contract from a YAML file (see ``cfbench/studies/shopflow/data/contract.yaml``)."""
        from ..core.files import read_yaml

        return cls.from_mapping(read_yaml(path), source=str(path))


def support_check(rates: pd.DataFrame, contract: FairnessContract) -> pd.DataFrame:
    """Per slice: are there enough positives and negatives for the contract?"""
    out = rates[["n_pos", "n_neg"]].copy()
    out["min_pos"] = contract.min_positive_per_slice
    out["min_neg"] = contract.min_negative_per_slice
    out["pos_ok"] = out["n_pos"] >= out["min_pos"]
    out["neg_ok"] = out["n_neg"] >= out["min_neg"]
    out["status"] = np.where(out["pos_ok"] & out["neg_ok"], "PASS", "FAIL")
    return out


def metric_checks(rates: pd.DataFrame, contract: FairnessContract) -> pd.DataFrame:
    """PASS/FAIL of the TPR and FPR gaps against the contract's limits.

    An undefined gap (a slice without positives or negatives) FAILs.
    """
    rows = []
    for check, value, limit in (("tpr_gap", tpr_gap(rates), contract.max_tpr_gap),
                                ("fpr_gap", fpr_gap(rates), contract.max_fpr_gap)):
        role = "primary" if (check == "tpr_gap" or contract.primary_metric == "equalized_odds") else "guardrail"
        ok = (not math.isnan(value)) and value <= limit
        rows.append({"check": check, "role": role, "value": value, "limit": limit,
                     "status": "PASS" if ok else "FAIL"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- calibration / intersections


def score_band_labels(edges: Sequence[float]) -> list[str]:
    """Labels of the bands cut at ``edges``: below e0, e0 to <e1, ..., ek and above."""
    e = list(edges)
    labels = [f"below {e[0]:.2f}"]
    labels += [f"{a:.2f} to <{b:.2f}" for a, b in zip(e[:-1], e[1:])]
    labels.append(f"{e[-1]:.2f} and above")
    return labels


def score_bands(scores: Iterable[float], edges: Sequence[float] = (0.70, 0.90)) -> pd.Categorical:
    """Band of each score: left-closed bins cut at ``edges`` (sorted, inside (0, 1))."""
    e = [float(x) for x in edges]
    if not e or any(not 0.0 < x < 1.0 for x in e) or any(b <= a for a, b in zip(e, e[1:])):
        raise InputError(f"band edges must be strictly increasing numbers inside (0, 1), got {list(edges)!r}",
                         source="score_bands", field="edges")
    s = np.asarray(list(scores), dtype=float)
    idx = np.searchsorted(e, s, side="right")  # score == edge falls in the upper band
    labels = score_band_labels(e)
    return pd.Categorical.from_codes(idx, categories=labels, ordered=True)


def calibration_table(frame: pd.DataFrame, *, edges: Sequence[float] = (0.70, 0.90),
                      by: str = "variant", min_support: int = 10,
                      order: Sequence[Any] | None = None) -> pd.DataFrame:
    """Observed ready rate per (slice, score band), non-empty cells only.

    Columns ``<by>, band, n, n_ready, observed_ready, sufficient``;
    ``sufficient`` is ``n >= min_support``.
    """
    work = pd.DataFrame({by: frame[by].to_numpy(), "band": score_bands(frame["score"], edges),
                         "ready": frame["expected_ready"].astype(int).to_numpy()})
    g = work.groupby([by, "band"], observed=True, sort=False)["ready"].agg(["size", "sum"]).reset_index()
    g.columns = [by, "band", "n", "n_ready"]
    g["observed_ready"] = g["n_ready"] / g["n"]
    g["sufficient"] = g["n"] >= min_support
    slice_order = list(order) if order is not None else list(dict.fromkeys(frame[by]))
    g["_s"] = g[by].map({s: i for i, s in enumerate(slice_order)})
    g = g.sort_values(["_s", "band"]).drop(columns="_s").reset_index(drop=True)
    g["band"] = g["band"].astype(str)
    return g


def intersection_table(routed: pd.DataFrame, contract: FairnessContract, *,
                       dims: Sequence[str] = ("channel", "variant")) -> pd.DataFrame:
    """Support and rates for every cell of ``dims`` (e.g. channel × variant).

    ``tpr_status`` is ``eligible`` when the cell has at least
    ``contract.min_positive_per_slice`` positives, else ``insufficient`` and its
    TPR is suppressed (NaN); the same for FPR with negatives. Suppressed rates
    are not computed into the table at all, so no report built from it can
    display them.
    """
    rates = slice_rates(routed, by=list(dims))
    out = rates[["n", "n_pos", "n_neg"]].reset_index()
    tpr_ok = rates["n_pos"].to_numpy() >= contract.min_positive_per_slice
    fpr_ok = rates["n_neg"].to_numpy() >= contract.min_negative_per_slice
    out["tpr_status"] = np.where(tpr_ok, "eligible", "insufficient")
    out["tpr"] = np.where(tpr_ok, rates["tpr"].to_numpy(), np.nan)
    out["fpr_status"] = np.where(fpr_ok, "eligible", "insufficient")
    out["fpr"] = np.where(fpr_ok, rates["fpr"].to_numpy(), np.nan)
    return out.sort_values(list(dims)).reset_index(drop=True)


# --------------------------------------------------------------------------- attribution / release


def stage_attribution(routed: pd.DataFrame, *, only_flipped: bool = True) -> pd.DataFrame:
    """Which stage changed between a pair's variants.

    ``evidence_gate`` if the gate outcome differs, else ``judge_or_route`` if
    the route differs, else ``no_observed_flip``.
    """
    _routed(routed)
    rows = []
    for pid, g in routed.groupby("pair_id", sort=False):
        if g["evidence_passed"].nunique() > 1:
            stage = "evidence_gate"
        elif g["route"].nunique() > 1:
            stage = "judge_or_route"
        else:
            stage = "no_observed_flip"
        rows.append({"pair_id": pid, "stage": stage})
    out = pd.DataFrame(rows, columns=["pair_id", "stage"])
    if only_flipped:
        out = out[out["stage"] != "no_observed_flip"].reset_index(drop=True)
    return out


@dataclass(frozen=True)
class ReleaseDecision:
    decision: str                 # "APPROVED" or "BLOCKED"
    missing: tuple[str, ...]      # every requirement not met, in contract order
    requirements: dict[str, bool]  # requirement -> met


def release_decision(contract: FairnessContract, *, metric_checks_pass: bool,
                     support_pass: bool) -> ReleaseDecision:
    """APPROVED only if every requirement of the contract is met.

    Computed requirements take the audit's outcomes; attested ones their
    recorded sign-off. A contract without requirements gates on the two
    computed checks alone.
    """
    reqs = contract.release_requirements or (
        ReleaseRequirement("metric_checks_pass", "metric_checks"),
        ReleaseRequirement("minimum_positive_and_negative_support", "minimum_support"),
    )
    met: dict[str, bool] = {}
    for r in reqs:
        if r.source == "metric_checks":
            met[r.name] = bool(metric_checks_pass)
        elif r.source == "minimum_support":
            met[r.name] = bool(support_pass)
        else:
            met[r.name] = bool(r.attested)
    missing = tuple(n for n, ok in met.items() if not ok)
    return ReleaseDecision("APPROVED" if not missing else "BLOCKED", missing, met)


# --------------------------------------------------------------------------- paired statistics


def _paired_selected(routed: pd.DataFrame, variants: Sequence[str]) -> pd.DataFrame:
    _routed(routed)
    if len(variants) != 2:
        raise ValueError(f"a paired comparison needs exactly two variants, got {list(variants)}")
    wide = routed.pivot(index="pair_id", columns="variant", values="selected")
    order = list(dict.fromkeys(routed["pair_id"]))
    wide = wide.loc[order, list(variants)].astype(bool)
    ready = routed.groupby("pair_id", sort=False)["expected_ready"].first().loc[order].astype(bool)
    return pd.DataFrame({"a": wide[variants[0]].to_numpy(), "b": wide[variants[1]].to_numpy(),
                         "ready": ready.to_numpy()}, index=order)


@dataclass(frozen=True)
class McNemarResult:
    n_pairs: int
    a_only: int      # pairs auto-served under variant a but not b
    b_only: int      # pairs auto-served under variant b but not a
    p_value: float   # exact two-sided (binomial on the discordant pairs)


def mcnemar_exact(routed: pd.DataFrame, variants: Sequence[str], *, ready: bool | None = None) -> McNemarResult:
    """Exact McNemar test of "auto-served" between two variants of the same pairs.

    Under the null, each discordant pair is equally likely to favour either
    variant, so ``a_only ~ Binomial(a_only + b_only, 1/2)``. ``ready`` restricts
    to ready (True) or needs-review (False) pairs. With no discordant pairs
    the p-value is 1.
    """
    p = _paired_selected(routed, variants)
    if ready is not None:
        p = p[p["ready"] == ready]
    a_only = int((p["a"] & ~p["b"]).sum())
    b_only = int((~p["a"] & p["b"]).sum())
    n_disc = a_only + b_only
    pval = 1.0 if n_disc == 0 else float(binomtest(a_only, n_disc, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(int(len(p)), a_only, b_only, pval)


@dataclass(frozen=True)
class BootstrapInterval:
    estimate: float
    ci_low: float
    ci_high: float
    n_boot: int
    n_valid: int     # resamples in which the difference was defined
    confidence: float
    seed: int


def paired_bootstrap_tpr_diff(routed: pd.DataFrame, variants: Sequence[str], *, n_boot: int = 2000,
                              seed: int, confidence: float = 0.95) -> BootstrapInterval:
    """Percentile bootstrap CI for TPR(variant a) − TPR(variant b), resampling pairs.

    Pairs are resampled whole, so both variants of a ready pair stay together
    (the paired design). Resamples without any ready pair leave the
    difference undefined and are excluded from the quantiles (counted in
    ``n_valid``). The signed difference is bootstrapped, not |gap|, whose
    bootstrap distribution is biased away from zero.
    """
    if n_boot < 1:
        raise ValueError("n_boot must be positive")
    p = _paired_selected(routed, variants)
    ready = p["ready"].to_numpy()
    if not ready.any():
        raise InputError("no ready pairs; TPR is undefined", source="paired_bootstrap_tpr_diff",
                         field="expected_ready")
    a = (p["a"].to_numpy() & ready).astype(float)
    b = (p["b"].to_numpy() & ready).astype(float)
    r = ready.astype(float)
    est = (a.sum() - b.sum()) / r.sum()
    idx = resample_indices(len(p), n_boot, np.random.default_rng(seed))
    npos = r[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        diffs = (a[idx].sum(axis=1) - b[idx].sum(axis=1)) / npos
    valid = diffs[npos > 0]
    low, high = percentile_interval(valid, confidence)
    return BootstrapInterval(float(est), float(low), float(high), int(n_boot), int(valid.size),
                             float(confidence), int(seed))


def threshold_sweep(frame: pd.DataFrame, thresholds: Iterable[float], *,
                    variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Selection rate, gaps and flip count as the routing threshold moves.

    Columns: ``threshold, selection, selection_gap, tpr_gap, fpr_gap, n_flips``
    plus ``selection_<v>, tpr_<v>, fpr_<v>`` per variant.
    """
    vs = _variants(frame, variants)
    rows = []
    for t in thresholds:
        routed = route_rows(frame, t)
        rates = slice_rates(routed, order=vs)
        row = {"threshold": float(t), "selection": float(routed["selected"].mean()),
               "selection_gap": selection_gap(rates), "tpr_gap": tpr_gap(rates), "fpr_gap": fpr_gap(rates),
               "n_flips": int(len(pair_flips(routed, variants=vs)))}
        for v in vs:
            for m in _RATE_METRICS:
                row[f"{m}_{v}"] = float(rates.at[v, m])
        rows.append(row)
    return pd.DataFrame(rows)


def compare_candidate(baseline: "PairAudit", candidate: "PairAudit") -> pd.DataFrame:
    """Side by side: gaps and flips of a baseline and a candidate audit of the same pairs."""
    if set(baseline.routed["pair_id"]) != set(candidate.routed["pair_id"]):
        raise InputError("baseline and candidate audit different pairs", source="compare_candidate",
                         field="pair_id")
    rows = []
    for m in ("tpr_gap", "fpr_gap", "selection_gap", "n_flips"):
        b, c = getattr(baseline, m), getattr(candidate, m)
        rows.append({"metric": m, "baseline": b, "candidate": c, "change": c - b})
    out = pd.DataFrame(rows)
    limits = {"tpr_gap": candidate.contract.max_tpr_gap, "fpr_gap": candidate.contract.max_fpr_gap}
    out["limit"] = out["metric"].map(limits)
    status = dict(zip(candidate.checks["check"], candidate.checks["status"]))
    out["candidate_status"] = out["metric"].map(status)
    return out


# --------------------------------------------------------------------------- the whole audit


@dataclass
class PairAudit:
    """Every table of one routing audit (see :func:`audit_pairs`)."""

    threshold: float
    variants: list[str]
    contract: FairnessContract
    routed: pd.DataFrame
    flips: pd.DataFrame
    rates: pd.DataFrame
    gaps: pd.DataFrame
    wilson_tpr: pd.DataFrame
    wilson_fpr: pd.DataFrame
    support: pd.DataFrame
    checks: pd.DataFrame
    calibration: pd.DataFrame
    intersections: pd.DataFrame
    attribution: pd.DataFrame
    release: ReleaseDecision

    @property
    def tpr_gap(self) -> float:
        return tpr_gap(self.rates)

    @property
    def fpr_gap(self) -> float:
        return fpr_gap(self.rates)

    @property
    def selection_gap(self) -> float:
        return selection_gap(self.rates)

    @property
    def n_flips(self) -> int:
        return int(len(self.flips))

    @property
    def support_ok(self) -> bool:
        return bool((self.support["status"] == "PASS").all())

    @property
    def checks_ok(self) -> bool:
        return bool((self.checks["status"] == "PASS").all())

    def summary(self) -> dict[str, Any]:
        """The outputs-contract dict: flips, rates, gaps, Wilson TPR, checks, decision."""
        return {
            "threshold": self.threshold,
            "n_pairs": int(self.routed["pair_id"].nunique()),
            "n_rows": int(len(self.routed)),
            "flips": [list(r) for r in self.flips.itertuples(index=False)],
            "rates": {str(s): {"selection": r["selection"], "tpr": r["tpr"], "fpr": r["fpr"],
                               "n_pos": int(r["n_pos"]), "n_neg": int(r["n_neg"])}
                      for s, r in self.rates.iterrows()},
            "tpr_gap": self.tpr_gap,
            "fpr_gap": self.fpr_gap,
            "selection_gap": self.selection_gap,
            "wilson_tpr": {str(r["slice"]): [r["ci_low"], r["ci_high"]] for _, r in self.wilson_tpr.iterrows()},
            "checks": {r["check"]: r["status"] for _, r in self.checks.iterrows()},
            "minimum_support": "PASS" if self.support_ok else "FAIL",
            "attribution": dict(zip(self.attribution["pair_id"], self.attribution["stage"])),
            "decision": self.release.decision,
            "missing": list(self.release.missing),
        }


def audit_pairs(frame: pd.DataFrame, contract: FairnessContract, *, threshold: float,
                variants: Sequence[str] | None = None, calibration_edges: Sequence[float] = (0.70, 0.90),
                calibration_min_support: int = 10,
                intersection_dims: Sequence[str] = ("channel", "variant")) -> PairAudit:
    """Run the full matched-pair audit on a scored pair frame.

    The release gate uses this audit's own metric checks and support; to gate
    a candidate judge, audit the candidate's scores and read its ``release``.
    """
    vs = _variants(frame, variants)
    routed = route_rows(frame, threshold)
    rates = slice_rates(routed, order=vs)
    checks = metric_checks(rates, contract)
    support = support_check(rates, contract)
    audit = PairAudit(
        threshold=float(threshold), variants=vs, contract=contract, routed=routed,
        flips=pair_flips(routed, variants=vs), rates=rates, gaps=pairwise_gaps(rates),
        wilson_tpr=wilson_table(rates, "tpr"), wilson_fpr=wilson_table(rates, "fpr"),
        support=support, checks=checks,
        calibration=calibration_table(routed, edges=calibration_edges, min_support=calibration_min_support,
                                      order=vs),
        intersections=intersection_table(routed, contract, dims=intersection_dims),
        attribution=stage_attribution(routed),
        release=release_decision(contract, metric_checks_pass=bool((checks["status"] == "PASS").all()),
                                 support_pass=bool((support["status"] == "PASS").all())),
    )
    return audit
