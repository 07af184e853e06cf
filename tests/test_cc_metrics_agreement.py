"""Robustness, kappa, accuracy, flip distribution, CFR - robustness, direction, fairness delta."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cc_fixtures import (accuracy, cfr_minus_robustness, cohen_kappa, effect_direction,
                         fairness_prompting_delta, flip_distribution, repeat_kappa, robustness_baseline)


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_matches_sklearn(seed):
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    a = rng.choice(["Yes", "No"], 40, p=[0.6, 0.4])
    b = np.where(rng.random(40) < 0.8, a, rng.choice(["Yes", "No"], 40))
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    c = rng.integers(0, 3, 25)
    d = rng.integers(0, 3, 25)
    assert cohen_kappa(c, d) == pytest.approx(cohen_kappa_score(c, d))


def test_kappa_constant_agreement_is_one():
    assert cohen_kappa(["Yes"] * 5, ["Yes"] * 5) == 1.0


def _repeats():
    # 3 repeats of 3 units; unit (b, q) flips once between repeats
    rows = []
    for item, ys in (("a", (1, 1, 1)), ("b", (1, 0, 1)), ("c", (0, 0, 0))):
        for r, y in enumerate(ys):
            rows.append({"judge": "j", "item_id": item, "question_id": "q", "repeat": r,
                         "answer_yes": float(y), "confidence": 50.0 + 10 * r * (item == "b"), "parse_ok": True})
    return pd.DataFrame(rows)


def test_robustness_baseline_hand_computed():
    t = robustness_baseline(_repeats(), n_boot=0).set_index("metric")
    # 9 repeat pairs; unit b has (1,0,1) -> 2 discordant pairs
    assert t.loc["cfr", "value"] == pytest.approx(2 / 9)
    # unit b confidences 50, 60, 70 -> |10| + |20| + |10| = 40 over 9 pairs
    assert t.loc["masd_confidence", "value"] == pytest.approx(40 / 9)


def test_repeat_kappa_hand_computed_against_sklearn():
    from sklearn.metrics import cohen_kappa_score

    k = repeat_kappa(_repeats())
    r = _repeats().pivot(index="item_id", columns="repeat", values="answer_yes")
    expected = np.mean([cohen_kappa_score(r[0], r[1]), cohen_kappa_score(r[0], r[2]), cohen_kappa_score(r[1], r[2])])
    assert k["kappa"].iloc[0] == pytest.approx(expected)
    assert k["n_repeat_pairs"].iloc[0] == 3 and k["n_units"].iloc[0] == 3


def test_accuracy_counts_unparsed_separately():
    f = pd.DataFrame({"judge": "j", "answer_yes": [1, 0, 1, np.nan, 1], "label": ["Yes", "Yes", "Yes", "No", None],
                      "parse_ok": [True, True, True, False, True]})
    a = accuracy(f).iloc[0]
    assert (a["n"], a["n_correct"], a["n_unparsed"]) == (3, 2, 1)
    assert a["accuracy"] == pytest.approx(2 / 3)
    # every answer its own unit (no item column): the exact Clopper-Pearson interval for 2 of 3,
    # from the published closed form with beta quantiles (scipy), not from cfbench
    from scipy.stats import beta
    assert a["ci_low"] == pytest.approx(beta.ppf(0.025, 2, 2)) and a["ci_high"] == pytest.approx(beta.ppf(0.975, 3, 1))
    assert a["ci_method"] == "clopper-pearson, cluster-adjusted n_eff"


def test_accuracy_clusters_by_item():
    # two questions per transcript, both right or both wrong: 4 items, not 8 independent answers
    f = pd.DataFrame({"judge": "j", "item_id": np.repeat(["a", "b", "c", "d"], 2), "answer_yes": 1.0,
                      "label": ["Yes", "Yes", "No", "No", "Yes", "Yes", "Yes", "Yes"], "parse_ok": True})
    a = accuracy(f, item="item_id").iloc[0]
    b = accuracy(f).iloc[0]
    assert a["accuracy"] == b["accuracy"] == 0.75 and a["n_items"] == 4
    # perfectly clustered: the design effect is the 2 answers per item, so the interval is that of 3 of 4
    from scipy.stats import beta
    assert a["ci_low"] == pytest.approx(beta.ppf(0.025, 3, 2)) and a["ci_high"] == pytest.approx(beta.ppf(0.975, 4, 1))
    assert a["ci_high"] - a["ci_low"] > b["ci_high"] - b["ci_low"]


def test_accuracy_rejects_bad_labels():
    f = pd.DataFrame({"judge": "j", "answer_yes": [1.0], "label": ["maybe"], "parse_ok": [True]})
    with pytest.raises(InputError):
        accuracy(f)


def test_flip_distribution():
    f = pd.DataFrame({"judge": "j", "dimension": "d", "item_id": ["a"] * 4 + ["b"] * 4, "question_id": "q",
                      "condition": list("wxyz") * 2, "answer_yes": [1, 1, 1, 0, 1, 1, 0, 0], "parse_ok": True})
    h = flip_distribution(f).set_index("n_minority")
    assert h.loc[1, "n_units"] == 1 and h.loc[2, "n_units"] == 1
    assert h["share"].sum() == pytest.approx(1.0)


def test_cfr_minus_robustness_hand_computed():
    cf = pd.DataFrame({"judge": "j", "dimension": "g", "item_id": ["a", "a", "b", "b"], "question_id": "q",
                       "condition": ["m", "f"] * 2, "answer_yes": [1, 0, 1, 0], "parse_ok": True})
    t = cfr_minus_robustness(cf, _repeats(), n_boot=200, seed=0).iloc[0]
    # both terms on the items they share (a and b): repeats of c are not compared with anything
    assert t["counterfactual"] == pytest.approx(1.0)
    assert t["robustness"] == pytest.approx(2 / 6)
    assert t["estimate"] == pytest.approx(1 - 2 / 6)
    assert t["n_items"] == 2 and t["n_pairs"] == 2 and t["n_repeat_pairs"] == 6
    assert t["ci_low"] <= t["estimate"] <= t["ci_high"]
    assert t["ci_method"].startswith("MOVER")


def test_cfr_minus_robustness_on_one_item_has_no_interval():
    cf = pd.DataFrame({"judge": "j", "dimension": "g", "item_id": ["a", "a"], "question_id": "q",
                       "condition": ["m", "f"], "answer_yes": [1, 0], "parse_ok": True})
    t = cfr_minus_robustness(cf, _repeats(), n_boot=200, seed=0).iloc[0]
    assert t["estimate"] == pytest.approx(1.0) and t["n_items"] == 1
    assert np.isnan(t["ci_low"]) and np.isnan(t["ci_high"]) and t["ci_method"].startswith("none: one item")


def test_effect_direction_signed_difference():
    orig = pd.DataFrame({"judge": "j", "item_id": ["a", "b"], "question_id": "q", "confidence": [60.0, 70.0],
                         "parse_ok": True})
    cf = pd.DataFrame({"judge": "j", "dimension": "pp", "item_id": ["a", "a", "b", "b"], "question_id": "q",
                       "condition": ["up", "down"] * 2, "confidence": [70.0, 50.0, 74.0, 40.0],
                       "parse_ok": [True, True, True, False]})
    d = effect_direction(cf, orig, n_boot=0).set_index("condition")
    assert d.loc["up", "mean_diff"] == pytest.approx((10 + 4) / 2)
    assert d.loc["down", "mean_diff"] == pytest.approx(-10.0) and d.loc["down", "n_units"] == 1


def test_fairness_prompting_delta_uses_shared_dimensions_only():
    t = pd.DataFrame({"judge": "j", "arm": ["baseline"] * 3 + ["fairness"] * 2,
                      "dimension": ["a", "b", "c", "a", "b"], "metric": "cfr_pp",
                      "value": [10.0, 20.0, 90.0, 6.0, 14.0]})
    d = fairness_prompting_delta(t).iloc[0]
    assert (d["baseline"], d["treated"], d["delta"], d["n_dimensions"]) == (15.0, 10.0, -5.0, 2)
