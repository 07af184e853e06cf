"""The contact-center notebook runs end to end on the smoke config (scripted judge)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def test_smoke_notebook_writes_the_contract(tmp_path):
    pm = pytest.importorskip("papermill")
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    params = yaml.safe_load((REPO / "configs" / "contact_center_qa" / "smoke.yaml").read_text())
    if not shipped_transcripts_path().exists():
        from cfbench.io.transcripts import save_transcripts
        from cfbench.studies.contact_center_qa.synth import generate_transcripts

        params["transcripts_path"] = str(save_transcripts(generate_transcripts(12, seed=0), tmp_path / "t.jsonl"))
    out = tmp_path / "out"
    params.update(output_dir=str(out), config_name="smoke", n_boot=50)
    pm.execute_notebook(str(REPO / "notebooks" / "contact_center_qa.ipynb"), str(tmp_path / "nb.ipynb"),
                        parameters=params, cwd=str(REPO), progress_bar=False, kernel_name="python3")
    for f in ("judgments.parquet", "cfr.csv", "masd.csv", "robustness.csv", "accuracy.csv",
              "fairness_prompting_delta.csv", "summary.json", "table2.csv", "fig3_accuracy_vs_cfr.png",
              "fig4_category_profiles.png", "fig5_fairness_vs_robustness.png", "heatmap_cfr.png",
              "fig6_kappa.png", "fig7_flip_distribution.png", "fig8_mean_scores.png", "judge_means.csv",
              "net_cfr_gate.csv", "parse_rates.csv", "variant_rejections.csv", "evidence_checks.csv"):
        assert (out / f).exists(), f
    cfr = pd.read_csv(out / "cfr.csv")
    assert list(cfr.columns[:7]) == ["judge", "dimension", "cfr", "n_items", "n_pairs", "ci_low", "ci_high"]
    assert set(cfr.loc[cfr["arm"] == "baseline", "dimension"]) == set(
        __import__("cfbench.perturb", fromlist=["TABLE_DIMENSIONS"]).TABLE_DIMENSIONS)
    masd = pd.read_csv(out / "masd.csv")
    assert list(masd.columns[:5]) == ["judge", "dimension", "score", "masd", "n_pairs"]
    assert set(masd["score"]) == {"confidence", "p_yes", "positives", "improvement", "customer"}  # compact contract gives P(Yes)
    j = pd.read_parquet(out / "judgments.parquet")
    for c in ("text", "answer", "confidence", "score", "parse_ok", "cache_hit", "repeat"):
        assert c in j.columns
    assert j.loc[~j["parse_ok"], "answer"].isna().all()
    # the fairness arm answers in the answer / rationale / evidence layout, the baseline keeps its contract
    fair = j[(j["task"] == "qa") & (j["arm"] == "fairness")]
    assert len(fair) and fair["evidence_status"].isin(["quoted", "none", "unparsed"]).all()
    assert j.loc[(j["task"] == "qa") & (j["arm"] == "baseline"), "evidence_status"].isna().all()
    ev = pd.read_csv(out / "evidence_checks.csv").set_index("arm")
    assert list(ev.index) == ["fairness"] and ev.loc["fairness", "n_yes"] > 0
    # the scripted judge quotes a line that is in no shipped call in some Yes replies: the check must see it
    assert 0 < ev.loc["fairness", "yes_evidence_verified"] < 1
    assert ev.loc["fairness", "n_yes_evidence_verified"] == int((fair["answer"].eq("Yes")
                                                                  & fair["evidence_found"].eq(True)).sum())
    delta = pd.read_csv(out / "fairness_prompting_delta.csv")
    assert (delta["fair_yes_evidence_verified"] == ev.loc["fairness", "yes_evidence_verified"]).all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"] == "smoke" and summary["judges"] == ["scripted:cc-qa"]
    t2 = pd.read_csv(out / "table2.csv")
    assert {"Average", "Robustness", "Accuracy"} <= set(t2["row"])

    rates = pd.read_csv(out / "parse_rates.csv")
    from cfbench.judges.failures import KIND_COLUMNS

    assert {"n_not_read", *KIND_COLUMNS} <= set(rates.columns) and "n_parse_failures" not in rates.columns
    assert (rates[list(KIND_COLUMNS)].sum(axis=1) == rates["n_not_read"]).all()
    gate = pd.read_csv(out / "net_cfr_gate.csv")
    assert set(gate["baseline"]) == {"robustness"} and len(gate) == 15
    executed = (tmp_path / "nb.ipynb").read_text()
    assert "3 transcripts x 2 questions x 15 dimensions" in executed  # header generated from the parameters
    assert "What this run shows" in executed
    assert "yes_evidence_verified" in executed  # the evidence checks are displayed
    n_yes, n_ok = int(ev.loc["fairness", "n_yes"]), int(ev.loc["fairness", "n_yes_evidence_verified"])
    assert f"Fairness arm, evidence: of {n_yes} Yes answers, {n_ok} (" in executed  # and stated in the findings
    assert str(REPO) not in json.dumps(summary)  # no machine-specific paths in the outputs
