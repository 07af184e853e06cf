"""Figures for the ShopFlow routing audit (seed 001).

Each function takes tables of a :class:`~cfbench.studies.shopflow.gate.PairAudit`
and returns a matplotlib ``Figure``; nothing here computes a metric. Every
figure has a title, axis units, the n behind each bar or line, and its legend
outside the plotting area so it never covers data. They are drawn on whatever backend is active (Agg in
scripts, inline in a kernel); importing this module leaves the backend alone.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cfbench.report import draws_text_as_written, interval_caption

__all__ = ["plot_slice_rates", "plot_threshold_sweep", "plot_calibration"]


@draws_text_as_written
def plot_slice_rates(wilson: pd.DataFrame, *, title: str = "") -> plt.Figure:
    """Bars of each rate per slice with the interval of each row (:meth:`PairAudit.rate_intervals`) as error
    bars; the title's last line names the table's ``ci_method`` and the n of rows behind the bars.

    ``wilson`` stacks :func:`~cfbench.metrics.groups.rate_table` outputs
    (columns ``slice, metric, successes, n, estimate, ci_low, ci_high``).
    """
    metrics = list(dict.fromkeys(wilson["metric"]))
    slices = list(dict.fromkeys(wilson["slice"]))
    fig, ax = plt.subplots(figsize=(2.4 + 1.8 * len(metrics) * len(slices) / 2, 3.6))
    width = 0.8 / len(slices)
    x = np.arange(len(metrics))
    for i, s in enumerate(slices):
        sub = wilson[wilson["slice"] == s].set_index("metric").loc[metrics]
        est = sub["estimate"].to_numpy(dtype=float)
        err = np.vstack([est - sub["ci_low"].to_numpy(dtype=float), sub["ci_high"].to_numpy(dtype=float) - est])
        pos = x + (i - (len(slices) - 1) / 2) * width
        ax.bar(pos, est, width, label=str(s), yerr=err, capsize=4)
        for p, e, k, n in zip(pos, est, sub["successes"], sub["n"]):
            ax.annotate(f"{int(k)}/{int(n)}", (p, 0.015), ha="center", va="bottom", fontsize=7, color="black",
                        bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
    labels = {"selection": "selection rate\n(all rows)", "tpr": "TPR\n(ready rows)", "fpr": "FPR\n(review rows)"}
    ax.set_xticks(x, [labels.get(m, m) for m in metrics])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share auto-served (0-1)")
    caption = interval_caption(wilson, n="n", unit="rows per bar", width=90)
    ax.set_title(f"{title or 'Auto-serve rates by slice'}\n{caption}", fontsize=8)
    ax.legend(title="wording (bar label: k/n)", frameon=False, fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    plt.close(fig)  # the caller owns it; pyplot keeps no reference
    return fig


def _sweep_intervals(ax, intervals: pd.DataFrame | None, threshold: float | None, signed: bool) -> list[float]:
    """The matched-pair interval of each signed gap at the chosen threshold (the one the verdict reads), drawn
    as an error bar there and labelled with its method, level, n of pairs and verdict; returns its bounds."""
    if intervals is None or not len(intervals) or threshold is None or not signed:
        return []
    bounds: list[float] = []
    label_of = {"tpr_gap": ("TPR", "o", "C0"), "fpr_gap": ("FPR", "s", "C1")}
    for k, (_, r) in enumerate(intervals.iterrows()):
        name, marker, colour = label_of.get(str(r["check"]), (str(r["check"]), "^", f"C{k + 4}"))
        lo, hi, est = (float(r[c]) for c in ("ci_low", "ci_high", "value"))
        x = threshold + (k - (len(intervals) - 1) / 2) * 0.012
        level = f"{float(r['confidence']) * 100:g}%" if "confidence" in r and pd.notna(r["confidence"]) else ""
        verdict = str(r.get("verdict", r.get("status", "")))
        label = (f"{name} gap at {threshold:.2f}: {level} {r.get('method', '')} interval over "
                 f"{int(r['n_pairs'])} pairs -> {verdict}")
        if np.isfinite(lo) and np.isfinite(hi):
            ax.errorbar([x], [est], yerr=[[est - lo], [hi - est]], fmt=marker, color=colour, capsize=4, lw=1.6,
                        zorder=5, label="\n".join(textwrap.wrap(label, 48)))
            bounds += [lo, hi]
        else:
            ax.plot([x], [est if np.isfinite(est) else 0.0], marker, color=colour, zorder=5,
                    label=f"{name} gap at {threshold:.2f}: no interval ({r.get('verdict', '')})")
    return bounds


@draws_text_as_written
def plot_threshold_sweep(sweep: pd.DataFrame, *, threshold: float | None = None, variants=None,
                         tpr_limit: float | None = None, fpr_limit: float | None = None, n_pairs: int | None = None,
                         title: str = "", intervals: pd.DataFrame | None = None) -> plt.Figure:
    """Signed TPR and FPR gaps (top) and the selection rate per wording (bottom) against the routing threshold.

    The gaps are ``variants[0] − variants[1]`` (the interval rule's sign);
    the contract's limits are drawn as labelled lines at ±limit with the
    allowed band shaded. When no gap moves at any threshold, or no pair flips
    at the chosen threshold, the figure says so in words; an undefined gap (no
    rows of that class) is named rather than drawn as 0. ``intervals`` (the audit's ``interval_checks``) adds
    each gap's matched-pair interval at ``threshold``, labelled with its method, level, n and verdict. The
    gap axis is sized to the data, the limits and those intervals (never a fixed ±1 that squeezes a
    ±0.10 band to a sliver).
    """
    vs = list(variants) if variants is not None else [c[len("tpr_"):] for c in sweep.columns
                                                      if c.startswith("tpr_") and c not in ("tpr_gap", "tpr_diff")]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(6.4, 5.0), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    x = sweep["threshold"].to_numpy(dtype=float)
    signed = "tpr_diff" in sweep.columns
    label_of = {"tpr": "TPR", "fpr": "FPR"}
    notes = []
    for i, (m, marker, ls) in enumerate((("tpr", "o", "-"), ("fpr", "s", "--"))):
        y = sweep[f"{m}_diff" if signed else f"{m}_gap"].to_numpy(dtype=float)
        if np.isnan(y).all():
            notes.append(f"{label_of[m]} gap undefined at every threshold (no "
                         f"{'ready' if m == 'tpr' else 'needs-review'} rows)")
            continue
        ax.plot(x, y, label=f"{label_of[m]} gap", lw=1.8, ls=ls, color=f"C{i}", marker=marker,
                markevery=(5 * i, 10), ms=4)
    limits = {k: v for k, v in (("TPR", tpr_limit), ("FPR", fpr_limit)) if v is not None}
    if len(set(limits.values())) == 1 and len(limits) == 2:
        limits = {"TPR and FPR": next(iter(limits.values()))}
    for j, (name, lim) in enumerate(limits.items()):
        style = dict(color="firebrick", lw=1.0, ls="-." if j == 0 else ":")
        ax.axhline(lim, label=f"contract limit ±{lim:.2f} ({name} gap{'s' if ' and ' in name else ''})", **style)
        if signed:
            ax.axhline(-lim, **style)
            ax.axhspan(-lim, lim, color="firebrick", alpha=0.06, lw=0)
    if threshold is not None:
        for a in (ax, ax2):
            a.axvline(threshold, color="black", lw=0.8, ls=":")
        ax.annotate(f"threshold {threshold:.2f}", (threshold, 0.98), xycoords=("data", "axes fraction"), fontsize=7,
                    ha="left", va="top")
    gaps = sweep[[c for c in ("tpr_diff", "fpr_diff", "tpr_gap", "fpr_gap") if c in sweep.columns]]
    if "n_flips" in sweep.columns and (sweep["n_flips"] == 0).all() and np.nan_to_num(gaps.to_numpy(float)).max() == 0:
        notes.append("no pair changes route at any threshold: every gap is 0"
                     + (f" (0 flips in {n_pairs} pairs)" if n_pairs else "") + "; the gap lines lie on top of each other")
    elif threshold is not None and "n_flips" in sweep.columns:
        at = sweep.loc[(sweep["threshold"] - threshold).abs().idxmin()]
        if int(at["n_flips"]) == 0:
            notes.append(f"0 flips at threshold {threshold:.2f}" + (f" in {n_pairs} pairs" if n_pairs else ""))
    if notes:
        ax.text(0.02, 0.04, "\n".join(notes), transform=ax.transAxes, fontsize=7, va="bottom",
                bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="grey", alpha=0.9))
    bounds = _sweep_intervals(ax, intervals, threshold, signed)
    top = _gap_span(gaps, limits, bounds)
    ax.set_ylim(-top if signed else -0.02 * top, top)
    ticks = list(np.linspace(-top if signed else 0.0, top, 5 if signed else 3))
    for lim in limits.values():
        ticks += [lim, -lim] if signed else [lim]
    ticks = [t for t in ticks if not any(0 < abs(abs(t) - lim) < 0.12 * top for lim in limits.values())]
    if any(lim < 0.15 * top for lim in limits.values()):
        ticks = [t for t in ticks if abs(t) > 1e-9]  # the grey zero line marks it; its label would collide
    ax.set_yticks(sorted(set(round(t, 4) for t in ticks)))
    ax.tick_params(axis="y", labelsize=7)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel(f"gap, {vs[0]} − {vs[1]}" if signed and len(vs) == 2 else "|gap| (0-1)")
    ax.set_title(title or "Threshold sweep", fontsize=9)
    ax.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for i, v in enumerate(vs):
        if f"selection_{v}" in sweep.columns:
            ax2.plot(x, sweep[f"selection_{v}"], label=f"{v}", lw=1.4, ls=("-", "--", ":")[i % 3], color=f"C{i + 2}")
    ax2.set_ylim(-0.02, 1.05)
    ax2.set_ylabel("share auto-served")
    ax2.set_xlabel("routing threshold (auto-serve if score >= threshold)")
    ax2.legend(title="selection rate", frameon=False, fontsize=7, title_fontsize=7, loc="upper left",
               bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    plt.close(fig)  # the caller owns it; pyplot keeps no reference
    return fig


def _gap_span(gaps: pd.DataFrame, limits: dict, bounds: list[float]) -> float:
    """Half-height of the gap axis: the largest |gap|, limit or interval bound, padded; at least twice the
    largest limit so its band is readable, at most 1.05 (a gap of shares cannot exceed 1)."""
    vals = np.abs(gaps.to_numpy(float)).ravel() if len(gaps.columns) else np.zeros(0)
    vals = np.concatenate([vals[np.isfinite(vals)], np.abs(np.asarray(bounds, float)),
                           np.asarray(list(limits.values()), float) * 2])
    return float(min(1.05, max(0.05, 1.15 * vals.max()) if len(vals) else 1.05))


@draws_text_as_written
def plot_calibration(calibration: pd.DataFrame, *, by: str = "variant", title: str = "") -> plt.Figure:
    """Observed ready share per score band and slice, each bar labelled with its n.

    Cells below the table's minimum support are drawn hatched and pale.
    """
    bands = list(dict.fromkeys(calibration["band"]))
    slices = list(dict.fromkeys(calibration[by]))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    width = 0.8 / len(slices)
    x = np.arange(len(bands))
    for i, s in enumerate(slices):
        sub = calibration[calibration[by] == s].set_index("band")
        pos = x + (i - (len(slices) - 1) / 2) * width
        for j, b in enumerate(bands):
            if b not in sub.index:
                continue
            row = sub.loc[b]
            ok = bool(row["sufficient"])
            ax.bar(pos[j], row["observed_ready"], width, color=f"C{i}", alpha=1.0 if ok else 0.45,
                   hatch=None if ok else "//", label=str(s))
            ax.annotate(f"n={int(row['n'])}", (pos[j], row["observed_ready"] + 0.02), ha="center", fontsize=7)
    from matplotlib.patches import Patch

    handles = [Patch(color=f"C{i}", label=str(s)) for i, s in enumerate(slices)]
    handles.append(Patch(facecolor="white", edgecolor="grey", hatch="//", label="too few rows to read"))
    ax.legend(handles=handles, title="wording", frameon=False, fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_xticks(x, [b.replace(" to ", "\nto ").replace(" and ", "\nand ") for b in bands])
    ax.set_ylim(0, 1.15)
    ax.set_xlabel("judge score band (bar label: rows in the cell)")
    ax.set_ylabel("share reviewers marked ready (0-1)")
    ax.set_title(title or "Calibration by score band (hatched: below minimum support)", fontsize=9)
    fig.tight_layout()
    plt.close(fig)  # the caller owns it; pyplot keeps no reference
    return fig
