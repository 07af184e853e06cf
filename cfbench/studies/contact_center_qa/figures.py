"""Tables and figures of the contact-center study (seed 000: Table 2, Figures 3-5).

Every function takes the tidy tables of :func:`cfbench.studies.contact_center_qa.tables.study_tables`
and returns a DataFrame (for display) or a matplotlib Figure (for
:meth:`cfbench.report.RunOutput.figure`); nothing is computed here that is
not already in those tables, apart from averages over dimensions for display.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.report import draws_text_as_written, interval_caption, released
from cfbench.stats import verdicts as V

__all__ = ["table2", "heatmap", "accuracy_vs_cfr", "category_profiles", "fairness_vs_robustness",
           "kappa_bars", "flip_distribution_bars", "judge_means_bars", "net_cfr_gate_plot", "masd_vs_wording",
           "study_figures", "DIMENSION_GROUPS", "MIN_ITEMS"]

#: cells estimated from fewer items than this are greyed out in heatmaps (no interval possible below 2;
#: with a handful of items one flip dominates the colour scale)
MIN_ITEMS = 5

#: Dimension -> the seed's three categories (Figure 4).
DIMENSION_GROUPS: dict[str, str] = {
    "gender": "identity", "ethnicity_name": "identity", "ethnicity_cues": "identity",
    "religion_name": "identity", "religion_cues": "identity", "disability": "identity",
    "past_performance": "context", "agent_profile": "context", "customer_profile": "context",
    "priming": "context", "contextual_metadata": "context",
    "directness": "style", "politeness": "style", "formality": "style", "emotional_labor": "style",
}

_BLOCKS = (("cfr", "CFR (%)"), ("confidence", "Confidence MASD"), ("positives", "Positives MASD"),
           ("improvement", "Improvement MASD"), ("customer", "Customer-behaviour MASD"),
           ("p_yes", "P(Yes) MASD (beyond the seed)"))


def _plt():
    """pyplot on whatever backend is active (Agg in scripts, inline in a kernel: the notebook shows the PNG
    files written by :class:`cfbench.report.RunOutput`, so nothing here depends on the backend)."""
    import matplotlib.pyplot as plt

    return plt


def _no_flip_note(ax, n_pairs: int, *, what: str = "flips") -> None:
    """State on the axes that nothing moved, instead of an empty-looking panel."""
    ax.text(0.5, 0.5, f"0 {what} in {n_pairs} pairs", transform=ax.transAxes, ha="center", va="center",
            fontsize=11, color="#444444", bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#999999"})


def table2(cfr: pd.DataFrame, masd: pd.DataFrame, robustness: pd.DataFrame, accuracy: pd.DataFrame, *,
           dimensions: Sequence[str], labels: Mapping[str, str] | None = None,
           arm: str = "baseline", with_n: bool = False,
           robustness_baseline: str = "robustness") -> pd.DataFrame:
    """The seed's Table 2 layout: one column per judge; CFR block and three MASD blocks.

    Rows per block: the dimensions in ``dimensions`` order, ``Average`` (mean
    over the dimensions with a value), ``Robustness`` (the same metric among
    repeats of the originals); the CFR block ends with ``Accuracy`` (%).
    CFR, robustness CFR and accuracy in percent. With ``with_n`` each cell
    also shows the number of pairs behind it, e.g. ``"12.5 (n=48)"``.
    ``robustness_baseline`` picks which repeat set fills the Robustness rows
    (``robustness`` = repeats at the evaluation settings).
    """
    labels = dict(labels or {})
    robustness = _pick_baseline(robustness, robustness_baseline)
    c = cfr[cfr["arm"] == arm] if "arm" in cfr.columns else cfr
    m = masd[masd["arm"] == arm] if (len(masd) and "arm" in masd.columns) else masd
    judges = sorted(set(c["judge"]) | (set(m["judge"]) if len(m) else set()))
    blocks = []
    for key, title in _BLOCKS:
        if key == "cfr":
            src = c.assign(value=c["cfr"] * 100)
            rob_metric, rob_scale = "cfr", 100
        else:
            if not len(m) or key not in set(m["score"]):
                continue
            src = m[m["score"] == key].assign(value=lambda d: d["masd"])
            rob_metric, rob_scale = f"masd_{key}", 1
        val = src.pivot_table(index="dimension", columns="judge", values="value", aggfunc="first")
        npairs = src.pivot_table(index="dimension", columns="judge", values="n_pairs", aggfunc="first")
        val = val.reindex(index=list(dimensions), columns=judges)
        npairs = npairs.reindex(index=list(dimensions), columns=judges)
        avg = val.mean(axis=0, skipna=True)
        rows = {labels.get(d, d): val.loc[d] for d in dimensions}
        rows["Average"] = avg
        rob = robustness[robustness["metric"] == rob_metric] if len(robustness) else robustness
        rob_val = (rob.set_index("judge")["value"] * rob_scale).reindex(judges) if len(rob) else \
            pd.Series(np.nan, index=judges)
        rows["Robustness"] = rob_val
        n_rows = {labels.get(d, d): npairs.loc[d] for d in dimensions}
        n_rows["Average"] = npairs.sum(axis=0, min_count=1)
        n_rows["Robustness"] = (rob.set_index("judge")["n_pairs"].reindex(judges) if len(rob)
                                else pd.Series(np.nan, index=judges))
        if key == "cfr":
            acc = accuracy.set_index("judge")["accuracy"].reindex(judges) * 100 if len(accuracy) else \
                pd.Series(np.nan, index=judges)
            rows["Accuracy"] = acc
            n_rows["Accuracy"] = (accuracy.set_index("judge")["n"].reindex(judges) if len(accuracy)
                                  else pd.Series(np.nan, index=judges))
        block = pd.DataFrame(rows).T
        if with_n:
            nb = pd.DataFrame(n_rows).T.reindex(index=block.index, columns=block.columns)
            vals, ns = block.to_numpy(dtype=float), nb.to_numpy(dtype=float)
            cells = [[("-" if np.isnan(x) else (f"{x:.2f} (n={int(n)})" if not np.isnan(n) else f"{x:.2f}"))
                      for x, n in zip(vr, nr)] for vr, nr in zip(vals, ns)]
            block = pd.DataFrame(cells, index=block.index, columns=block.columns)
        block.index = pd.MultiIndex.from_product([[title], block.index], names=["block", "row"])
        blocks.append(block)
    out = pd.concat(blocks)
    out.columns.name = "judge"
    return out


def _pick_baseline(robustness: pd.DataFrame, name: str) -> pd.DataFrame:
    if len(robustness) and "baseline" in robustness.columns:
        return robustness[robustness["baseline"] == name]
    return robustness


@draws_text_as_written
def heatmap(frame: pd.DataFrame, *, value: str, row: str = "dimension", col: str = "judge",
            row_order: Sequence[str] | None = None, labels: Mapping[str, str] | None = None,
            title: str = "", scale: float = 1.0, fmt: str = "{:.1f}", cmap: str = "Reds",
            n: str | None = None, min_n: int = MIN_ITEMS, units: str = "", pairs: str | None = None,
            vmax_floor: float = 0.0):
    """Annotated seaborn heatmap of a non-negative ``value`` over ``row`` x ``col`` (e.g. dimensions x judges).

    The colour scale starts at 0 (white: nothing moved) and reaches at least ``vmax_floor``, so a table of
    zeros is drawn white, never as a colour on a symmetric scale. With ``n`` (a count column such as
    ``n_items``) each cell shows its n, and cells with fewer than ``min_n`` are drawn grey and left out of the
    colour scale. When no cell is left to colour the panel has no colour bar (an empty scale would
    suggest a range the data never had) and the title says "nothing to colour: n below ...". With ``pairs``
    (``n_pairs``, for flip rates only) a zero cell reads "0 of n pairs".
    """
    import seaborn as sns

    plt = _plt()
    wide = frame.pivot_table(index=row, columns=col, values=value, aggfunc="first", dropna=False) * scale
    counts = paircounts = None
    if n is not None:
        counts = frame.pivot_table(index=row, columns=col, values=n, aggfunc="first", dropna=False)
        counts = counts.reindex(index=wide.index, columns=wide.columns)
    if pairs is not None:
        paircounts = frame.pivot_table(index=row, columns=col, values=pairs, aggfunc="first", dropna=False)
        paircounts = paircounts.reindex(index=wide.index, columns=wide.columns)
    if row_order is not None:
        order = [r for r in row_order if r in wide.index]
        wide = wide.reindex(order)
        counts = counts.reindex(order) if counts is not None else None
        paircounts = paircounts.reindex(order) if paircounts is not None else None
    labels = dict(labels or {})
    data = wide.to_numpy(dtype=float)
    cnt = counts.to_numpy(dtype=float) if counts is not None else np.full(data.shape, np.inf)
    prs = paircounts.to_numpy(dtype=float) if paircounts is not None else np.full(data.shape, np.nan)
    thin = np.nan_to_num(cnt, nan=0.0) < min_n
    shown = np.where(thin | np.isnan(data), np.nan, data)
    vmax = max(float(np.nanmax(shown)) if np.isfinite(shown).any() else 0.0, vmax_floor, 1e-9)
    annot = np.empty(data.shape, dtype=object)
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            x = data[i, j]
            if np.isnan(x):
                txt = "-"
            elif x == 0 and not np.isnan(prs[i, j]):
                txt = f"0\n(0 of {int(prs[i, j])} pairs)"
            else:
                txt = fmt.format(x)
            if counts is not None:
                txt += f"\nn={0 if np.isnan(cnt[i, j]) else int(cnt[i, j])}"
            annot[i, j] = txt
    fig, ax = plt.subplots(figsize=(2.4 + 1.7 * max(1, wide.shape[1]), 1.8 + 0.48 * max(1, wide.shape[0])))
    ax.set_facecolor("#d9d9d9")  # masked (thin or missing) cells show the grey background
    nothing = not np.isfinite(shown).any()  # every cell thin or missing: a colour bar would be an empty scale
    sns.heatmap(pd.DataFrame(shown, index=[labels.get(r, r) for r in wide.index],
                             columns=[str(c) for c in wide.columns]),
                ax=ax, cmap=cmap, vmin=0.0, vmax=vmax, annot=False, linewidths=0.5, linecolor="white",
                cbar=not nothing, cbar_kws={"label": f"{units} (0 = nothing moved)".strip(), "shrink": 0.8})
    for i in range(data.shape[0]):  # every cell says its value and n, grey ones included (seaborn skips masked)
        for j in range(data.shape[1]):
            dark = np.isfinite(shown[i, j]) and shown[i, j] > 0.6 * vmax
            ax.text(j + 0.5, i + 0.5, annot[i, j], ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    ax.set_xticklabels(ax.get_xticklabels(), rotation=30, ha="right")
    ax.set_xlabel("")
    ax.set_ylabel("")
    if nothing:
        most = int(np.nanmax(cnt)) if counts is not None and np.isfinite(cnt).any() else 0
        title = (f"{title}\nnothing to colour: n below {min_n} in every cell (at most {most}); "
                 "values written, no scale" if counts is not None else f"{title}\nnothing to colour: no value")
    elif counts is not None:
        title = f"{title}\ngrey: fewer than {min_n} items, not coloured"
    ax.set_title(title, fontsize=9)
    _tight_with_room_for_labels(fig, ax)
    return fig


#: how far a column label may reach (inches, width and height at 30 degrees) within the heatmap's base size: a
#: spec as long as local:qwen2.5-coder-1.5b (1.6 x 1.0)
_LABEL_ROOM_IN = (1.7, 1.1)


def _tight_with_room_for_labels(fig, ax) -> None:
    """``fig.tight_layout()`` after growing the figure by what its column labels need beyond the base size's room.
    A judge named by a server spec (model and URL, 60 characters or more, 4 x 2.4 inches at 30 degrees) under a
    few rows otherwise left the heatmap squeezed to a sliver, or matplotlib warned "Tight layout not applied".
    Labels as short as the local judge's spec keep the base size. The extents are measured with the figure's
    own renderer (not ``fig.canvas.get_renderer()``, which only Agg canvases have: on the svg, pdf or cairo
    backends that call raised and ended the run)."""
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    if boxes:
        width, height = fig.get_size_inches()
        fig.set_size_inches(width + max(0.0, max(b.width for b in boxes) / fig.dpi - _LABEL_ROOM_IN[0]),
                            height + max(0.0, max(b.height for b in boxes) / fig.dpi - _LABEL_ROOM_IN[1]))
    fig.tight_layout()


@draws_text_as_written
def accuracy_vs_cfr(cfr: pd.DataFrame, accuracy: pd.DataFrame, *, arm: str = "baseline"):
    """Figure-3 style: answer accuracy vs mean CFR over dimensions, one point per judge.

    Error bars: the accuracy's interval from the table (its ``ci_method`` is named in the title); CFR bars
    span the smallest and largest per-dimension CFR (the spread the average hides).
    """
    plt = _plt()
    c = cfr[cfr["arm"] == arm] if "arm" in cfr.columns else cfr
    g = c.groupby("judge")["cfr"].agg(["mean", "min", "max"]) * 100
    a = accuracy.set_index("judge")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for judge in g.index:
        if judge not in a.index:
            continue
        x, y = g.loc[judge, "mean"], a.loc[judge, "accuracy"] * 100
        ax.errorbar(x, y, xerr=[[x - g.loc[judge, "min"]], [g.loc[judge, "max"] - x]],
                    yerr=[[y - a.loc[judge, "ci_low"] * 100], [a.loc[judge, "ci_high"] * 100 - y]],
                    fmt="o", capsize=3, clip_on=False)  # a point at CFR 0 sits on the axis, drawn whole
        ax.annotate(judge, (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8)
    right = float(np.nanmax(g["max"])) if len(g) else 0.0
    ax.set_xlim(0, max(10.0, 1.15 * right))  # CFR cannot be negative: the axis starts at 0
    if len(g) and np.nan_to_num(g["max"].to_numpy(float)).max() == 0:
        n_pairs = int(c["n_pairs"].sum()) if "n_pairs" in c.columns else 0
        ax.text(0.97, 0.05, f"0 flips in {n_pairs} pairs: every point sits at CFR 0", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=8, color="#444444")
    ax.set_xlabel("mean CFR over dimensions (%) - lower is fairer")
    ax.set_ylabel("answer accuracy on the originals (%)")
    n_ans = ", ".join(f"{j}: n={int(a.loc[j, 'n'])}" for j in g.index if j in a.index and "n" in a.columns)
    n_items = int(c["n_items"].max()) if "n_items" in c.columns and len(c) else 0
    drawn = a[a.index.isin(g.index)]
    ax.set_title(f"Accuracy vs counterfactual flip rate\n({n_items} transcripts; answers {n_ans})\n"
                 f"vertical bars: accuracy, {interval_caption(drawn, unit='transcripts', width=70)}\n"
                 "horizontal bars: range of CFR over dimensions", fontsize=8)
    fig.tight_layout()
    return fig


@draws_text_as_written
def category_profiles(cfr: pd.DataFrame, *, dimensions: Sequence[str], arm: str = "baseline",
                      labels: Mapping[str, str] | None = None,
                      groups: Mapping[str, str] = DIMENSION_GROUPS):
    """Figure-4 style: CFR per dimension with its interval, grouped by identity/context/style."""
    plt = _plt()
    labels = dict(labels or {})
    c = cfr[cfr["arm"] == arm] if "arm" in cfr.columns else cfr
    judges = sorted(c["judge"].unique())
    dims = [d for d in dimensions if d in set(c["dimension"])]
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(dims) * max(1, len(judges))), 4))
    width = 0.8 / max(1, len(judges))
    colors = {"identity": "#4c72b0", "context": "#dd8452", "style": "#55a868"}
    for k, judge in enumerate(judges):
        sub = c[c["judge"] == judge].set_index("dimension").reindex(dims)
        x = np.arange(len(dims)) + k * width
        y = sub["cfr"].to_numpy(float) * 100
        lo = np.nan_to_num(y - sub["ci_low"].to_numpy(float) * 100)
        hi = np.nan_to_num(sub["ci_high"].to_numpy(float) * 100 - y)
        ax.bar(x, y, width=width, color=[colors.get(groups.get(d, ""), "#999999") for d in dims],
               alpha=1.0 - 0.3 * k, edgecolor="black", linewidth=0.4, label=judge)
        ax.errorbar(x, y, yerr=[lo, hi], fmt="none", ecolor="black", capsize=2, linewidth=0.8)
        if "n_pairs" in sub.columns:  # flips of pairs under every bar: a bar of height 0 still says what it rests on
            for xi, yi, cf, npair in zip(x, y, sub["cfr"].to_numpy(float), sub["n_pairs"].to_numpy(float)):
                if np.isnan(npair):
                    continue
                ax.annotate(f"{int(round(cf * npair)) if not np.isnan(cf) else 0}/{int(npair)}", (xi, 0),
                            textcoords="offset points", xytext=(0, 2), ha="center", va="bottom", fontsize=7,
                            rotation=90)
    top = float(np.nanmax(c["ci_high"].to_numpy(float))) * 100 if c["ci_high"].notna().any() else 0.0
    ax.set_ylim(0, max(10.0, 1.1 * top))  # anchored at 0: CFR cannot be negative
    if len(c) and np.nan_to_num(c["cfr"].to_numpy(float)).max() == 0:
        _no_flip_note(ax, int(c["n_pairs"].sum()) if "n_pairs" in c.columns else 0)
    ax.set_xticks(np.arange(len(dims)) + width * (len(judges) - 1) / 2,
                  [labels.get(d, d) for d in dims], rotation=45, ha="right")
    ax.set_ylabel("CFR (%)")
    drawn = c[c["dimension"].isin(dims)]
    ax.set_title("Flip rate by dimension (blue identity, orange context, green style; label: flips/pairs)\n"
                 f"{interval_caption(drawn, unit='transcripts per bar', width=90)}", fontsize=8)
    if len(judges) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="judge (shade)")
    fig.tight_layout()
    return fig


@draws_text_as_written
def fairness_vs_robustness(cfr: pd.DataFrame, robustness: pd.DataFrame, *, arm: str = "baseline"):
    """Figure-5 style: mean CFR over dimensions next to each repeat-noise CFR, per judge."""
    plt = _plt()
    bases = (sorted(robustness["baseline"].unique()) if len(robustness) and "baseline" in robustness.columns
             else ["robustness"])
    c = cfr[cfr["arm"] == arm] if "arm" in cfr.columns else cfr
    mean = c.groupby("judge")["cfr"].mean() * 100
    judges = list(mean.index)
    x = np.arange(len(judges))
    nb = 1 + len(bases)
    w = 0.8 / nb
    offs = (np.arange(nb) - (nb - 1) / 2) * w
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(judges) + 2), 4.8))
    series = [("mean CFR (counterfactual)", mean.reindex(judges).to_numpy(float))]
    for b in bases:
        rb = _pick_baseline(robustness, b) if len(robustness) else robustness
        rob = (rb[rb["metric"] == "cfr"].set_index("judge")["value"] * 100) if len(rb) else pd.Series(dtype=float)
        temp = rb["temperature"].iloc[0] if len(rb) and "temperature" in rb.columns else np.nan
        what = "question reworded" if b == "robustness_wording" else "repeats of originals"
        series.append((f"{what} ({b}, T={temp:g})", rob.reindex(judges).to_numpy(float)))
    pairs = (c.groupby("judge")["n_pairs"].sum().reindex(judges).to_numpy(float) if "n_pairs" in c.columns
             else np.full(len(judges), np.nan))
    for k, (label, vals) in enumerate(series):
        bars = ax.bar(x + offs[k], np.nan_to_num(vals), width=w, label=label)
        for rect, v, npair in zip(bars, vals, pairs):
            text = "n/a" if np.isnan(v) else f"{v:.1f}"
            if k == 0 and v == 0 and not np.isnan(npair):  # the counterfactual bar: say what 0 rests on
                text = f"0\n(0 flips in\n{int(npair)} pairs)"
            ax.annotate(text, (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, judges, rotation=20 if len(judges) > 2 else 0, ha="right" if len(judges) > 2 else "center")
    ax.set_ylabel("flip rate (%)")
    highest = max([float(np.nanmax(v)) for _, v in series if np.isfinite(v).any()] or [0.0])
    ax.set_ylim(0, max(10.0, 1.2 * highest))
    if highest == 0:
        _no_flip_note(ax, int(c["n_pairs"].sum()) if "n_pairs" in c.columns else 0)
    n_items = int(c["n_items"].max()) if "n_items" in c.columns and len(c) else 0
    ax.set_title(f"Counterfactual flips vs the judge's own repeat noise ({n_items} transcripts)", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14 if len(judges) <= 2 else -0.3),
              ncol=2, frameon=False)  # below the axes: never over a bar
    fig.tight_layout()
    return fig


@draws_text_as_written
def kappa_bars(kappa: pd.DataFrame):
    """Figure-6 style: Cohen's kappa between repeat runs per judge, one bar per repeat setting."""
    plt = _plt()
    k = kappa.copy()
    fig, ax = plt.subplots(figsize=(max(4.5, 1.6 * k["judge"].nunique() + 2), 3.6))
    bases = sorted(k["baseline"].unique())
    judges = sorted(k["judge"].unique())
    w = 0.8 / max(1, len(bases))
    for b_i, b in enumerate(bases):
        sub = k[k["baseline"] == b].set_index("judge").reindex(judges)
        x = np.arange(len(judges)) + (b_i - (len(bases) - 1) / 2) * w
        vals = sub["kappa"].to_numpy(float)
        bars = ax.bar(x, np.nan_to_num(vals), width=w, label=b, edgecolor="black", linewidth=0.6)
        flat = np.isfinite(vals) & (np.abs(vals) < 0.005)  # a bar of height 0 is invisible: mark where it stands
        if flat.any():
            ax.hlines(np.zeros(int(flat.sum())), x[flat] - w / 2, x[flat] + w / 2,
                      colors=[bars[i].get_facecolor() for i in np.flatnonzero(flat)], linewidth=3, zorder=3)
            ax.scatter(x[flat], np.zeros(int(flat.sum())), marker="D", s=18, color="black", zorder=4)
        for rect, v, n in zip(bars, sub["kappa"], sub["n_units"]):
            ax.annotate("n/a" if pd.isna(v) else f"{v:.2f}\n(n={int(n)})",
                        (rect.get_x() + rect.get_width() / 2, max(rect.get_height(), 0)), ha="center",
                        va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(judges)), judges, rotation=20, ha="right")
    ax.set_ylim(min(-0.1, float(np.nanmin(k["kappa"])) - 0.1) if k["kappa"].notna().any() else -0.1, 1.25)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("Cohen's kappa between repeats")
    ax.set_title("Agreement of each judge with itself over repeated runs (n = units)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="repeat setting")
    fig.tight_layout()
    return fig


@draws_text_as_written
def flip_distribution_bars(flips: pd.DataFrame, *, arm: str = "baseline"):
    """Figure-7 style: share of units by how many conditions leave the majority answer, per judge."""
    plt = _plt()
    f = flips[flips["arm"] == arm] if "arm" in flips.columns else flips
    wide = f.groupby(["judge", "n_minority"])["n_units"].sum().unstack(fill_value=0)
    share = wide.div(wide.sum(axis=1), axis=0) * 100
    fig, ax = plt.subplots(figsize=(max(4.5, 1.6 * len(share) + 2.5), 3.6))
    bottom = np.zeros(len(share))
    for col in share.columns:
        ax.bar(np.arange(len(share)), share[col].to_numpy(float), bottom=bottom,
               label=f"{int(col)} condition{'s' if col != 1 else ''} off the majority")
        bottom += share[col].to_numpy(float)
    ax.set_xticks(np.arange(len(share)), [f"{j}\n(n={int(wide.loc[j].sum())} units)" for j in share.index],
                  rotation=0, fontsize=8)
    ax.set_ylabel("share of units (%)")
    ax.set_title("How often a counterfactual condition flips the answer (all dimensions pooled)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def _table_interval_bars(ax, x, y, low, high) -> None:
    """Error bars drawn from the table's own ``ci_low`` / ``ci_high`` (nothing recomputed); a cell with no
    interval (NaN bounds, e.g. one item) gets no bar and says "no CI" over its bar."""
    ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(y)
    if ok.any():
        ax.errorbar(x[ok], y[ok], yerr=[np.clip(y[ok] - low[ok], 0, None), np.clip(high[ok] - y[ok], 0, None)],
                    fmt="none", ecolor="black", capsize=3)
    for xi, yi in zip(x[~ok], y[~ok]):
        ax.annotate("no CI", (xi, 0 if np.isnan(yi) else yi), ha="center", va="bottom", fontsize=6)


@draws_text_as_written
def judge_means_bars(means: pd.DataFrame, *, arm: str = "baseline"):
    """Figures 8-11 style: mean confidence / P(Yes) / coaching scores (improvement 9, customer behaviour 10,
    positives 11) per judge, one panel per score."""
    plt = _plt()
    m = means[means["arm"] == arm]
    scores = list(dict.fromkeys(m["score"]))
    fig, axes = plt.subplots(1, max(1, len(scores)), figsize=(2.8 * max(1, len(scores)) + 1, 3.4), squeeze=False)
    for ax, score in zip(axes[0], scores):
        sub = m[m["score"] == score].sort_values("judge")
        y = sub["mean"].to_numpy(float)
        x = np.arange(len(sub))
        ax.bar(x, y, color="#8172b2")
        _table_interval_bars(ax, x, y, sub["ci_low"].to_numpy(float), sub["ci_high"].to_numpy(float))
        n_items = sub["n_items"] if "n_items" in sub.columns else sub["n"]
        ax.set_xticks(x, [f"{j}\n({int(k)} transcript{'s' if int(k) != 1 else ''},\n{int(n)} judgments)" for j, k, n in
                          zip(sub["judge"], n_items, sub["n"])], fontsize=7, rotation=20, ha="right")
        ax.set_ylim(0, 105)
        ax.set_title(f"{score}\n{interval_caption(sub, unit='transcripts', width=34)}", fontsize=7)
    axes[0][0].set_ylabel("mean (0-100 scale)")
    fig.suptitle("Mean scores per judge; bar: the table's interval (ci_low to ci_high) over transcripts",
                 fontsize=9)
    fig.tight_layout()
    return fig


#: Verdict kinds of the gate figure, in legend order, and their colours (pass green, fail red,
#: inconclusive neutral, uninformative grey: never green).
GATE_KINDS = V.KINDS
GATE_COLOURS = tuple(V.KIND_COLOURS[k] for k in V.KINDS)


#: what a gate figure calls its items, by the rows' ``source``
_SOURCE_UNITS = {"synthetic": "synthetic calls", "star": "STAR dialogues"}


def _units(gate: pd.DataFrame) -> str:
    """The gate rows' items in words: their one source's name for them, else "transcripts"."""
    src = set(gate["source"].astype(str)) if "source" in gate.columns else set()
    return _SOURCE_UNITS.get(next(iter(src)), "transcripts") if len(src) == 1 else "transcripts"


@draws_text_as_written
def net_cfr_gate_plot(gate: pd.DataFrame, *, dimensions: Sequence[str],
                      labels: Mapping[str, str] | None = None, units: str = "transcripts"):
    """The net-CFR gate: per dimension, CFR minus the repeat-noise flip rate with its interval over
    transcripts (seaborn points, coloured by verdict: pass green, fail red, inconclusive neutral, uninformative
    grey), a line at 0 and a line at the gate's maximum; the title counts the verdicts and the point rule."""
    import seaborn as sns

    plt = _plt()
    labels = dict(labels or {})
    g = gate[gate["baseline"] == "robustness"] if "baseline" in gate.columns else gate
    dims = [d for d in dimensions if d in set(g["dimension"])]
    judges = sorted(g["judge"].unique())
    shown: dict[str, None] = {}  # the verdict kinds drawn, for one legend beside all panels
    fig, axes = plt.subplots(1, max(1, len(judges)), figsize=(5.2 * max(1, len(judges)),
                                                               2.3 + 0.36 * len(dims)), squeeze=False, sharey=True)
    for ax, judge in zip(axes[0], judges):
        sub = g[g["judge"] == judge].set_index("dimension").reindex(dims).reset_index()
        sub["label"] = [labels.get(d, d) for d in sub["dimension"]]
        est, lo, hi = (sub[k].to_numpy(float) * 100 for k in ("estimate", "ci_low", "ci_high"))
        ax.errorbar(est, np.arange(len(sub)), xerr=[np.nan_to_num(est - lo), np.nan_to_num(hi - est)], fmt="none",
                    ecolor="#555555", capsize=2, linewidth=0.9)
        kind = [V.verdict_kind(v) if isinstance(v, str) else V.INCONCLUSIVE for v in sub["verdict"]]
        sns.scatterplot(x=est, y=np.arange(len(sub)), hue=kind, palette=dict(zip(GATE_KINDS, GATE_COLOURS)),
                        hue_order=[k for k in GATE_KINDS if k in kind],
                        ax=ax, s=30, zorder=3, legend=False)
        shown.update(dict.fromkeys(kind))
        mx = float(sub["max_net"].dropna().iloc[0]) * 100 if sub["max_net"].notna().any() else None
        ax.axvline(0, color="black", linewidth=0.8)
        if mx is not None:
            ax.axvline(mx, color="#c44e52", linestyle="--", linewidth=1)
            ax.annotate(f"gate: at most {mx:.0f} pp ", (mx, -0.6), fontsize=7, color="#c44e52", ha="right",
                        va="center", annotation_clip=False)
        all_zero = bool(len(sub)) and np.nan_to_num(np.abs(est)).max() == 0
        ax.set_xlim(min(-1.0, float(np.nanmin(lo)) - 1 if np.isfinite(lo).any() else -1.0),
                    max((mx or 0) * 1.15, float(np.nanmax(hi)) * 1.1 if np.isfinite(hi).any() else 0, 1.0))
        ax.set_yticks(np.arange(len(sub)), sub["label"])
        ax.set_ylim(len(sub) - 0.4, -0.9)
        ax.set_xlabel("CFR minus repeat-noise flip rate (pp)")
        n_items = int(sub["n_items"].max()) if sub["n_items"].notna().any() else 0
        counts = V.kind_counts(sub["verdict"].dropna())
        tally = ", ".join(f"{c} {k}" for k, c in counts.items() if c)
        ax.set_title(f"{judge}: {tally}; {int((sub['point_rule'] == V.PASS).sum())} of {len(sub)} under it on the "
                     f"point ({n_items} {units})\n"
                     f"{interval_caption(sub.dropna(subset=['estimate']), unit=units, width=80)}"
                     + ("\nestimate 0 in every dimension" if all_zero else ""), fontsize=8)
    fig.tight_layout()
    if shown:  # right of the panels (saved with a tight box): it never covers an axis label
        from matplotlib.lines import Line2D

        colour = dict(zip(GATE_KINDS, GATE_COLOURS))
        kinds = [k for k in GATE_KINDS if k in shown]
        fig.legend([Line2D([], [], marker="o", linestyle="", color=colour[k]) for k in kinds], kinds,
                   loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, fontsize=7, title="verdict",
                   title_fontsize=7)
    return fig


@draws_text_as_written
def masd_vs_wording(masd: pd.DataFrame, robustness: pd.DataFrame, *, dimensions: Sequence[str],
                    score: str = "p_yes", labels: Mapping[str, str] | None = None):
    """MASD of one score per dimension with its interval (seaborn points), against the same score's
    MASD when only the question's wording changes (shaded band: its interval) - the scale the findings
    compare each dimension's shift with. Anchored at 0: MASD cannot be negative."""
    import seaborn as sns

    plt = _plt()
    labels = dict(labels or {})
    m = masd[(masd["score"] == score) & ((masd["arm"] == "baseline") if "arm" in masd.columns else True)]
    dims = [d for d in dimensions if d in set(m["dimension"])]
    judges = sorted(m["judge"].unique())
    fig, axes = plt.subplots(1, max(1, len(judges)), figsize=(5.2 * max(1, len(judges)),
                                                               2.3 + 0.36 * len(dims)), squeeze=False, sharey=True)
    for ax, judge in zip(axes[0], judges):
        sub = m[m["judge"] == judge].set_index("dimension").reindex(dims).reset_index()
        y = np.arange(len(sub))
        est, lo, hi = (sub[k].to_numpy(float) for k in ("masd", "ci_low", "ci_high"))
        ax.errorbar(est, y, xerr=[np.nan_to_num(est - lo), np.nan_to_num(hi - est)], fmt="none", ecolor="#555555",
                    capsize=2, linewidth=0.9)
        sns.scatterplot(x=est, y=y, ax=ax, color="#4c72b0", s=30, zorder=3)
        rb = robustness[(robustness["judge"] == judge) & (robustness["metric"] == f"masd_{score}")] \
            if len(robustness) else robustness
        top = float(np.nanmax(hi)) if np.isfinite(hi).any() else 0.0
        for base, colour in (("robustness_wording", "#dd8452"), ("robustness", "#8c8c8c")):
            r = rb[rb["baseline"] == base] if len(rb) and "baseline" in rb.columns else rb.iloc[0:0]
            if not len(r):
                continue
            r = r.iloc[0]
            what = "question reworded" if base == "robustness_wording" else "repeats"
            ax.axvline(r["value"], color=colour, linestyle="--", linewidth=1, label=f"{what}: {r['value']:.2f}")
            if np.isfinite(r["ci_low"]) and np.isfinite(r["ci_high"]):
                ax.axvspan(r["ci_low"], r["ci_high"], color=colour, alpha=0.15)
            top = max(top, float(r["ci_high"]) if np.isfinite(r["ci_high"]) else 0.0)
        ax.set_xlim(0, max(1.0, 1.15 * top))
        ax.set_yticks(y, [labels.get(d, d) for d in sub["dimension"]])
        ax.set_ylim(len(sub) - 0.4, -0.6)
        ax.set_xlabel(f"MASD of {score} (points, 0-100 scale)")
        n_pairs = int(sub["n_pairs"].sum()) if sub["n_pairs"].notna().any() else 0
        ax.set_title(f"{judge}: {score} shift per dimension vs rewording ({n_pairs} pairs)\n"
                     f"{interval_caption(sub.dropna(subset=['masd']), unit='transcripts', width=80)}", fontsize=8)
        if len(ax.get_legend_handles_labels()[0]):
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.5 / max(1, len(dims)) - 0.12),
                      ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def sequence_plot(waves: pd.DataFrame, cells: pd.DataFrame, *, dimensions: Sequence[str],
                  labels: Mapping[str, str] | None = None):
    """The sequential audit (``sequential_waves``, ``sequential_cells``): per judge x dimension, the confidence
    sequence of the net flip rate narrowing over items (the band after each wave), the gate's maximum as a
    dashed line, and the item where the cell stopped marked with its verdict (pass green, fail red); a cell
    still undecided at the end is marked where its sequence ended. Drawn by the study-free
    :func:`cfbench.report.plot_sequences` (the caption's method, level and n read from the table)."""
    from cfbench.report import plot_sequences

    labels = dict(labels or {})
    order = {d: k for k, d in enumerate(dimensions)}
    keys = sorted({(j, d) for j, d in zip(waves["judge"], waves["dimension"])},
                  key=lambda k: (str(k[0]), order.get(k[1], 1e9)))
    w = waves.rename(columns={"max_net": "maximum"}).assign(two_sided=False)
    c = cells.set_index(["judge", "dimension"]) if len(cells) else pd.DataFrame(columns=["verdict", "stopped_at_item"])
    last = w.sort_values("items").groupby(["judge", "dimension"], sort=False).tail(1).set_index(["judge", "dimension"])
    rows = [{"judge": j, "dimension": d,
             "verdict": c.loc[(j, d), "verdict"] if (j, d) in c.index else last.loc[(j, d), "verdict"],
             "stopped_at_item": c.loc[(j, d), "stopped_at_item"] if (j, d) in c.index else float("nan")}
            for j, d in keys]
    return plot_sequences(w, pd.DataFrame(rows), key_names=["judge", "dimension"], ylabel="net flip rate (pp)",
                          unit="items", labels={(j, d): f"{j} x {labels.get(d, d)}" for j, d in keys})


def study_figures(tables: Mapping[str, pd.DataFrame], *, dimensions: Sequence[str],
                  labels: Mapping[str, str] | None = None, n_items: int | None = None) -> dict:
    """The study's figures by file name (heatmaps, Figures 3-5) from :func:`study_tables` output.

    A figure whose table holds no estimate (e.g. a judge with no parsed reply) is left out.
    """
    figs: dict = {}
    cfr = tables["cfr"]
    base_cfr = cfr[cfr["arm"] == "baseline"]
    n_txt = f" - {n_items} transcript{'s' if n_items != 1 else ''}" if n_items is not None else ""
    if base_cfr["cfr"].notna().any():
        figs["heatmap_cfr"] = heatmap(base_cfr, value="cfr", scale=100, row_order=dimensions, labels=labels,
                                      title=f"Counterfactual flip rate (CFR, %){n_txt}", n="n_items",
                                      units="CFR, % of pairs",
                                      pairs="n_pairs", vmax_floor=10.0)
    masd = tables["masd"]
    if len(masd) and masd["masd"].notna().any():
        m = masd[masd["arm"] == "baseline"].assign(col=lambda d: d["judge"] + " / " + d["score"])
        figs["heatmap_masd"] = heatmap(m, value="masd", col="col", row_order=dimensions, labels=labels,
                                       title=f"MASD (score points, each score on its own scale){n_txt}",
                                       cmap="Blues", n="n_items", units="MASD, score points", vmax_floor=1.0)
    acc = tables["accuracy"]
    if base_cfr["cfr"].notna().any() and len(acc) and acc["accuracy"].notna().any():
        figs["fig3_accuracy_vs_cfr"] = accuracy_vs_cfr(cfr, acc)
    if base_cfr["cfr"].notna().any():
        figs["fig4_category_profiles"] = category_profiles(cfr, dimensions=dimensions, labels=labels)
        figs["fig5_fairness_vs_robustness"] = fairness_vs_robustness(cfr, tables["robustness"])
    gate = tables.get("net_cfr_gate")
    if gate is not None and len(gate) and gate["estimate"].notna().any():
        figs["net_cfr_gate"] = net_cfr_gate_plot(gate, dimensions=dimensions, labels=labels, units=_units(gate))
    star_gate = tables.get("star_net_cfr_gate")
    if star_gate is not None and len(star_gate) and star_gate["estimate"].notna().any():
        screen = tables.get("star_screen")
        sure = " the judge is sure of" if screen is not None and len(screen) else ""  # a margin-screened arm
        figs["star_net_cfr_gate"] = net_cfr_gate_plot(star_gate, dimensions=dimensions, labels=labels,
                                                      units=_units(star_gate) + sure)
    base_pyes = masd[(masd["score"] == "p_yes") & (masd["arm"] == "baseline")] if len(masd) else masd
    if len(base_pyes) and base_pyes["masd"].notna().any():  # the figure draws the baseline arm only
        figs["masd_p_yes_vs_wording"] = masd_vs_wording(masd, tables["robustness"], dimensions=dimensions,
                                                        labels=labels)
    if len(tables.get("kappa", ())) and tables["kappa"]["kappa"].notna().any():
        figs["fig6_kappa"] = kappa_bars(tables["kappa"])
    if len(tables.get("flip_distribution", ())):
        figs["fig7_flip_distribution"] = flip_distribution_bars(tables["flip_distribution"])
    if len(tables.get("judge_means", ())):
        figs["fig8_mean_scores"] = judge_means_bars(tables["judge_means"])
    seq_waves = tables.get("sequential_waves")
    if seq_waves is not None and len(seq_waves):
        figs["sequential_sequences"] = sequence_plot(seq_waves, tables.get("sequential_cells", pd.DataFrame()),
                                                     dimensions=dimensions, labels=labels)
    return released(figs)
