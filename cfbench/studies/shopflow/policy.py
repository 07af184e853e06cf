"""ShopFlow's routing policy: evidence gate, then a score threshold.

A row whose evidence gate failed is ``blocked_by_evidence``; otherwise it is
``auto_serve`` when ``score >= threshold`` and ``human_review`` below.
"Selected" means routed to ``auto_serve``. Rows are the validated pair frame
of :func:`cfbench.io.pairs.load_pairs` (``pair_id, variant, expected_ready,
channel, evidence_passed, score``).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.metrics import groups as G

__all__ = ["ROUTES", "SELECTED", "POSITIVE", "check_threshold", "route_rows", "pair_flips", "stage_attribution",
           "rates", "threshold_sweep"]

#: The three routes, in display order.
ROUTES = ("auto_serve", "human_review", "blocked_by_evidence")
#: Column of a routed frame that is True for auto-served rows.
SELECTED = "selected"
#: Column holding the reviewers' label (the positive class: "ready for auto-service").
POSITIVE = "expected_ready"


def check_threshold(threshold: object, *, name: str = "threshold") -> float:
    """``threshold`` as a float in [0, 1], else an :class:`InputError` naming ``name``."""
    if isinstance(threshold, bool):
        raise InputError(f"expected a number in [0, 1], got {threshold!r}", source="routing", field=name)
    try:
        value = float(threshold)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"expected a number in [0, 1], got {threshold!r}", source="routing",
                         field=name) from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InputError(f"threshold {threshold!r} is outside [0, 1]", source="routing", field=name)
    return value


def route_rows(frame: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """A copy of ``frame`` with ``route`` and ``selected`` columns.

    >>> f = pd.DataFrame({"score": [0.7, 0.69, 0.9], "evidence_passed": [True, True, False]})
    >>> route_rows(f, 0.70)["route"].tolist()
    ['auto_serve', 'human_review', 'blocked_by_evidence']
    """
    t = check_threshold(threshold)
    scores = frame["score"].to_numpy(dtype=float)
    if np.isnan(scores).any():
        i = int(np.flatnonzero(np.isnan(scores))[0])
        rec = frame.iloc[i].get("pair_id", i)
        raise InputError("score is NaN; cannot route an unscored row", source="routing",
                         record=rec, field="score")
    evidence = frame["evidence_passed"].to_numpy(dtype=bool)
    out = frame.copy()
    out["route"] = np.where(~evidence, "blocked_by_evidence", np.where(scores >= t, "auto_serve", "human_review"))
    out[SELECTED] = out["route"].eq("auto_serve")
    return out


def _routed(frame: pd.DataFrame) -> pd.DataFrame:
    if "route" not in frame.columns or SELECTED not in frame.columns:
        raise InputError("frame has no routes; call route_rows(frame, threshold) first",
                         source="routing", field="route")
    return frame


def _variants(frame: pd.DataFrame, variants: Sequence[str] | None) -> list[str]:
    return list(variants) if variants is not None else list(dict.fromkeys(frame["variant"]))


def rates(routed: pd.DataFrame, *, variants: Sequence[str] | None = None, by: str = "variant") -> pd.DataFrame:
    """Selection/TPR/FPR per variant of a routed frame (:func:`cfbench.metrics.groups.slice_rates`)."""
    _routed(routed)
    order = _variants(routed, variants) if by == "variant" else None
    return G.slice_rates(routed, by=by, selected=SELECTED, positive=POSITIVE, order=order)


def pair_flips(routed: pd.DataFrame, *, variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Pairs whose variants received different routes.

    One row per flipped pair (first-appearance order): ``pair_id`` and one
    ``route_<variant>`` column per variant.
    """
    _routed(routed)
    vs = _variants(routed, variants)
    wide = routed.pivot(index="pair_id", columns="variant", values="route")
    wide = wide.loc[list(dict.fromkeys(routed["pair_id"])), vs]
    out = wide.loc[wide.nunique(axis=1) > 1].reset_index()
    out.columns = ["pair_id"] + [f"route_{v}" for v in vs]
    return out


def stage_attribution(routed: pd.DataFrame, *, only_flipped: bool = True) -> pd.DataFrame:
    """Which stage changed between a pair's variants.

    ``evidence_gate`` if the gate outcome differs, else ``judge_or_route`` if
    the route differs, else ``no_observed_flip``.
    """
    _routed(routed)
    g = routed.groupby("pair_id", sort=False)
    evidence_differs = g["evidence_passed"].nunique() > 1
    route_differs = g["route"].nunique() > 1
    stage = np.where(evidence_differs, "evidence_gate", np.where(route_differs, "judge_or_route", "no_observed_flip"))
    out = pd.DataFrame({"pair_id": evidence_differs.index.to_numpy(), "stage": stage})
    if only_flipped:
        out = out[out["stage"] != "no_observed_flip"].reset_index(drop=True)
    return out


def threshold_sweep(frame: pd.DataFrame, thresholds: Iterable[float], *,
                    variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Selection rate, gaps and flip count as the routing threshold moves.

    Columns ``threshold, selection, selection_gap, tpr_gap, fpr_gap, n_flips``
    (gaps absolute, as the point rule reads them) plus ``selection_<v>,
    tpr_<v>, fpr_<v>`` per variant and, for two variants, the signed
    differences ``selection_diff, tpr_diff, fpr_diff`` (first variant minus
    second, the sign convention of the interval rule).
    """
    vs = _variants(frame, variants)
    rows = []
    for t in thresholds:
        routed = route_rows(frame, t)
        r = rates(routed, variants=vs)
        row = {"threshold": float(t), "selection": float(routed[SELECTED].mean()),
               "selection_gap": G.selection_gap(r), "tpr_gap": G.tpr_gap(r), "fpr_gap": G.fpr_gap(r),
               "n_flips": int(len(pair_flips(routed, variants=vs)))}
        for v in vs:
            for m in G.RATE_METRICS:
                row[f"{m}_{v}"] = float(r.at[v, m])
        if len(vs) == 2:
            for m in G.RATE_METRICS:
                row[f"{m}_diff"] = float(r.at[vs[0], m] - r.at[vs[1], m])
        rows.append(row)
    return pd.DataFrame(rows)
