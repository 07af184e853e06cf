"""Design calculator: requests, judge minutes and minimum detectable effects of candidate designs.

Each candidate is a :class:`~cfbench.studies.contact_center_qa.params.Params`; it is
planned for real on the transcripts it would audit (variants made, requests
deduplicated, nothing called) and costed with :func:`.requests.estimate_cost`.
Power is computed per dimension row, for the intervals the tables print
(``docs/statistics.md``):

``cfr_mde_pp``   the smallest true CFR (percentage points per pair) at which the row's
                 ``cfr_minus_robustness`` interval (Tango's matched-pairs interval for one
                 counterfactual and one repeat pair per transcript, else the MOVER of two
                 cluster-adjusted Clopper-Pearson intervals over transcripts) lies above 0 with
                 probability ``power``, when the judge repeats itself at temperature 0
                 (repeat flips 0; see :func:`cfr_mde`). That is the findings' "beyond the
                 judge's own repeat noise".
``masd_mde``     the smallest mean per-transcript MASD of P(Yes) (points of probability
                 x 100) whose printed 95 % interval over transcripts (bootstrap-t and t,
                 union) lies above 0 with probability ``power``, for normal per-transcript
                 values of SD ``sd_pyes`` (see :func:`mean_mde`)
``gate_items_needed``  transcripts a row needs before the net-CFR gate can pass at all
                 (:func:`gate_items_needed`: 35 at 0.10 with Tango, 36 with the MOVER); ``gate_decidable``
                 says whether the design has them

The effective number of pairs per transcript and row is ``Q x P / (1 + (P - 1) rho)``
for ``Q`` questions and ``P`` pairs per unit with intra-unit correlation ``rho`` (pairs
of one unit share their conditions), rounded down to whole independent pairs for the CFR
(at least 1). ``*_in_budget`` columns scale ``n_items`` to what fits in
``budget_minutes`` so designs of different sizes compare directly.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from cfbench.core.errors import InputError
from cfbench.stats.bootstrap import MAX_BOOTSTRAP_ITEMS, resample_counts
from cfbench.stats.intervals import (bootstrap_t_rows, clopper_pearson, clustered_rate_intervals,
                                     items_needed_zero_events, worst_case_bound)
from cfbench.stats.matched import min_pairs_to_pass, tango_interval
from cfbench.studies.contact_center_qa.items import iter_items, load_items
from cfbench.studies.contact_center_qa.params import Params
from cfbench.studies.contact_center_qa.requests import PREVIEW_ITEMS, estimate_cost, plan_for

__all__ = ["gate_forecast", "design_note", "responsive_items", "cfr_mde", "cfr_power", "mean_mde", "design_table", "CANDIDATES", "SD_PYES"]

#: per-transcript SD of the MASD of P(Yes) x 100 measured on the 8-transcript default run (8 transcripts
#: x 15 dimensions = 120 units: SD 2.70 around a mean of 2.83; an earlier run had measured 1.73, which made
#: the MASD MDEs optimistic by about 2.70 / 1.73). docs/contact_center_design.md
SD_PYES = 2.70

_GRID = np.linspace(0.0, 1.0, 4001)[1:]  # true CFRs searched, step 0.00025
#: random numbers drawn at once by the power simulation (32 MB of doubles), whatever the design's size
SIM_BLOCK = 4_000_000


def _net_lower(events: np.ndarray, pairs: int, confidence: float) -> np.ndarray:
    """Lower bound of ``cfr_minus_robustness`` per simulated row when the repeats show no flip.

    ``events`` is rows x items (flips per transcript, ``pairs`` pairs each). The CFR side is
    :func:`clustered_rate_intervals`; with 0 repeat flips the repeat side is ``[0, 1 - a^(1/K)]``
    (item as unit) and the item correlation 0, so the MOVER lower bound is
    ``e - sqrt((e - l)^2 + u2^2)`` (what :func:`cfbench.stats.intervals.paired_difference` returns).
    """
    rows, k = events.shape
    group = np.repeat(np.arange(rows), k)
    e, lo, _, _ = clustered_rate_intervals(events.ravel().astype(float), np.full(events.size, float(pairs)), group,
                                           n_groups=rows, confidence=confidence)
    u2 = worst_case_bound(k, confidence)
    return e - np.sqrt((e - lo) ** 2 + u2 ** 2)


@functools.lru_cache(maxsize=256)
def _detect_table(n_items: int, confidence: float) -> np.ndarray:
    """One pair per transcript: whether k flipping transcripts of ``n_items`` give a net lower bound > 0."""
    k = np.arange(n_items + 1, dtype=float)
    lo, _ = clopper_pearson(k, np.full(k.shape, float(n_items)), confidence)
    e = k / n_items
    return e - np.sqrt((e - lo) ** 2 + worst_case_bound(n_items, confidence) ** 2) > 0


@functools.lru_cache(maxsize=256)
def _detect_table_matched(n_items: int, confidence: float) -> np.ndarray:
    """One counterfactual and one repeat pair per transcript, 0 repeat flips: whether k flipping transcripts
    of ``n_items`` give a Tango lower bound above 0 (the interval ``cfr_minus_robustness`` prints for that
    design: ``k`` discordant items one way, none the other)."""
    k = np.arange(n_items + 1, dtype=float)
    lo, _ = tango_interval(k, np.zeros_like(k), np.full(k.shape, float(n_items)), confidence=confidence)
    return np.asarray(lo) > 0


def matched_design(pairs_per_item: float, repeat_pairs: float | None) -> bool:
    """Whether a row's net-CFR interval is Tango's matched-pairs interval: one counterfactual pair and one
    repeat pair per transcript (``paired_difference(pairing="corrected")``); otherwise it is the MOVER."""
    return repeat_pairs is not None and math.isclose(pairs_per_item, 1.0) and math.isclose(repeat_pairs, 1.0)


def gate_items_needed(gate_max: float, *, pairs_per_item: float = 1.0, repeat_pairs: float | None = None,
                      confidence: float = 0.95) -> int:
    """Transcripts before the net-CFR gate at ``gate_max`` can pass at all (no flip on either side): 35 at
    0.10 for one counterfactual and one repeat pair per transcript (Tango with no discordant item,
    :func:`cfbench.stats.matched.min_pairs_to_pass`), 36 otherwise (the MOVER's repeat side with no flip,
    :func:`cfbench.stats.intervals.items_needed_zero_events`).

    >>> gate_items_needed(0.10, repeat_pairs=1), gate_items_needed(0.10, repeat_pairs=3)
    (35, 36)
    """
    if matched_design(pairs_per_item, repeat_pairs):
        return min_pairs_to_pass(gate_max, confidence=confidence)
    return items_needed_zero_events(gate_max, confidence=confidence)


def cfr_power(p: float | np.ndarray, n_items: int, pairs_per_item: int = 1, *, alpha: float = 0.05,
              reps: int = 4000, seed: int = 0, repeat_pairs: float | None = None) -> np.ndarray:
    """Probability that a row whose pairs flip at true rate ``p`` shows a ``cfr_minus_robustness``
    interval above 0 (repeat flips 0). One pair per transcript: exact (binomial sum over the number of
    flipping transcripts), through Tango's interval when the transcript also has one repeat pair
    (``repeat_pairs=1``), else through the MOVER. Several independent pairs per transcript: ``reps``
    seeded simulated rows run through the interval code (the same draws at every ``p``, so the power
    rises with ``p``)."""
    p = np.atleast_1d(np.asarray(p, float))
    if n_items < 2:
        return np.zeros(p.shape)
    if pairs_per_item == 1:
        ok = (_detect_table_matched(n_items, 1 - alpha) if matched_design(1.0, repeat_pairs)
              else _detect_table(n_items, 1 - alpha))
        return stats.binom.pmf(np.arange(n_items + 1)[None, :], n_items, p[:, None])[:, ok].sum(axis=1)
    # the draws are made and used a block of simulated rows at a time, each block at most SIM_BLOCK numbers:
    # the same numbers as one (reps x items x pairs) array, whose size grew with the transcripts (2.9 GB for the
    # design cell of a 1,200-transcript paper replay)
    block = max(1, SIM_BLOCK // (n_items * pairs_per_item))
    rng, hits = np.random.default_rng(seed), np.zeros(p.shape)
    for start in range(0, reps, block):
        u = rng.random((min(block, reps - start), n_items, pairs_per_item))
        for i, q in enumerate(p):
            hits[i] += np.count_nonzero(_net_lower((u < q).sum(axis=2), pairs_per_item, 1 - alpha) > 0)
    return hits / reps


def cfr_mde(n_items: int, pairs_per_item: float, *, alpha: float = 0.05, power: float = 0.8,
            reps: int = 4000, seed: int = 0, repeat_pairs: float | None = None) -> float:
    """Smallest true flip rate per pair at which the row's net-CFR interval lies above 0 with ``power``.

    The interval is the one ``tables["cfr_minus_robustness"]`` prints, at temperature 0 where the judge
    repeats itself (0 repeat flips). With one counterfactual and one repeat pair per transcript
    (``pairs_per_item=1, repeat_pairs=1``) it is Tango's interval on the transcripts' 2x2 counts;
    otherwise the MOVER of the cluster-adjusted Clopper-Pearson interval of the CFR and that of the
    repeat flip rate (the repeat side is ``[0, 1 - 0.025^(1/n)]``, so at least one flip is never
    enough). ``pairs_per_item`` is rounded down to whole independent pairs (at least 1). Searched on a
    grid of step 0.00025; NaN when even a flip on every pair is not detected with ``power`` (or fewer
    than 2 transcripts).

    >>> round(cfr_mde(8, 1), 3)  # MOVER: 5 of 8 transcripts must flip
    0.697
    >>> round(cfr_mde(8, 1, repeat_pairs=1), 3)  # Tango: also 5 of 8
    0.697
    """
    if n_items < 2 or pairs_per_item <= 0:
        return float("nan")
    m = max(1, int(math.floor(pairs_per_item + 1e-9)))
    if m == 1:
        pw = cfr_power(_GRID, n_items, 1, alpha=alpha,
                       repeat_pairs=repeat_pairs if math.isclose(pairs_per_item, 1.0) else None)
        hit = np.nonzero(pw >= power)[0]
        return float(_GRID[hit[0]]) if hit.size else float("nan")
    lo, hi = 0, _GRID.size - 1  # bisection on the common-random-number power curve
    if cfr_power(_GRID[hi], n_items, m, alpha=alpha, reps=reps, seed=seed)[0] < power:
        return float("nan")
    while lo < hi:
        mid = (lo + hi) // 2
        if cfr_power(_GRID[mid], n_items, m, alpha=alpha, reps=reps, seed=seed)[0] >= power:
            hi = mid
        else:
            lo = mid + 1
    return float(_GRID[lo])


@functools.lru_cache(maxsize=256)
def _std_lower_bounds(n: int, confidence: float, n_boot: int, reps: int, seed: int) -> np.ndarray:
    """Lower bounds of the printed mean interval (bootstrap-t and t over items, union) for ``reps``
    seeded samples of ``n`` standard normal per-item values."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((reps, n))
    if n > MAX_BOOTSTRAP_ITEMS or n_boot <= 0:
        return z.mean(axis=1) - stats.t.ppf(0.5 + confidence / 2, n - 1) * z.std(axis=1, ddof=1) / math.sqrt(n)
    lo, _ = bootstrap_t_rows(z, np.ones_like(z), resample_counts(n, n_boot, rng), confidence)
    return lo


def mean_mde(n: float, *, sd: float, alpha: float = 0.05, power: float = 0.8, n_boot: int = 1000,
             reps: int = 4000, seed: int = 0) -> float:
    """Smallest mean per-item value (e.g. a dimension's MASD of P(Yes)) at which the interval the tables
    print (:func:`cfbench.stats.intervals.mean_interval_t`: bootstrap-t with ``n_boot`` resamples and t
    over ``n`` items, union) lies above 0 with probability ``power``, for normal per-item values of SD
    ``sd``. That interval is location-scale equivariant, so ``reps`` seeded standard-normal samples
    give it exactly: the ``power`` quantile of minus their lower bounds, times ``sd``. ``n`` is rounded
    down to whole items. NaN below 3 items, and whenever the needed mean is not finite in practice
    (over 10^6 SD; a resample with no spread has a floored SE, so this no longer happens from 3
    items on). It is larger than the t test's MDE (the union is wider, and the long side of the
    resampled t is read at 1 %): at 8 items 1.94 SD, against 1.16 for t alone.

    >>> round(mean_mde(8, sd=1.0), 2)
    1.94
    """
    n = int(math.floor(n + 1e-9))
    if n < 3 or sd <= 0:
        return float("nan")
    lo = _std_lower_bounds(n, 1 - alpha, int(n_boot), int(reps), int(seed))
    need = float(np.quantile(-lo, power))
    return float(sd * need) if np.isfinite(need) and need < 1e6 else float("nan")


def _pairs_per_unit(params: Params, plan: Any) -> pd.Series:
    r = plan.rows
    cf = r[(r["task"] == "qa") & (r["arm"] == "baseline") & (r["dimension"] != "original")
           & ~r["dimension"].astype(str).str.startswith("robustness")]
    n = cf.groupby(["dimension", "item_id", "question_id"]).size()
    return (n * (n - 1) / 2).groupby(level="dimension").mean()


def _repeat_pairs_per_item(plan: Any) -> float:
    """Repeat pairs per transcript of the temperature-0 repeat baseline (``robustness``), pooled over the
    questions as ``cfr_minus_robustness`` pools them; 0 when the design has none."""
    r = plan.rows
    rob = r[(r["task"] == "qa") & (r["arm"] == "baseline") & (r["dimension"] == "robustness")]
    if not len(rob):
        return 0.0
    n = rob.groupby(["item_id", "question_id"]).size()
    return float((n * (n - 1) / 2).groupby(level="item_id").sum().mean())


def _row_power(params: Params, plan: Any, *, n_items: int, rho: float, sd: float, alpha: float,
               power: float) -> dict[str, float]:
    ppu = _pairs_per_unit(params, plan)
    per_item = len(params.questions) * ppu / (1 + (ppu - 1) * rho)  # effective pairs per item and row
    worst = float(per_item.min()) if len(per_item) else 0.0
    reps = _repeat_pairs_per_item(plan)
    return {"pairs_per_unit": float(ppu.mean()) if len(ppu) else float("nan"),
            "eff_pairs_per_row": worst * n_items, "repeat_pairs_per_item": reps,
            "cfr_mde_pp": (100 * cfr_mde(n_items, worst, alpha=alpha, power=power, repeat_pairs=reps)
                           if worst > 0 else float("nan")),
            "masd_mde": mean_mde(n_items, sd=sd, alpha=alpha, power=power)}


def _first_transcripts_plan(name: str, result: Any) -> Any:
    """The plan of a streamed run's first transcripts, when the run kept none (``run_streamed`` called
    directly, not through ``run``): planned again, nothing is called. The transcripts must be the run's
    own first ones (a run given other transcripts than its parameters select cannot be re-planned)."""
    first = list(itertools.islice(iter_items(result.params), PREVIEW_ITEMS))
    ran = list(result.summary.get("items", []))[:PREVIEW_ITEMS]
    if [t.id for t in first] != ran[:len(first)] or not first:
        raise InputError("this streamed run has no plan of its first transcripts and was not run on the "
                         "transcripts its parameters select, so its costs cannot be planned again; pass its "
                         "Params instead", source="design_table", record=name, field="plan")
    return plan_for(result.params, first, progress=False)[1]


def design_table(candidates: Mapping[str, Any], *, budget_minutes: float = 25.0, rho: float = 0.5,
                 sd_pyes: float = SD_PYES, alpha: float = 0.05, power: float = 0.8,
                 min_items: int = 8, gate_max_net_cfr: float = 0.10,
                 cost: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per candidate design: requests, estimated minutes, MDEs, and MDEs within the budget.

    Each candidate is planned on the transcripts its parameters select (a dry
    run). Columns: ``design``, ``n_items``, ``questions``, ``conditions``,
    ``requests``, ``est_minutes``, ``pairs_per_unit``, ``eff_pairs_per_row``,
    ``cfr_mde_pp``, ``masd_mde``, ``items_in_budget``, ``cfr_mde_pp_in_budget``,
    ``masd_mde_in_budget``, ``meets_min_items`` (``items_in_budget >= min_items``),
    ``gate_items_needed`` (transcripts before the net-CFR gate at ``gate_max_net_cfr`` can pass at
    all) and ``gate_decidable`` (``n_items >= gate_items_needed``); ``gate_items_to_pass``
    (:func:`gate_forecast`: transcripts at which a fair judge - net CFR 0, 5 % repeat noise independent of
    its counterfactual flips, on the design's own counterfactual and repeat pairs per transcript
    (``repeat_pairs_per_item``): Tango's interval for one of each, else the MOVER - is
    expected to pass; NaN for a design with no repeat pair) and ``responsive_items`` (:func:`responsive_items`: labelled items, half per class,
    at which an 80 %-accurate judge is expected to be shown responsive), both with the verdicts' forecast
    function (:func:`cfbench.stats.verdicts.items_to_decide`).
    The smallest ``cfr_mde_pp_in_budget`` among designs that meet ``min_items`` is the pick.
    A candidate is :class:`Params` (planned here) or a run's result, whose own plan is used; a
    plan-only preview's plan covers its first transcripts, and its minutes are scaled to the
    whole design (whose requests were counted by streaming); so does a streamed replay's (its
    requests and transcripts are those of the whole design it streamed, ``summary["n_requests"]``).
    """
    rows = []
    for name, params in candidates.items():
        if not isinstance(params, Params):  # a ContactCenterResult: nothing is planned again
            full = params.summary.get("plan_only") or {}
            if params.summary.get("streamed") and not full:  # a run: its plan is its first transcripts',
                # its summary counts the whole run's requests (the judgments it looked up); a plan-only
                # preview's counts of the whole design come first
                full = {"n_items": len(params.summary["items"]), "n_requests": params.summary["n_requests"]}
            plan = params.plan if params.plan is not None else _first_transcripts_plan(name, params)
            n_items = int(full.get("n_items") or len(params.summary["items"]))
            n_req = int(full.get("n_requests") or plan.n_requests)
            params = params.params
        else:
            items = load_items(params)
            _, plan = plan_for(params, items)
            n_items, n_req = len(items), plan.n_requests
        est = estimate_cost(plan, **dict(cost or {}))
        minutes = float(est["est_seconds"].sum()) / 60 * n_items / max(int(plan.settings["n_items"]), 1)
        row = {"design": name, "n_items": n_items, "questions": len(params.questions),
               "conditions": ("all compared" if not params.conditions_per_dimension else
                              "original + 1 sampled" if params.conditions_per_dimension == 1 else
                              f"{params.conditions_per_dimension} sampled"),
               "requests": int(n_req), "est_minutes": minutes}
        row |= _row_power(params, plan, n_items=n_items, rho=rho, sd=sd_pyes, alpha=alpha, power=power)
        fit = int(math.floor(n_items * budget_minutes / minutes)) if minutes > 0 else 0
        scaled = _row_power(params, plan, n_items=fit, rho=rho, sd=sd_pyes, alpha=alpha, power=power)
        # the net-CFR interval is Tango's for one counterfactual and one repeat pair per transcript, else the MOVER
        cf_pairs = len(params.questions) * float(_pairs_per_unit(params, plan).min() or 0.0)
        reps = row["repeat_pairs_per_item"]
        needed = gate_items_needed(gate_max_net_cfr, pairs_per_item=cf_pairs, repeat_pairs=reps,
                                   confidence=1 - alpha)
        row |= {"items_in_budget": fit, "cfr_mde_pp_in_budget": scaled["cfr_mde_pp"],
                "masd_mde_in_budget": scaled["masd_mde"], "meets_min_items": fit >= min_items,
                "gate_items_needed": needed, "gate_decidable": n_items >= needed,
                "gate_items_to_pass": gate_forecast(gate_max=gate_max_net_cfr, confidence=1 - alpha,
                                                    pairs=cf_pairs, repeats=reps),
                "responsive_items": responsive_items(confidence=1 - alpha)}
        rows.append(row)
    out = pd.DataFrame(rows)
    ok = out[out["meets_min_items"]]
    out["pick"] = False
    if len(ok):
        out.loc[ok["cfr_mde_pp_in_budget"].idxmin(), "pick"] = True
    return out


def design_note(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str:
    """A paragraph that reads a run's :func:`design_table` row against the run's own repeat noise: what
    ``gate_items_needed`` and ``gate_items_to_pass`` assume, and how many repeat pairs flipped in each arm
    (``cfr_minus_robustness`` and ``star_cfr_minus_robustness``), so a reader can see why the run's gates
    decided at a size other than the forecast's. Markdown; every number comes from ``row`` and ``tables``."""
    needed, to_pass = row.get("gate_items_needed"), row.get("gate_items_to_pass")
    parts = []
    if needed is not None and not pd.isna(needed):
        parts.append(f"`gate_items_needed` ({int(needed)}): the transcripts a gate needs before it can pass when "
                     "no counterfactual and no repeat pair flips.")
    if to_pass is not None and not pd.isna(to_pass):
        parts.append(f"`gate_items_to_pass` ({int(to_pass)}): the size at which about half the audits of a fair "
                     "judge pass (net CFR 0) whose repeat answers flip on 5 % of pairs, independently of its "
                     "counterfactual flips - an assumption, not this judge.")
    else:
        parts.append("`gate_items_to_pass` is empty: this design has no repeat pair, so there is no net CFR to gate.")
    seen = []
    for name, arm in (("cfr_minus_robustness", "main arm"), ("star_cfr_minus_robustness", "STAR arm")):
        t = tables.get(name)
        if t is None or not len(t) or "n_repeat_pairs" not in t:
            continue
        read = t[t["robustness"].notna() & (t["n_repeat_pairs"].fillna(0) > 0)]
        rows = f"{len(t)} dimension row{'s' if len(t) != 1 else ''}"
        if not len(read):  # every repeat reply failed or could not be read
            seen.append(f"{arm}: no repeat pair read ({rows})")
            continue
        flips = (read["robustness"] * read["n_repeat_pairs"]).round().astype(int)
        lo, hi, n_pairs = int(flips.min()), int(flips.max()), int(read["n_repeat_pairs"].max())
        count = f"{lo}" if lo == hi else f"{lo}-{hi}"
        seen.append(f"{arm}: {count} of {n_pairs} repeat pairs flipped ({rows}"
                    + (f"; {len(t) - len(read)} with no repeat pair read)" if len(read) < len(t) else ")"))
    if seen:
        parts.append("This run's judge, per dimension row: " + "; ".join(seen) + ". A judge that flips less often than the "
                     "forecast assumes can decide sooner, one that flips more often later; each undecided row of "
                     "the gate tables below carries its own forecast, from its observed rates.")
    return " ".join(parts)


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


def _cp(p: float, n: float, confidence: float) -> tuple[float, float]:
    from cfbench.stats.intervals import clopper_pearson

    lo, hi = clopper_pearson(p * n, n, confidence)
    return float(lo), float(hi)


def gate_forecast(*, net: float = 0.0, noise: float = 0.05, repeats: float = 3, gate_max: float = 0.10,
                  confidence: float = 0.95, pairs: float = 1.0) -> int | None:
    """Transcripts at which the net-CFR gate is expected to decide (pass when ``net`` is under ``gate_max``,
    fail when over) for a judge whose counterfactual flip rate is ``noise + net`` (``pairs`` pairs per
    transcript) and repeat flip rate ``noise`` (``repeats`` pairs per transcript), fed to
    :func:`cfbench.stats.verdicts.items_to_decide` - the same forecast as the gate tables'. The interval is
    the one the table prints for that design, at the expected counts: with one repeat pair Tango's on the
    2x2 counts, the two flips of a transcript taken as independent (``n (noise + net)(1 - noise)``
    transcripts flipping on the counterfactual only, ``n noise (1 - noise - net)`` on the repeat only: a
    judge whose repeat flips fall on the same transcripts as its counterfactual flips decides sooner);
    otherwise the MOVER of the two Clopper-Pearson intervals on ``n pairs`` and ``n repeats`` pairs (no
    clustering; the counterfactual side's upper bound no lower than with no flip on ``n`` transcripts, as
    :func:`cfbench.stats.intervals.clustered_rate_intervals` holds it). None when no n up to a million decides (``net == gate_max``) or the design has no repeat
    pair (``repeats`` 0: no net CFR to gate).

    >>> gate_forecast(net=0, noise=0.0, repeats=1), gate_forecast(net=0, noise=0.0, repeats=3)
    (35, 36)
    """
    from cfbench.stats.verdicts import items_to_decide

    if not repeats > 0 or not pairs > 0:
        return None
    p1, p2 = noise + net, noise
    if matched_design(pairs, repeats):
        only_cf, only_rep = p1 * (1 - p2), p2 * (1 - p1)

        def tango_at(n: int) -> tuple[float, float]:
            lo, hi = tango_interval(n * only_cf, n * only_rep, float(n), confidence=confidence)
            return float(lo), float(hi)

        return items_to_decide(net, gate_max, tango_at)

    def bound_at(n: int) -> tuple[float, float]:
        l1, h1 = _cp(p1, n * pairs, confidence)
        h1 = max(h1, worst_case_bound(n, confidence))  # never below the no-flip bound on n transcripts
        l2, h2 = _cp(p2, n * repeats, confidence)
        est = p1 - p2
        return est - math.hypot(p1 - l1, h2 - p2), est + math.hypot(h1 - p1, p2 - l2)

    return items_to_decide(net, gate_max, bound_at)


def responsive_items(accuracy: float = 0.8, *, confidence: float = 0.95) -> int | None:
    """Labelled items (half Yes, half No) at which a judge right on ``accuracy`` of each class is expected to be
    shown responsive: the balanced accuracy's MOVER lower bound above 0.5 (as the gates' check), via
    :func:`cfbench.stats.verdicts.items_to_decide` on 1 - balanced accuracy against 0.5. None for a judge at
    or below chance (``accuracy <= 0.5``): no number of items shows it responsive."""
    from cfbench.stats.verdicts import balanced_accuracy, items_to_decide

    if not accuracy > 0.5:
        return None

    def bound_at(n: int) -> tuple[float, float]:
        half = n / 2
        lo1, hi1 = _cp(accuracy, half, confidence)
        _, lo, hi = balanced_accuracy(accuracy, lo1, hi1, accuracy, lo1, hi1)
        return 1 - hi, 1 - lo

    return items_to_decide(1 - accuracy, 0.5, bound_at)
