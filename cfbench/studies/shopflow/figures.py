"""Figures for the ShopFlow routing audit (seed 001).

Each function takes tables of a :class:`~cfbench.studies.shopflow.gate.PairAudit`
and returns a matplotlib ``Figure``; nothing here computes a metric. Every
figure has a title, axis units, the n behind each bar or line, and its legend
outside the plotting area so it never covers data.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # figures are written to files, never shown

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_slice_rates", "plot_threshold_sweep", "plot_calibration"]


def plot_slice_rates(wilson: pd.DataFrame, *, title: str = "") -> plt.Figure:
    """Bars of each rate per slice with the interval of each row (``ci_method``; Clopper-Pearson from
    :meth:`PairAudit.rate_intervals`) as error bars.

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
    ax.set_title(title or "Auto-serve rates by slice (95% intervals)", fontsize=9)
    ax.legend(title="wording (bar label: k/n)", frameon=False, fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    plt.close(fig)  # the caller owns it; pyplot keeps no reference
    return fig


def plot_threshold_sweep(sweep: pd.DataFrame, *, threshold: float | None = None, variants=None,
                         tpr_limit: float | None = None, fpr_limit: float | None = None, n_pairs: int | None = None,
                         title: str = "") -> plt.Figure:
    """Signed TPR and FPR gaps (top) and the selection rate per wording (bottom) against the routing threshold.

    The gaps are ``variants[0] − variants[1]`` (the interval rule's sign);
    the contract's limits are drawn as labelled lines at ±limit with the
    allowed band shaded. When no gap moves at any threshold, or no pair flips
    at the chosen threshold, the figure says so in words; an undefined gap (no
    rows of that class) is named rather than drawn as 0.
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
        ax.annotate(f"threshold {threshold:.2f}", (threshold, 1.0), fontsize=7, ha="left", va="top")
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
    ax.set_ylim(-1.05 if signed else -0.02, 1.05)
    ticks = [-1.0, -0.5, 0.0, 0.5, 1.0] if signed else [0.0, 0.25, 0.5, 0.75, 1.0]
    for lim in limits.values():
        ticks += [lim, -lim] if signed else [lim]
    if any(lim < 0.15 for lim in limits.values()):
        ticks.remove(0.0)  # the grey zero line marks it; its label would collide with ±limit
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
