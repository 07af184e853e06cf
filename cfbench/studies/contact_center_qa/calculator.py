"""Design calculator: requests, judge minutes and minimum detectable effects of candidate designs.

Each candidate is a :class:`~cfbench.studies.contact_center_qa.study.Params`; it is
planned for real on the transcripts it would audit (variants made, requests
deduplicated, nothing called) and costed with :func:`.design.estimate_cost`.
Power is computed per dimension row:

``cfr_mde_pp``   the smallest true CFR (percentage points; the repeat-noise floor at
                 temperature 0 is 0) whose item-bootstrap interval excludes 0 with
                 probability ``power`` (see :func:`cfr_mde`)
``masd_mde``     the smallest shift of the mean per-unit MASD of P(Yes) (points of
                 probability x 100) detectable at ``alpha``/``power`` by a normal test,
                 given the per-unit standard deviation ``sd_pyes``

The effective number of pairs of a row is ``units x P / (1 + (P - 1) rho)`` for
``P`` pairs per unit with intra-unit correlation ``rho`` (pairs of one unit share
their conditions). ``*_in_budget`` columns scale ``n_items`` to what fits in
``budget_minutes`` so designs of different sizes compare directly.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from cfbench.studies.contact_center_qa import design as _design
from cfbench.studies.contact_center_qa.study import Params, load_items, plan_for

__all__ = ["cfr_mde", "mean_mde", "design_table", "CANDIDATES", "SD_PYES"]

#: per-unit SD of the MASD of P(Yes) x 100 from an earlier default run (mean 2.2 points); the committed
#: default (8 transcripts x 15 dimensions = 120 units) measures 2.70 around a mean of 2.83, so MDEs
#: computed with this value are optimistic (docs/contact_center_design.md)
SD_PYES = 1.73


def cfr_mde(n_items: int, pairs_per_item: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true flip rate per pair that the study's item-bootstrap interval detects with ``power``.

    At temperature 0 the embedded judge repeats itself, so the noise floor is 0 and
    a row is distinguishable from noise when its percentile item-bootstrap interval
    excludes 0: when fewer than a share ``alpha / 2`` of resamples miss every item
    with a flip, i.e. when at least ``m`` of the ``n_items`` items flip, with
    ``(1 - m / n) ** n < alpha / 2``. An item with ``pairs_per_item`` independent
    pairs flips at least once with probability ``1 - (1 - p) ** pairs_per_item``;
    the MDE is the smallest ``p`` with ``P(at least m flipping items) >= power``.
    NaN when no ``m <= n_items`` suffices.

    >>> round(cfr_mde(12, 2), 2)
    0.23
    """
    if n_items < 2 or pairs_per_item <= 0:
        return float("nan")
    m = next((m for m in range(1, n_items + 1) if (1 - m / n_items) ** n_items < alpha / 2), None)
    if m is None:
        return float("nan")
    for p in np.linspace(0, 1, 4001)[1:]:
        q = 1 - (1 - p) ** pairs_per_item
        if stats.binom.sf(m - 1, n_items, q) >= power:
            return float(p)
    return float("nan")


def mean_mde(n: float, *, sd: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean shift detectable by a two-sided normal test with ``n`` units of SD ``sd``.

    >>> round(mean_mde(25, sd=1.0), 3)
    0.56
    """
    if n <= 0:
        return float("nan")
    return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * sd / math.sqrt(n))


def _pairs_per_unit(params: Params, plan: Any) -> pd.Series:
    r = plan.rows
    cf = r[(r["task"] == "qa") & (r["arm"] == "baseline") & (r["dimension"] != "original")
           & ~r["dimension"].astype(str).str.startswith("robustness")]
    n = cf.groupby(["dimension", "item_id", "question_id"]).size()
    return (n * (n - 1) / 2).groupby(level="dimension").mean()


def _row_power(params: Params, plan: Any, *, n_items: int, rho: float, sd: float, alpha: float,
               power: float) -> dict[str, float]:
    ppu = _pairs_per_unit(params, plan)
    per_item = len(params.questions) * ppu / (1 + (ppu - 1) * rho)  # effective pairs per item and row
    worst = float(per_item.min()) if len(per_item) else 0.0
    return {"pairs_per_unit": float(ppu.mean()) if len(ppu) else float("nan"),
            "eff_pairs_per_row": worst * n_items,
            "cfr_mde_pp": 100 * cfr_mde(n_items, worst, alpha=alpha, power=power),
            "masd_mde": mean_mde(worst * n_items, sd=sd, alpha=alpha, power=power)}


def design_table(candidates: Mapping[str, Any], *, budget_minutes: float = 25.0, rho: float = 0.5,
                 sd_pyes: float = SD_PYES, alpha: float = 0.05, power: float = 0.8,
                 min_items: int = 8, cost: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per candidate design: requests, estimated minutes, MDEs, and MDEs within the budget.

    Each candidate is planned on the transcripts its parameters select (a dry
    run). Columns: ``design``, ``n_items``, ``questions``, ``conditions``,
    ``requests``, ``est_minutes``, ``pairs_per_unit``, ``eff_pairs_per_row``,
    ``cfr_mde_pp``, ``masd_mde``, ``items_in_budget``, ``cfr_mde_pp_in_budget``,
    ``masd_mde_in_budget``, ``meets_min_items`` (``items_in_budget >= min_items``).
    The smallest ``cfr_mde_pp_in_budget`` among designs that meet ``min_items`` is the pick.
    A candidate is :class:`Params` (planned here) or a run's result, whose own plan is used; a
    plan-only preview's plan covers its first transcripts, and its minutes are scaled to the
    whole design (whose requests were counted by streaming).
    """
    rows = []
    for name, params in candidates.items():
        if getattr(params, "plan", None) is not None:  # a ContactCenterResult: nothing is planned again
            full = params.summary.get("plan_only") or {}
            n_items = int(full.get("n_items") or len(params.summary["items"]))
            n_req = int(full.get("n_requests") or params.plan.n_requests)
            params, plan = params.params, params.plan
        else:
            items = load_items(params)
            _, plan = plan_for(params, items)
            n_items, n_req = len(items), plan.n_requests
        est = _design.estimate_cost(plan, **dict(cost or {}))
        minutes = float(est["est_seconds"].sum()) / 60 * n_items / max(int(plan.settings["n_items"]), 1)
        row = {"design": name, "n_items": n_items, "questions": len(params.questions),
               "conditions": ("all compared" if not params.conditions_per_dimension else
                              "original + 1 sampled" if params.conditions_per_dimension == 1 else
                              f"{params.conditions_per_dimension} sampled"),
               "requests": int(n_req), "est_minutes": minutes}
        row |= _row_power(params, plan, n_items=n_items, rho=rho, sd=sd_pyes, alpha=alpha, power=power)
        fit = int(math.floor(n_items * budget_minutes / minutes)) if minutes > 0 else 0
        scaled = _row_power(params, plan, n_items=fit, rho=rho, sd=sd_pyes, alpha=alpha, power=power)
        row |= {"items_in_budget": fit, "cfr_mde_pp_in_budget": scaled["cfr_mde_pp"],
                "masd_mde_in_budget": scaled["masd_mde"], "meets_min_items": fit >= min_items}
        rows.append(row)
    out = pd.DataFrame(rows)
    ok = out[out["meets_min_items"]]
    out["pick"] = False
    if len(ok):
        out.loc[ok["cfr_mde_pp_in_budget"].idxmin(), "pick"] = True
    return out


def _local(**kw: Any) -> Params:
    base = dict(judges=("local:qwen2.5-coder-1.5b",), qa_mode="compact", n_boot=1000, seed=0,
                fairness=False, coaching=False, repeats=3, robustness_temperatures=(0.0, 0.7))
    return Params(**(base | kw))


#: the designs considered for the default config (docs/contact_center_design.md); each is costed at the
#: size given and scaled to the budget by ``design_table``
CANDIDATES: dict[str, Params] = {
    "A. previous default: all conditions, 2 questions, fairness + coaching, 1 item": _local(
        n_items=1, fairness=True, fairness_dimensions=("ethnicity_cues", "priming"), coaching=True,
        coaching_items=1, coaching_dimensions=("past_performance", "priming"), analysis_chars=120),
    "B. all conditions, 2 questions": _local(n_items=2),
    "C. 2 sampled conditions (1 pair), 2 questions": _local(n_items=4, conditions_per_dimension=2),
    "D. original + 1 sampled condition, 2 questions": _local(n_items=4, conditions_per_dimension=1),
    "E. original + 1 sampled condition, 1 question": _local(n_items=4, conditions_per_dimension=1,
                                                            questions=("issue_resolution",)),
    "F. as D, repeats only at T=0 (k=2)": _local(n_items=4, conditions_per_dimension=1,
                                                robustness_temperatures=(0.0,), repeats=2),
    "G. as E, repeats only at T=0 (k=2)": _local(n_items=4, conditions_per_dimension=1,
                                                questions=("issue_resolution",), robustness_temperatures=(0.0,),
                                                repeats=2),
}


def replace(params: Params, **changes: Any) -> Params:
    """``dataclasses.replace`` for Params (a convenience for notebooks and docs)."""
    return dataclasses.replace(params, **changes)
