"""Figures of the judge-bias study (matplotlib): interval plots per cue.

They are drawn on whatever backend is active (Agg in scripts, inline in a kernel); importing this module
leaves the backend alone, so a researcher's own figures in the same kernel still show.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cfbench.report import draws_text_as_written, interval_caption
from cfbench.stats import verdicts as V

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


def _caption(t: pd.DataFrame, method: str, *, width: int = 110) -> str:
    """The drawn column's interval method and n of items, read from the table (``method`` names the column)."""
    if method not in t.columns:
        return "no interval method in the table"
    return interval_caption(t, column=method, n="n_items", unit="items", width=width)


def _net_methods(t: pd.DataFrame, use_rep) -> pd.DataFrame:
    """One ``drawn_method`` column: per row, the method of the net interval actually drawn (noise reference
    of that row)."""
    net = t["net_ci_method"] if "net_ci_method" in t.columns else pd.Series([np.nan] * len(t), index=t.index)
    rep = t["net_repeat_ci_method"] if "net_repeat_ci_method" in t.columns else net
    return t.assign(drawn_method=np.where(use_rep, rep, net))


def _short(judge: str) -> str:
    return judge.split(":", 1)[-1]


def _labels(t: pd.DataFrame, extra) -> list[str]:
    """``cue [extra]`` plus the judge's short name when the table has more than one judge."""
    many = "judge" in t.columns and t["judge"].nunique() > 1
    return [f"{r.cue}{' · ' + _short(r.judge) if many else ''} {e}".rstrip()
            for r, e in zip(t.itertuples(index=False), extra)]


def _judge_colors(t: pd.DataFrame) -> list[str]:
    judges = list(dict.fromkeys(t["judge"])) if "judge" in t.columns else [None]
    return [f"C{judges.index(j) if 'judge' in t.columns else 0}" for j in (t["judge"] if "judge" in t.columns
                                                                             else [None] * len(t))]


def _size(t: pd.DataFrame) -> tuple[float, float]:
    return 10.0, 0.45 * max(len(t), 2) + 1.4


@draws_text_as_written
def plot_cue_shifts(t: pd.DataFrame, *, title: str):
    """P(choose the cued reply | cue) - P(choose it | no cue) with the table's intervals over items (method and n
    in the title, from ``shift_ci_method`` / ``n_items``); one colour per judge; * marks adjusted p < alpha."""
    fig, ax = plt.subplots(figsize=_size(t))
    if len(t):
        labels = _labels(t, [f"{'* ' if s else ''}(n={n})" for s, n in zip(t["significant"], t["n_items"])])
        _forest(ax, labels, t["shift"], t["shift_ci_low"], t["shift_ci_high"], colors=_judge_colors(t))
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("shift toward the cued reply (share of answers); * adjusted p < alpha")
    ax.set_title(f"{title}\n{_caption(t, 'shift_ci_method')}", fontsize=8)
    fig.tight_layout()
    return fig


@draws_text_as_written
def plot_net_flips(t: pd.DataFrame, *, gate_max: float, title: str):
    """Cue flip rate minus the noise reference that decides the gate, with the gate maximum; colour = verdict."""
    fig, ax = plt.subplots(figsize=_size(t))
    drawn = t.iloc[0:0].assign(drawn_method=[])
    if len(t):
        rep = "gate_reference" in t.columns and (t["gate_reference"] == "repeats").any()
        use_rep = (t["gate_reference"] == "repeats").to_numpy() if rep else np.zeros(len(t), bool)
        est = np.where(use_rep, t.get("net_repeat_flip_rate", np.nan), t["net_flip_rate"])
        lo = np.where(use_rep, t.get("net_repeat_ci_low", np.nan), t["net_ci_low"])
        hi = np.where(use_rep, t.get("net_repeat_ci_high", np.nan), t["net_ci_high"])
        drawn = _net_methods(t, use_rep)
        colors = [V.KIND_COLOURS[V.verdict_kind(g)] for g in t["gate"]]
        _forest(ax, _labels(t, [f"({V.verdict_kind(g)}; vs {r})" for g, r in zip(t["gate"], t["gate_reference"])]),
                est, lo, hi, colors=colors)
    ax.axvline(gate_max, color="C3", lw=1)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel(f"net flip rate (cue - noise reference); green pass, red fail, tan inconclusive, "
                  f"grey uninformative (judge not shown to respond); red line: gate maximum {gate_max:g}", fontsize=8)
    ax.set_title(f"{title}\n{_caption(drawn, 'drawn_method')}", fontsize=8)
    fig.tight_layout()
    return fig


@draws_text_as_written
def plot_pointwise(t: pd.DataFrame, *, title: str, gate_max: float | None = None):
    """Left: mean score shift of the cued reply (1-10 scale); right: net |shift| beyond the noise reference with
    the gate maximum; each panel's title names the interval method and n of items its table states."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 0.45 * max(len(t), 2) + 1.6), sharey=True)
    labels = _labels(t, [f"{'* ' if s else ''}(n={n})" for s, n in zip(t["significant"], t["n_items"])])
    _forest(ax, labels, t["score_shift"], t["ci_low"], t["ci_high"], colors=_judge_colors(t))
    ax.set_xlabel("score with cue - score without (same reply)", fontsize=8)
    colors = [V.KIND_COLOURS[V.verdict_kind(g)] for g in t["gate"]]
    use_rep = (t["gate_reference"] == "repeats").to_numpy()
    est = np.where(use_rep, t.get("net_repeat_abs_shift", np.nan), t["net_abs_shift"])
    lo = np.where(use_rep, t.get("net_repeat_ci_low", np.nan), t["net_ci_low"])
    hi = np.where(use_rep, t.get("net_repeat_ci_high", np.nan), t["net_ci_high"])
    _forest(ax2, labels, est, lo, hi, colors=colors)
    ax.set_title(_caption(t, "ci_method", width=60), fontsize=7)
    ax2.set_title(_caption(_net_methods(t, use_rep), "drawn_method", width=60), fontsize=7)
    if gate_max is not None:
        ax2.axvline(gate_max, color="C3", lw=1)
    ax2.set_xlabel("net |shift| beyond the noise reference (points); green pass, red fail, tan inconclusive, grey "
                   "uninformative; red line: gate maximum", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
