"""Figures of the judge-bias study (matplotlib, Agg): interval plots per cue."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["plot_cue_shifts", "plot_net_flips", "plot_pointwise"]


def _forest(ax, labels, est, lo, hi, *, colors=None):
    y = np.arange(len(labels))[::-1]
    est, lo, hi = (np.asarray(v, float) for v in (est, lo, hi))
    for k in range(len(labels)):
        c = (colors or ["C0"] * len(labels))[k]
        if np.isfinite(lo[k]) and np.isfinite(hi[k]):
            ax.plot([lo[k], hi[k]], [y[k], y[k]], color=c, lw=2)
        else:
            ax.annotate("no interval", (0, y[k]), xytext=(4, 4), textcoords="offset points", fontsize=8)
        ax.plot(est[k], y[k], "o", color=c)
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.axvline(0, color="0.5", lw=1, ls="--")
    return y


def plot_cue_shifts(t: pd.DataFrame, *, title: str):
    """P(choose the cued reply | cue) - P(choose it | no cue), 95% MOVER intervals; * marks adjusted p < alpha."""
    fig, ax = plt.subplots(figsize=(7, 0.6 * max(len(t), 2) + 1.2))
    if len(t):
        labels = [f"{c}{' *' if s else ''} (n={n})" for c, s, n in zip(t["cue"], t["significant"], t["n_items"])]
        _forest(ax, labels, t["shift"], t["shift_ci_low"], t["shift_ci_high"])
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("shift toward the cued reply (share of answers), 95% interval over items")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_net_flips(t: pd.DataFrame, *, gate_max: float, title: str):
    """Cue flip rate minus the reworded prompt's flip rate, with the gate maximum."""
    fig, ax = plt.subplots(figsize=(7, 0.6 * max(len(t), 2) + 1.2))
    if len(t):
        colors = ["C2" if g == "pass" else ("C1" if str(g).startswith("not decidable") else "C3") for g in t["gate"]]
        _forest(ax, [f"{c} ({g.split(' (')[0]})" for c, g in zip(t["cue"], t["gate"])], t["net_flip_rate"],
                t["net_ci_low"], t["net_ci_high"], colors=colors)
    ax.axvline(gate_max, color="C3", lw=1)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel(f"net flip rate (cue - reworded prompt), 95% interval; red line: gate maximum {gate_max:g}")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_pointwise(t: pd.DataFrame, *, title: str):
    """Mean score shift of the cued reply (1-10 scale), 95% interval over items."""
    fig, ax = plt.subplots(figsize=(7, 0.6 * max(len(t), 2) + 1.2))
    labels = [f"{c}{' *' if s else ''} (n={n})" for c, s, n in zip(t["cue"], t["significant"], t["n_items"])]
    _forest(ax, labels, t["score_shift"], t["ci_low"], t["ci_high"])
    ax.set_xlabel("score with cue - score without (same reply), 95% interval over items")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
