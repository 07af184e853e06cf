"""Figures of the identity-tone study (seed 002): distributions and effect sizes.

Each function takes tidy frames and returns a matplotlib ``Figure``; writing
it is :class:`cfbench.report.RunOutput`'s job. They are drawn on whatever backend is active (Agg in
scripts, inline in a kernel); importing this module leaves the backend alone.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cfbench.core.seeding import derive_seed
from cfbench.perturb.stimuli import identity_label
from cfbench.report import draws_text_as_written

__all__ = ["sentiment_boxplot", "metric_strips", "effect_heatmap", "supported", "UNITS_DESCRIBED"]

_LINESTYLES = ["-", "--", ":", "-."]


@draws_text_as_written
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
    # outside the axes, so it can never cover a box or an outlier
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0.0)
    fig.tight_layout()
    return fig


#: Axis units of the described-mode metrics.
UNITS_DESCRIBED = {"sentiment": "VADER compound (−1 to 1)", "politeness": "matches per 100 words",
                   "hedging": "matches per 100 words", "neg_tone": "matches per 100 words",
                   "words": "words per reply", "chars": "characters per reply"}


#: the interval of each identity's mean in :func:`metric_strips` (seaborn's ``errorbar``): a percentile
#: bootstrap over replies; the panel titles are written from it, so they cannot name another method
STRIP_ERRORBAR = ("ci", 95)


def _strip_caption(seed: int) -> str:
    kind, level = STRIP_ERRORBAR
    what = {"ci": "percentile bootstrap", "pi": "percentile range", "se": "standard error", "sd": "sd"}[kind]
    return f"bar: {level:g}% {what} over replies, seaborn, seed {seed}"


@draws_text_as_written
def metric_strips(scores: pd.DataFrame, *, identities: Sequence[str], metrics: Sequence[str],
                  model: str = "model", seed: int = 0, title: str | None = None,
                  units: dict[str, str] | None = None, n_excluded: int | None = None) -> plt.Figure:
    """One panel per metric (seaborn): every scored reply as a point (strip, jitter drawn from ``seed``)
    and each identity's mean with its :data:`STRIP_ERRORBAR` interval over replies (point plot, ``seed``); units
    on each y axis, n (replies with a value) in each panel title. Replies without a value (cut at the
    cap, failed, refused) are not drawn; ``n_excluded`` says how many in the title.
    Panels are in ``metrics`` order; ``fig.cfbench_panels`` lists them (for tests and readers)."""
    import seaborn as sns

    units = UNITS_DESCRIBED if units is None else units
    labels = {i: identity_label(i, short=True) for i in identities}
    order = [labels[i] for i in identities]
    data = scores.assign(_identity=scores["identity"].map(labels), _model=scores[model].astype(str))
    hue_order = list(dict.fromkeys(data["_model"]))
    fig, axes = plt.subplots(len(metrics), 1, figsize=(max(6.5, 1.2 * len(identities)), 2.6 * len(metrics)),
                             squeeze=False)
    for k, (ax, metric) in enumerate(zip(axes[:, 0], metrics)):
        sub = data[data[metric].notna()]
        counts = sub.groupby(["_model", "_identity"]).size().reindex(
            pd.MultiIndex.from_product([hue_order, order]), fill_value=0)
        if len(sub):
            # seaborn's strip jitter draws from numpy's global RNG: seed it for this panel, then restore it
            state = np.random.get_state()
            np.random.seed(derive_seed(seed, "strip", metric) % 2 ** 32)
            sns.stripplot(data=sub, x="_identity", y=metric, hue="_model", order=order, hue_order=hue_order,
                          dodge=len(hue_order) > 1, jitter=0.18, size=3, alpha=0.5, ax=ax, legend=False)
            np.random.set_state(state)
            sns.pointplot(data=sub, x="_identity", y=metric, hue="_model", order=order, hue_order=hue_order,
                          dodge=0.4 if len(hue_order) > 1 else False, errorbar=STRIP_ERRORBAR, seed=seed,
                          markers="D", linestyles="none", palette="dark:black" if len(hue_order) == 1 else None,
                          ax=ax, legend=k == 0 and len(hue_order) > 1)
        else:
            ax.text(0.5, 0.5, "no scored reply", ha="center", va="center", transform=ax.transAxes)
        lo, hi = int(counts.min()), int(counts.max())
        n_txt = f"n = {lo}" if lo == hi else f"n = {lo}–{hi}"
        ax.set_title(f"{metric} ({n_txt} scored replies per identity and model; ◆ mean, {_strip_caption(seed)})",
                     fontsize=9)
        ax.set_ylabel(units.get(metric, metric), fontsize=8)
        ax.set_xlabel("")
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, rotation=30, ha="right", fontsize=8)
        if metric in ("words", "chars", "politeness", "hedging", "neg_tone") and len(sub):
            top = float(sub[metric].max())
            ax.set_ylim(0, top * 1.08 if top > 0 else 1.0)  # non-negative metrics: the axis starts at 0
        if ax.get_legend() is not None:
            sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, title=None)
    sup = title or "Per-reply tone metrics by identity"
    if n_excluded:
        sup += f"\n(complete replies only: {n_excluded} cut or unscored replies not drawn)"
    fig.suptitle(sup, fontsize=10)
    fig.tight_layout()
    fig.cfbench_panels = list(metrics)
    return fig


def supported(pairs: pd.DataFrame, *, min_n: int = 5, min_nonzero: int = 3) -> pd.Series:
    """Whether a pair's estimate has the support to be shown: at least ``min_n`` prompts and at least
    ``min_nonzero`` non-zero differences. (With few non-zero differences, d_z is an artefact of the count:
    one non-zero difference among n always gives |d| = 1/sqrt(n).)"""
    nonzero = pairs["n"] - pairs["n_zero_diff"]
    return (pairs["n"] >= min_n) & (nonzero >= min_nonzero)


@draws_text_as_written
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
    if np.isfinite(shown).any():
        fig.colorbar(im, ax=ax, shrink=0.6, label="d_z = mean(D) / sd(D)")
    else:  # every cell grey: no colour bar (an empty scale), the reason in words
        ax.text(0.5, 0.5, f"nothing to colour: every cell below the support rule\n(n < {min_n} prompts or "
                f"< {min_nonzero} non-zero differences)", transform=ax.transAxes, ha="center", va="center",
                fontsize=8, bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#999999"})
    fig.tight_layout()
    return fig
