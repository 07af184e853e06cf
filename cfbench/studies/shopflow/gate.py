"""The release gate of a routing audit: gap checks (point and interval), support, sign-offs, decision.

:func:`audit_pairs` runs the whole audit of one scored pair frame and returns
a :class:`PairAudit` holding every table.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.metrics import groups as G
from cfbench.stats.mcnemar import McNemarResult, mcnemar_exact

from .contract import FairnessContract, ReleaseRequirement
from .policy import POSITIVE, SELECTED, pair_flips, rates as policy_rates, route_rows, stage_attribution

__all__ = ["support_check", "metric_checks", "interval_checks", "intersection_table", "ReleaseDecision",
           "release_decision", "paired_mcnemar", "paired_bootstrap", "PairAudit", "audit_pairs",
           "compare_candidate"]

_GAPS = (("tpr_gap", "tpr", "max_tpr_gap"), ("fpr_gap", "fpr", "max_fpr_gap"))


def _role(check: str, contract: FairnessContract) -> str:
    return "primary" if (check == "tpr_gap" or contract.primary_metric == "equalized_odds") else "guardrail"


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
    """The seed's point rule: PASS when the observed TPR (FPR) gap is at most its maximum.

    An undefined gap (a slice without positives or negatives) FAILs.
    """
    rows = []
    for check, metric, limit_name in _GAPS:
        value, limit = G.metric_gap(rates, metric), getattr(contract, limit_name)
        ok = (not math.isnan(value)) and value <= limit
        rows.append({"check": check, "role": _role(check, contract), "value": value, "limit": limit,
                     "status": "PASS" if ok else "FAIL"})
    return pd.DataFrame(rows)


def paired_bootstrap(routed: pd.DataFrame, variants: Sequence[str], *, among: bool, n_boot: int, seed: int,
                     confidence: float = 0.95) -> G.BootstrapInterval:
    """Paired bootstrap of rate(variants[0]) − rate(variants[1]); ``among=True`` TPR, ``False`` FPR."""
    paired = G.paired_outcomes(routed, unit="pair_id", by="variant", variants=variants, outcome=SELECTED,
                               positive=POSITIVE)
    return G.paired_rate_diff_bootstrap(paired, among=among, n_boot=n_boot, seed=seed, confidence=confidence)


def paired_mcnemar(routed: pd.DataFrame, variants: Sequence[str], *, ready: bool | None = None) -> McNemarResult:
    """Exact McNemar of "auto-served" between two variants of the same pairs (``ready`` restricts the pairs)."""
    paired = G.paired_outcomes(routed, unit="pair_id", by="variant", variants=variants, outcome=SELECTED,
                               positive=POSITIVE)
    if ready is not None:
        paired = paired[paired["positive"] == ready]
    return mcnemar_exact(paired["a"].to_numpy(), paired["b"].to_numpy())


def interval_checks(rates: pd.DataFrame, contract: FairnessContract, *, routed: pd.DataFrame | None = None,
                    n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The interval rule: PASS when the upper confidence bound of each gap is at most its maximum.

    For every two slices the interval of the rate difference comes from
    ``contract.gap_interval`` (Newcombe, or the paired bootstrap over
    ``routed``); the gap's upper bound is the largest |bound| over all slice
    pairs. Columns ``check, role, method, confidence, value, ci_low, ci_high,
    upper, limit, status`` (``value`` is the point gap; ``ci_low``/``ci_high``
    the interval of the difference for two slices, NaN for more).
    """
    gi = contract.gap_interval
    slices = list(rates.index)
    rows = []
    for check, metric, limit_name in _GAPS:
        bounds = []
        for a, b in itertools.combinations(slices, 2):
            if gi.method == "newcombe":
                iv = G.gap_interval(rates, metric, a, b, confidence=gi.confidence)
                bounds.append((iv["ci_low"], iv["ci_high"]))
            else:
                if routed is None:
                    raise InputError("the paired bootstrap needs the routed rows", source="interval_checks",
                                     field="routed")
                if int(rates.at[a, "n_pos" if metric == "tpr" else "n_neg"]) == 0:
                    bounds.append((math.nan, math.nan))
                    continue
                bi = paired_bootstrap(routed, [a, b], among=metric == "tpr", n_boot=n_boot, seed=seed,
                                      confidence=gi.confidence)
                bounds.append((bi.ci_low, bi.ci_high))
        flat = np.array(bounds, dtype=float).ravel()
        upper = math.nan if flat.size == 0 or np.isnan(flat).any() else float(np.abs(flat).max())
        limit = getattr(contract, limit_name)
        lo, hi = bounds[0] if len(bounds) == 1 else (math.nan, math.nan)
        rows.append({"check": f"{check}_upper", "role": _role(check, contract), "method": gi.method,
                     "confidence": gi.confidence, "value": G.metric_gap(rates, metric), "ci_low": lo,
                     "ci_high": hi, "upper": upper, "limit": limit,
                     "status": "PASS" if (not math.isnan(upper) and upper <= limit) else "FAIL"})
    return pd.DataFrame(rows)


def intersection_table(routed: pd.DataFrame, contract: FairnessContract, *,
                       dims: Sequence[str] = ("channel", "variant")) -> pd.DataFrame:
    """Support and rates per cell of ``dims``; cells below the contract's minimums carry no rate."""
    return G.intersection_rates(routed, dims=dims, selected=SELECTED, positive=POSITIVE,
                                min_positive=contract.min_positive_per_slice,
                                min_negative=contract.min_negative_per_slice)


@dataclass(frozen=True)
class ReleaseDecision:
    """``APPROVED`` or ``BLOCKED``, every requirement not met (contract order) and each one's outcome."""

    decision: str
    missing: tuple[str, ...]
    requirements: dict[str, bool]


def release_decision(contract: FairnessContract, *, metric_checks_pass: bool, support_pass: bool,
                     interval_checks_pass: bool = False) -> ReleaseDecision:
    """APPROVED only if every requirement of the contract is met.

    Computed requirements take the audit's outcomes, attested ones their
    recorded sign-off. A contract without requirements gates on the point
    rule and the support minimums.
    """
    reqs = contract.release_requirements or (
        ReleaseRequirement("metric_checks_pass", "metric_checks"),
        ReleaseRequirement("minimum_positive_and_negative_support", "minimum_support"),
    )
    outcome = {"metric_checks": bool(metric_checks_pass), "minimum_support": bool(support_pass),
               "interval_checks": bool(interval_checks_pass)}
    met = {r.name: (bool(r.attested) if r.source == "attested" else outcome[r.source]) for r in reqs}
    missing = tuple(n for n, ok in met.items() if not ok)
    return ReleaseDecision("APPROVED" if not missing else "BLOCKED", missing, met)


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
    interval_checks: pd.DataFrame
    calibration: pd.DataFrame
    intersections: pd.DataFrame
    attribution: pd.DataFrame
    release: ReleaseDecision

    @property
    def tpr_gap(self) -> float:
        return G.tpr_gap(self.rates)

    @property
    def fpr_gap(self) -> float:
        return G.fpr_gap(self.rates)

    @property
    def selection_gap(self) -> float:
        return G.selection_gap(self.rates)

    @property
    def n_flips(self) -> int:
        return int(len(self.flips))

    @property
    def support_ok(self) -> bool:
        return bool((self.support["status"] == "PASS").all())

    @property
    def checks_ok(self) -> bool:
        return bool((self.checks["status"] == "PASS").all())

    @property
    def interval_ok(self) -> bool:
        return bool((self.interval_checks["status"] == "PASS").all())

    def rate_intervals(self) -> pd.DataFrame:
        """Wilson interval of every rate per slice (selection, TPR, FPR stacked)."""
        return pd.concat([G.wilson_table(self.rates, m) for m in G.RATE_METRICS], ignore_index=True)

    def summary(self) -> dict[str, Any]:
        """Flips, rates, gaps, Wilson TPR, checks (point and interval), decision."""
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
            "interval_checks": {r["check"]: {"upper": r["upper"], "limit": r["limit"], "status": r["status"],
                                             "method": r["method"]} for _, r in self.interval_checks.iterrows()},
            "minimum_support": "PASS" if self.support_ok else "FAIL",
            "attribution": dict(zip(self.attribution["pair_id"], self.attribution["stage"])),
            "decision": self.release.decision,
            "missing": list(self.release.missing),
        }


def audit_pairs(frame: pd.DataFrame, contract: FairnessContract, *, threshold: float,
                variants: Sequence[str] | None = None, calibration_edges: Sequence[float] = (0.70, 0.90),
                calibration_min_support: int = 10, intersection_dims: Sequence[str] = ("channel", "variant"),
                n_boot: int = 2000, seed: int = 0) -> PairAudit:
    """Run the full matched-pair audit on a scored pair frame.

    The release gate uses this audit's own checks and support; to gate a
    candidate judge, audit the candidate's scores and read its ``release``.
    ``n_boot``/``seed`` are used only by a contract whose gap interval is the
    paired bootstrap.
    """
    vs = list(variants) if variants is not None else list(dict.fromkeys(frame["variant"]))
    routed = route_rows(frame, threshold)
    rates = policy_rates(routed, variants=vs)
    checks = metric_checks(rates, contract)
    intervals = interval_checks(rates, contract, routed=routed, n_boot=n_boot, seed=seed)
    support = support_check(rates, contract)
    return PairAudit(
        threshold=float(threshold), variants=vs, contract=contract, routed=routed,
        flips=pair_flips(routed, variants=vs), rates=rates, gaps=G.pairwise_gaps(rates),
        wilson_tpr=G.wilson_table(rates, "tpr"), wilson_fpr=G.wilson_table(rates, "fpr"),
        support=support, checks=checks, interval_checks=intervals,
        calibration=G.calibration_table(routed, score="score", positive=POSITIVE, by="variant",
                                        edges=calibration_edges, min_support=calibration_min_support, order=vs),
        intersections=intersection_table(routed, contract, dims=intersection_dims),
        attribution=stage_attribution(routed),
        release=release_decision(contract, metric_checks_pass=bool((checks["status"] == "PASS").all()),
                                 support_pass=bool((support["status"] == "PASS").all()),
                                 interval_checks_pass=bool((intervals["status"] == "PASS").all())),
    )


def compare_candidate(baseline: PairAudit, candidate: PairAudit) -> pd.DataFrame:
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
