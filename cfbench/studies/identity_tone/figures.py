"""Figures of the identity-tone study (seed 002): distributions and effect sizes.

Each function takes tidy frames and returns a matplotlib ``Figure``; writing
it is :class:`cfbench.report.RunOutput`'s job.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from cfbench.perturb.stimuli import identity_label  # noqa: E402

__all__ = ["sentiment_boxplot", "metric_strips", "effect_heatmap"]

_LINESTYLES = ["-", "--", ":", "-."]


def sentiment_boxplot(scores: pd.DataFrame, *, identities: Sequence[str], metric: str = "sentiment",
                      model: str = "model", title: str | None = None) -> plt.Figure:
    """Box plots of ``metric`` per identity, one box style per model (Figure 2 layout:
    solid boxes for the first model, dashed for the second)."""
    models = list(dict.fromkeys(scores[model]))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(identities)), 4))
    width = 0.8 / max(1, len(models))
    for k, m in enumerate(models):
        sub = scores[scores[model] == m]
        data = [sub.loc[sub["identity"] == ident, metric].dropna().to_numpy() for ident in identities]
        pos = np.arange(len(identities)) + (k - (len(models) - 1) / 2) * width
        ls = _LINESTYLES[k % len(_LINESTYLES)]
        style = {"linestyle": ls}
        ax.boxplot(data, positions=pos, widths=width * 0.9, boxprops=style, whiskerprops=style,
                   capprops=style, medianprops={"linestyle": ls, "color": f"C{k}"}, showfliers=True,
                   manage_ticks=False)
        ax.plot([], [], ls, color="black", label=str(m))
    ax.set_xticks(np.arange(len(identities)))
    ax.set_xticklabels([identity_label(i, short=True) for i in identities], rotation=30, ha="right")
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric} by identity")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def metric_strips(scores: pd.DataFrame, *, identities: Sequence[str], metrics: Sequence[str],
                  model: str = "model", seed: int = 0) -> plt.Figure:
    """One panel per metric: box per identity with the prompt-level points jittered
    (jitter drawn from ``seed``)."""
    models = list(dict.fromkeys(scores[model]))
    rng = np.random.default_rng(seed)
    fig, axes = plt.subplots(len(metrics), 1, figsize=(max(6, 1.2 * len(identities)), 2.6 * len(metrics)),
                             squeeze=False)
    width = 0.8 / max(1, len(models))
    for ax, metric in zip(axes[:, 0], metrics):
        for k, m in enumerate(models):
            sub = scores[scores[model] == m]
            pos = np.arange(len(identities)) + (k - (len(models) - 1) / 2) * width
            data = [sub.loc[sub["identity"] == ident, metric].dropna().to_numpy() for ident in identities]
            ax.boxplot(data, positions=pos, widths=width * 0.8, showfliers=False, manage_ticks=False)
            for p, vals in zip(pos, data):
                ax.scatter(p + rng.uniform(-width / 4, width / 4, len(vals)), vals, s=8, alpha=0.6,
                           color=f"C{k}", label=str(m) if p == pos[0] else None)
        ax.set_ylabel(metric)
        ax.set_xticks(np.arange(len(identities)))
        ax.set_xticklabels([identity_label(i, short=True) for i in identities], rotation=30, ha="right",
                           fontsize=8)
    axes[0, 0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def effect_heatmap(pairs: pd.DataFrame, *, model: str, metrics: Sequence[str],
                   value: str = "cohens_d", mark: str = "wilcoxon_p", alpha: float = 0.05) -> plt.Figure:
    """Pair × metric heatmap of ``value`` for one model; cells with ``mark`` < alpha get a star."""
    sub = pairs[pairs["model"] == model].copy()
    sub["pair"] = [f"{identity_label(a, short=True)} − {identity_label(b, short=True)}"
                   for a, b in zip(sub["identity_a"], sub["identity_b"])]
    order = list(dict.fromkeys(sub["pair"]))
    grid = sub.pivot(index="pair", columns="metric", values=value).reindex(index=order, columns=list(metrics))
    pv = sub.pivot(index="pair", columns="metric", values=mark).reindex(index=order, columns=list(metrics))
    vals = grid.to_numpy(dtype=float)
    finite = np.abs(vals[np.isfinite(vals)])
    lim = float(finite.max()) if finite.size else 1.0
    fig, ax = plt.subplots(figsize=(1.2 * len(metrics) + 3, 0.28 * len(order) + 1.5))
    im = ax.imshow(vals, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    for (r, c), v in np.ndenumerate(vals):
        p = pv.iat[r, c]
        if np.isfinite(v):
            ax.text(c, r, f"{v:+.2f}{'*' if np.isfinite(p) and p < alpha else ''}", ha="center", va="center",
                    fontsize=6)
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(metrics, rotation=30, ha="right")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order, fontsize=7)
    ax.set_title(f"{model}: paired {value} (A − B); * {mark} < {alpha}")
    fig.colorbar(im, ax=ax, shrink=0.6)
    fig.tight_layout()
    return fig
