"""The study API: Params from configs, run() -> ShopflowResult, check() that can fail, findings from numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cfbench.core.errors import InputError
from cfbench.report import InvariantError
from cfbench.studies.shopflow import FairnessContract, Params, audit_pairs, run, shipped
from cfbench.io.pairs import load_pairs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_and_left_open(tmp_path_factory):
    """The smoke run, its folder, and the pyplot figures it left open."""
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    out = tmp_path_factory.mktemp("sf")
    cfg = yaml.safe_load((REPO / "configs/shopflow/smoke.yaml").read_text())
    params = Params.from_config(cfg, n_boot=200, max_pairs=20, candidate_prompt="")
    result = run(params, out=out, config_name="smoke", progress=False)
    return result, out, set(plt.get_fignums()) - before


@pytest.fixture(scope="module")
def smoke(smoke_and_left_open):
    return smoke_and_left_open[:2]


def test_a_run_leaves_no_figure_open_in_pyplot(smoke_and_left_open):
    result, _, left_open = smoke_and_left_open
    assert len(result.figures) >= 2 and not left_open


def test_params_mirror_every_config_and_reject_unknown_names():
    for name in ("smoke", "default", "paper"):
        cfg = yaml.safe_load((REPO / f"configs/shopflow/{name}.yaml").read_text())
        p = Params.from_config(cfg)
        assert isinstance(p.judged_calibration_edges, tuple)
    with pytest.raises(InputError) as info:
        Params.from_config({"n_bot": 3})
    assert info.value.field == "n_bot"
    with pytest.raises(InputError):
        Params(judged_threshold=1.5)
    with pytest.raises(InputError):
        Params(variants=("formal",))


def test_run_returns_tables_figures_summary_and_writes_them(smoke):
    result, out = smoke
    assert result.check()
    s = json.loads((out / "summary.json").read_text())
    assert s["config"] == "smoke" and s["seed"]["decision"] == "BLOCKED"
    assert s["judged"]["n_pairs_loaded"] == 20
    for name, frame in result.tables.items():
        assert (out / f"{name}.csv").is_file(), name
    assert {f"{p}_{k}" for p in ("seed", "judged") for k in ("rates", "calibration", "threshold_sweep")} == set(
        result.figures)
    assert result.seed_lines[:3] == ["Fixture type: synthetic matched wording audit",
                                     "Matched pairs: 10; scored rows: 20", "Routing threshold: 0.70"]


def test_findings_are_generated_from_the_numbers(smoke):
    result, _ = smoke
    text = result.findings()
    assert text.startswith("### What this run shows")
    seed = result.summary["seed"]
    tests = result.tables["seed_stratum_tests"].set_index("stratum")
    # the TPR question is answered on the ready pairs, the FPR question on the needs-review pairs
    for stratum, p_key in (("ready pairs", "ready"), ("needs-review pairs", "needs_review")):
        row = tests.loc[stratum]
        assert f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]" in text
        assert row["mcnemar_p"] == seed["mcnemar"][p_key]["p_value"]
        assert f"asked on the {row['n_pairs']} {stratum}" in text
    # the seed's pooled test (3 vs 0 over all 10 pairs) is kept, named as the extra row
    assert "Extra, not an answer to either question: McNemar pooled over all 10 pairs (3 vs 0 discordant, p = 0.25)" \
        in text
    assert tests.at["all pairs", "question"].startswith("extra")
    assert "scripted test double" in text
    header = result.header()
    judged = result.summary["judged"]
    assert "judge `scripted:shopflow-ready`" in header and f"{judged['n_pairs_loaded']} pairs loaded" in header
    civ = result.audits["seed_candidate"].interval_checks.set_index("check")
    assert f"{civ.at['tpr_gap', 'gap_upper']:.3f}" in text
    # one vocabulary, no "not decidable ... (FAIL)" contradiction: the verdict and the release requirement apart
    assert "not decidable at this n" not in text and "(FAIL)" not in text
    kind = civ.at["tpr_gap", "verdict_kind"]
    assert kind in ("inconclusive", "uninformative") and f"; {civ.at['tpr_gap', 'verdict']})" in text
    assert "— `" in text  # each interval sentence names its verdict kind


def test_rate_intervals_are_exact_and_the_percentile_bootstrap_is_gone(smoke):
    result, out = smoke
    s = json.loads((out / "summary.json").read_text())
    assert not any(k.startswith("bootstrap") for k in s["judged"])
    for part in ("seed", "judged"):
        t = result.tables[f"{part}_rate_intervals"]
        assert set(t["ci_method"]) <= {"clopper-pearson (exact)", "none: no row in the denominator"}
        assert (pd.read_csv(out / f"{part}_rate_intervals.csv")["ci_method"] == t["ci_method"]).all()
        ti = s[part]["tpr_intervals"]
        assert s[part]["tpr_ci_method"] == "clopper-pearson (exact)"
        assert set(ti) == set(s[part]["rates"])
    # the seed's 5/6 and 3/6 ready rows: exact intervals (scipy's beta quantiles) beside the seed's Wilson lines
    from scipy.stats import beta
    ti = s["seed"]["tpr_intervals"]
    assert ti["formal"] == pytest.approx([beta.ppf(0.025, 5, 2), beta.ppf(0.975, 6, 1)])
    assert ti["conversational"] == pytest.approx([beta.ppf(0.025, 3, 4), beta.ppf(0.975, 4, 3)])
    text = result.findings()
    assert "formal 5/6 [35.9%, 99.6%]" in text and "conversational 3/6 [11.8%, 88.2%]" in text
    assert "TPR=5/6 95% interval=[43.6%, 97.0%]" in "\n".join(result.seed_lines)  # the seed's own line
    assert "Bootstrap" not in result.header()


def test_check_names_a_broken_invariant(smoke):
    result, _ = smoke
    routed = result.audits["judged"].routed
    saved = routed.loc[0, "route"]
    routed.loc[0, "route"] = "auto_serve" if saved != "auto_serve" else "human_review"
    try:
        with pytest.raises(InvariantError, match="judged: routes follow the threshold"):
            result.check()
    finally:
        routed.loc[0, "route"] = saved
    assert result.check()


@pytest.mark.parametrize("spec", ["scripted:fail", "scripted:garbage"])
def test_a_judge_with_no_usable_reply_stops_with_the_reason_and_writes_no_judged_table(tmp_path, spec):
    with pytest.raises(InputError, match="no pair has every variant scored.*no rate or gap"):
        run(Params(judge=spec, max_pairs=4, n_boot=50), out=tmp_path, progress=False)
    written = {p.name for p in tmp_path.iterdir()}
    assert "seed_rates.csv" in written and not any(n.startswith("judged") for n in written)
    assert "judged" not in json.loads((tmp_path / "summary.json").read_text())


def _contract(tmp_path, extra: str) -> FairnessContract:
    text = (shipped("contract.yaml")).read_text() + extra
    (tmp_path / "c.yaml").write_text(text)
    return FairnessContract.from_yaml(tmp_path / "c.yaml")


def test_interval_rule_gates_release_only_when_required(tmp_path):
    """200 identical pairs: point gap 0 passes; the Tango interval on 100 ready / 100 needs-review pairs lies
    inside ±0.10 and passes, and the same data cut to 20 pairs (10 per stratum) cannot pass at all — the interval
    rule needs evidence, the point rule does not."""
    rows = []
    for i in range(200):
        ready = i % 2 == 0
        for v in ("formal", "conversational"):
            rows.append({"pair_id": f"q{i}", "variant": v, "expected_ready": ready, "channel": "chat",
                         "evidence_passed": True, "score": 0.9 if (ready and i % 20 != 0) else 0.1})
    frame = pd.DataFrame(rows)
    gate = "  - name: gap_intervals_inside_limits\n    source: interval_checks\n"
    c = _contract(tmp_path, gate)
    big = audit_pairs(frame, c, threshold=0.5)
    small = audit_pairs(frame[frame.pair_id.isin([f"q{i}" for i in range(20)])], c, threshold=0.5)
    assert big.tpr_gap == 0.0 and small.tpr_gap == 0.0 and big.checks_ok and small.checks_ok
    assert big.release.requirements["gap_intervals_inside_limits"] is big.interval_ok
    assert big.interval_ok and not small.interval_ok
    assert "gap_intervals_inside_limits" in small.release.missing
    b = big.interval_checks.set_index("check")
    assert list(b["n_pairs"]) == [100, 100] and list(b["stratum"]) == ["ready pairs", "needs-review pairs"]
    assert b.at["tpr_gap", "value"] == 0.0 and -0.1 < b.at["tpr_gap", "ci_low"] < 0 < b.at["tpr_gap", "ci_high"] < 0.1
    assert b.at["tpr_gap", "gap_upper"] == pytest.approx(1.96 ** 2 / (100 + 1.96 ** 2), abs=1e-3)
    s_ = small.interval_checks.set_index("check")
    assert list(s_["n_pairs"]) == [10, 10] and not s_["pass_possible"].any() and (s_["n_needed"] == 35).all()
    assert (s_["verdict"] == "inconclusive").all() and (s_["status"] == "FAIL").all()
    assert b["responsive"].all() and (b["verdict"] == "pass").all()  # ready scored 0.9 (19 of 20), review 0.1


def test_signed_gap_lies_in_its_own_interval_and_the_sign_is_stated(tmp_path):
    """The committed default once showed value 0.176 beside the interval [−0.449, 0.140]: an absolute gap next to
    a signed interval. Now value and interval are the same signed quantity, named in `definition`."""
    rows = []
    # 17 needs-review pairs with 2 auto-served only as formal and 5 only as conversational (the committed default)
    for i in range(17):
        fa, ca = (True, False) if i < 2 else (False, True) if i < 7 else (i % 2 == 0, i % 2 == 0)
        for v, sel in (("formal", fa), ("conversational", ca)):
            rows.append({"pair_id": f"n{i}", "variant": v, "expected_ready": False, "channel": "chat",
                         "evidence_passed": True, "score": 0.9 if sel else 0.1})
    for i in range(27):  # 27 ready pairs, 5 only formal and 1 only conversational
        fa, ca = (True, False) if i < 5 else (False, True) if i < 6 else (True, True)
        for v, sel in (("formal", fa), ("conversational", ca)):
            rows.append({"pair_id": f"p{i}", "variant": v, "expected_ready": True, "channel": "chat",
                         "evidence_passed": True, "score": 0.9 if sel else 0.1})
    a = audit_pairs(pd.DataFrame(rows), FairnessContract.from_yaml(shipped("contract.yaml")), threshold=0.5)
    iv = a.interval_checks.set_index("check")
    assert iv.at["fpr_gap", "definition"] == "FPR[formal] − FPR[conversational]"
    assert iv.at["fpr_gap", "value"] == pytest.approx(-3 / 17)
    assert iv.at["fpr_gap", "ci_low"] < iv.at["fpr_gap", "value"] < iv.at["fpr_gap", "ci_high"]
    assert iv.at["tpr_gap", "value"] == pytest.approx(4 / 27) and (iv["zero"] == "inside").all()
    assert a.checks.set_index("check").at["fpr_gap", "definition"] == "|FPR[formal] − FPR[conversational]|"
    t = a.stratum_tests.set_index("stratum")
    assert (t.at["ready pairs", "only_formal"], t.at["ready pairs", "only_conversational"]) == (5, 1)
    assert t.at["ready pairs", "mcnemar_p"] == pytest.approx(0.21875)
    assert (t.at["needs-review pairs", "only_formal"], t.at["needs-review pairs", "only_conversational"]) == (2, 5)
    assert t.at["all pairs", "mcnemar_p"] == 1.0  # 7 vs 6: the pooled test hides both strata


def test_contract_confidence_reaches_the_interval(tmp_path):
    c = _contract(tmp_path, "gap_interval:\n  method: tango\n  confidence: 0.9\n")
    a = audit_pairs(load_pairs(shipped("seed_observations.csv")), c, threshold=0.7)
    a95 = audit_pairs(load_pairs(shipped("seed_observations.csv")), FairnessContract.from_yaml(shipped("contract.yaml")),
                      threshold=0.7)
    row, row95 = a.interval_checks.set_index("check").loc["tpr_gap"], a95.interval_checks.set_index("check").loc["tpr_gap"]
    assert row["method"] == "tango" and row["confidence"] == 0.9 and row["ci_low"] <= row["value"] <= row["ci_high"]
    assert row["value"] == pytest.approx(1 / 3)
    assert row95["ci_low"] < row["ci_low"] and row["ci_high"] < row95["ci_high"]  # 90 % is narrower than 95 %
    assert row["gap_upper"] == max(abs(row["ci_low"]), abs(row["ci_high"]))


def test_gap_interval_matches_newcombe_1998_published_example():
    """Newcombe (1998, Stat Med 17:873), method 10 on 56/70 vs 48/80: difference 0.2000, [0.0524, 0.3339]."""
    from cfbench.metrics.groups import gap_interval

    rates = pd.DataFrame({"tp": [56, 48], "n_pos": [70, 80]}, index=["a", "b"])
    iv = gap_interval(rates, "tpr", "a", "b")
    assert iv["difference"] == pytest.approx(0.2)
    assert (round(iv["ci_low"], 4), round(iv["ci_high"], 4)) == (0.0524, 0.3339)
    assert iv["gap_upper"] == pytest.approx(iv["ci_high"])


def test_quickstart_own_pairs_csv_with_any_judge_spec(tmp_path):
    """The package docstring's quickstart, on a CSV written from the shipped pairs, with the test double."""
    pairs = load_pairs(shipped("pairs.jsonl"), score_column=None).head(12)
    pairs[["pair_id", "variant", "expected_ready", "channel", "request", "reply"]].to_csv(tmp_path / "pairs.csv",
                                                                                         index=False)
    params = Params(pairs_path=str(tmp_path / "pairs.csv"), judge="scripted:shopflow-ready",
                    variants=["formal", "conversational"], n_boot=100)
    result = run(params, out=tmp_path / "out", progress=False)
    assert set(result.tables["judged_rates"]["variant"]) == {"formal", "conversational"}
    assert list(result.tables["judged_interval_checks"]["check"]) == ["tpr_gap", "fpr_gap"]
    assert result.summary["judged"]["n_pairs_loaded"] == 6 and result.check()
    assert (tmp_path / "out" / "judged_rates.csv").is_file()
