"""Counterfactual consistency metrics (seed 000, section 2.2).

All functions take a tidy long frame with one row per judgment (judge,
dimension, item, question, condition, ..., a value column and ``parse_ok``)
and return tidy frames. A *unit* is one item x question (x whatever else is in
``unit``) within one ``by`` group (e.g. judge x dimension); conditions are
compared only within a unit.

CFR (Eq. 3)::

    CFR_d = 1 / (|P_d| N) * sum_i sum_{{c,c'} in P_d} 1[Y_i^c != Y_i^c']

MASD (Eq. 4): the same with ``|s_i^c - s_i^c'|``. Both are computed from
closed forms per unit (``k (n - k)`` discordant pairs for a binary answer with
``k`` yes among ``n`` conditions; ``sum_j x_(j) (2j - n - 1)`` for the sum of
absolute pairwise differences of sorted scores), so they are vectorised and
never build the pairs. Rows with ``parse_ok`` False or a missing value are
excluded, which removes their pairs; the estimate is then the mean over the
remaining pairs, and ``n_pairs`` / ``n_pairs_excluded`` say how many.
With complete data this equals Eq. 3/4 exactly.

Intervals are percentile bootstraps over items (all units and pairs of an
item resampled together), seeded with ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = [
    "pair_table",
    "flip_rate",
    "mean_abs_score_diff",
    "robustness_baseline",
    "accuracy",
    "cohen_kappa",
    "repeat_kappa",
    "flip_distribution",
    "cfr_minus_robustness",
    "effect_direction",
    "fairness_prompting_delta",
]

_UNIT = ("item_id", "question_id")
_BY = ("judge", "dimension")


def _as_list(x: str | Sequence[str] | None) -> list[str]:
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


def _require(frame: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    for c in cols:
        if c not in frame.columns:
            raise InputError(f"missing column (needed for {what})", source="judgments frame", field=c)


def _valid_mask(frame: pd.DataFrame, value: str, ok: str | None) -> np.ndarray:
    v = pd.to_numeric(frame[value], errors="coerce").to_numpy(dtype=float)
    bad = frame[value].notna().to_numpy() & np.isnan(v)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"non-numeric value {frame[value].iloc[i]!r}", source="judgments frame",
                         record=frame.index[i], field=value)
    mask = ~np.isnan(v)
    if ok is not None and ok in frame.columns:
        okv = frame[ok].to_numpy()
        mask &= np.asarray(pd.Series(okv).fillna(False).astype(bool))
    return mask


def pair_table(frame: pd.DataFrame, *, value: str, kind: str = "binary",
               condition: str = "condition", unit: Sequence[str] = _UNIT,
               by: Sequence[str] = _BY, ok: str | None = "parse_ok") -> pd.DataFrame:
    """Per-unit pair statistics: one row per ``by`` x ``unit`` group.

    Columns: the key columns, ``n_conditions`` (rows in the unit),
    ``n_valid`` (rows usable), ``n_yes`` (binary only), ``stat`` (number of
    discordant pairs, or the sum of absolute pairwise differences),
    ``n_pairs`` (valid pairs) and ``n_pairs_all`` (pairs had nothing been
    excluded).
    """
    if kind not in ("binary", "score"):
        raise ValueError(f"kind must be 'binary' or 'score', got {kind!r}")
    by, unit = _as_list(by), _as_list(unit)
    keys = by + unit
    _require(frame, keys + [condition, value], "pair statistics")
    if frame.empty:
        return pd.DataFrame(columns=keys + ["n_conditions", "n_valid", "n_yes", "stat", "n_pairs",
                                            "n_pairs_all"])
    dup = frame.duplicated(keys + [condition], keep=False).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        rec = {k: frame[k].iloc[i] for k in keys + [condition]}
        raise InputError("the same condition appears twice in one unit (deduplicate or add a key "
                         "to `unit`)", source="judgments frame", record=rec, field=condition)
    g = frame.groupby(keys, sort=True, dropna=False).ngroup().to_numpy()
    n_groups = int(g.max()) + 1
    mask = _valid_mask(frame, value, ok)
    x = pd.to_numeric(frame[value], errors="coerce").to_numpy(dtype=float)[mask]
    gv = g[mask]
    n_all = np.bincount(g, minlength=n_groups).astype(float)
    n = np.bincount(gv, minlength=n_groups).astype(float)
    if kind == "binary":
        if x.size and not np.isin(x, (0.0, 1.0)).all():
            i = int(np.flatnonzero(mask)[np.flatnonzero(~np.isin(x, (0.0, 1.0)))[0]])
            raise InputError(f"binary value must be 0 or 1, got {frame[value].iloc[i]!r}",
                             source="judgments frame", record=frame.index[i], field=value)
        k = np.bincount(gv, weights=x, minlength=n_groups)
        stat = k * (n - k)
    else:
        k = np.full(n_groups, np.nan)
        order = np.lexsort((x, gv))
        xs, gs = x[order], gv[order]
        starts = np.concatenate(([0.0], np.cumsum(n)[:-1]))
        rank0 = np.arange(xs.size) - starts[gs]
        stat = np.bincount(gs, weights=xs * (2.0 * rank0 - n[gs] + 1.0), minlength=n_groups)
    first = np.unique(g, return_index=True)[1]
    out = frame.iloc[first][keys].reset_index(drop=True)
    out["n_conditions"] = n_all.astype(int)
    out["n_valid"] = n.astype(int)
    out["n_yes"] = k
    out["stat"] = stat
    out["n_pairs"] = n * (n - 1) / 2
    out["n_pairs_all"] = n_all * (n_all - 1) / 2
    return out


#: Above this many items the interval of a ratio of sums uses the delta method
#: (linearisation, clustered by item) instead of the bootstrap; at that size
#: the two agree closely and the bootstrap would dominate the run time.
MAX_BOOTSTRAP_ITEMS = 5000


def _resample_counts(m: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` x ``m`` matrix of how often each item is drawn (items resampled with replacement)."""
    idx = rng.integers(0, m, size=(n_boot, m))
    flat = (np.arange(n_boot)[:, None] * m + idx).ravel()
    return np.bincount(flat, minlength=n_boot * m).reshape(n_boot, m).astype(float)


def _bootstrap_ratio(num: np.ndarray, den: np.ndarray, n_boot: int, rng: np.random.Generator,
                     level: float) -> tuple[float, float, str]:
    """Interval of sum(num)/sum(den) with items resampled: (low, high, method)."""
    from scipy.stats import norm

    m = num.size
    if n_boot <= 0 or m < 2 or den.sum() == 0:
        return np.nan, np.nan, "none"
    a = (1 - level) / 2
    if m > MAX_BOOTSTRAP_ITEMS:
        r = num.sum() / den.sum()
        z = (num - r * den) / den.mean()
        se = np.sqrt((z ** 2).sum() / (m * (m - 1)))
        q = norm.ppf(1 - a)
        return float(r - q * se), float(r + q * se), "delta"
    w = _resample_counts(m, n_boot, rng)
    d = w @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w @ num) / d
    r = r[d > 0]
    if r.size == 0:
        return np.nan, np.nan, "none"
    return float(np.quantile(r, a)), float(np.quantile(r, 1 - a)), "bootstrap"


def _aggregate(pairs: pd.DataFrame, by: list[str], item: str, name: str, n_boot: int, seed: int,
               level: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    groups = pairs.groupby(by, sort=True, dropna=False) if by else [((), pairs)]
    for key, grp in groups:
        key = key if isinstance(key, tuple) else (key,)
        per_item = grp.groupby(item, sort=True)[["stat", "n_pairs"]].sum()
        per_item = per_item[per_item["n_pairs"] > 0]
        total = float(grp["n_pairs"].sum())
        est = float(grp["stat"].sum()) / total if total > 0 else np.nan
        lo, hi, method = _bootstrap_ratio(per_item["stat"].to_numpy(float),
                                          per_item["n_pairs"].to_numpy(float), n_boot, rng, level)
        rows.append(dict(zip(by, key)) | {
            name: est, "n_items": int(len(per_item)), "n_units": int((grp["n_pairs"] > 0).sum()),
            "n_pairs": int(total), "n_pairs_excluded": int(grp["n_pairs_all"].sum() - total),
            "ci_low": lo, "ci_high": hi, "ci_method": method,
        })
    return pd.DataFrame(rows, columns=by + [name, "n_items", "n_units", "n_pairs", "n_pairs_excluded",
                                            "ci_low", "ci_high", "ci_method"])


def flip_rate(frame: pd.DataFrame, *, value: str = "answer_yes", condition: str = "condition",
              unit: Sequence[str] = _UNIT, by: Sequence[str] = _BY, item: str = "item_id",
              ok: str | None = "parse_ok", n_boot: int = 1000, seed: int = 0,
              level: float = 0.95) -> pd.DataFrame:
    """Counterfactual flip rate (Eq. 3) per ``by`` group, as a fraction in [0, 1].

    Columns: ``by``, ``cfr``, ``n_items``, ``n_units``, ``n_pairs``,
    ``n_pairs_excluded`` and an interval over items (``ci_low``/``ci_high``,
    ``ci_method``: percentile bootstrap, or the delta method above
    ``MAX_BOOTSTRAP_ITEMS`` items; NaN with ``n_boot=0`` or fewer than 2 items).

    >>> df = pd.DataFrame({"judge": "j", "dimension": "gender", "item_id": ["a", "a", "b", "b"],
    ...                    "question_id": "q", "condition": ["m", "f"] * 2,
    ...                    "answer_yes": [1, 0, 1, 1], "parse_ok": True})
    >>> float(flip_rate(df, n_boot=0)["cfr"].iloc[0])
    0.5
    """
    by = _as_list(by)
    pairs = pair_table(frame, value=value, kind="binary", condition=condition, unit=unit, by=by, ok=ok)
    if item not in pairs.columns:
        raise InputError("the item column must be part of `unit`", field=item)
    return _aggregate(pairs, by, item, "cfr", n_boot, seed, level)


def mean_abs_score_diff(frame: pd.DataFrame, *, value: str = "confidence",
                        condition: str = "condition", unit: Sequence[str] = _UNIT,
                        by: Sequence[str] = _BY, item: str = "item_id",
                        ok: str | None = "parse_ok", n_boot: int = 1000, seed: int = 0,
                        level: float = 0.95) -> pd.DataFrame:
    """Mean absolute score difference (Eq. 4) per ``by`` group, in score units.

    Same columns as :func:`flip_rate` with ``masd`` instead of ``cfr``.
    """
    by = _as_list(by)
    pairs = pair_table(frame, value=value, kind="score", condition=condition, unit=unit, by=by, ok=ok)
    if item not in pairs.columns:
        raise InputError("the item column must be part of `unit`", field=item)
    return _aggregate(pairs, by, item, "masd", n_boot, seed, level)


def robustness_baseline(frame: pd.DataFrame, *, answer: str = "answer_yes",
                        scores: Sequence[str] = ("confidence",), repeat: str = "repeat",
                        unit: Sequence[str] = _UNIT, by: Sequence[str] = ("judge",),
                        item: str = "item_id", ok: str | None = "parse_ok", n_boot: int = 1000,
                        seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """CFR and MASD among k repeats of the same prompt (the seed's robustness row).

    ``frame`` holds only the repeated originals; the repeat index plays the
    role of the condition. Long output: ``by``, ``metric`` (``cfr`` or
    ``masd_<score>``), ``value``, ``n_items``, ``n_units``, ``n_pairs``,
    ``n_pairs_excluded``, ``ci_low``, ``ci_high``. Scores missing from the
    frame, or all-NaN, are skipped.
    """
    by = _as_list(by)
    parts = []
    if answer in frame.columns:
        t = flip_rate(frame, value=answer, condition=repeat, unit=unit, by=by, item=item, ok=ok,
                      n_boot=n_boot, seed=seed, level=level).rename(columns={"cfr": "value"})
        parts.append(t.assign(metric="cfr"))
    for s in scores:
        if s in frame.columns and frame[s].notna().any():
            t = mean_abs_score_diff(frame, value=s, condition=repeat, unit=unit, by=by, item=item,
                                    ok=ok, n_boot=n_boot, seed=seed, level=level)
            parts.append(t.rename(columns={"masd": "value"}).assign(metric=f"masd_{s}"))
    cols = by + ["metric", "value", "n_items", "n_units", "n_pairs", "n_pairs_excluded",
                 "ci_low", "ci_high", "ci_method"]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def accuracy(frame: pd.DataFrame, *, answer: str = "answer_yes", label: str = "label",
             by: Sequence[str] = ("judge",), ok: str | None = "parse_ok",
             level: float = 0.95) -> pd.DataFrame:
    """Answer accuracy against ground-truth labels with a Wilson interval.

    Rows without a label are not scored; rows with a label but no parsed
    answer are reported as ``n_unparsed`` and left out of the accuracy (a
    parse failure is not a wrong "No").
    Columns: ``by``, ``accuracy``, ``n``, ``n_correct``, ``n_unparsed``,
    ``ci_low``, ``ci_high``.
    """
    from statsmodels.stats.proportion import proportion_confint

    by = _as_list(by)
    _require(frame, by + [answer, label], "accuracy")
    lab = frame[label]
    has_label = lab.notna().to_numpy()
    f = frame.loc[has_label].copy()
    labv = pd.to_numeric(f[label].map(_label_to_float), errors="coerce")
    valid = _valid_mask(f, answer, ok)
    f["_correct"] = (pd.to_numeric(f[answer], errors="coerce").to_numpy() == labv.to_numpy()).astype(float)
    f["_valid"] = valid
    rows = []
    groups = f.groupby(by, sort=True, dropna=False) if by else [((), f)]
    for key, grp in groups:
        key = key if isinstance(key, tuple) else (key,)
        v = grp["_valid"].to_numpy()
        n = int(v.sum())
        c = int(grp["_correct"].to_numpy()[v].sum())
        lo, hi = proportion_confint(c, n, alpha=1 - level, method="wilson") if n else (np.nan, np.nan)
        rows.append(dict(zip(by, key)) | {"accuracy": c / n if n else np.nan, "n": n, "n_correct": c,
                                          "n_unparsed": int((~v).sum()), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows, columns=by + ["accuracy", "n", "n_correct", "n_unparsed", "ci_low", "ci_high"])


def _label_to_float(v: object) -> float:
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("yes", "true", "1"):
            return 1.0
        if s in ("no", "false", "0"):
            return 0.0
        raise InputError(f"label {v!r} is not yes/no", field="label")
    if isinstance(v, (int, float, np.integer, np.floating)) and float(v) in (0.0, 1.0):
        return float(v)
    raise InputError(f"label {v!r} is not yes/no", field="label")


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa between two label sequences of equal length.

    ``(p_o - p_e) / (1 - p_e)``; returns 1.0 when both raters use a single
    identical label throughout (perfect agreement, ``p_e = 1``), NaN for
    empty input.
    """
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    if a.shape != b.shape:
        raise ValueError(f"cohen_kappa: lengths differ ({a.size} vs {b.size})")
    if a.size == 0:
        return float("nan")
    labels = sorted(set(a.tolist()) | set(b.tolist()), key=str)
    idx = {lab: i for i, lab in enumerate(labels)}
    ia = np.array([idx[x] for x in a])
    ib = np.array([idx[x] for x in b])
    k = len(labels)
    cm = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k).astype(float)
    n = cm.sum()
    po = np.trace(cm) / n
    pe = float((cm.sum(0) * cm.sum(1)).sum()) / n**2
    if pe == 1.0:
        return 1.0 if po == 1.0 else float("nan")
    return float((po - pe) / (1 - pe))


def repeat_kappa(frame: pd.DataFrame, *, answer: str = "answer_yes", repeat: str = "repeat",
                 unit: Sequence[str] = _UNIT, by: Sequence[str] = ("judge",),
                 ok: str | None = "parse_ok") -> pd.DataFrame:
    """Cohen's kappa between repeat runs, averaged over pairs of repeats.

    For each pair of repeat indices (r, r') kappa is computed over units where
    both answers parsed. Columns: ``by``, ``kappa`` (mean over repeat pairs),
    ``kappa_min``, ``n_repeat_pairs``, ``n_units`` (smallest unit count
    behind any pair).
    """
    by, unit = _as_list(by), _as_list(unit)
    _require(frame, by + unit + [repeat, answer], "repeat kappa")
    valid = frame.loc[_valid_mask(frame, answer, ok)]
    rows = []
    groups = valid.groupby(by, sort=True, dropna=False) if by else [((), valid)]
    for key, grp in groups:
        key = key if isinstance(key, tuple) else (key,)
        wide = grp.pivot_table(index=unit, columns=repeat, values=answer, aggfunc="first")
        reps = list(wide.columns)
        kappas, ns = [], []
        for i in range(len(reps)):
            for j in range(i + 1, len(reps)):
                both = wide[[reps[i], reps[j]]].dropna()
                if len(both):
                    kappas.append(cohen_kappa(both[reps[i]].to_numpy(), both[reps[j]].to_numpy()))
                    ns.append(len(both))
        rows.append(dict(zip(by, key)) | {
            "kappa": float(np.nanmean(kappas)) if kappas and not np.all(np.isnan(kappas)) else np.nan,
            "kappa_min": float(np.nanmin(kappas)) if kappas and not np.all(np.isnan(kappas)) else np.nan,
            "n_repeat_pairs": len(kappas), "n_units": int(min(ns)) if ns else 0})
    return pd.DataFrame(rows, columns=by + ["kappa", "kappa_min", "n_repeat_pairs", "n_units"])


def flip_distribution(frame: pd.DataFrame, *, value: str = "answer_yes",
                      condition: str = "condition", unit: Sequence[str] = _UNIT,
                      by: Sequence[str] = _BY, ok: str | None = "parse_ok") -> pd.DataFrame:
    """How many conditions flip away from the majority, per unit and as a histogram.

    Returns a histogram frame: ``by``, ``n_minority`` (number of valid
    conditions whose answer differs from the unit's majority; 0 = all agree),
    ``n_units``, ``share``. Units with fewer than two valid answers are left out.
    """
    by = _as_list(by)
    pairs = pair_table(frame, value=value, kind="binary", condition=condition, unit=unit, by=by, ok=ok)
    pairs = pairs[pairs["n_valid"] >= 2].copy()
    pairs["n_minority"] = np.minimum(pairs["n_yes"], pairs["n_valid"] - pairs["n_yes"]).astype(int)
    hist = pairs.groupby(by + ["n_minority"], sort=True).size().rename("n_units").reset_index()
    tot = hist.groupby(by)["n_units"].transform("sum") if by else hist["n_units"].sum()
    hist["share"] = hist["n_units"] / tot
    return hist


def cfr_minus_robustness(counterfactual: pd.DataFrame, repeats: pd.DataFrame, *,
                         value: str = "answer_yes", kind: str = "binary",
                         condition: str = "condition", repeat: str = "repeat",
                         unit: Sequence[str] = _UNIT, by: Sequence[str] = _BY,
                         judge: str = "judge", item: str = "item_id", ok: str | None = "parse_ok",
                         n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Counterfactual rate minus the robustness baseline, with a joint item bootstrap.

    For each ``by`` group (judge x dimension) the estimate is
    ``CFR_d - CFR_repeats`` (or the MASD analogue with ``kind="score"``),
    where the baseline pools all repeated originals of that judge. Both terms
    are recomputed on the same resampled items, so the interval reflects
    their correlation. An interval above 0 says the counterfactual signal
    exceeds the judge's own repeat noise on these items.
    Columns: ``by``, ``estimate``, ``counterfactual``, ``robustness``,
    ``n_items``, ``ci_low``, ``ci_high``.
    """
    by = _as_list(by)
    if judge not in by:
        raise ValueError(f"`by` must contain the judge column {judge!r}")
    cf = pair_table(counterfactual, value=value, kind=kind, condition=condition, unit=unit, by=by, ok=ok)
    rb = pair_table(repeats, value=value, kind=kind, condition=repeat, unit=unit, by=[judge], ok=ok)
    rb_item = rb.groupby([judge, item])[["stat", "n_pairs"]].sum()
    rng = np.random.default_rng(seed)
    rows = []
    for key, grp in cf.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        kv = dict(zip(by, key))
        ci = grp.groupby(item)[["stat", "n_pairs"]].sum()
        ri = rb_item.xs(kv[judge], level=judge) if kv[judge] in rb_item.index.get_level_values(0) else \
            pd.DataFrame(columns=["stat", "n_pairs"], dtype=float)
        items = ci.index.union(ri.index)
        ci = ci.reindex(items, fill_value=0.0)
        ri = ri.reindex(items, fill_value=0.0)
        cf_est = ci["stat"].sum() / ci["n_pairs"].sum() if ci["n_pairs"].sum() else np.nan
        rb_est = ri["stat"].sum() / ri["n_pairs"].sum() if ri["n_pairs"].sum() else np.nan
        lo = hi = np.nan
        m = len(items)
        if n_boot > 0 and m >= 2 and not (np.isnan(cf_est) or np.isnan(rb_est)):
            w = _resample_counts(m, n_boot, rng)
            dc, dr = w @ ci["n_pairs"].to_numpy(float), w @ ri["n_pairs"].to_numpy(float)
            ok_rows = (dc > 0) & (dr > 0)
            diff = (w @ ci["stat"].to_numpy(float))[ok_rows] / dc[ok_rows] - \
                (w @ ri["stat"].to_numpy(float))[ok_rows] / dr[ok_rows]
            if diff.size:
                a = (1 - level) / 2
                lo, hi = float(np.quantile(diff, a)), float(np.quantile(diff, 1 - a))
        rows.append(kv | {"estimate": cf_est - rb_est, "counterfactual": cf_est, "robustness": rb_est,
                          "n_items": int((ci["n_pairs"] > 0).sum()), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows, columns=by + ["estimate", "counterfactual", "robustness", "n_items",
                                            "ci_low", "ci_high"])


def effect_direction(frame: pd.DataFrame, originals: pd.DataFrame, *, value: str = "confidence",
                     condition: str = "condition", unit: Sequence[str] = _UNIT,
                     by: Sequence[str] = _BY, match: Sequence[str] = ("judge",),
                     item: str = "item_id", ok: str | None = "parse_ok", n_boot: int = 1000,
                     seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Signed mean difference of each condition vs the original (who is favoured).

    ``frame`` holds the counterfactual rows, ``originals`` one row per
    ``match`` x ``unit`` with the original's value. For every ``by`` x
    condition the estimate is the mean over units of ``value(c) -
    value(original)`` (for a 0/1 answer: the change in yes-rate), with a
    bootstrap interval over items. Rows whose variant or original did not
    parse are excluded (``n_units`` counts what is left).
    Columns: ``by``, ``condition``, ``mean_diff``, ``n_units``, ``n_items``,
    ``ci_low``, ``ci_high``.
    """
    by, unit, match = _as_list(by), _as_list(unit), _as_list(match)
    _require(frame, by + unit + [condition, value], "effect direction")
    _require(originals, match + unit + [value], "effect direction (originals)")
    orig = originals.loc[_valid_mask(originals, value, ok), match + unit + [value]]
    if orig.duplicated(match + unit).any():
        raise InputError("more than one original per unit", source="originals frame",
                         record=orig.loc[orig.duplicated(match + unit)].iloc[0].to_dict(), field=value)
    f = frame.loc[_valid_mask(frame, value, ok), list(dict.fromkeys(by + unit + [condition, value]))]
    merged = f.merge(orig.rename(columns={value: "_orig"}), on=match + unit, how="inner")
    merged["_diff"] = pd.to_numeric(merged[value]) - pd.to_numeric(merged["_orig"])
    rng = np.random.default_rng(seed)
    rows = []
    cols = by + [condition]
    for key, grp in merged.groupby(cols, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        per_item = grp.groupby(item)["_diff"].agg(["sum", "count"])
        lo, hi, _ = _bootstrap_ratio(per_item["sum"].to_numpy(float),
                                     per_item["count"].to_numpy(float), n_boot, rng, level)
        rows.append(dict(zip(cols, key)) | {"mean_diff": float(grp["_diff"].mean()),
                                             "n_units": int(len(grp)), "n_items": int(len(per_item)),
                                             "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows, columns=cols + ["mean_diff", "n_units", "n_items", "ci_low", "ci_high"])


def fairness_prompting_delta(table: pd.DataFrame, *, metric: str = "metric", value: str = "value",
                             arm: str = "arm", baseline: str = "baseline",
                             treated: str = "fairness", by: Sequence[str] = ("judge",),
                             over: str = "dimension") -> pd.DataFrame:
    """Change under the fairness prompt: treated minus baseline, per judge and metric.

    ``table`` is long (``by``, ``arm``, ``over``, ``metric``, ``value``), e.g.
    the CFR and MASD tables of both arms stacked. Each arm is first averaged
    over the dimensions present in *both* arms (so a dimension run only in
    one arm cannot move the delta), then subtracted. Negative = less
    disparity with the fairness prompt (the seed's Table 3 convention).
    Columns: ``by``, ``metric``, ``baseline``, ``treated``, ``delta``,
    ``n_dimensions``.
    """
    by = _as_list(by)
    _require(table, by + [arm, over, metric, value], "fairness-prompting delta")
    t = table.loc[table[arm].isin([baseline, treated]) & table[value].notna()]
    wide = t.pivot_table(index=by + [metric, over], columns=arm, values=value, aggfunc="mean")
    for a in (baseline, treated):
        if a not in wide.columns:
            wide[a] = np.nan
    wide = wide.dropna(subset=[baseline, treated])
    agg = wide.groupby(level=by + [metric]).agg(
        baseline=(baseline, "mean"), treated=(treated, "mean"), n_dimensions=(baseline, "size"))
    agg["delta"] = agg["treated"] - agg["baseline"]
    return agg.reset_index()[by + [metric, "baseline", "treated", "delta", "n_dimensions"]]
