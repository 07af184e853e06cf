"""Contact-center figures say what they show when nothing moved: scales from 0, '0 of n pairs', gate lines."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from cfbench.studies.contact_center_qa import figures as CC

DIMS = ["gender", "politeness", "priming"]


def _zero_cfr() -> pd.DataFrame:
    return pd.DataFrame({"judge": "j", "arm": "baseline", "dimension": DIMS, "cfr": 0.0, "n_items": 8,
                         "n_pairs": 8, "ci_low": 0.0, "ci_high": [0.31, 0.31, 0.31]})


def _texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts) + "\n".join(
        ax.get_title() for ax in fig.axes)


def test_an_all_zero_cfr_heatmap_is_white_on_a_scale_from_zero_and_says_0_of_n_pairs():
    fig = CC.heatmap(_zero_cfr(), value="cfr", scale=100, row_order=DIMS, n="n_items", pairs="n_pairs",
                     units="%", vmax_floor=10.0)
    mesh = fig.axes[0].collections[0]
    assert mesh.norm.vmin == 0 and mesh.norm.vmax >= 10  # never a symmetric -x..+x scale for a rate
    face = mesh.get_facecolors()
    assert np.allclose(face[:, :3].min(axis=0), face[:, :3].max(axis=0))  # all cells the same colour
    assert np.allclose(face[0], mesh.cmap(0.0)) and face[0, :3].min() > 0.9  # the near-white bottom of the scale
    assert _texts(fig).count("0 of 8 pairs") == 3 and "n=8" in _texts(fig)


def test_thin_cells_are_grey_and_out_of_the_scale():
    cfr = _zero_cfr().assign(n_items=[8, 2, 8], cfr=[0.0, 0.9, 0.25])
    fig = CC.heatmap(cfr, value="cfr", scale=100, row_order=DIMS, n="n_items", units="%")
    mesh = fig.axes[0].collections[0]
    assert mesh.norm.vmax == 25  # the thin 90 % cell does not set the scale
    assert "90.0" in _texts(fig)  # but its value is still written


def test_bar_figures_start_at_zero_and_say_no_flips():
    cfr = _zero_cfr()
    fig4 = CC.category_profiles(cfr, dimensions=DIMS)
    assert fig4.axes[0].get_ylim()[0] == 0 and "0 flips in 24 pairs" in _texts(fig4)
    assert _texts(fig4).count("0/8") == 3 and "8-8" not in _texts(fig4)
    rob = pd.DataFrame({"judge": ["j"], "metric": ["cfr"], "value": [0.0], "n_pairs": [6],
                        "baseline": ["robustness"], "temperature": [0.0]})
    fig5 = CC.fairness_vs_robustness(cfr, rob)
    assert fig5.axes[0].get_ylim()[0] == 0 and "0 flips in 24 pairs" in _texts(fig5)
    acc = pd.DataFrame({"judge": ["j"], "accuracy": [0.75], "n": [8], "ci_low": [0.4], "ci_high": [0.93]})
    fig3 = CC.accuracy_vs_cfr(cfr, acc)
    assert fig3.axes[0].get_xlim()[0] == 0 and "0 flips in 24 pairs" in _texts(fig3)


def test_the_gate_figure_draws_the_threshold_and_counts_passes():
    gate = pd.DataFrame({"judge": "j", "dimension": DIMS, "baseline": "robustness", "estimate": [0.0, 0.05, 0.2],
                         "ci_low": [-0.05, 0.0, 0.1], "ci_high": [0.08, 0.15, 0.3], "n_items": 8, "max_net": 0.1,
                         "point_rule": ["pass", "pass", "fail"],
                         "verdict": ["pass", "inconclusive", "uninformative (balanced accuracy not shown)"]})
    fig = CC.net_cfr_gate_plot(gate, dimensions=DIMS)
    ax = fig.axes[0]
    xs = sorted({round(float(line.get_xdata()[0]), 6) for line in ax.lines if len(set(line.get_xdata())) == 1})
    assert 10.0 in xs and 0.0 in xs  # the gate's maximum (pp) and zero
    assert "1 pass, 1 inconclusive, 1 uninformative; 2 of 3 under it on the point" in ax.get_title()
    # colours by verdict kind: pass green, inconclusive tan, uninformative grey (never green)
    from matplotlib.colors import to_hex
    colours = {to_hex(c) for coll in ax.collections for c in coll.get_facecolors()}
    assert {"#55a868", "#ccb974", "#9a9a9a"} <= colours
    (legend,) = fig.legends  # one legend for all panels, naming the kinds drawn
    assert [t.get_text() for t in legend.get_texts()] == ["pass", "inconclusive", "uninformative"]


@pytest.mark.parametrize("n_dims", [1, 2, 3])
def test_the_gate_legend_covers_no_axis_label(n_dims):
    """The committed STAR gate figure (2 dimensions) had its legend over the x label; beside the panels it
    cannot be, whatever the number of dimensions."""
    gate = pd.DataFrame({"judge": "j", "dimension": DIMS[:n_dims], "baseline": "robustness",
                         "estimate": 0.08, "ci_low": -0.03, "ci_high": 0.22, "n_items": 36, "max_net": 0.1,
                         "point_rule": "pass", "verdict": "inconclusive"})
    fig = CC.net_cfr_gate_plot(gate, dimensions=DIMS[:n_dims])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in fig.axes:
        for label in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if label.get_text():
                assert not legend.overlaps(label.get_window_extent(renderer)), label.get_text()
        assert not legend.overlaps(ax.get_window_extent(renderer))


def test_pyes_masd_is_set_against_rewording_from_zero():
    masd = pd.DataFrame({"judge": "j", "arm": "baseline", "dimension": DIMS, "score": "p_yes",
                         "masd": [1.0, 2.0, 9.0], "n_pairs": 8, "ci_low": [0.5, 1.0, 6.0], "ci_high": [2.0, 3.0, 12.0]})
    rob = pd.DataFrame({"judge": "j", "metric": ["masd_p_yes", "masd_p_yes"], "value": [7.8, 0.0],
                        "ci_low": [5.8, 0.0], "ci_high": [10.2, 0.0], "baseline": ["robustness_wording", "robustness"]})
    fig = CC.masd_vs_wording(masd, rob, dimensions=DIMS)
    ax = fig.axes[0]
    assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] >= 12
    assert any("question reworded: 7.80" in t.get_text() for t in ax.get_legend().get_texts())


def test_seaborn_really_draws_them():
    import sys

    CC.heatmap(_zero_cfr(), value="cfr", scale=100, row_order=DIMS)
    assert "seaborn" in sys.modules
