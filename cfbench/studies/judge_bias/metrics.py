"""Judge-bias metrics: the tables from per-item statistics of the parsed judgments (one row per request).

Two halves, the shape of a torchmetrics metric (:mod:`cfbench.metrics.state`): :func:`item_stats` reduces whole
items' parsed answers to per judge x item counts (the update step), :func:`tables_from_stats` makes every table
from them (the functional form), :func:`new_state` joins them in an ``ItemState`` that the run updates and
that merges with a state of other items to the same tables (``tests/test_judge_bias_chunk_merge.py``);
:func:`study_tables` is the short road from a frame of answers.

Every interval is over *items* and names its method in ``ci_method``; the
methods are cfbench.stats's simulated ones (docs/statistics.md): rates by
cluster-adjusted Clopper-Pearson, means by bootstrap-t/t over items (a
worst-case bound over the known value range when items show no spread). Differences of two
binary outcomes on the same item (a cue's shift, its net flips vs the reworded prompt) use
Tango's score interval for matched pairs; the net vs repeats (one cue pair against the item's
repeat pairs) the MOVER difference of the two cluster-adjusted Clopper-Pearson rates with the
continuity-corrected item correlation (``tests/test_judge_bias_gate_coverage.py``). P-values of a cue's
direction come from an exact two-sided sign test over items; Holm (or BH) adjusts them across
the cues of one task.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from cfbench.judges.failures import FAILURE_KINDS, KIND_COLUMNS
from cfbench.metrics.state import ItemState, ItemStatistics
from cfbench.stats import adjust_pvalues
from cfbench.stats.intervals import (NO_ITEMS, ONE_ITEM, clopper_pearson, clustered_rate_intervals,
                                     items_needed_zero_events, mean_interval_t, paired_difference, worst_case_bound)
from cfbench.stats.matched import tango_interval
from cfbench.stats import verdicts as V

__all__ = ["choices", "position_table", "accuracy_table", "noise_table", "cue_table", "pointwise_table",
           "sign_test", "detectable_share", "gate_status", "rate_row", "repeat_conditions", "items_needed_score_gate",
           "items_needed_matched", "matched_row", "repeat_net_row", "SCORE_NET_RANGE", "MATCHED_METHOD",
           "responsiveness_of", "GATE_VERDICT_COLUMNS", "item_stats", "tables_from_stats", "new_state", "judge_cells",
           "study_tables", "placebo_condition", "placebo_table", "PLACEBO_PREFIX", "PLACEBO_COLUMNS", "OTHER_REPLY",
           "pointwise_control_table", "pointwise_responsiveness", "discrimination_lower_bound"]

#: ``ci_method`` of a difference of two binary outcomes with one pair per item.
MATCHED_METHOD = "tango score interval, corrected toward 0 (matched pairs, one per item)"


def choices(parsed: pd.DataFrame) -> pd.DataFrame:
    """Pairwise rows with ``chose``: the candidate key picked ("real"/"alt"), NaN on a parse failure.

    The order field says which candidate sat in slot A (``realA``: real in A)."""
    p = parsed[parsed["task"] == "pairwise"].copy()
    real_in_a = p["order"] == "realA"
    ans = p["answer"]
    p["chose"] = np.where(ans.isna(), None, np.where((ans == "A") == real_in_a, "real", "alt"))
    p["chose_slot_a"] = np.where(ans.isna(), np.nan, (ans == "A").astype(float))
    return p


def rate_row(events: np.ndarray, pairs: np.ndarray, *, level: float = 0.95, **extra) -> dict:
    """A rate over items with its cluster-adjusted Clopper-Pearson interval (two-sided ``level``)."""
    events, pairs = np.asarray(events, float), np.asarray(pairs, float)
    est, lo, hi, how = clustered_rate_intervals(events, pairs, np.zeros(len(events), np.int64), n_groups=1,
                                                confidence=level)
    return {**extra, "estimate": float(est[0]) if pairs.sum() else math.nan, "ci_low": float(lo[0]),
            "ci_high": float(hi[0]), "n_items": int((pairs > 0).sum()), "n_pairs": int(pairs.sum()),
            "ci_method": how[0]}


def _mean_row(values: np.ndarray, value_range: tuple[float, float], *, n_boot: int, seed: int, **extra) -> dict:
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    lo, hi, how = mean_interval_t(v, np.ones(v.size), n_boot=n_boot, rng=np.random.default_rng(seed),
                                  value_range=value_range)
    return {**extra, "estimate": float(v.mean()) if v.size else math.nan, "ci_low": lo, "ci_high": hi,
            "n_items": int(v.size), "ci_method": how}


def _sorted_items(cells: pd.DataFrame) -> pd.DataFrame:
    """Per-item cells in item order (the order every interval takes its items in, whatever the order in which
    rows were added or states merged)."""
    return cells.sort_values("item_id", kind="stable").reset_index(drop=True) if len(cells) else cells


def position_table(cells: pd.DataFrame, *, n_boot: int, seed: int, level: float = 0.95) -> pd.DataFrame:
    """Position consistency (same candidate chosen in both orders, baseline prompt) and position bias
    (share of slot-A picks over both orders minus 0.5: content cancels because each candidate sits in A once),
    from the per-item ``position`` cells of :func:`item_stats` (``consistent``, ``slot_a``); ``level``: the
    consistency interval's (a sequential walk's repeated looks ask for more)."""
    c = _sorted_items(cells)
    consistent = c["consistent"].to_numpy(float) if len(c) else np.array([])
    slot_a = c["slot_a"].to_numpy(float) if len(c) else np.array([])
    rows = [rate_row(consistent, np.ones(len(consistent)), metric="position_consistency", level=level),
            _mean_row(slot_a, (-0.5, 0.5), n_boot=n_boot, seed=seed, metric="position_bias_slot_a")]
    rows[1]["n_pairs"] = 2 * len(slot_a)
    return pd.DataFrame(rows)


def accuracy_table(cells: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Share of baseline answers preferring the reply actually sent: on controls that is accuracy (the
    other reply is known worse); on drafts it is a description (no truth), per kind. From the per-item
    ``accuracy`` cells of :func:`item_stats` (``kind``, ``events``: answers for the sent reply, ``n``: parsed
    answers)."""
    rows = []
    for kind in ("control", "draft"):
        c = _sorted_items(cells[cells["kind"] == kind]) if len(cells) else cells
        if len(c):
            rows.append(rate_row(c["events"].to_numpy(float), c["n"].to_numpy(float), kind=kind, level=level,
                                 metric="accuracy" if kind == "control" else "prefers_sent_reply"))
    return pd.DataFrame(rows)


def sign_test(d: np.ndarray) -> tuple[int, int, float]:
    """Items moving up / down and the exact two-sided sign-test p-value (NaN when none moves)."""
    d = np.asarray(d, float)
    d = d[~np.isnan(d)]
    up, down = int((d > 0).sum()), int((d < 0).sum())
    if up + down == 0:
        return up, down, math.nan
    return up, down, float(sps.binomtest(up, up + down, 0.5).pvalue)


def detectable_share(n_items: int, alpha: float, power: float = 0.8) -> float:
    """Smallest share of items that must move toward the cue (none away) for the sign test at level
    ``alpha`` to reject with probability ``power``; NaN when no share can (too few items)."""
    if n_items <= 0:
        return math.nan
    k = 1
    while 2 * 0.5 ** k > alpha:
        k += 1
    if k > n_items:
        return math.nan
    q = np.linspace(0, 1, 1001)
    ok = sps.binom.sf(k - 1, n_items, q) >= power
    return float(q[np.argmax(ok)]) if ok.any() else math.nan


def gate_status(ci_high: float, n_items: int, gate_max: float, ci_low: float = -math.inf, *,
                need: int | None = None, floor: bool = False, responsive: bool = True, why: str = "") -> str:
    """The verdict (:mod:`cfbench.stats.verdicts`): ``pass`` when the upper bound lies below ``gate_max`` and the
    judge is responsive, ``fail`` when the lower bound lies above it, else ``inconclusive`` or
    ``uninformative (why)``.

    With ``floor=True`` there is no pass below ``need`` items (default: the items at which no event gives a
    Clopper-Pearson bound below ``gate_max``): the pointwise gate, where the mean interval of 8 items
    false-passed one simulated shape in 4.5-5.6 % of audits, about twice its nominal 2.5 %
    (``tests/test_judge_bias_gate_coverage.py``); such a row is ``inconclusive``. The pairwise nets need no
    floor: at a true net equal to the maximum Tango's interval false-passes at most 2.3 % at 8-120 items
    (exact; 2.5 % at most simulated) and the MOVER at most 2.5 % (simulated), same test file."""
    v = V.verdict(ci_low, ci_high, gate_max, responsive=responsive, why=why)
    need = items_needed_zero_events(gate_max) if need is None else need
    if v == V.PASS and floor and n_items < need:
        return V.INCONCLUSIVE
    return v


#: what :func:`cue_table` and :func:`pointwise_table` add per row besides the intervals
GATE_VERDICT_COLUMNS = ["gate", "gate_kind", "gate_reference", "point_rule", "responsive", "responsiveness",
                        "items_needed", "forecast", "forecast_assumes", "best_case_upper"]


def responsiveness_of(position: pd.DataFrame, accuracy: pd.DataFrame) -> tuple[bool, str]:
    """Is the judge shown to look at the replies? Both lower bounds above 0.5: accuracy on the control pairs
    (the other reply is known worse; each control sits in both orders, so a judge always picking slot A, or
    picking at random, scores 0.5) and position consistency (the same reply chosen in both orders: 0 for a
    judge always picking one slot, 0.5 for one picking at random). ``(responsive, why)``."""
    def lower(t: pd.DataFrame, metric: str) -> float:
        row = t[t["metric"] == metric] if len(t) and "metric" in t.columns else t.iloc[0:0]
        return float(row["ci_low"].iloc[0]) if len(row) else math.nan

    checks = [("control-pair accuracy", lower(accuracy, "accuracy"), 0.5),
              ("position consistency", lower(position, "position_consistency"), 0.5)]
    return V.responsiveness(checks)


#: the pointwise condition of a control item's second baseline score: the reply the item's pointwise requests
#: do not score (the known-worse one when they score the real reply, and the other way round)
OTHER_REPLY = "other_reply"
#: ``ci_method`` of :func:`pointwise_control_table`
DISCRIMINATION_METHOD = "clopper-pearson over untied control items (a tie says nothing either way)"


def discrimination_lower_bound(real_higher, alt_higher, confidence: float = 0.95):
    """The lower bound of the share of untied control items on which the real reply scored higher than the
    known-worse one (Clopper-Pearson at ``confidence``, two-sided, so one-sided 97.5 %); NaN with no untied item.
    Vectorised over arrays of counts (the simulation in ``tests/test_judge_bias_pointwise_responsive.py``)."""
    up = np.asarray(real_higher, float)
    n = up + np.asarray(alt_higher, float)
    lo, _ = clopper_pearson(up, np.where(n > 0, n, 1.0), confidence)
    return np.where(n > 0, lo, np.nan)


def pointwise_control_table(cells: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Does the judge's 1-10 score tell a reply from a known-worse one? One row from the ``pointwise_control``
    cells of :func:`item_stats` (per control item both baseline scores, ``real_score`` and ``alt_score``): items
    scored, items whose real reply scored higher / lower / the same, mean scores, and the share of untied items
    scored the right way with its Clopper-Pearson interval. A judge whose score ignores the reply (a constant, or
    a draw independent of it) ties every item or orders each untied one either way with probability 1/2, so it
    has a lower bound above 0.5 in at most 2.5 % of audits, whatever the shape of its scores."""
    c = _sorted_items(cells) if len(cells) else cells
    real = c["real_score"].to_numpy(float) if len(c) else np.array([])
    alt = c["alt_score"].to_numpy(float) if len(c) else np.array([])
    up, down = int((real > alt).sum()), int((real < alt).sum())
    n = up + down
    lo, hi = clopper_pearson(np.array([float(up)]), np.array([float(max(n, 1))]), level)
    return pd.DataFrame([{
        "n_items": len(real), "real_higher": up, "alt_higher": down, "tied": len(real) - n,
        "mean_real_score": float(real.mean()) if len(real) else math.nan,
        "mean_alt_score": float(alt.mean()) if len(alt) else math.nan,
        "estimate": up / n if n else math.nan, "ci_low": float(lo[0]) if n else math.nan,
        "ci_high": float(hi[0]) if n else math.nan, "ci_method": DISCRIMINATION_METHOD}])


def pointwise_responsiveness(table: pd.DataFrame) -> tuple[bool, str]:
    """Is the judge's pointwise score shown to respond to the reply? The lower bound of
    :func:`pointwise_control_table`'s share above 0.5 (chance for a score that ignores the reply).
    ``(responsive, why)``; the pointwise gate reads this, not the pairwise checks: a judge can compare two
    replies well and still give every single reply the same score."""
    what = "pointwise control discrimination (known-worse reply scored lower)"
    if not len(table) or not int(table["n_items"].iloc[0]):
        return False, f"{what}: no control item scored both ways"
    r = table.iloc[0]
    if int(r["real_higher"]) + int(r["alt_higher"]) == 0:
        return False, (f"{what}: the known-worse reply scored the same as the real one on all "
                       f"{int(r['n_items'])} control items")
    ok, why = V.responsiveness([(what, float(r["ci_low"]), 0.5)])
    return ok, f"{why} ({int(r['real_higher'])} right, {int(r['alt_higher'])} wrong, {int(r['tied'])} tied)"


def items_needed_matched(gate_max: float, *, confidence: float = 0.95, limit: int = 1_000_000) -> int:
    """Fewest items at which Tango's interval with no discordant item (no flip on either side, or the same
    answer with and without the cue) has an upper bound below ``gate_max`` (35 at 0.10). Below it a pass
    needs the reference to flip on more items than the cue."""
    if not 0 < gate_max < 1:
        raise ValueError(f"gate_max must lie in (0, 1), got {gate_max!r}")

    def ok(n: int) -> bool:
        return bool(tango_interval(0, 0, n, confidence=confidence)[1] < gate_max)

    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > limit:
            raise ValueError(f"no n up to {limit} can pass {gate_max}")
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return max(hi, 2)


def matched_row(num1: np.ndarray, den1: np.ndarray, num2: np.ndarray, den2: np.ndarray, **extra) -> dict:
    """``mean(num1/den1) - mean(num2/den2)`` over items for two binary outcomes on the same items.

    One pair per item on both sides (the study's design): Tango's score interval on the 2x2 counts
    (``n10``: items with only side 1 positive, ``n01``: only side 2) - never a point, ``±z²/(n+z²)`` with no
    discordant item. Several pairs per item on a side: the MOVER difference of the two cluster-adjusted
    Clopper-Pearson rates, item correlation capped at 0 (:func:`cfbench.stats.intervals.paired_difference`).
    Fewer than two items: NaN bounds and a ``none:`` method."""
    num1, den1, num2, den2 = (np.asarray(x, float) for x in (num1, den1, num2, den2))
    n = int(num1.size)
    est = float((num1 / den1).mean() - (num2 / den2).mean()) if n else math.nan
    row = {**extra, "estimate": est, "ci_low": math.nan, "ci_high": math.nan, "n_items": n}
    if n < 2:
        return {**row, "ci_method": NO_ITEMS if n == 0 else ONE_ITEM}
    if (den1 == 1).all() and (den2 == 1).all():
        a, b = num1 > 0, num2 > 0
        lo, hi = tango_interval(int((a & ~b).sum()), int((~a & b).sum()), n)
        return {**row, "ci_low": float(lo), "ci_high": float(hi), "ci_method": MATCHED_METHOD}
    d = paired_difference(num1, den1, num2, den2, kind="rate")
    return {**row, "estimate": float(d["estimate"]), "ci_low": float(d["ci_low"]), "ci_high": float(d["ci_high"]),
            "ci_method": str(d["ci_method"])}


def repeat_net_row(flips: np.ndarray, den: np.ndarray, rep_flips: np.ndarray, rep_den: np.ndarray, **extra) -> dict:
    """The cue's flip rate minus the repeat flip rate on the same items (several repeat pairs per item): MOVER
    of the two cluster-adjusted Clopper-Pearson rates with the continuity-corrected item correlation, as the
    contact-center net CFR (:func:`cfbench.stats.intervals.paired_difference`, ``pairing="corrected"``)."""
    d = paired_difference(flips, den, rep_flips, rep_den, kind="rate", pairing="corrected")
    return {**extra, "estimate": float(d["estimate"]), "ci_low": float(d["ci_low"]), "ci_high": float(d["ci_high"]),
            "n_items": int(d["n_items"]), "ci_method": str(d["ci_method"])}


def _pivot(ch: pd.DataFrame, column: str) -> pd.DataFrame:
    return ch.pivot_table(index=["item_id", "order"], columns="condition", values=column, aggfunc="first")


def repeat_conditions(frame: pd.DataFrame) -> list[str]:
    """The ``repeat<r>`` conditions present, in repeat order."""
    conds = {c for c in frame["condition"].unique() if str(c).startswith("repeat") and str(c)[6:].isdigit()}
    return sorted(conds, key=lambda c: int(c[6:]))


def noise_table(cells: pd.DataFrame, seen: "set[str]", repeats: Sequence[str]) -> pd.DataFrame:
    """The noise references of the pairwise choice: the flip rate under the reworded prompt vs the base prompt
    (same order), and, when repeats were sent, the flip rate of each repeat vs the first draw (both orders).
    From the per item x condition ``noise`` cells of :func:`item_stats` (``flips``, ``n``: valid pairs);
    ``seen``: the conditions with a parsed choice, ``repeats``: the repeat conditions sent. A reference is
    reported when each of its conditions has a parsed choice; an item counts when it has a valid pair under
    each of them."""
    rows = []
    for metric, conds in (("reworded_prompt_flip_rate", ["reworded"]), ("repeat_flip_rate", list(repeats))):
        if not conds or any(x not in seen for x in conds):
            continue
        sub = cells[cells["condition"].isin(conds)] if len(cells) else cells
        if len(sub):
            per = sub.groupby("item_id", sort=True).agg(flips=("flips", "sum"), n=("n", "sum"),
                                                        k=("condition", "nunique"))
            per = per[per["k"] == len(conds)]
        else:
            per = pd.DataFrame({"flips": [], "n": []})
        rows.append(rate_row(per["flips"].to_numpy(float), per["n"].to_numpy(float), metric=metric,
                             repeats=len(conds) if metric == "repeat_flip_rate" else 0))
    return pd.DataFrame(rows)


def _noise_cells(c: pd.DataFrame, conds: Sequence[str]) -> pd.DataFrame:
    """Per item x noise condition (reworded prompt, each repeat): flips against the baseline and valid pairs,
    from the choice pivot ``c`` of whole items (items with no valid pair under a condition have no row)."""
    out = []
    for cond in conds:
        if cond not in c.columns or "baseline" not in c.columns:
            continue
        pair = c[["baseline", cond]].dropna()
        if not len(pair):
            continue
        flips = (pair["baseline"] != pair[cond]).groupby(level=0).sum()
        n = pair.groupby(level=0).size().reindex(flips.index)
        out.append(pd.DataFrame({"item_id": flips.index.to_numpy(), "condition": cond, "flips": flips.to_numpy(),
                                 "n": n.to_numpy()}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=_CELL_COLUMNS["noise"][1:])


def _per_item(c: pd.DataFrame, cue: str, targets: pd.Series, reps: Sequence[str]) -> pd.DataFrame:
    """Per item of the choice pivot ``c``: chose-target under the cue (num1/den1), under no cue (num2/den2),
    flips vs no cue, noise flips (reworded prompt, same order) and repeat flips (every repeat vs the first
    draw, both orders)."""
    out = []
    for item, g in c.groupby(level=0):
        t = targets[item]
        g = g.droplevel(0)
        def get(order: str, cond: str):
            return g.at[order, cond] if (order in g.index and cond in g.columns) else None
        if cue == "position":  # cued: target in slot A; uncued: target in slot B (baseline prompt)
            oa, ob = ("realA", "realB") if t == "real" else ("realB", "realA")
            x, y = get(oa, "baseline"), get(ob, "baseline")
            pairs = [(x, y)]
        else:
            pairs = [(get(o, cue), get(o, "baseline")) for o in g.index if not _isna(get(o, cue))]
        pairs = [(x, y) for x, y in pairs if not _isna(x) and not _isna(y)]
        noise = [(get(o, "reworded"), get(o, "baseline")) for o in g.index]
        noise = [(x, y) for x, y in noise if not _isna(x) and not _isna(y)]
        rep = [(get(o, r), get(o, "baseline")) for o in g.index for r in reps]
        rep = [(x, y) for x, y in rep if not _isna(x) and not _isna(y)]
        out.append({"item_id": item, "cue": cue, "num1": sum(x == t for x, _ in pairs),
                    "num2": sum(y == t for _, y in pairs), "den": len(pairs), "flips": sum(x != y for x, y in pairs),
                    "noise_flips": sum(x != y for x, y in noise), "noise_den": len(noise),
                    "rep_flips": sum(x != y for x, y in rep), "rep_den": len(rep)})
    return pd.DataFrame(out, columns=_CELL_COLUMNS["cues"][1:])


def _isna(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def cue_table(cells: pd.DataFrame, cues: Sequence[str], *, has_repeats: bool, gate_max: float, alpha: float,
              multiplicity: str, n_boot: int, seed: int, responsive: tuple[bool, str] = (False, "not checked")
              ) -> pd.DataFrame:
    """One row per cue: the shift toward the cued candidate (P(choose it | cued) - P(choose it | not cued),
    over items), its sign test, Holm/BH-adjusted p across cues, the cue's flip rate minus the
    reworded-prompt flip rate (net flips) - and, when repeats were sent, minus the repeat flip rate - with the
    verdict columns (:data:`GATE_VERDICT_COLUMNS`; ``responsive``: :func:`responsiveness_of` of this judge,
    no pass without it), and the detectable share.

    The shift and the net vs the reworded prompt are differences of two binary outcomes on the same item
    (one pair each: chose the cued reply with / without the cue; flipped under the cue / under the reworded
    prompt): Tango's score interval on the items' 2x2 counts (:func:`matched_row`). The net vs repeats sets
    the cue's flip (one pair) against the item's repeat flips (both orders x repeats): the MOVER difference
    of the two cluster-adjusted Clopper-Pearson rates with the continuity-corrected item correlation
    (:func:`repeat_net_row`; 0 when a side has no flip). Neither returns a point: with no discordant item Tango gives ``±z²/(n+z²)``,
    with no flip on either side the MOVER bound is the Clopper-Pearson bound of 0 events.
    (A mean interval over the per-item differences is not used: with rare flips at 8 items it false-passed
    the repeat net's gate in 14.8 % of simulated audits, the negative control of
    tests/test_judge_bias_gate_coverage.py.) Both are analytic: ``n_boot`` and ``seed`` are accepted for the
    callers' signature and no cue interval resamples.

    ``cells``: the per item x cue ``cues`` cells of :func:`item_stats` (``num1``/``num2``: chose the cued reply
    with / without the cue, ``den``: pairs, ``flips``, ``noise_flips``/``noise_den``, ``rep_flips``/``rep_den``);
    ``has_repeats``: repeats were sent (an item then counts only with a repeat pair).

    Two references, one rule: a claim must hold against each. *Beyond noise* needs every reference's net
    lower bound above 0 (the larger noise decides); a gate *pass* needs every reference's net upper bound
    below ``gate_max`` (the smaller noise decides). ``gate_reference`` names the reference that decided."""
    rows = []
    has_rep = bool(has_repeats)
    for cue in cues:
        per = _sorted_items(cells[cells["cue"] == cue]) if len(cells) else cells
        per = per[(per["den"] > 0) & (per["noise_den"] > 0) & ((per["rep_den"] > 0) if has_rep else True)]
        d = per["den"].to_numpy(float)
        di = (per["num1"] - per["num2"]).to_numpy(float) / d
        fi = per["flips"].to_numpy(float) / d
        nd = per["noise_den"].to_numpy(float)
        shift = matched_row(per["num1"].to_numpy(float), d, per["num2"].to_numpy(float), d)
        net = matched_row(per["flips"].to_numpy(float), d, per["noise_flips"].to_numpy(float), nd)
        up, down, p = sign_test(di)
        row = {"cue": cue, "n_items": shift["n_items"],
               "chose_cued_with_cue": float((per["num1"] / d).mean()) if len(d) else math.nan,
               "chose_cued_without": float((per["num2"] / d).mean()) if len(d) else math.nan,
               "shift": shift["estimate"], "shift_ci_low": shift["ci_low"],
               "shift_ci_high": shift["ci_high"], "shift_ci_method": shift["ci_method"],
               "items_toward_cue": up, "items_away": down, "p_sign": p,
               "flip_rate": float(fi.mean()) if len(d) else math.nan,
               "noise_flip_rate": float((per["noise_flips"] / nd).mean()) if len(d) else math.nan,
               "net_flip_rate": net["estimate"], "net_ci_low": net["ci_low"], "net_ci_high": net["ci_high"],
               "net_ci_method": net["ci_method"]}
        if has_rep:
            ri = per["rep_flips"].to_numpy(float) / per["rep_den"].to_numpy(float)
            rnet = repeat_net_row(per["flips"].to_numpy(float), d, per["rep_flips"].to_numpy(float),
                                  per["rep_den"].to_numpy(float))
            row.update({"repeat_flip_rate": float(ri.mean()) if len(d) else math.nan,
                        "net_repeat_flip_rate": rnet["estimate"], "net_repeat_ci_low": rnet["ci_low"],
                        "net_repeat_ci_high": rnet["ci_high"], "net_repeat_ci_method": rnet["ci_method"]})
        rows.append(row)
    t = pd.DataFrame(rows)
    if t.empty:  # no cue asked for (a pointwise-only audit): no rows, but the columns every reader expects
        return pd.DataFrame(columns=CUE_COLUMNS)
    refs = [("reworded", "net_ci_low", "net_ci_high")] + ([("repeats", "net_repeat_ci_low", "net_repeat_ci_high")]
                                                          if has_rep else [])
    _adjust(t, multiplicity=multiplicity, alpha=alpha, refs=refs)
    t["gate_max_net_flip"] = gate_max
    tango_need = items_needed_matched(gate_max)
    best = {"reworded": lambda n: float(tango_interval(0, 0, n)[1]), "repeats": worst_case_bound}
    _gate(t, refs, gate_max, {"reworded": tango_need, "repeats": items_needed_zero_events(gate_max)}, best,
          est_cols={"reworded": "net_flip_rate", "repeats": "net_repeat_flip_rate"}, responsive=responsive)
    t["detectable_share"] = [detectable_share(int(n), alpha / len(t)) for n in t["n_items"]]
    return t


#: the columns of :func:`cue_table` without repeats, in order (its empty table has them too)
CUE_COLUMNS = ["cue", "n_items", "chose_cued_with_cue", "chose_cued_without", "shift", "shift_ci_low", "shift_ci_high",
               "shift_ci_method", "items_toward_cue", "items_away", "p_sign", "flip_rate", "noise_flip_rate",
               "net_flip_rate", "net_ci_low", "net_ci_high", "net_ci_method", "p_adjusted", "multiplicity",
               "significant", "beyond_noise", "gate_max_net_flip", *GATE_VERDICT_COLUMNS, "detectable_share"]


#: the bracketed reason of an uninformative pairwise / pointwise gate
PAIRWISE_UNRESPONSIVE = "not shown to look: control-pair accuracy and position consistency must exceed 0.5"
POINTWISE_UNRESPONSIVE = "pointwise control discrimination not shown above 0.5: a known-worse reply must score lower"


def _gate(t: pd.DataFrame, refs: list[tuple[str, str, str]], gate_max: float, need: dict[str, int],
          best: dict[str, object], *, n_col: str = "n_items", floor: bool = False, est_cols: dict[str, str],
          responsive: tuple[bool, str] = (True, ""), short: str = PAIRWISE_UNRESPONSIVE,
          n_cols: dict[str, str] | None = None) -> None:
    """The verdict columns (:data:`GATE_VERDICT_COLUMNS`) against every noise reference: ``fail`` when any
    reference's net lower bound lies above ``gate_max``, ``pass`` only when every reference's upper bound lies
    below it (and the judge is responsive), else ``inconclusive`` / ``uninformative (why)``.
    ``gate_reference`` names the reference that decided (the failing one, else the largest upper bound); the
    forecast is that reference's. ``best_case_upper``: the largest over the references of the upper bound when
    no item shows a net event (``best[ref](n)``: what this n can show at best). ``short``: the reason an
    uninformative verdict gives in brackets (the full one goes to ``responsiveness``). ``n_cols``: a
    reference's own item-count column where it can rest on fewer items than ``n_col`` says (the floor and
    the forecast then read that count)."""
    ok, why = responsive
    out = []
    for k in range(len(t)):
        ns = {name: int(t[(n_cols or {}).get(name, n_col)].iloc[k]) for name, _, _ in refs}
        per = [(name, gate_status(t[hi].iloc[k], ns[name], gate_max, t[lo].iloc[k], need=need[name], floor=floor,
                                  responsive=ok, why=short)) for name, lo, hi in refs]
        fails = [j for j, (_, v) in enumerate(per) if v == V.FAIL]
        his = [t[h].iloc[k] for _, _, h in refs]
        # the failing reference decides; else one that does not pass (the floor can hold back a reference
        # whose upper bound is not the largest), the largest upper bound among them
        cand = fails[:1] or [i for i, (_, v) in enumerate(per) if v != V.PASS] or list(range(len(refs)))
        j = max(cand, key=lambda i: his[i] if np.isfinite(his[i]) else np.inf)
        name, lo, hi = refs[j]
        n = ns[name]
        row = V.forecast_row(t[est_cols[name]].iloc[k], t[lo].iloc[k], t[hi].iloc[k], n, gate_max,
                             responsive=ok, why=short, detail=why)
        v = per[j][1]
        held = v == V.INCONCLUSIVE and row["verdict"] == V.PASS  # passed the interval, held back by the floor
        short_of_floor = (floor and v == V.INCONCLUSIVE and row["forecast"].endswith("to pass")
                          and row["items_needed"] < need[name])
        if held or short_of_floor:
            row.update(items_needed=float(need[name]), forecast=f"about {need[name]} items (no pass below them)",
                       forecast_assumes="the pointwise gate's floor on items")
        row.update(verdict=v, verdict_kind=V.verdict_kind(v))
        out.append({"gate": v, "gate_kind": row["verdict_kind"], "gate_reference": name,
                    **{c: row[c] for c in ("point_rule", "responsive", "responsiveness", "items_needed", "forecast",
                                           "forecast_assumes")},
                    "best_case_upper": max(best[r](ns[r]) for r, _, _ in refs) if min(ns.values()) >= 2
                    else math.nan})
    for c in GATE_VERDICT_COLUMNS:
        t[c] = [o[c] for o in out]


def _adjust(t: pd.DataFrame, *, multiplicity: str, alpha: float, refs: list[tuple[str, str, str]]) -> None:
    """Sign-test p-values adjusted across the cues of one table, and which rows clear alpha or every noise
    reference (each reference's net lower bound above 0)."""
    t["p_adjusted"] = adjust_pvalues(t["p_sign"].to_numpy(float), multiplicity)
    t["multiplicity"] = multiplicity
    t["significant"] = t["p_adjusted"] < alpha
    t["beyond_noise"] = np.logical_and.reduce([t[lo].to_numpy(float) > 0 for _, lo, _ in refs])


#: Range of a per-item net absolute score shift, |cued - baseline| - |reference - baseline| (1..10 scores).
SCORE_NET_RANGE = (-9.0, 9.0)


def items_needed_score_gate(gate_max: float) -> int:
    """Fewest items at which items all showing a net absolute shift of 0 give an upper bound below
    ``gate_max`` points: the worst-case bound is ``9 (1 - 0.025^(1/n))``."""
    return items_needed_zero_events(gate_max / SCORE_NET_RANGE[1])


def pointwise_table(cells: pd.DataFrame, cues: Sequence[str], *, alpha: float, multiplicity: str, n_boot: int,
                    seed: int, gate_max: float = 1.0, responsive: tuple[bool, str] = (False, "not checked")
                    ) -> pd.DataFrame:
    """Per cue: mean score shift (cued minus uncued, same reply; range -9..9) and the reworded prompt's shift,
    the net of absolute shifts (mean over items of |cue| - |reworded|; with repeats also |cue| - mean |repeat|),
    sign tests, adjusted p across cues, and the gate on the net's upper bound(s) (``gate_max`` points), with
    the same two-reference rule as :func:`cue_table`. ``cells``: the ``pointwise`` cells of :func:`item_stats`
    (one parsed score per item x condition)."""
    s = (cells.pivot_table(index="item_id", columns="condition", values="score", aggfunc="first") if len(cells)
         else pd.DataFrame())
    reps = [c for c in repeat_conditions(cells) if c in s.columns] if len(cells) else []
    rows = []
    for cue in cues:
        if cue not in s.columns or "baseline" not in s.columns:
            continue
        d = (s[cue] - s["baseline"]).to_numpy(float)
        nz = (s["reworded"] - s["baseline"]).to_numpy(float) if "reworded" in s.columns else np.full(len(s), np.nan)
        r = _mean_row(d, SCORE_NET_RANGE, n_boot=n_boot, seed=seed)
        ok = ~np.isnan(d) & ~np.isnan(nz)
        net = _mean_row(np.abs(d[ok]) - np.abs(nz[ok]), SCORE_NET_RANGE, n_boot=n_boot, seed=seed)
        up, down, pv = sign_test(d)
        row = {"cue": cue, "n_items": r["n_items"], "score_shift": r["estimate"], "ci_low": r["ci_low"],
               "ci_high": r["ci_high"], "ci_method": r["ci_method"], "items_up": up, "items_down": down,
               "p_sign": pv, "mean_abs_shift": float(np.nanmean(np.abs(d))) if r["n_items"] else math.nan,
               "mean_abs_reworded_shift": float(np.abs(nz[ok]).mean()) if ok.any() else math.nan,
               "n_items_net": net["n_items"], "net_abs_shift": net["estimate"],
               "net_ci_low": net["ci_low"], "net_ci_high": net["ci_high"], "net_ci_method": net["ci_method"]}
        if reps:
            shifts = np.abs(s[reps].to_numpy(float) - s[["baseline"]].to_numpy(float))
            seen = (~np.isnan(shifts)).sum(axis=1)  # an item without a parsed repeat: NaN, left out below
            rep = np.divide(np.nansum(shifts, axis=1), seen, out=np.full(len(s), np.nan), where=seen > 0)
            okr = ~np.isnan(d) & ~np.isnan(rep)
            rnet = _mean_row(np.abs(d[okr]) - rep[okr], SCORE_NET_RANGE, n_boot=n_boot, seed=seed)
            row.update({"mean_abs_repeat_shift": float(rep[okr].mean()) if okr.any() else math.nan,
                        "n_items_net_repeat": rnet["n_items"],
                        "net_repeat_abs_shift": rnet["estimate"], "net_repeat_ci_low": rnet["ci_low"],
                        "net_repeat_ci_high": rnet["ci_high"]})
        rows.append(row)
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    refs = [("reworded", "net_ci_low", "net_ci_high")] + ([("repeats", "net_repeat_ci_low", "net_repeat_ci_high")]
                                                          if reps else [])
    _adjust(t, multiplicity=multiplicity, alpha=alpha, refs=refs)
    t["gate_max_score_shift"] = gate_max
    need = items_needed_score_gate(gate_max)
    bound = {name: (lambda n: SCORE_NET_RANGE[1] * worst_case_bound(n)) for name, _, _ in refs}
    # floor: no pass below `need` items (the mean interval at 8 items false-passed 4.5 % in one simulated shape)
    _gate(t, refs, gate_max, {name: need for name, _, _ in refs}, bound, n_col="n_items_net", floor=True,
          est_cols={"reworded": "net_abs_shift", "repeats": "net_repeat_abs_shift"}, responsive=responsive,
          short=POINTWISE_UNRESPONSIVE, n_cols={"repeats": "n_items_net_repeat"})
    t["detectable_share"] = [detectable_share(int(n), alpha / len(t)) for n in t["n_items"]]
    return t


# -- item statistics: the update step and the functional form ------------------------------------------

#: per statistic of :func:`item_stats`: its columns (one row per judge x item x ...)
_CELL_COLUMNS = {
    "parse": ["judge", "task", "condition", "item_id", "n", "parsed", *KIND_COLUMNS],
    "position": ["judge", "item_id", "consistent", "slot_a"],
    "accuracy": ["judge", "kind", "item_id", "events", "n"],
    "noise": ["judge", "item_id", "condition", "flips", "n"],
    "cues": ["judge", "item_id", "cue", "num1", "num2", "den", "flips", "noise_flips", "noise_den", "rep_flips",
             "rep_den"],
    "pointwise": ["judge", "item_id", "condition", "score"],
    "pointwise_control": ["judge", "item_id", "real_score", "alt_score"],
    "placebo": ["judge", "item_id", "cue", "id_chose", "pl_chose", "id_flip", "pl_flip"],
}
#: the conditions of a pairwise item that are not cues
_NOT_CUES = {"baseline", "reworded"}
#: the condition of an identity cue's placebo pair is this prefix and the cue's name
PLACEBO_PREFIX = "placebo-"


def placebo_condition(cue: str) -> str:
    """The request condition of ``cue``'s placebo pair (``placebo-agent_identity``)."""
    return PLACEBO_PREFIX + cue


def _placebo_cells(c: pd.DataFrame, cue: str, targets: pd.Series) -> pd.DataFrame:
    """Per item of the choice pivot ``c`` with a parsed choice under ``cue``, its placebo and the baseline in the
    same order: chose the cued reply under the cue (``id_chose``) and under the placebo (``pl_chose``), and
    whether each differs from the baseline choice (``id_flip``, ``pl_flip``); 0/1 each, one order per item."""
    pc = placebo_condition(cue)
    out = []
    if all(x in c.columns for x in (cue, pc, "baseline")):
        both = c[[cue, pc, "baseline"]].dropna()
        for (item, _order), r in both.iterrows():
            t = targets[item]
            out.append({"item_id": item, "cue": cue, "id_chose": float(r[cue] == t), "pl_chose": float(r[pc] == t),
                        "id_flip": float(r[cue] != r["baseline"]), "pl_flip": float(r[pc] != r["baseline"])})
    return pd.DataFrame(out, columns=_CELL_COLUMNS["placebo"][1:])


#: columns of the ``placebo_contrast`` table (before the ``judge`` column :func:`tables_from_stats` adds)
PLACEBO_COLUMNS = ["cue", "n_items", "flip_rate", "placebo_flip_rate", "net_flip_rate", "ci_low", "ci_high",
                   "ci_method", "chose_cued_with_cue", "chose_cued_with_placebo", "net_shift", "shift_ci_low",
                   "shift_ci_high", "shift_ci_method"]


def placebo_table(cells: pd.DataFrame, cues: Sequence[str], *, n_boot: int, seed: int) -> pd.DataFrame:
    """Per identity cue with placebo cells: the cue's effect net of its placebo (the same edit with no identity
    contrast), paired by item. ``net_flip_rate``: the cue's flip rate against the baseline minus the placebo's
    (as the contact-center ``placebo_contrast``: identity CFR minus same-group swap CFR); ``net_shift``: the
    share choosing the cued reply under the cue minus under the placebo (the baseline cancels; positive = toward
    the cued identity beyond the edit). Both by :func:`cfbench.stats.intervals.paired_difference`
    (``pairing="items"``: Tango's matched-pairs interval, one 0/1 outcome per item and side). Estimate and
    interval only, no verdict (docs/statistics.md, Placebo contrast)."""
    from cfbench.stats.intervals import paired_difference

    rows = []
    rng = np.random.default_rng(seed)
    for cue in cues:
        per = _sorted_items(cells[cells["cue"] == cue]) if len(cells) else cells
        if not len(per):
            continue
        one = np.ones(len(per))
        row: dict[str, Any] = {"cue": cue}
        for (a, b), pre in ((("id_flip", "pl_flip"), ""), (("id_chose", "pl_chose"), "shift_")):
            d = paired_difference(per[a].to_numpy(float), one, per[b].to_numpy(float), one, kind="rate",
                                  n_boot=n_boot, rng=rng, pairing="items")
            if pre:
                row.update(chose_cued_with_cue=d["est_1"], chose_cued_with_placebo=d["est_2"], net_shift=d["estimate"])
            else:
                row.update(n_items=d["n_items"], flip_rate=d["est_1"], placebo_flip_rate=d["est_2"],
                           net_flip_rate=d["estimate"])
            row.update({f"{pre}ci_low": d["ci_low"], f"{pre}ci_high": d["ci_high"], f"{pre}ci_method": d["ci_method"]})
        rows.append(row)
    return pd.DataFrame(rows, columns=PLACEBO_COLUMNS)


def _position_cells(ch: pd.DataFrame) -> pd.DataFrame:
    """Per item with a parsed baseline choice in both orders: ``consistent`` (1.0 when the same reply was
    chosen in both) and ``slot_a`` (share of slot-A picks minus 0.5)."""
    b = ch[ch["condition"] == "baseline"]
    if not len(b):
        return pd.DataFrame(columns=_CELL_COLUMNS["position"][1:])
    orders = ["realA", "realB"]
    chose = b.pivot_table(index="item_id", columns="order", values="chose", aggfunc="first")
    slot = b.pivot_table(index="item_id", columns="order", values="chose_slot_a", aggfunc="first")
    both = chose.reindex(columns=orders).dropna()
    return pd.DataFrame({"item_id": both.index.to_numpy(), "consistent": (both["realA"] == both["realB"]).to_numpy(float),
                         "slot_a": slot.reindex(columns=orders).loc[both.index].mean(axis=1).to_numpy() - 0.5})


def _accuracy_cells(ch: pd.DataFrame, items: "pd.DataFrame | None") -> pd.DataFrame:
    """Per kind x item: parsed baseline answers choosing the sent reply (``events``) and parsed answers (``n``)."""
    if items is None or not len(items):
        return pd.DataFrame(columns=_CELL_COLUMNS["accuracy"][1:])
    b = ch[ch["condition"] == "baseline"].merge(items[["item_id", "kind"]], on="item_id")
    b = b[b["chose"].notna()]
    g = b.assign(_real=(b["chose"] == "real").astype(int)).groupby(["kind", "item_id"], sort=True)
    return g.agg(events=("_real", "sum"), n=("_real", "size")).reset_index()


def _targets(items: "pd.DataFrame | None", wanted: Sequence[str]) -> pd.Series:
    """The cued candidate of each item in ``wanted`` (from ``items``' ``cued_candidate``); one clear line when
    an item has none."""
    have = (items.drop_duplicates("item_id").set_index("item_id")["cued_candidate"]
            if items is not None and len(items) and "cued_candidate" in items.columns else pd.Series(dtype=object))
    missing = [i for i in wanted if i not in have.index]
    if missing:
        from cfbench.core.errors import InputError

        raise InputError("judged rows of an item without its items row (no cued candidate)", source="judge_bias items",
                         record=str(missing[0]), field="cued_candidate")
    return have


def _parse_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per task x condition x item: answers asked for (``n``), read (``parsed``) and, per failure kind
    (:data:`cfbench.judges.failures.KIND_COLUMNS`), the unread ones, from the ``failure`` column of
    :func:`.tasks.parse_judgments` (an unread row without one counts as unparseable)."""
    by = ["task", "condition", "item_id"]
    kind = rows["failure"] if "failure" in rows.columns else pd.Series(None, index=rows.index, dtype=object)
    kind = kind.where(kind.notna() | rows["parse_ok"].astype(bool), "unparseable")
    counts = pd.DataFrame({col: (kind == k).astype(int) for k, col in zip(FAILURE_KINDS, KIND_COLUMNS)},
                          index=rows.index)
    cells = pd.concat([rows[by], rows["parse_ok"].astype(int).rename("parsed"), counts], axis=1).assign(n=1)
    return cells.groupby(by, sort=True)[["n", "parsed", *KIND_COLUMNS]].sum().reset_index()


def _add_judge(s: ItemStatistics, judge: str, rows: pd.DataFrame, items: "pd.DataFrame | None") -> None:
    """Add one judge's cells of whole items' answers ``rows`` to ``s`` (see :func:`item_stats`)."""
    s.flag(("judge", judge))
    s.add("parse", _parse_cells(rows).assign(judge=judge))
    ch = choices(rows)
    if len(ch):
        c = _pivot(ch, "chose")
        reps = repeat_conditions(ch)
        for cond in c.columns:  # conditions with a parsed choice (a reference needs each of its conditions)
            s.flag(("chose", judge, cond))
        for cond in reps:
            s.flag(("repeat", judge, cond))
        s.add("position", _position_cells(ch).assign(judge=judge))
        s.add("accuracy", _accuracy_cells(ch, items).assign(judge=judge))
        s.add("noise", _noise_cells(c, ["reworded"] + reps).assign(judge=judge))
        conds = [x for x in ch["condition"].unique() if x not in _NOT_CUES and x not in reps]
        cues = ["position"] + sorted(x for x in conds if not str(x).startswith(PLACEBO_PREFIX))
        targets = _targets(items, list(c.index.get_level_values(0).unique()))
        for cue in cues:
            s.add("cues", _per_item(c, cue, targets, reps).assign(judge=judge))
        for cue in sorted(str(x)[len(PLACEBO_PREFIX):] for x in conds if str(x).startswith(PLACEBO_PREFIX)):
            s.add("placebo", _placebo_cells(c, cue, targets).assign(judge=judge))
    p = rows[rows["task"] == "pointwise"]
    if len(p):
        wide = p.pivot_table(index="item_id", columns="condition", values="score", aggfunc="first")
        long = wide.reset_index().melt(id_vars="item_id", var_name="condition", value_name="score").dropna()
        s.add("pointwise", long.assign(judge=judge))
        s.add("pointwise_control", _pointwise_control_cells(wide, items).assign(judge=judge))


def _pointwise_control_cells(wide: pd.DataFrame, items: "pd.DataFrame | None") -> pd.DataFrame:
    """Per control item with both baseline scores read (``baseline`` scores its cued candidate, ``other_reply``
    the other one): the real reply's score and the known-worse reply's."""
    if OTHER_REPLY not in wide.columns or "baseline" not in wide.columns or items is None or not len(items):
        return pd.DataFrame(columns=_CELL_COLUMNS["pointwise_control"][1:])
    kinds = items.drop_duplicates("item_id").set_index("item_id")["kind"]
    both = wide[["baseline", OTHER_REPLY]].dropna()
    both = both[both.index.isin(kinds.index[kinds == "control"])]
    target = _targets(items, list(both.index))
    real_first = (target.reindex(both.index) == "real").to_numpy()
    b, o = both["baseline"].to_numpy(float), both[OTHER_REPLY].to_numpy(float)
    return pd.DataFrame({"item_id": both.index.to_numpy(), "real_score": np.where(real_first, b, o),
                         "alt_score": np.where(real_first, o, b)})


def item_stats(parsed: "pd.DataFrame | None", items: "pd.DataFrame | None" = None) -> ItemStatistics:
    """The per-item statistics of whole items' parsed answers (``parsed``: one row per judge x request, columns
    ``judge, item_id, task, condition, order, answer, score, parse_ok``) and their ``items`` rows (``item_id,
    kind, cued_candidate``); the update step of :func:`new_state`.

    Per judge x item: parse counts per task x condition (``parse``), baseline consistency and slot-A share
    (``position``), answers for the sent reply per kind (``accuracy``), flips and pairs per noise condition
    (``noise``), per cue the matched counts :func:`cue_table` reads (``cues``), per identity cue with a placebo
    pair the 0/1 outcomes :func:`placebo_table` reads (``placebo``), and the parsed pointwise score per
    condition (``pointwise``); flags: the judges, the conditions with a parsed choice, the repeats sent.
    Every statistic is per item, so the statistics of disjoint sets of items add up to those of their union."""
    s = ItemStatistics()
    if parsed is None or not len(parsed):
        return s
    for judge, rows in parsed.groupby("judge", sort=True):
        _add_judge(s, str(judge), rows.drop(columns=["judge"]).reset_index(drop=True), items)
    return s


def judge_cells(s: ItemStatistics, name: str, judge: str) -> pd.DataFrame:
    """One judge's cells of statistic ``name`` (an empty frame with the statistic's columns when none)."""
    f = s.frame(name)
    if not len(f):
        return pd.DataFrame(columns=_CELL_COLUMNS[name][1:])
    return f[f["judge"] == judge].drop(columns=["judge"]).reset_index(drop=True)


def _judge_tables(s: ItemStatistics, judge: str, *, cues: Sequence[str], pointwise_cues: Sequence[str],
                  gate_max_net_flip: float, gate_max_score_shift: float, alpha: float, multiplicity: str,
                  n_boot: int, seed: int, placebo_cues: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    parse = judge_cells(s, "parse", judge)
    parse = parse.groupby(["task", "condition"], sort=True)[["n", "parsed", *KIND_COLUMNS]].sum().reset_index()
    parse.insert(4, "n_not_read", parse["n"] - parse["parsed"])  # split by reason in the kind columns
    position = position_table(judge_cells(s, "position", judge), n_boot=n_boot, seed=seed)
    accuracy = accuracy_table(judge_cells(s, "accuracy", judge))
    responsive = responsiveness_of(position, accuracy)  # verdicts: no pass for a judge not shown to look
    seen = {k[2] for k in s.flags if k[:2] == ("chose", judge)}
    repeats = sorted((k[2] for k in s.flags if k[:2] == ("repeat", judge)), key=lambda c: int(c[6:]))
    t = {"parse_failures": parse, "position": position, "accuracy": accuracy,
         "noise": noise_table(judge_cells(s, "noise", judge), seen, repeats),
         "cues": cue_table(judge_cells(s, "cues", judge), cues, has_repeats=bool(repeats), gate_max=gate_max_net_flip,
                           alpha=alpha, multiplicity=multiplicity, n_boot=n_boot, seed=seed, responsive=responsive)}
    if pointwise_cues:  # the pointwise gate reads the pointwise task's own responsiveness
        t["pointwise_control"] = pointwise_control_table(judge_cells(s, "pointwise_control", judge))
        t["pointwise"] = pointwise_table(judge_cells(s, "pointwise", judge), pointwise_cues, alpha=alpha,
                                         multiplicity=multiplicity, n_boot=n_boot, seed=seed,
                                         gate_max=gate_max_score_shift,
                                         responsive=pointwise_responsiveness(t["pointwise_control"]))
    if placebo_cues:
        t["placebo_contrast"] = placebo_table(judge_cells(s, "placebo", judge), placebo_cues, n_boot=n_boot, seed=seed)
    return t


def tables_from_stats(s: ItemStatistics, *, cues: Sequence[str], judges: "Sequence[str] | None" = None,
                      pointwise_cues: Sequence[str] = (), gate_max_net_flip: float = 0.10,
                      gate_max_score_shift: float = 1.0, alpha: float = 0.05, multiplicity: str = "holm",
                      n_boot: int = 1000, seed: int = 0, placebo_cues: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    """Every per-judge table from the item statistics of :func:`item_stats` (the functional form):
    ``parse_failures``, ``position``, ``accuracy``, ``noise``, ``cues``, with ``pointwise_cues``
    ``pointwise`` and with ``placebo_cues`` ``placebo_contrast`` (:func:`placebo_table`); each with a
    ``judge`` column first, judges in ``judges`` order (default: sorted). Items are
    taken in sorted order and every resampled interval is seeded from ``seed``, so the tables depend on the
    statistics only, not on the order in which rows were added or states merged."""
    judges = list(judges) if judges is not None else sorted(k[1] for k in s.flags if k[0] == "judge")
    opts = dict(cues=cues, pointwise_cues=pointwise_cues, gate_max_net_flip=gate_max_net_flip,
                gate_max_score_shift=gate_max_score_shift, alpha=alpha, multiplicity=multiplicity, n_boot=n_boot,
                seed=seed, placebo_cues=tuple(placebo_cues))
    per = {j: _judge_tables(s, j, **opts) for j in judges}
    out = {}
    for name in (per[judges[0]] if judges else {}):
        t = pd.concat([per[j][name].assign(judge=j) for j in judges], ignore_index=True)
        out[name] = t[["judge"] + [c for c in t.columns if c != "judge"]]
    return out


def new_state(*, spill: Any = None, compact_every: int = 10) -> ItemState:
    """An empty item-statistics state of this study: ``update(parsed, items, complete=...)``, ``merge(other)``,
    ``compute(cues=, judges=, ...)`` (-> :func:`tables_from_stats`); see :mod:`cfbench.metrics.state`."""
    return ItemState(item_stats, tables_from_stats, spill=spill, compact_every=compact_every)


def study_tables(parsed: pd.DataFrame, items: "pd.DataFrame | None" = None, **options: Any
                 ) -> dict[str, pd.DataFrame]:
    """Every table of :func:`tables_from_stats` from a frame of parsed answers: one state updated with all of
    them, then computed (``options``: those of :func:`tables_from_stats`)."""
    return new_state().update(parsed, items).compute(**options)
