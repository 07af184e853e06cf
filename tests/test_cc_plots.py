"""Table-2 layout and the contact-center figures."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from cfbench.studies.contact_center_qa import figures as CC

DIMS = ["gender", "politeness", "priming"]


def _tables():
    cfr = pd.DataFrame({"judge": ["a"] * 3 + ["b"] * 3, "arm": "baseline", "dimension": DIMS * 2,
                        "cfr": [0.1, 0.2, 0.3, 0.0, np.nan, 0.5], "n_pairs": [10, 10, 10, 8, 0, 8],
                        "ci_low": [0.0, 0.1, 0.2, 0.0, np.nan, 0.3], "ci_high": [0.2, 0.3, 0.4, 0.1, np.nan, 0.7]})
    masd = pd.DataFrame({"judge": "a", "arm": "baseline", "dimension": DIMS, "score": "confidence",
                         "masd": [1.0, 2.0, 6.0], "n_pairs": 10})
    rob = pd.DataFrame({"judge": ["a", "b", "a"], "metric": ["cfr", "cfr", "masd_confidence"],
                        "value": [0.05, 0.0, 0.5], "n_pairs": [6, 6, 6], "baseline": "robustness",
                        "temperature": 0.0})
    acc = pd.DataFrame({"judge": ["a", "b"], "accuracy": [0.75, 0.5], "n": [4, 4], "ci_low": [0.3, 0.15],
                        "ci_high": [0.95, 0.85]})
    return cfr, masd, rob, acc


def test_table2_layout_and_values():
    cfr, masd, rob, acc = _tables()
    t = CC.table2(cfr, masd, rob, acc, dimensions=DIMS, labels={"gender": "Agent Gender"})
    cfr_block = t.loc["CFR (%)"]
    assert list(cfr_block.index) == ["Agent Gender", "politeness", "priming", "Average", "Robustness", "Accuracy"]
    assert cfr_block.loc["Average", "a"] == pytest.approx(20.0)
    assert cfr_block.loc["Average", "b"] == pytest.approx(25.0)  # NaN dimension left out of the mean
    assert cfr_block.loc["Robustness", "a"] == pytest.approx(5.0)
    assert cfr_block.loc["Accuracy", "b"] == pytest.approx(50.0)
    conf = t.loc["Confidence MASD"]
    assert conf.loc["Average", "a"] == pytest.approx(3.0) and np.isnan(conf.loc["Average", "b"])
    assert "Accuracy" not in conf.index
    assert "Positives MASD" not in t.index.get_level_values(0)


def test_table2_with_n():
    cfr, masd, rob, acc = _tables()
    t = CC.table2(cfr, masd, rob, acc, dimensions=DIMS, with_n=True)
    assert t.loc[("CFR (%)", "gender"), "a"] == "10.00 (n=10)"
    assert t.loc[("CFR (%)", "politeness"), "b"] == "-"


def test_figures_build():
    cfr, masd, rob, acc = _tables()
    figs = [CC.heatmap(cfr, value="cfr", scale=100, row_order=DIMS), CC.accuracy_vs_cfr(cfr, acc),
            CC.category_profiles(cfr, dimensions=DIMS), CC.fairness_vs_robustness(cfr, rob)]
    for f in figs:
        assert f.axes and f.axes[0].has_data()


@pytest.mark.parametrize("judges", [["local:qwen2.5-coder-1.5b", "openai:Qwen2.5-Coder-1.5B-Instruct@http://127.0.0.1:40123/v1"],
                                    ["openai:" + "m" * 50 + "@http://127.0.0.1:40123/v1"],
                                    ["openai:" + "W" * 90 + "@http://127.0.0.1:40123/v1"]],
                         ids=["a server spec beside the local judge", "one long server spec alone", "a very wide one"])
@pytest.mark.parametrize("rows", [1, 3])
def test_a_heatmap_makes_room_for_long_judge_specs(judges, rows):
    """A judge named by a server spec (model and URL, 60-123 characters) written at 30 degrees under a few rows: the
    figure grows by what the names need, so the heatmap keeps about half an inch per row and tight_layout applies
    (before, such a name squeezed the heatmap of 3 rows to 0.08 inches, or matplotlib warned "Tight layout not
    applied", as the real-server test's audit did); the local judge's short spec alone keeps the size it had."""
    import warnings

    frame = pd.DataFrame([{"dimension": f"d{i}", "judge": j, "cfr": 0.1 * i, "n_items": 36, "n_pairs": 36}
                          for i in range(rows) for j in judges])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = CC.heatmap(frame, value="cfr", n="n_items", pairs="n_pairs", title="CFR (pp)")
    short = CC.heatmap(frame.assign(judge="local:qwen2.5-coder-1.5b"), value="cfr", n="n_items", title="CFR (pp)")
    assert tuple(short.get_size_inches()) == pytest.approx((2.4 + 1.7, 1.8 + 0.48 * rows))
    assert fig.get_size_inches()[1] >= short.get_size_inches()[1]
    for f in (fig, short):
        assert f.axes[0].get_position().height * f.get_size_inches()[1] >= 0.4 * rows  # inches of heatmap


def test_figures_6_to_11_from_a_scripted_run():
    """Seed 000 Figures 6 (repeat kappa), 7 (flip distribution), 8 (mean confidence), 9 (improvement),
    10 (customer behaviour) and 11 (positives): the tables behind them and one panel per score."""
    from cc_fixtures import variants_frame

    from cfbench.studies.contact_center_qa.judging import run_plan
    from cfbench.studies.contact_center_qa.requests import plan_evaluation
    from cfbench.studies.contact_center_qa.tables import study_tables

    plan = plan_evaluation(variants_frame(), judges=["scripted:cc-qa"], questions=["issue_resolution"],
                           qa_mode="compact", repeats=3, robustness_temperature=0.7, coaching=True)
    _, rows, _ = run_plan(plan, cache=False, progress=False)
    tables = study_tables(rows, n_boot=50)
    means = tables["judge_means"]
    # the mean confidence of Figure 8, recomputed by hand: parsed baseline QA replies, one per prompt
    qa = rows[(rows["task"] == "qa") & (rows["arm"] == "baseline") & rows["parse_ok"]
              & ~rows["dimension"].str.startswith("robustness")].drop_duplicates("variant_id")
    m = means.set_index(["arm", "score"])
    assert m.loc[("baseline", "confidence"), "mean"] == pytest.approx(qa["confidence"].mean())
    assert m.loc[("baseline", "confidence"), "n"] == qa["confidence"].notna().sum()
    assert {"confidence", "p_yes", "positives", "improvement", "customer"} <= set(means["score"])
    assert (means["ci_low"] <= means["mean"] + 1e-9).all() and (means["mean"] <= means["ci_high"] + 1e-9).all()
    figs = CC.study_figures(tables, dimensions=list(dict.fromkeys(tables["cfr"]["dimension"])), labels={})
    assert {"fig6_kappa", "fig7_flip_distribution", "fig8_mean_scores"} <= set(figs)
    titles = {ax.get_title() for ax in figs["fig8_mean_scores"].axes}
    assert all(any(s in t for t in titles) for s in ("confidence", "improvement", "customer", "positives")), titles
    for name in ("fig6_kappa", "fig7_flip_distribution"):
        assert figs[name].axes[0].has_data()
