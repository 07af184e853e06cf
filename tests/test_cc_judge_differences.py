"""Between-judge differences, the fairness-arm interval and the findings' wording of gates and zero flips."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from cfbench.studies.contact_center_qa import gates as G
from cfbench.studies.contact_center_qa import tables as T
from cfbench.studies.contact_center_qa.findings import findings_markdown


def _rows(n_items: int = 10, seed: int = 0, flip_b: float = 0.0) -> pd.DataFrame:
    """Two judges x two arms x two dimensions, one pair per item; judge A flips every other item on
    'gender', judge B flips with probability ``flip_b``; P(Yes) moves 10 points for A, 2 for B."""
    rng = np.random.default_rng(seed)
    recs = []
    for judge in ("A", "B"):
        for arm in ("baseline", "fairness"):
            for it in range(n_items):
                label = float(it % 2)
                recs.append(dict(judge=judge, arm=arm, dimension="original", task="qa", item_id=f"i{it}",
                                 question_id="q", condition="original", answer_yes=label if judge == "A" else 1.0,
                                 parse_ok=True, p_yes=0.5, confidence=70.0, label="Yes" if label else "No"))
                for dim in ("gender", "name"):
                    flip = (judge == "A" and dim == "gender" and it % 2 == 0) or (judge == "B" and rng.random() < flip_b)
                    for cond, y, p in (("c0", 1.0, 0.5), ("c1", 0.0 if flip else 1.0,
                                                         0.5 + (0.10 if judge == "A" else 0.02) * (1 + it % 3))):
                        recs.append(dict(judge=judge, arm=arm, dimension=dim, task="qa", item_id=f"i{it}",
                                         question_id="q", condition=cond, answer_yes=y, parse_ok=True, p_yes=p,
                                         confidence=70.0, label=None))
    f = pd.DataFrame(recs).assign(category=lambda f: np.where(f["dimension"] == "gender", "identity", "other"))
    # the columns every judged row has (no coaching score here)
    return f.assign(variant_id=f["item_id"] + "/" + f["dimension"] + "/" + f["condition"], score=np.nan)


def _differences(rows: pd.DataFrame, **kw) -> pd.DataFrame:
    return T.study_tables(rows, **kw)["judge_differences"]


def test_judge_differences_rows_and_intervals():
    d = _differences(_rows(), n_boot=300, seed=1)
    assert set(zip(d["judge_a"], d["judge_b"])) == {("A", "B")}
    cfr = d[(d["metric"] == "cfr")].set_index("dimension")
    assert cfr.loc["gender", "value_a"] == pytest.approx(0.5) and cfr.loc["gender", "value_b"] == 0
    assert cfr.loc["gender", "delta"] == pytest.approx(0.5) and cfr.loc["gender", "n_items"] == 10
    assert cfr.loc["gender", "ci_low"] > 0  # 5 of 10 against 0 of 10 on the same items
    # no flips for either judge: delta 0, but the interval is not a point
    assert cfr.loc["name", "delta"] == 0 and cfr.loc["name", "ci_low"] < 0 < cfr.loc["name", "ci_high"]
    masd = d[d["metric"] == "masd_p_yes"].set_index("dimension")
    assert masd.loc["gender", "delta"] > 0 and masd.loc["gender", "ci_low"] > 0
    acc = d[d["metric"] == "accuracy"].iloc[0]
    assert acc["dimension"] == "originals" and acc["value_a"] == 1.0 and acc["value_b"] == 0.5
    # one question per item: the two judges' answers are matched pairs (Tango's interval)
    assert acc["ci_method"].startswith("tango score interval")
    assert cfr.loc["gender", "ci_method"].startswith("tango score interval")
    assert masd.loc["gender", "ci_method"] == "bootstrap-t and t over items of the paired difference (union)"
    assert d["ci_method"].notna().all()


def test_judge_order_is_the_given_order_and_one_judge_gives_nothing():
    r = _rows()
    d = _differences(r, judges=["B", "A"], n_boot=100)
    assert set(zip(d["judge_a"], d["judge_b"])) == {("B", "A")}
    assert _differences(r[r["judge"] == "A"]).empty


def test_study_tables_carry_judge_differences_and_fairness_intervals():
    t = T.study_tables(_rows(), n_boot=200, seed=0)
    assert len(t["judge_differences"])
    f = t["fairness_prompting_delta"]
    assert {"delta_pooled", "ci_low", "ci_high", "ci_method"} <= set(f.columns)
    row = f[(f["judge"] == "A") & (f["metric"] == "cfr_pp")].iloc[0]
    # the arms answer identically here: no change, but an interval around it
    assert row["delta"] == 0 and row["delta_pooled"] == 0 and row["ci_low"] < 0 < row["ci_high"]


def _result(cfr_rows: pd.DataFrame, gate: pd.DataFrame) -> SimpleNamespace:
    tables = {"cfr": cfr_rows, "masd": pd.DataFrame(columns=["judge", "arm", "score", "masd", "dimension",
                                                            "ci_low", "ci_high"]),
              "accuracy": pd.DataFrame(columns=["judge", "n"]), "net_cfr_gate": gate,
              "cfr_minus_robustness": pd.DataFrame()}
    summary = {"items": [f"i{k}" for k in range(8)], "questions": ["q"], "dimensions": list(cfr_rows["dimension"]),
               "judges": ["j"], "n_requests": 10, "n_parsed": {"j": 10}, "n_not_read": {"j": 0}}
    return SimpleNamespace(summary=summary, tables=tables, params=SimpleNamespace(n_boot=1000))


def test_findings_word_zero_flips_and_undecidable_gates():
    cfr = pd.DataFrame({"judge": "j", "arm": "baseline", "dimension": ["gender", "name"], "cfr": 0.0,
                        "n_items": 8, "n_pairs": 8, "ci_low": 0.0, "ci_high": 1 - 0.025 ** (1 / 8)})
    cmr = pd.DataFrame({"judge": "j", "dimension": ["gender", "name"], "baseline": "robustness", "estimate": 0.0,
                        "n_items": 8, "ci_low": -0.37, "ci_high": 0.37, "ci_method": "MOVER"})
    resp = pd.DataFrame({"judge": ["j"], "responsive": [True], "why": ["ok"], "balanced_accuracy": [0.9],
                         "ci_low": [0.7]})
    gate = G.net_cfr_gate(cmr, max_net=0.1, responsive=resp)
    text = findings_markdown(_result(cfr, gate))
    assert "no flips observed in 8 pairs" in text and "a CFR up to 36.9% cannot be ruled out" in text
    assert "2 `inconclusive` (gender, name)" in text and "transcripts would decide 2 of them" in text
    assert "`pass`" not in text
    passing = G.net_cfr_gate(cmr.assign(ci_high=0.05, n_items=80), max_net=0.1, responsive=resp)
    text = findings_markdown(_result(cfr, passing))
    assert "2 `pass` (gender, name)" in text
    blind = G.net_cfr_gate(cmr.assign(ci_high=0.05, n_items=80), max_net=0.1,
                           responsive=resp.assign(responsive=False, why="balanced accuracy: lower bound 0.4"))
    text = findings_markdown(_result(cfr, blind))
    assert "2 `uninformative` (gender, name)" in text and "why: balanced accuracy: lower bound 0.4" in text


def test_findings_never_call_a_one_item_row_beyond_noise():
    cfr = pd.DataFrame({"judge": "j", "arm": "baseline", "dimension": ["gender"], "cfr": 1 / 3,
                        "n_items": 1, "n_pairs": 3, "ci_low": math.nan, "ci_high": math.nan})
    cmr = pd.DataFrame({"judge": "j", "dimension": ["gender"], "baseline": "robustness", "estimate": 1 / 3,
                        "n_items": 1, "ci_low": math.nan, "ci_high": math.nan,
                        "ci_method": "none: one item (an interval needs at least 2)"})
    res = _result(cfr, G.net_cfr_gate(cmr, max_net=0.1))
    res.tables["cfr_minus_robustness"] = cmr
    text = findings_markdown(res)
    assert "beyond the judge's own repeat noise" not in text
    assert "1 dimension has no interval" in text and "1 `uninformative` (gender)" in text
