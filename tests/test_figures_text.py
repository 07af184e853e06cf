"""Figure titles and legends say what the drawn table says (issue 39): the interval method comes from the
table's ``ci_method`` and the n from its count column, never typed; error bars are the table's own bounds;
a heatmap with nothing to colour has no colour scale; a bar of height 0 is visible."""

from __future__ import annotations

import ast
import os.path
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from cfbench.report import interval_caption, method_names

REPO = Path(__file__).resolve().parents[1]
TYPED = re.compile(r"wilson|clopper|item-bootstrap|95 ?%|n = judgments", re.I)


def _titles(fig) -> str:
    out = [fig._suptitle.get_text() if fig._suptitle is not None else ""]
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.texts]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    for legend in fig.legends:  # figure-level legends (beside all panels)
        out += [t.get_text() for t in legend.get_texts()]
    return "\n".join(out)


def _flat(text: str) -> str:
    return " ".join(text.split())  # titles are wrapped; compare without the line breaks


def _names_table(fig, table: pd.DataFrame, *, n: str = "n_items", unit: str = "transcripts") -> None:
    text = _flat(_titles(fig))
    methods = method_names(table)
    assert methods, "the drawn table names no method"
    if len(methods) > 3:  # the caption names what they share
        methods = [os.path.commonprefix(methods)[:10]]
    for m in methods:
        assert m in text, (m, text)
    ns = pd.to_numeric(table[n], errors="coerce").dropna().astype(int)
    want = f"{ns.min()}" if ns.min() == ns.max() else f"{ns.min()}-{ns.max()}"
    assert f"over {want} {unit}" in text, (want, text)


# -- the caption itself ---------------------------------------------------------------------------------

def test_the_caption_names_every_method_and_the_n_of_the_table():
    t = pd.DataFrame({"n_items": [4, 6, 4], "ci_method": ["cp, n_eff", "cp, item as unit", "cp, n_eff"]})
    many = pd.DataFrame({"n_items": 5, "ci_method": [f"MOVER of two intervals, item correlation {r:+.2f}"
                                                     for r in (0.1, 0.2, 0.3, 0.4)]})
    assert interval_caption(many) == ("95% intervals over 5 items: MOVER of two intervals, item correlation, ... "
                                      "(4 variants, each cell's in ci_method)")
    cap = interval_caption(t, unit="transcripts")
    assert cap == "95% intervals over 4-6 transcripts: cp, n_eff (2 of 3); cp, item as unit (1 of 3)"
    assert interval_caption(t.iloc[:1], unit="items") == "95% intervals over 4 items: cp, n_eff"
    assert "no method" in interval_caption(t.drop(columns="ci_method"))
    one = pd.DataFrame({"n_items": [1], "ci_method": ["none: one item (an interval needs at least 2)"]})
    assert interval_caption(one, unit="transcripts per bar") == (
        "no interval (1 transcript per bar): none: one item (an interval needs at least 2)")


# -- contact center: a small scripted run -----------------------------------------------------------------

@pytest.fixture(scope="module")
def cc():
    from cfbench.studies.contact_center_qa import Params, run

    return run(Params(n_items=2, dimensions=("gender", "priming", "directness"), n_boot=50, coaching_items=1),
               progress=False)


def test_cc_figures_name_the_method_and_n_of_the_table_they_draw(cc):
    t, f = cc.tables, cc.figures
    base = t["cfr"][t["cfr"]["arm"] == "baseline"]
    _names_table(f["fig3_accuracy_vs_cfr"], t["accuracy"])
    _names_table(f["fig4_category_profiles"], base)
    gate = t["net_cfr_gate"]
    assert set(gate["source"]) == {"synthetic"}  # the gate figure names its units by the rows' source
    _names_table(f["net_cfr_gate"], gate[gate["baseline"] == "robustness"], unit="synthetic calls")
    m = t["masd"]
    pyes = m[(m["score"] == "p_yes") & (m["arm"] == "baseline")]
    assert ("masd_p_yes_vs_wording" in f) == bool(pyes["masd"].notna().any())  # never an empty figure
    masd = pd.DataFrame({"judge": "j", "arm": "baseline", "dimension": ["gender", "priming"], "score": "p_yes",
                         "masd": [1.0, 9.0], "n_pairs": 8, "n_items": [6, 7], "ci_low": [0.5, 6.0],
                         "ci_high": [2.0, 12.0], "ci_method": ["bootstrap-t and t over items (union)",
                                                               "no spread: worst-case two-point bound"]})
    from cfbench.studies.contact_center_qa import figures as CC

    _names_table(CC.masd_vs_wording(masd, m.iloc[0:0], dimensions=["gender", "priming"]), masd)
    for name in ("fig3_accuracy_vs_cfr", "fig4_category_profiles", "fig8_mean_scores", "net_cfr_gate"):
        text = _titles(f[name])
        assert not re.search(r"wilson|item-bootstrap|n = judgments", text, re.I), (name, text)


def test_cc_mean_score_bars_are_the_tables_bounds_over_items(cc):
    means = cc.tables["judge_means"]
    fig = cc.figures["fig8_mean_scores"]
    base = means[means["arm"] == "baseline"]
    for ax, (score, sub) in zip(fig.axes, base.groupby("score", sort=False)):
        sub = sub.sort_values("judge")
        assert score in ax.get_title()
        title = _flat(ax.get_title())
        k = int(sub["n_items"].iloc[0])
        assert (f"over {k} transcripts" if k > 1 else "no interval (1 transcript)") in title
        assert sub["ci_method"].iloc[0] in title
        segs = [s for coll in ax.collections for s in coll.get_segments()]
        drawn = sorted((round(float(s[:, 1].min()), 6), round(float(s[:, 1].max()), 6)) for s in segs)
        want = sorted((round(float(lo), 6), round(float(hi), 6)) for lo, hi in zip(sub["ci_low"], sub["ci_high"])
                      if np.isfinite(lo) and np.isfinite(hi))
        assert drawn == want
        ticks = " ".join(t.get_text() for t in ax.get_xticklabels())
        assert f"({int(sub['n_items'].iloc[0])} transcript" in ticks and f"{int(sub['n'].iloc[0])} judgments" in ticks


def test_cc_heatmaps_with_every_cell_thin_have_no_scale_and_say_so(cc):
    for name in ("heatmap_cfr", "heatmap_masd"):
        fig = cc.figures[name]
        assert len(fig.axes) == 1, name  # no colour-bar axes
        assert "nothing to colour: n below 5 in every cell (at most 2)" in fig.axes[0].get_title()
    masd_text = _titles(cc.figures["heatmap_masd"])
    assert "pairs)" not in masd_text  # "0 of n pairs" is for flip rates, never on a score


def test_a_heatmap_with_cells_to_colour_keeps_its_scale_with_the_quantitys_units():
    from cfbench.studies.contact_center_qa import figures as CC

    m = pd.DataFrame({"judge": "j", "dimension": ["gender", "priming"], "masd": [7.5, 2.0], "n_items": 8})
    fig = CC.heatmap(m, value="masd", row_order=["gender", "priming"], n="n_items", units="MASD, score points")
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel().startswith("MASD, score points")
    assert fig.axes[0].collections[0].norm.vmax == pytest.approx(7.5)  # the scale spans the cells, not 0-1


def test_a_kappa_of_zero_is_drawn_and_labelled():
    from cfbench.studies.contact_center_qa import figures as CC

    k = pd.DataFrame({"judge": ["j", "j"], "baseline": ["robustness", "robustness_t0.7"], "kappa": [1.0, 0.0],
                      "n_units": [3, 3]})
    ax = CC.kappa_bars(k).axes[0]
    assert ax.get_ylim()[0] < 0  # the zero line is inside the axes, not its bottom edge
    marks = [c for c in ax.collections if len(c.get_offsets())]
    assert any(np.allclose(c.get_offsets()[:, 1], 0) for c in marks)  # a marker where the bar would be
    assert any(t.get_text().startswith("0.00") for t in ax.texts)


# -- judge bias -----------------------------------------------------------------------------------------

def _cues() -> pd.DataFrame:
    return pd.DataFrame({"judge": "scripted:j", "cue": ["position", "verbosity"], "n_items": [12, 12],
                         "shift": [0.5, 0.1], "shift_ci_low": [0.2, -0.1], "shift_ci_high": [0.7, 0.3],
                         "shift_ci_method": "tango score interval (matched pairs, one per item)",
                         "significant": [True, False], "net_flip_rate": [0.4, 0.0], "net_ci_low": [0.1, -0.2],
                         "net_ci_high": [0.6, 0.2], "net_ci_method": "MOVER of two clopper-pearson intervals",
                         "gate": ["fail", "inconclusive"], "gate_reference": ["reworded", "reworded"]})


def test_judge_bias_figures_name_the_drawn_columns_method():
    from cfbench.studies.judge_bias import figures as JB

    t = _cues()
    fig = JB.plot_cue_shifts(t, title="shift")
    _names_table(fig, t.rename(columns={"shift_ci_method": "ci_method"}), unit="items")
    fig = JB.plot_net_flips(t, gate_max=0.1, title="net")
    _names_table(fig, t.rename(columns={"net_ci_method": "ci_method"}), unit="items")
    rep = t.assign(gate_reference=["repeats", "reworded"], net_repeat_flip_rate=0.3, net_repeat_ci_low=0.1,
                   net_repeat_ci_high=0.5, net_repeat_ci_method="MOVER of repeat intervals")
    text = _flat(_titles(JB.plot_net_flips(rep, gate_max=0.1, title="net")))
    assert "MOVER of repeat intervals (1 of 2)" in text and "MOVER of two clopper-pearson intervals (1 of 2)" in text
    point = t.assign(score_shift=[1.0, 0.2], ci_low=[0.5, -0.3], ci_high=[1.5, 0.7],
                     ci_method="bootstrap-t and t over items (union)", net_abs_shift=[0.8, 0.1],
                     net_ci_low=[0.3, -0.2], net_ci_high=[1.2, 0.4])
    fig = JB.plot_pointwise(point, title="pointwise", gate_max=0.5)
    left, right = (_flat(ax.get_title()) for ax in fig.axes[:2])
    assert left == "95% intervals over 12 items: bootstrap-t and t over items (union)"
    assert right == "95% intervals over 12 items: MOVER of two clopper-pearson intervals"


# -- ShopFlow -------------------------------------------------------------------------------------------

def test_shopflow_rates_name_the_tables_method_and_n():
    from cfbench.studies.shopflow import figures as SF

    rates = pd.DataFrame({"slice": ["formal", "casual"] * 2, "metric": ["tpr", "tpr", "fpr", "fpr"],
                          "successes": [5, 3, 1, 0], "n": [6, 6, 4, 4], "estimate": [5 / 6, 0.5, 0.25, 0.0],
                          "ci_low": [0.36, 0.12, 0.01, 0.0], "ci_high": [1.0, 0.88, 0.81, 0.6],
                          "ci_method": "clopper-pearson (exact)"})
    fig = SF.plot_slice_rates(rates, title="seed fixture")
    assert "95% intervals over 4-6 rows per bar: clopper-pearson (exact)" in _flat(fig.axes[0].get_title())


def test_shopflow_sweep_axis_fits_the_contract_band_and_draws_the_gate_intervals():
    from cfbench.studies.shopflow import figures as SF

    th = np.round(np.arange(0.3, 0.71, 0.05), 2)
    sweep = pd.DataFrame({"threshold": th, "tpr_diff": 0.02, "fpr_diff": -0.03, "n_flips": 1,
                          "selection_formal": 0.5, "selection_casual": 0.48})
    checks = pd.DataFrame({"check": ["tpr_gap", "fpr_gap"], "method": "tango", "confidence": 0.95,
                           "n_pairs": [27, 17], "value": [0.02, -0.03], "ci_low": [-0.15, -0.3],
                           "ci_high": [0.2, 0.2], "verdict": ["inconclusive", "inconclusive"]})
    fig = SF.plot_threshold_sweep(sweep, threshold=0.5, variants=["formal", "casual"], tpr_limit=0.1,
                                  fpr_limit=0.1, intervals=checks)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert hi < 0.5 and lo > -0.5 and hi >= 0.3  # the ±0.10 band readable, the widest interval inside
    legend = _flat(" ".join(t.get_text() for t in ax.get_legend().get_texts()))
    assert "TPR gap at 0.50: 95% tango interval over 27 pairs -> inconclusive" in legend
    assert "FPR gap at 0.50: 95% tango interval over 17 pairs" in legend
    assert any(abs(float(y) - 0.1) < 1e-9 for line in ax.lines for y in np.atleast_1d(line.get_ydata())[:1])


# -- identity tone --------------------------------------------------------------------------------------

def test_identity_effect_heatmap_with_nothing_supported_has_no_scale():
    from cfbench.studies.identity_tone import figures as IT

    pairs = pd.DataFrame({"model": "m", "identity_a": ["young_female_usborn"] * 2,
                          "identity_b": ["young_male_usborn", "old_male_usborn"], "metric": "words",
                          "cohens_d": [0.5, 0.2], "p_holm": [1.0, 1.0], "n": [3, 3], "n_zero_diff": [0, 0]})
    fig = IT.effect_heatmap(pairs, model="m", metrics=["words"])
    assert len(fig.axes) == 1 and "nothing to colour" in _titles(fig)


def test_identity_strip_caption_follows_the_errorbar_it_draws(monkeypatch):
    from cfbench.studies.identity_tone import figures as IT

    assert IT._strip_caption(3) == "bar: 95% percentile bootstrap over replies, seaborn, seed 3"
    monkeypatch.setattr(IT, "STRIP_ERRORBAR", ("ci", 90))
    assert IT._strip_caption(3).startswith("bar: 90% percentile bootstrap")


# -- no study figure types a method name ------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((REPO / "cfbench" / "studies").glob("*/figures.py")), ids=lambda p: p.parent.name)
def test_no_figure_module_types_an_interval_method(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    typed = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in docs and TYPED.search(n.value)]  # docstrings may explain; drawn text may not
    assert not typed, typed


def test_a_split_level_is_printed_to_two_decimals():
    from cfbench.report import interval_caption

    f = pd.DataFrame({"n_items": [36], "ci_method": ["betting confidence sequence"]})
    assert interval_caption(f, level=1 - 0.05 / 3).startswith("98.33% intervals over 36 items")  # not 98.3333%
    assert interval_caption(f).startswith("95% intervals")
