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
    """Bars of each rate per slice with Wilson error bars.

    ``wilson`` stacks :func:`~cfbench.metrics.groups.wilson_table` outputs
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
    ax.set_title(title or "Auto-serve rates by slice (95% Wilson intervals)", fontsize=9)
    ax.legend(title="wording (bar label: k/n)", frameon=False, fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    plt.close(fig)  # the caller owns it; pyplot keeps no reference
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
    ax.set_ylabel("gap or rate (0-1)")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(title or "Threshold sweep", fontsize=9)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
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
