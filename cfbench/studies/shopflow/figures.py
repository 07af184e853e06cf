"""Figures for the ShopFlow routing audit (seed 001).

Each function takes tables from :mod:`cfbench.metrics.groups` and returns a
matplotlib ``Figure``; nothing here computes a metric.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # figures are written to files, never shown

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_slice_rates", "plot_threshold_sweep", "plot_calibration"]


def plot_slice_rates(wilson: pd.DataFrame, *, title: str = "") -> plt.Figure:
    """Bars of each rate per slice with Wilson error bars.

    ``wilson`` stacks :func:`~cfbench.metrics.groups.wilson_table` outputs
    (columns ``slice, metric, successes, n, estimate, ci_low, ci_high``).
    """
    metrics = list(dict.fromkeys(wilson["metric"]))
    slices = list(dict.fromkeys(wilson["slice"]))
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(metrics) * len(slices) / 2, 3.4))
    width = 0.8 / len(slices)
    x = np.arange(len(metrics))
    for i, s in enumerate(slices):
        sub = wilson[wilson["slice"] == s].set_index("metric").loc[metrics]
        est = sub["estimate"].to_numpy(dtype=float)
        err = np.vstack([est - sub["ci_low"].to_numpy(dtype=float), sub["ci_high"].to_numpy(dtype=float) - est])
        pos = x + (i - (len(slices) - 1) / 2) * width
        ax.bar(pos, est, width, label=str(s), yerr=err, capsize=4)
        for p, e, k, n in zip(pos, est, sub["successes"], sub["n"]):
            ax.annotate(f"{int(k)}/{int(n)}", (p, 0.02), ha="center", va="bottom", fontsize=7, color="black")
    labels = {"selection": "selection rate", "tpr": "TPR (ready)", "fpr": "FPR (needs review)"}
    ax.set_xticks(x, [labels.get(m, m) for m in metrics])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share auto-served")
    ax.set_title(title or "Auto-serve rates by slice (95% Wilson intervals)")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def plot_threshold_sweep(sweep: pd.DataFrame, *, threshold: float | None = None,
                         title: str = "") -> plt.Figure:
    """TPR gap, FPR gap and overall selection rate against the routing threshold."""
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    ax.plot(sweep["threshold"], sweep["tpr_gap"], label="TPR gap", lw=1.8)
    ax.plot(sweep["threshold"], sweep["fpr_gap"], label="FPR gap", lw=1.8)
    ax.plot(sweep["threshold"], sweep["selection"], label="selection rate (all rows)", lw=1.2, ls="--",
            color="grey")
    if threshold is not None:
        ax.axvline(threshold, color="black", lw=0.8, ls=":")
        ax.annotate(f"threshold {threshold:.2f}", (threshold, 1.0), fontsize=7, ha="left", va="top")
    ax.set_xlabel("routing threshold (auto-serve if score >= threshold)")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(title or "Threshold sweep")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def plot_calibration(calibration: pd.DataFrame, *, by: str = "variant", title: str = "") -> plt.Figure:
    """Observed ready share per score band and slice, each bar labelled with its n.

    Cells below the table's minimum support are drawn hatched and pale.
    """
    bands = list(dict.fromkeys(calibration["band"]))
    slices = list(dict.fromkeys(calibration[by]))
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
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
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), frameon=False, fontsize=8)
    ax.set_xticks(x, bands)
    ax.set_ylim(0, 1.15)
    ax.set_xlabel("judge score band")
    ax.set_ylabel("share reviewers marked ready")
    ax.set_title(title or "Calibration by score band (hatched: below minimum support)")
    fig.tight_layout()
    return fig
