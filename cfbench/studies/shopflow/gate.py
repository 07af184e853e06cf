"""The release gate of a routing audit: gap checks (point and interval), support, sign-offs, decision.

Every table comes from per-pair statistics, the shape of a torchmetrics metric (:mod:`cfbench.metrics.state`):
:func:`item_stats` keeps each pair's scored rows (the update step), :func:`tables_from_stats` makes every
table of the audit from them (the functional form: a :class:`PairAudit` and the named tables), and
:func:`new_state` joins them in an ``ItemState`` that merges with a state of other pairs to the same tables
(``tests/test_shopflow_chunk_merge.py``). :func:`audit_pairs` is the short road from one scored pair frame.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.metrics import groups as G
from cfbench.metrics.state import ItemState, ItemStatistics
from cfbench.stats import verdicts as VD
from cfbench.stats.intervals import clustered_rate_intervals
from cfbench.stats.matched import EXACT_MAX_PAIRS, MatchedDifference, matched_difference, min_pairs_to_pass
from cfbench.stats.mcnemar import McNemarResult, mcnemar_exact

from .contract import FairnessContract, ReleaseRequirement
from .policy import POSITIVE, SELECTED, pair_flips, rates as policy_rates, route_rows, stage_attribution, threshold_sweep

__all__ = ["support_check", "metric_checks", "interval_checks", "stratum_tests", "stratum_difference",
           "gap_gate", "pairs_needed", "intersection_table", "ReleaseDecision",
           "release_decision", "paired_mcnemar", "PairAudit", "audit_pairs",
           "compare_candidate", "responsiveness_check", "INTERVAL_VERDICT_COLUMNS", "item_stats",
           "tables_from_stats", "new_state", "AuditTables", "ORDER", "ROW_EXTRAS"]

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

    ``value`` is the absolute gap (``definition`` says so); the interval rule's
    table carries the signed gap instead.

    An undefined gap (a slice without positives or negatives) FAILs.
    """
    slices = [str(s) for s in rates.index]
    rows = []
    for check, metric, limit_name in _GAPS:
        value, limit = G.metric_gap(rates, metric), getattr(contract, limit_name)
        ok = (not math.isnan(value)) and value <= limit
        m = metric.upper()
        definition = (f"|{m}[{slices[0]}] − {m}[{slices[1]}]|" if len(slices) == 2
                      else f"largest − smallest {m} over {len(slices)} slices")
        rows.append({"check": check, "role": _role(check, contract), "definition": definition, "value": value,
                     "limit": limit, "status": "PASS" if ok else "FAIL"})
    return pd.DataFrame(rows)


def paired_mcnemar(routed: pd.DataFrame, variants: Sequence[str], *, ready: bool | None = None) -> McNemarResult:
    """Exact McNemar of "auto-served" between two variants of the same pairs (``ready`` restricts the pairs)."""
    paired = G.paired_outcomes(routed, unit="pair_id", by="variant", variants=variants, outcome=SELECTED,
                               positive=POSITIVE)
    if ready is not None:
        paired = paired[paired["positive"] == ready]
    return mcnemar_exact(paired["a"].to_numpy(), paired["b"].to_numpy())


#: The stratum of matched pairs whose test answers each gap's question.
_STRATA = {"tpr": (True, "ready pairs"), "fpr": (False, "needs-review pairs"), "selection": (None, "all pairs")}


def _paired(routed: pd.DataFrame, variants: Sequence[str]) -> pd.DataFrame:
    return G.paired_outcomes(routed, unit="pair_id", by="variant", variants=list(variants), outcome=SELECTED,
                             positive=POSITIVE)


def stratum_difference(routed: pd.DataFrame, variants: Sequence[str], metric: str, *, method: str = "tango",
                       confidence: float = 0.95) -> MatchedDifference:
    """``metric[variants[0]] − metric[variants[1]]`` on the pairs of the metric's own stratum.

    TPR on the ready pairs, FPR on the needs-review pairs, selection on all
    pairs; the interval is the matched-pair ``method`` and the test the exact
    McNemar of those pairs.
    """
    ready, _ = _STRATA[metric]
    paired = _paired(routed, variants)
    if ready is not None:
        paired = paired[paired["positive"] == ready]
    if method == "exact" and len(paired) > EXACT_MAX_PAIRS:
        raise InputError(f"the {_STRATA[metric][1]} stratum of {metric} has {len(paired)} pairs; the exact interval is "
                         f"computed for at most {EXACT_MAX_PAIRS} (its cost grows with the square of the pairs): use "
                         "method tango", source="contract", record="gap_interval", field="method")
    return matched_difference(paired["a"].to_numpy(), paired["b"].to_numpy(), method=method, confidence=confidence)


@functools.lru_cache(maxsize=64)
def pairs_needed(limit: float, method: str, confidence: float) -> int:
    """Fewest pairs in a stratum at which a gap of ``limit`` could be passed at all (0 when none can)."""
    if limit <= 0:
        return 0
    if limit >= 1:
        return 1
    return min_pairs_to_pass(limit, method=method, confidence=confidence)


def gap_gate(ci_low, ci_high, limit: float):
    """The interval rule on signed gaps: PASS only when the whole interval lies inside [−limit, +limit].

    Vectorised over arrays of bounds; NaN bounds never pass.
    """
    lo, hi = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    return (lo >= -limit) & (hi <= limit)


#: the verdict columns of :func:`interval_checks` (:mod:`cfbench.stats.verdicts`)
INTERVAL_VERDICT_COLUMNS = ["verdict", "verdict_kind", "point_rule", "responsive", "responsiveness", "items_needed",
                            "forecast", "forecast_assumes"]


def responsiveness_check(routed: pd.DataFrame, threshold: float, *, level: float = 0.95) -> dict[str, Any]:
    """Do the judge's scores separate ready from needs-review requests? The balanced accuracy of
    ``score >= threshold`` against ``expected_ready`` (the mean of the share of ready rows scored at or above the
    threshold and of needs-review rows below it, each with its Clopper-Pearson interval clustered by pair,
    combined by MOVER), shown when its lower bound lies above 0.5 - a judge giving every request the same
    score, or scores unrelated to readiness, scores 0.5 in truth. Keys: ``responsive``, ``why``,
    ``balanced_accuracy``, ``ci_low``, ``ci_high``. ``level``: the two class intervals' (a sequential walk looks
    after every wave, :func:`cfbench.stats.sequential.looks_level`)."""
    r = routed.assign(_hit=(routed["score"].to_numpy(float) >= threshold) == routed[POSITIVE].astype(bool).to_numpy())
    parts = []
    for ready in (True, False):
        per = r[r[POSITIVE].astype(bool) == ready].groupby("pair_id")["_hit"].agg(["sum", "count"])
        if len(per) < 2:
            parts.append((math.nan, math.nan, math.nan))
            continue
        est, lo, hi, _ = clustered_rate_intervals(per["sum"].to_numpy(float), per["count"].to_numpy(float),
                                                  np.zeros(len(per), np.int64), n_groups=1, confidence=level)
        parts.append((float(est[0]), float(lo[0]), float(hi[0])))
    ba = VD.balanced_accuracy(*parts[0], *parts[1])
    ok, why = VD.responsiveness([("balanced accuracy of score >= threshold vs expected_ready", ba[1], 0.5)])
    return {"responsive": ok, "why": why, "balanced_accuracy": ba[0], "ci_low": ba[1], "ci_high": ba[2]}


def _verdict_columns(d: MatchedDifference, limit: float, responsive: dict[str, Any]) -> dict[str, Any]:
    """The row's verdict in the one vocabulary (two-sided: |gap| at most ``limit``), with the forecast."""
    if d.n_pairs == 0:
        return {"verdict": VD.INCONCLUSIVE, "verdict_kind": VD.INCONCLUSIVE, "point_rule": VD.FAIL,
                "responsive": bool(responsive["responsive"]), "responsiveness": responsive["why"],
                "items_needed": math.nan, "forecast": "no forecast: no pair in this stratum", "forecast_assumes": ""}
    return VD.forecast_row(d.estimate, d.ci_low, d.ci_high, d.n_pairs, limit, two_sided=True,
                           responsive=bool(responsive["responsive"]),
                           why="scores not shown to separate ready from needs-review requests",
                           detail=responsive["why"])


def interval_checks(rates: pd.DataFrame, contract: FairnessContract, *,
                    routed: pd.DataFrame | None = None, threshold: float | None = None,
                    responsive: dict[str, Any] | None = None) -> pd.DataFrame:
    """The interval rule: PASS only when the interval of each signed gap lies inside [−max, +max].

    One row per gap (TPR, FPR) and pair of slices. ``value`` is the signed
    difference named in ``definition`` (first slice minus second); ``ci_low``
    and ``ci_high`` are the matched-pair interval (``contract.gap_interval``) of
    that same signed quantity, computed on the pairs of the gap's own stratum
    (TPR: ready pairs; FPR: needs-review pairs); ``gap_upper`` is the largest
    |gap| the interval allows; ``zero`` says where 0 lies (``touches 0
    (boundary)`` when a bound is exactly 0). ``n_needed`` is the fewest pairs
    in the stratum at which any outcome could pass (``pass_possible``); below
    it no outcome but ``fail`` is possible. ``verdict`` and the columns of
    :data:`INTERVAL_VERDICT_COLUMNS` are the one vocabulary (:mod:`cfbench.stats.verdicts`): ``pass`` when the
    interval lies inside ``(-max, +max)`` and the scores separate ready from needs-review requests
    (:func:`responsiveness_check` at ``threshold``; without a threshold none is shown), ``fail`` when it lies
    wholly beyond one side, ``inconclusive`` / ``uninformative (why)`` otherwise. ``status`` is the release
    requirement: ``PASS`` exactly on a ``pass`` verdict, else ``FAIL`` (requirement not met). ``responsive``:
    the result of :func:`responsiveness_check` on these rows at ``threshold`` when the caller has it already
    (the audit reads it for the release decision too); computed here when not given.
    """
    if routed is None:
        raise InputError("the matched-pair interval needs the routed rows", source="interval_checks",
                         field="routed")
    gi = contract.gap_interval
    slices = list(rates.index)
    if responsive is not None:
        resp = responsive
    elif threshold is not None:
        resp = responsiveness_check(routed, threshold)
    else:
        resp = {"responsive": False, "why": "no threshold given: responsiveness not checked"}
    rows = []
    for check, metric, limit_name in _GAPS:
        limit = float(getattr(contract, limit_name))
        _, stratum = _STRATA[metric]
        needed = pairs_needed(limit, gi.method, float(gi.confidence))
        for a, b in itertools.combinations(slices, 2):
            d = stratum_difference(routed, [a, b], metric, method=gi.method, confidence=gi.confidence)
            v = _verdict_columns(d, limit, resp)
            passed = v["verdict"] == VD.PASS
            gap_upper = math.nan if d.n_pairs == 0 else max(abs(d.ci_low), abs(d.ci_high))
            rows.append({"check": check, "role": _role(check, contract), "stratum": stratum,
                         "definition": f"{metric.upper()}[{a}] − {metric.upper()}[{b}]", "method": gi.method,
                         "confidence": gi.confidence, "n_pairs": d.n_pairs, "a_only": d.a_only,
                         "b_only": d.b_only, "value": d.estimate, "ci_low": d.ci_low, "ci_high": d.ci_high,
                         "zero": d.zero, "gap_upper": gap_upper, "limit": limit, "n_needed": needed,
                         "pass_possible": bool(d.n_pairs > 0 and needed > 0 and d.n_pairs >= needed),
                         **v, "status": "PASS" if passed else "FAIL"})
    return pd.DataFrame(rows)


def stratum_tests(routed: pd.DataFrame, variants: Sequence[str], *, method: str = "tango",
                  confidence: float = 0.95) -> pd.DataFrame:
    """Which test answers which question: exact McNemar and matched interval per stratum.

    The TPR difference is answered on the ready pairs, the FPR difference on the
    needs-review pairs; the pooled test over all pairs (a selection-rate
    difference that mixes both questions) is the last row, named as an extra.
    """
    a, b = variants[0], variants[1]
    rows = []
    for metric, answers in (("tpr", "TPR difference"), ("fpr", "FPR difference"),
                            ("selection", "extra: pooled over both strata (mixes the TPR and FPR questions)")):
        d = stratum_difference(routed, [a, b], metric, method=method, confidence=confidence)
        rows.append({"question": answers, "stratum": _STRATA[metric][1],
                     "definition": f"{metric.upper() if metric != 'selection' else 'selection'}[{a}] − "
                                   f"{metric.upper() if metric != 'selection' else 'selection'}[{b}]",
                     "n_pairs": d.n_pairs, f"only_{a}": d.a_only, f"only_{b}": d.b_only,
                     "mcnemar_p": d.mcnemar_p, "estimate": d.estimate, "ci_low": d.ci_low, "ci_high": d.ci_high,
                     "ci_method": method, "confidence": confidence, "zero": d.zero})
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


#: the requirement every release carries beside the contract's when the audit checked the judge
RESPONSIVE_REQUIREMENT = "judge_shown_responsive"


def release_decision(contract: FairnessContract, *, metric_checks_pass: bool, support_pass: bool,
                     interval_checks_pass: bool = False, responsive: bool | None = None) -> ReleaseDecision:
    """APPROVED only if every requirement of the contract is met.

    Computed requirements take the audit's outcomes, attested ones their
    recorded sign-off. A contract without requirements gates on the point
    rule and the support minimums. With ``responsive`` given (the audit's
    :func:`responsiveness_check`), :data:`RESPONSIVE_REQUIREMENT` is added
    whatever the contract says: the point-rule checks alone approved a judge
    giving every request the same score (its gaps are 0), so a judge not shown
    to separate ready from needs-review requests is never approved.
    """
    reqs = contract.release_requirements or (
        ReleaseRequirement("metric_checks_pass", "metric_checks"),
        ReleaseRequirement("minimum_positive_and_negative_support", "minimum_support"),
    )
    outcome = {"metric_checks": bool(metric_checks_pass), "minimum_support": bool(support_pass),
               "interval_checks": bool(interval_checks_pass)}
    met = {r.name: (bool(r.attested) if r.source == "attested" else outcome[r.source]) for r in reqs}
    if responsive is not None:
        met[RESPONSIVE_REQUIREMENT] = bool(responsive)
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
    tpr_intervals: pd.DataFrame  # Clopper-Pearson per slice (rate_table)
    fpr_intervals: pd.DataFrame
    wilson_tpr: pd.DataFrame  # the seed's Wilson interval, for its printed lines only
    support: pd.DataFrame
    checks: pd.DataFrame
    interval_checks: pd.DataFrame
    stratum_tests: pd.DataFrame
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
        """Clopper-Pearson interval of every rate per slice (selection, TPR, FPR stacked; ``ci_method``
        names it). Wilson, which the seed prints, undercovers at these slice sizes (``docs/statistics.md``)."""
        return pd.concat([G.rate_table(self.rates, m) for m in G.RATE_METRICS], ignore_index=True)

    def summary(self) -> dict[str, Any]:
        """Flips, rates, gaps, TPR intervals (Clopper-Pearson, and the seed's Wilson), checks, decision."""
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
            "tpr_intervals": {str(r["slice"]): [r["ci_low"], r["ci_high"]] for _, r in self.tpr_intervals.iterrows()},
            "tpr_ci_method": G.RATE_CI_METHODS["clopper-pearson"],
            # the seed prints Wilson; kept to reproduce its lines, not read by any gate or finding
            "wilson_tpr": {str(r["slice"]): [r["ci_low"], r["ci_high"]] for _, r in self.wilson_tpr.iterrows()},
            "checks": {r["check"]: r["status"] for _, r in self.checks.iterrows()},
            "interval_checks": {(r["check"] if len(self.interval_checks) == 2 else f"{r['check']}: {r['definition']}"): {k: (r[k].item() if hasattr(r[k], "item") else r[k]) for k in (
                "definition", "stratum", "n_pairs", "value", "ci_low", "ci_high", "zero", "gap_upper", "limit",
                "n_needed", "pass_possible", "verdict", "status", "method", "responsiveness", "forecast")}
                for _, r in self.interval_checks.iterrows()},
            "stratum_tests": self.stratum_tests.to_dict(orient="records"),
            "minimum_support": "PASS" if self.support_ok else "FAIL",
            "attribution": dict(zip(self.attribution["pair_id"], self.attribution["stage"])),
            "decision": self.release.decision,
            "missing": list(self.release.missing),
        }


def audit_pairs(frame: pd.DataFrame, contract: FairnessContract, *, threshold: float,
                variants: Sequence[str] | None = None, calibration_edges: Sequence[float] = (0.70, 0.90),
                calibration_min_support: int = 10, intersection_dims: Sequence[str] = ("channel", "variant"),
                ) -> PairAudit:
    """Run the full matched-pair audit on a scored pair frame: one per-pair state updated with its rows (in the
    frame's order unless it carries :data:`ORDER`), then computed (:func:`tables_from_stats`).

    The release gate uses this audit's own checks and support; to gate a
    candidate judge, audit the candidate's scores and read its ``release``.
    """
    rows = frame if ORDER in frame.columns else frame.assign(**{ORDER: np.arange(len(frame))})
    return new_state().update(rows).compute(
        contract=contract, threshold=threshold, variants=variants, calibration_edges=calibration_edges,
        calibration_min_support=calibration_min_support, intersection_dims=intersection_dims).audit


def _audit(frame: pd.DataFrame, contract: FairnessContract, *, threshold: float,
                variants: Sequence[str] | None = None, calibration_edges: Sequence[float] = (0.70, 0.90),
                calibration_min_support: int = 10, intersection_dims: Sequence[str] = ("channel", "variant"),
                ) -> PairAudit:
    """Every table of the matched-pair audit of a scored pair frame in its rows' order (the core of the
    functional form, reached through :func:`tables_from_stats`)."""
    vs = list(variants) if variants is not None else list(dict.fromkeys(frame["variant"]))
    routed = route_rows(frame, threshold)
    rates = policy_rates(routed, variants=vs)
    checks = metric_checks(rates, contract)
    resp = responsiveness_check(routed, threshold)
    intervals = interval_checks(rates, contract, routed=routed, threshold=threshold, responsive=resp)
    gi = contract.gap_interval
    tests = (stratum_tests(routed, vs, method=gi.method, confidence=gi.confidence) if len(vs) == 2
             else pd.DataFrame())
    support = support_check(rates, contract)
    return PairAudit(
        threshold=float(threshold), variants=vs, contract=contract, routed=routed,
        flips=pair_flips(routed, variants=vs), rates=rates, gaps=G.pairwise_gaps(rates),
        tpr_intervals=G.rate_table(rates, "tpr"), fpr_intervals=G.rate_table(rates, "fpr"),
        wilson_tpr=G.wilson_table(rates, "tpr"),
        support=support, checks=checks, interval_checks=intervals, stratum_tests=tests,
        calibration=G.calibration_table(routed, score="score", positive=POSITIVE, by="variant",
                                        edges=calibration_edges, min_support=calibration_min_support, order=vs),
        intersections=intersection_table(routed, contract, dims=intersection_dims),
        attribution=stage_attribution(routed),
        release=release_decision(contract, metric_checks_pass=bool((checks["status"] == "PASS").all()),
                                 support_pass=bool((support["status"] == "PASS").all()),
                                 interval_checks_pass=bool((intervals["status"] == "PASS").all()),
                                 responsive=bool(resp["responsive"])),
    )


# -- item statistics: per pair, the update step and the functional form ----------------------------------

#: the column giving each scored row's position in its pairs file: fixed before rows are split into chunks,
#: it puts the tables' rows back in the file's order however the chunks were added or merged
ORDER = "row_order"
#: columns of the rows table besides the routed pair columns: how the judge's reply was scored, and the reply
ROW_EXTRAS = ("score_source", "yes_no_mass", "raw")


@dataclass
class AuditTables:
    """What :func:`tables_from_stats` returns: the :class:`PairAudit` and every table by name (``rates``,
    ``flips``, ``rate_intervals``, ``checks``, ``interval_checks``, ``stratum_tests``, ``support``,
    ``calibration``, ``intersections``, ``attribution``, ``pairwise_gaps``, ``rows``, ``score_by_variant``,
    ``excluded``, and ``threshold_sweep`` when thresholds were given)."""

    audit: PairAudit
    tables: dict[str, pd.DataFrame]


def item_stats(rows: "pd.DataFrame | None", excluded: "pd.DataFrame | None" = None) -> ItemStatistics:
    """The per-pair statistics of whole pairs' scored rows (the update step of :func:`new_state`).

    Every table of the audit is a function of each pair's few numbers - per variant its score, label,
    channel and evidence outcome - and the threshold sweep, the calibration bands and the score quantiles need
    the scores themselves, so a pair's statistic is its scored rows (``rows``: one per pair x variant, the
    columns of :data:`cfbench.io.pairs.PAIR_COLUMNS`, optionally :data:`ROW_EXTRAS` and a review note, and
    :data:`ORDER`); ``excluded`` holds the rows of pairs left out (``pair_id, variant, reason`` and
    :data:`ORDER`). Statistics of disjoint sets of pairs add up to those of their union."""
    s = ItemStatistics()
    for name, f in (("rows", rows), ("excluded", excluded)):
        if f is None or not len(f):
            continue
        if ORDER not in f.columns:
            raise InputError(f"{name} frame has no {ORDER} column (each row's position in its pairs file, "
                             "set before the rows are split)", source="shopflow item statistics", field=ORDER)
        s.add(name, f.reset_index(drop=True))
    return s


def _in_order(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """``frame`` sorted by :data:`ORDER`, which it then drops; a row given twice is refused."""
    f = frame.sort_values(ORDER, kind="stable").reset_index(drop=True)
    dup = f[ORDER].duplicated()
    if dup.any():
        row = f.loc[dup].iloc[0]
        raise InputError(f"{what} row given twice", source="shopflow item statistics",
                         record=f"{row['pair_id']}/{row['variant']}", field=ORDER)
    return f.drop(columns=[ORDER])


def _rows_table(routed: pd.DataFrame, extras: pd.DataFrame) -> pd.DataFrame:
    """The routed rows with how each was scored (:data:`ROW_EXTRAS`, when the rows carry them) and any review
    note."""
    have = [c for c in ROW_EXTRAS if c in extras.columns]
    r = routed.merge(extras[["pair_id", "variant"] + have], on=["pair_id", "variant"], how="left") if have else routed
    cols = (["pair_id", "variant", "expected_ready", "channel", "score"]
            + [c for c in ("score_source", "yes_no_mass") if c in have] + ["route"] + [c for c in ("raw",) if c in have])
    return r[cols + [c for c in ("review_note",) if c in r.columns]]


def tables_from_stats(s: ItemStatistics, contract: FairnessContract, *, threshold: float,
                      variants: Sequence[str] | None = None, calibration_edges: Sequence[float] = (0.70, 0.90),
                      calibration_min_support: int = 10, intersection_dims: Sequence[str] = ("channel", "variant"),
                      thresholds: Sequence[float] | None = None) -> AuditTables:
    """Every table of the audit from the per-pair statistics of :func:`item_stats` (the functional form). The
    rows are taken in :data:`ORDER`, so the tables do not depend on the order in which pairs were added or
    states merged; every interval is exact (no resampling)."""
    rows = s.frame("rows")
    if not len(rows):
        raise InputError("no scored pair rows to audit", source="shopflow audit", field="score")
    rows = _in_order(rows, "scored")
    frame = rows.drop(columns=[c for c in ROW_EXTRAS if c in rows.columns])
    audit = _audit(frame, contract, threshold=threshold, variants=variants, calibration_edges=calibration_edges,
                   calibration_min_support=calibration_min_support, intersection_dims=intersection_dims)
    table = _rows_table(audit.routed, rows)
    ex = s.frame("excluded")
    t = {"rates": audit.rates.reset_index(), "flips": audit.flips, "rate_intervals": audit.rate_intervals(),
         "checks": audit.checks, "interval_checks": audit.interval_checks, "stratum_tests": audit.stratum_tests,
         "support": audit.support.reset_index(), "calibration": audit.calibration,
         "intersections": audit.intersections, "attribution": audit.attribution, "pairwise_gaps": audit.gaps,
         "rows": table, "score_by_variant": table.groupby(["variant", "expected_ready"])["score"].describe().reset_index(),
         "excluded": (_in_order(ex, "excluded") if len(ex) else pd.DataFrame(columns=["pair_id", "variant", "reason"]))}
    if thresholds is not None:
        t["threshold_sweep"] = threshold_sweep(frame, thresholds, variants=audit.variants)
    return AuditTables(audit, t)


def new_state(*, spill: Any = None, compact_every: int = 10) -> ItemState:
    """An empty per-pair state: ``update(rows, excluded, complete=...)``, ``merge(other)``,
    ``compute(contract=, threshold=, ...)`` (-> :func:`tables_from_stats`); see :mod:`cfbench.metrics.state`."""
    return ItemState(item_stats, tables_from_stats, item="pair_id", spill=spill, compact_every=compact_every)


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
