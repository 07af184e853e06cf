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

__all__ = ["sentiment_boxplot", "metric_strips", "effect_heatmap", "supported", "UNITS_DESCRIBED"]

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
    ax.set_ylabel("VADER compound (−1 to 1)" if metric == "sentiment" else metric)
    ax.set_title(title or f"{metric} by identity", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


#: Axis units of the described-mode metrics.
UNITS_DESCRIBED = {"sentiment": "VADER compound (−1 to 1)", "politeness": "matches per 100 words",
                   "hedging": "matches per 100 words", "neg_tone": "matches per 100 words",
                   "words": "words per reply", "chars": "characters per reply"}


def metric_strips(scores: pd.DataFrame, *, identities: Sequence[str], metrics: Sequence[str],
                  model: str = "model", seed: int = 0, title: str | None = None,
                  units: dict[str, str] | None = None) -> plt.Figure:
    """One panel per metric: box per identity with the prompt-level points jittered
    (jitter drawn from ``seed``); units on each y axis, n (replies with a value) in each panel title."""
    units = UNITS_DESCRIBED if units is None else units
    models = list(dict.fromkeys(scores[model]))
    rng = np.random.default_rng(seed)
    fig, axes = plt.subplots(len(metrics), 1, figsize=(max(6, 1.2 * len(identities)), 2.8 * len(metrics)),
                             squeeze=False)
    width = 0.8 / max(1, len(models))
    for ax, metric in zip(axes[:, 0], metrics):
        ns = []
        for k, m in enumerate(models):
            sub = scores[scores[model] == m]
            pos = np.arange(len(identities)) + (k - (len(models) - 1) / 2) * width
            data = [sub.loc[sub["identity"] == ident, metric].dropna().to_numpy() for ident in identities]
            ns.extend(len(v) for v in data)
            ax.boxplot(data, positions=pos, widths=width * 0.8, showfliers=False, manage_ticks=False)
            for p, vals in zip(pos, data):
                ax.scatter(p + rng.uniform(-width / 4, width / 4, len(vals)), vals, s=8, alpha=0.6,
                           color=f"C{k}", label=str(m) if p == pos[0] else None)
        n_txt = f"n = {min(ns)}" if min(ns) == max(ns) else f"n = {min(ns)}–{max(ns)}"
        ax.set_title(f"{metric} ({n_txt} prompts per identity and model)", fontsize=9)
        ax.set_ylabel(units.get(metric, metric), fontsize=8)
        ax.set_xticks(np.arange(len(identities)))
        ax.set_xticklabels([identity_label(i, short=True) for i in identities], rotation=30, ha="right",
                           fontsize=8)
    axes[0, 0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title or "Per-reply tone metrics by identity")
    fig.tight_layout()
    return fig


def supported(pairs: pd.DataFrame, *, min_n: int = 5, min_nonzero: int = 3) -> pd.Series:
    """Whether a pair's estimate has the support to be shown: at least ``min_n`` prompts and at least
    ``min_nonzero`` non-zero differences. (With few non-zero differences, d_z is an artefact of the count:
    one non-zero difference among n always gives |d| = 1/sqrt(n).)"""
    nonzero = pairs["n"] - pairs["n_zero_diff"]
    return (pairs["n"] >= min_n) & (nonzero >= min_nonzero)


def effect_heatmap(pairs: pd.DataFrame, *, model: str, metrics: Sequence[str],
                   value: str = "cohens_d", mark: str = "p_holm", alpha: float = 0.05,
                   min_n: int = 5, min_nonzero: int = 3, limit: float = 1.5) -> plt.Figure:
    """Pair × metric heatmap of ``value`` for one model.

    Cells without support (see :func:`supported`) are grey and unlabelled; the colour scale is fixed
    at ±``limit`` (values beyond it saturate, their number is printed) so that no single artefact sets
    the scale. A star marks ``mark`` < ``alpha``.
    """
    sub = pairs[pairs["model"] == model].copy()
    sub["pair"] = [f"{identity_label(a, short=True)} − {identity_label(b, short=True)}"
                   for a, b in zip(sub["identity_a"], sub["identity_b"])]
    sub["_ok"] = supported(sub, min_n=min_n, min_nonzero=min_nonzero)
    order = list(dict.fromkeys(sub["pair"]))
    grid = sub.pivot(index="pair", columns="metric", values=value).reindex(index=order, columns=list(metrics))
    pv = sub.pivot(index="pair", columns="metric", values=mark).reindex(index=order, columns=list(metrics))
    okg = sub.pivot(index="pair", columns="metric", values="_ok").reindex(index=order, columns=list(metrics))
    vals = grid.to_numpy(dtype=float)
    shown = np.where(okg.to_numpy(dtype=bool) & np.isfinite(vals), vals, np.nan)
    fig, ax = plt.subplots(figsize=(1.2 * len(metrics) + 3.5, 0.28 * len(order) + 1.8))
    cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad="0.85")
    im = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, vmin=-limit, vmax=limit, aspect="auto")
    for (r, c), v in np.ndenumerate(shown):
        p = pv.iat[r, c]
        if np.isfinite(v):
            ax.text(c, r, f"{v:+.2f}{'*' if np.isfinite(p) and p < alpha else ''}", ha="center", va="center",
                    fontsize=6)
    n_vals = sub["n"].dropna()
    n_txt = f"n = {int(n_vals.min())}" if n_vals.min() == n_vals.max() else \
        f"n = {int(n_vals.min())}–{int(n_vals.max())}"
    n_masked = int(np.isnan(shown).sum())
    n_sat = int((np.abs(shown[np.isfinite(shown)]) > limit).sum())
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(metrics, rotation=30, ha="right")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order, fontsize=7)
    ax.set_title(f"{model}: paired effect size d_z (A − B), {n_txt} prompts\n"
                 f"grey = unsupported (< {min_nonzero} non-zero differences or n < {min_n}): {n_masked} cells; "
                 f"* {mark} < {alpha}; {n_sat} beyond ±{limit}", fontsize=8)
    fig.colorbar(im, ax=ax, shrink=0.6, label="d_z = mean(D) / sd(D)")
    fig.tight_layout()
    return fig
