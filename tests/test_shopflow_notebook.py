"""The ShopFlow notebook runs on the smoke config (cwd = a fresh folder, output_dir ".") and writes the outputs."""

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def test_committed_notebook_is_thin_and_has_no_outputs():
    nb = nbformat.read(REPO / "notebooks/shopflow.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    src = "\n".join(c.source for c in code)
    assert "def " not in src and "/work/" not in src and "assert " not in src
    assert code[-1].source.strip() == "result.check()" and "result.findings()" in code[-2].source


@pytest.mark.slow
def test_smoke_notebook_writes_summary_tables_and_figures(tmp_path, monkeypatch):
    pm = pytest.importorskip("papermill")
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    params = yaml.safe_load((REPO / "configs/shopflow/smoke.yaml").read_text())
    out = tmp_path / "out"
    out.mkdir()
    params.update(output_dir=".", config_name="smoke", n_boot=200)
    pm.execute_notebook(str(REPO / "notebooks/shopflow.ipynb"), str(out / "shopflow.ipynb"),
                        parameters=params, cwd=str(out), kernel_name="python3", progress_bar=False)
    s = json.loads((out / "summary.json").read_text())
    assert s["config"] == "smoke"
    for part in ("seed", "judged"):
        for key in ("flips", "rates", "tpr_gap", "fpr_gap", "wilson_tpr", "decision", "missing", "interval_checks"):
            assert key in s[part], (part, key)
    seed = s["seed"]
    assert seed["flips"] == [["p4", "auto_serve", "human_review"], ["p5", "auto_serve", "human_review"],
                             ["n1", "auto_serve", "human_review"]]
    assert round(100 * seed["rates"]["formal"]["tpr"], 1) == 83.3
    assert [round(100 * x, 1) for x in seed["wilson_tpr"]["conversational"]] == [18.8, 81.2]
    assert seed["decision"] == "BLOCKED" and len(seed["missing"]) == 4
    judged = s["judged"]
    assert judged["judge"] == "scripted:shopflow-ready" and judged["judge_is_test_double"]
    assert judged["n_pairs"] + judged["n_pairs_excluded"] == judged["n_pairs_loaded"] == 44
    assert set(judged["rates"]) == {"formal", "conversational"}
    assert judged["candidate"]["prompt"] == "register_blind"
    for name in ("seed_rates.csv", "judged_rows.csv", "judged_threshold_sweep.csv", "judged_interval_checks.csv",
                 "seed_interval_checks.csv", "judged_rates.png", "judged_threshold_sweep.png",
                 "judged_calibration.png", "seed_calibration.png", "judged_candidate_comparison.csv"):
        assert (out / name).stat().st_size > 0, name
    iv = pd.read_csv(out / "judged_interval_checks.csv").set_index("check")
    assert (iv["gap_upper"] >= iv["value"].abs()).all() and set(iv["status"]) <= {"PASS", "FAIL"}
    assert ((iv["ci_low"] <= iv["value"]) & (iv["value"] <= iv["ci_high"])).all()
    nb = nbformat.read(out / "shopflow.ipynb", as_version=4)
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    for line in ("Fixture type: synthetic matched wording audit", "Routing threshold: 0.70",
                 "Interpretation: regression repaired on these pairs, not validated for release",
                 "Metric promotion: BLOCKED"):
        assert line in text, line
    markdown = [o["data"]["text/markdown"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if "text/markdown" in o.get("data", {})]
    assert any(m.startswith("### What this run shows") for m in markdown)
    assert markdown[0].startswith("**This run.**") and "judge `scripted:shopflow-ready`" in markdown[0]
    pngs = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    assert pngs == 6
    html = "\n".join(o["data"].get("text/html", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []) if "data" in o)
    assert "rows ×" not in html  # every table shown whole
    from cfbench.report import MATH_IGNORE

    frames = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if 'class="dataframe' in o.get("data", {}).get("text/html", "")]
    assert len(frames) > 10 and all(f.startswith(f'<div class="{MATH_IGNORE}">') for f in frames)  # no $ typeset
