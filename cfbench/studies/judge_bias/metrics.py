"""Judge-bias metrics: pure functions on the parsed judgments (one row per request).

Every interval is over *items* and names its method in ``ci_method``; the
methods are cfbench.stats's simulated ones (docs/statistics.md): rates by
cluster-adjusted Clopper-Pearson, means by bootstrap-t/t over items (a
worst-case bound over the known value range when items show no spread),
differences on the same items as means of per-item differences. P-values of a cue's direction come
from an exact two-sided sign test over items; Holm (or BH) adjusts them across
the cues of one task.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from cfbench.stats import adjust_pvalues
from cfbench.stats.intervals import (clustered_rate_intervals, items_needed_zero_events, mean_interval_t,
                                     worst_case_bound)

__all__ = ["choices", "position_table", "accuracy_table", "noise_table", "cue_table", "pointwise_table",
           "sign_test", "detectable_share", "gate_status", "rate_row", "repeat_conditions", "items_needed_score_gate",
           "SCORE_NET_RANGE"]


def choices(parsed: pd.DataFrame) -> pd.DataFrame:
    """Pairwise rows with ``chose``: the candidate key picked ("real"/"alt"), NaN on a parse failure.

    The order field says which candidate sat in slot A (``realA``: real in A)."""
    p = parsed[parsed["task"] == "pairwise"].copy()
    real_in_a = p["order"] == "realA"
    ans = p["answer"]
    p["chose"] = np.where(ans.isna(), None, np.where((ans == "A") == real_in_a, "real", "alt"))
    p["chose_slot_a"] = np.where(ans.isna(), np.nan, (ans == "A").astype(float))
    return p


def rate_row(events: np.ndarray, pairs: np.ndarray, **extra) -> dict:
    """A rate over items with its cluster-adjusted Clopper-Pearson interval."""
    events, pairs = np.asarray(events, float), np.asarray(pairs, float)
    est, lo, hi, how = clustered_rate_intervals(events, pairs, np.zeros(len(events), np.int64), n_groups=1)
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


def position_table(ch: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Position consistency (same candidate chosen in both orders, baseline prompt) and position bias
    (share of slot-A picks over both orders minus 0.5: content cancels because each candidate sits in A once)."""
    b = ch[(ch["condition"] == "baseline")].pivot_table(index="item_id", columns="order", values="chose",
                                                         aggfunc="first")
    a = ch[(ch["condition"] == "baseline")].pivot_table(index="item_id", columns="order", values="chose_slot_a",
                                                         aggfunc="first")
    both = b.reindex(columns=["realA", "realB"]).dropna()
    consistent = (both["realA"] == both["realB"]).to_numpy(float)
    slot_a = a.reindex(columns=["realA", "realB"]).loc[both.index].mean(axis=1).to_numpy() - 0.5
    rows = [rate_row(consistent, np.ones(len(consistent)), metric="position_consistency"),
            _mean_row(slot_a, (-0.5, 0.5), n_boot=n_boot, seed=seed, metric="position_bias_slot_a")]
    rows[1]["n_pairs"] = 2 * len(slot_a)
    return pd.DataFrame(rows)


def accuracy_table(ch: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Share of baseline answers preferring the reply actually sent: on controls that is accuracy (the
    other reply is known worse); on drafts it is a description (no truth), per kind."""
    b = ch[ch["condition"] == "baseline"].merge(items[["item_id", "kind"]], on="item_id")
    rows = []
    for kind in ("control", "draft"):
        g = b[(b["kind"] == kind) & b["chose"].notna()].groupby("item_id")["chose"]
        ev, n = g.apply(lambda s: (s == "real").sum()).to_numpy(float), g.size().to_numpy(float)
        if n.size:
            rows.append(rate_row(ev, n, kind=kind, metric="accuracy" if kind == "control" else "prefers_sent_reply"))
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
                need: int | None = None) -> str:
    """``fail (shown ...)`` when the lower bound already reaches ``gate_max``; ``not decidable at this n``
    below ``need`` items (default: the items at which 0 events give a bound below ``gate_max`` for a rate in
    [0, 1]); else ``pass`` when the upper bound is below ``gate_max``, ``fail`` when it is not.

    No pass below ``need`` items: there the mean interval of a few items with rare, fractional differences
    (repeat flips averaged over orders) false-passes more than 5 % at a true value equal to the maximum
    (16 % at 8 items, 7 % at 16; tests/test_judge_bias_gate_coverage.py); from ``need`` on it stays below 5 %."""
    if not np.isfinite(ci_high):
        return "no interval (fewer than 2 items)"
    if ci_low >= gate_max:
        return "fail (shown at or above the maximum)"
    need = items_needed_zero_events(gate_max) if need is None else need
    if n_items < need:
        return f"not decidable at this n (needs >= {need} items)"
    return "pass" if ci_high < gate_max else "fail"


def _pivot(ch: pd.DataFrame, column: str) -> pd.DataFrame:
    return ch.pivot_table(index=["item_id", "order"], columns="condition", values=column, aggfunc="first")


def repeat_conditions(frame: pd.DataFrame) -> list[str]:
    """The ``repeat<r>`` conditions present, in repeat order."""
    conds = {c for c in frame["condition"].unique() if str(c).startswith("repeat") and str(c)[6:].isdigit()}
    return sorted(conds, key=lambda c: int(c[6:]))


def noise_table(ch: pd.DataFrame) -> pd.DataFrame:
    """The noise references of the pairwise choice: the flip rate under the reworded prompt vs the base prompt
    (same order), and, when repeats were sent, the flip rate of each repeat vs the first draw (both orders)."""
    c = _pivot(ch, "chose")
    rows = []
    for metric, conds in (("reworded_prompt_flip_rate", ["reworded"]),
                          ("repeat_flip_rate", repeat_conditions(ch))):
        if not conds or any(x not in c.columns for x in conds):
            continue
        flips = n = 0
        for cond in conds:
            pair = c[["baseline", cond]].dropna()
            flips = flips + (pair["baseline"] != pair[cond]).groupby(level=0).sum()
            n = n + pair.groupby(level=0).size()
        n = n[n > 0] if isinstance(n, pd.Series) else n
        rows.append(rate_row(flips.reindex(n.index).to_numpy(float), n.to_numpy(float), metric=metric,
                             repeats=len(conds) if metric == "repeat_flip_rate" else 0))
    return pd.DataFrame(rows)


def _per_item(ch: pd.DataFrame, cue: str, targets: pd.Series) -> pd.DataFrame:
    """Per item: chose-target under the cue (num1/den1), under no cue (num2/den2), flips vs no cue, noise flips
    (reworded prompt, same order) and repeat flips (every repeat vs the first draw, both orders)."""
    c = _pivot(ch, "chose")
    reps = repeat_conditions(ch)
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
        out.append({"item_id": item, "num1": sum(x == t for x, _ in pairs), "num2": sum(y == t for _, y in pairs),
                    "den": len(pairs), "flips": sum(x != y for x, y in pairs),
                    "noise_flips": sum(x != y for x, y in noise), "noise_den": len(noise),
                    "rep_flips": sum(x != y for x, y in rep), "rep_den": len(rep)})
    return pd.DataFrame(out, columns=["item_id", "num1", "num2", "den", "flips", "noise_flips", "noise_den",
                                      "rep_flips", "rep_den"])


def _isna(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def cue_table(ch: pd.DataFrame, targets: pd.Series, cues: Sequence[str], *, gate_max: float, alpha: float,
              multiplicity: str, n_boot: int, seed: int) -> pd.DataFrame:
    """One row per cue: the shift toward the cued candidate (P(choose it | cued) - P(choose it | not cued),
    over items), its sign test, Holm/BH-adjusted p across cues, the cue's flip rate minus the
    reworded-prompt flip rate (net flips) - and, when repeats were sent, minus the repeat flip rate - with the
    gate on the upper bounds, and the detectable share.

    Both are means over items of per-item differences in [-1, 1] (an item's answers under the cue minus
    its answers without; its flip share minus its reference flip share), each with the bootstrap-t/t
    union interval and the worst-case bound over [-1, 1] when every item shows the same difference.
    (A MOVER of the two sides' rate intervals is not used: with identical sides item by item its
    correlation is +1 and it can return a zero-width interval.)

    Two references, one rule: a claim must hold against each. *Beyond noise* needs every reference's net
    lower bound above 0 (the larger noise decides); a gate *pass* needs every reference's net upper bound
    below ``gate_max`` (the smaller noise decides). ``gate_reference`` names the reference that decided."""
    rows = []
    has_rep = bool(repeat_conditions(ch))
    for cue in cues:
        per = _per_item(ch, cue, targets)
        per = per[(per["den"] > 0) & (per["noise_den"] > 0) & ((per["rep_den"] > 0) if has_rep else True)]
        d = per["den"].to_numpy(float)
        di = (per["num1"] - per["num2"]).to_numpy(float) / d
        fi = per["flips"].to_numpy(float) / d
        ni = fi - per["noise_flips"].to_numpy(float) / per["noise_den"].to_numpy(float)
        shift = _mean_row(di, (-1.0, 1.0), n_boot=n_boot, seed=seed)
        net = _mean_row(ni, (-1.0, 1.0), n_boot=n_boot, seed=seed)
        up, down, p = sign_test(di)
        row = {"cue": cue, "n_items": shift["n_items"],
               "chose_cued_with_cue": float((per["num1"] / d).mean()) if len(d) else math.nan,
               "chose_cued_without": float((per["num2"] / d).mean()) if len(d) else math.nan,
               "shift": shift["estimate"], "shift_ci_low": shift["ci_low"],
               "shift_ci_high": shift["ci_high"], "shift_ci_method": shift["ci_method"],
               "items_toward_cue": up, "items_away": down, "p_sign": p,
               "flip_rate": float(fi.mean()) if len(d) else math.nan,
               "noise_flip_rate": float((per["noise_flips"] / per["noise_den"]).mean()) if len(d) else math.nan,
               "net_flip_rate": net["estimate"], "net_ci_low": net["ci_low"], "net_ci_high": net["ci_high"],
               "net_ci_method": net["ci_method"]}
        if has_rep:
            ri = per["rep_flips"].to_numpy(float) / per["rep_den"].to_numpy(float)
            rnet = _mean_row(fi - ri, (-1.0, 1.0), n_boot=n_boot, seed=seed)
            row.update({"repeat_flip_rate": float(ri.mean()) if len(d) else math.nan,
                        "net_repeat_flip_rate": rnet["estimate"], "net_repeat_ci_low": rnet["ci_low"],
                        "net_repeat_ci_high": rnet["ci_high"]})
        rows.append(row)
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    refs = [("reworded", "net_ci_low", "net_ci_high")] + ([("repeats", "net_repeat_ci_low", "net_repeat_ci_high")]
                                                          if has_rep else [])
    _adjust(t, multiplicity=multiplicity, alpha=alpha, refs=refs)
    t["gate_max_net_flip"] = gate_max
    _gate(t, refs, gate_max, items_needed_zero_events(gate_max))
    t["detectable_share"] = [detectable_share(int(n), alpha / len(t)) for n in t["n_items"]]
    return t


def _gate(t: pd.DataFrame, refs: list[tuple[str, str, str]], gate_max: float, need: int, *, n_col: str = "n_items",
          scale: float = 1.0) -> None:
    """``gate`` and ``gate_reference``: the reference with the largest upper bound decides (a pass needs all);
    ``best_case_upper``: the upper bound if every item showed a net of exactly 0 (what this n can show at best)."""
    gates, which = [], []
    for k in range(len(t)):
        his = [t[h].iloc[k] for _, _, h in refs]
        j = int(np.argmax([h if np.isfinite(h) else np.inf for h in his]))
        name, lo, hi = refs[j]
        gates.append(gate_status(t[hi].iloc[k], int(t[n_col].iloc[k]), gate_max, t[lo].iloc[k], need=need))
        which.append(name)
    t["gate"], t["gate_reference"] = gates, which
    t["best_case_upper"] = [scale * worst_case_bound(int(n)) if n >= 2 else math.nan for n in t[n_col]]


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


def pointwise_table(parsed: pd.DataFrame, cues: Sequence[str], *, alpha: float, multiplicity: str, n_boot: int,
                    seed: int, gate_max: float = 1.0) -> pd.DataFrame:
    """Per cue: mean score shift (cued minus uncued, same reply; range -9..9) and the reworded prompt's shift,
    the net of absolute shifts (mean over items of |cue| - |reworded|; with repeats also |cue| - mean |repeat|),
    sign tests, adjusted p across cues, and the gate on the net's upper bound(s) (``gate_max`` points), with
    the same two-reference rule as :func:`cue_table`."""
    p = parsed[parsed["task"] == "pointwise"]
    s = p.pivot_table(index="item_id", columns="condition", values="score", aggfunc="first")
    reps = [c for c in repeat_conditions(p) if c in s.columns]
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
            rep = np.nanmean(np.abs(s[reps].to_numpy(float) - s[["baseline"]].to_numpy(float)), axis=1) \
                if len(s) else np.array([])
            okr = ~np.isnan(d) & ~np.isnan(rep)
            rnet = _mean_row(np.abs(d[okr]) - rep[okr], SCORE_NET_RANGE, n_boot=n_boot, seed=seed)
            row.update({"mean_abs_repeat_shift": float(rep[okr].mean()) if okr.any() else math.nan,
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
    _gate(t, refs, gate_max, items_needed_score_gate(gate_max), n_col="n_items_net", scale=SCORE_NET_RANGE[1])
    t["detectable_share"] = [detectable_share(int(n), alpha / len(t)) for n in t["n_items"]]
    return t
