"""The ShopFlow notebook runs on the smoke config and writes the outputs contract."""

import json
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_smoke_notebook_writes_summary_tables_and_figures(tmp_path, monkeypatch):
    pm = pytest.importorskip("papermill")
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    params = yaml.safe_load((REPO / "configs/shopflow/smoke.yaml").read_text())
    out = tmp_path / "out"
    out.mkdir()
    params.update(output_dir=str(out), config_name="smoke", n_boot=200)
    pm.execute_notebook(str(REPO / "notebooks/shopflow.ipynb"), str(out / "shopflow.ipynb"),
                        parameters=params, cwd=str(REPO), kernel_name="python3", progress_bar=False)
    s = json.loads((out / "summary.json").read_text())
    for part in ("seed", "judged"):
        for key in ("flips", "rates", "tpr_gap", "fpr_gap", "wilson_tpr", "decision", "missing"):
            assert key in s[part], (part, key)
    seed = s["seed"]
    assert seed["flips"] == [["p4", "auto_serve", "human_review"], ["p5", "auto_serve", "human_review"],
                             ["n1", "auto_serve", "human_review"]]
    assert round(100 * seed["rates"]["formal"]["tpr"], 1) == 83.3
    assert [round(100 * x, 1) for x in seed["wilson_tpr"]["conversational"]] == [18.8, 81.2]
    assert seed["decision"] == "BLOCKED" and len(seed["missing"]) == 4
    judged = s["judged"]
    assert judged["judge"] == "scripted:shopflow-ready"
    assert judged["n_pairs"] + judged["n_pairs_excluded"] == judged["n_pairs_loaded"] == 44
    assert set(judged["rates"]) == {"formal", "conversational"}
    for name in ("seed_rates.csv", "judged_rows.csv", "judged_threshold_sweep.csv", "judged_rates.png",
                 "judged_threshold_sweep.png", "judged_calibration.png", "seed_calibration.png"):
        assert (out / name).stat().st_size > 0, name
