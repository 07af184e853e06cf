"""The identity_tone notebook runs end to end on the smoke config (papermill) and writes its files."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SHARED_FILE = REPO.parent / "shared" / "data" / "amiri2026" / "Sample_Data_Paper.numbers"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    pm = pytest.importorskip("papermill")
    out = tmp_path_factory.mktemp("identity_tone_smoke")
    params = yaml.safe_load((REPO / "configs" / "identity_tone" / "smoke.yaml").read_text())
    params.update(output_dir=".", config_name="smoke")
    # cwd is the output folder, as under `cfbench reproduce`: nothing may rely on the repo root
    pm.execute_notebook(str(REPO / "notebooks" / "identity_tone.ipynb"), str(out / "identity_tone.ipynb"),
                        parameters=params, cwd=str(out), kernel_name="python3", progress_bar=False)
    return out, params


def test_notebook_parameters_match_params_and_source_has_no_outputs():
    from dataclasses import fields

    from cfbench.studies.identity_tone import Params

    nb = json.loads((REPO / "notebooks" / "identity_tone.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    names = [line.split(":")[0] for line in "".join(cell["source"]).splitlines() if line.strip()]
    assert names[2:] == [f.name for f in fields(Params)] and names[:2] == ["output_dir", "config_name"]
    import ast

    defaults = {}
    for node in ast.parse("".join(cell["source"])).body:
        defaults[node.target.id] = ast.literal_eval(node.value)
    for f in fields(Params):
        value = defaults[f.name]
        assert (tuple(value) if isinstance(value, list) else value) == f.default, f.name
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")
    smoke = yaml.safe_load((REPO / "configs" / "identity_tone" / "smoke.yaml").read_text())
    Params.from_config(smoke, source="smoke.yaml")  # every config key is a parameter of the right type
    for name in ("default", "paper"):
        Params.from_config(yaml.safe_load((REPO / "configs" / "identity_tone" / f"{name}.yaml").read_text()))


def test_fresh_audit_outputs(smoke_run):
    out, params = smoke_run
    n = len(params["fresh_models"]) * params["n_prompts"] * 8
    resp = pd.read_csv(out / "fresh_responses.csv")
    assert len(resp) == n and set(resp.status) == {"ok"}
    ref = pd.read_csv(out / "refusals.csv")
    assert ref["n"].sum() == n and len(ref) == 8 * len(params["fresh_models"])
    for mode in ("described", "as_run"):
        pairs = pd.read_csv(out / f"fresh_pairs_{mode}.csv")
        assert len(pairs) == len(params["fresh_models"]) * 6 * 28
        assert {"mean_diff", "ci_low", "ci_high", "t", "t_p", "wilcoxon_stat", "wilcoxon_p", "cohens_d",
                "p_holm", "p_bh"} <= set(pairs.columns)
        t2 = pd.read_csv(out / f"fresh_table2_{mode}.csv")
        assert list(t2.columns) == ["model", "identity", "n", "sentiment", "politeness", "hedging", "neg_tone", "words"]
    adj = pd.read_csv(out / "fresh_length_adjusted_described.csv")
    assert len(adj) == 4 * 28 and {"adj_diff", "adj_ci_low", "adj_ci_high", "adj_p", "slope"} <= set(adj.columns)
    sym = pd.read_csv(out / "fresh_symmetry_described.csv")
    assert len(sym) == 4 * 28 and sym.symmetric.dtype == bool
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fresh"]["power"]["n_prompts_min"] == params["n_prompts"]
    assert summary["fresh"]["power"]["mde_d_alpha05_power80"] > 1  # honest: tiny n detects only huge effects
    assert summary["fresh"]["contract_version"] == "cfbench-advice-contract-1.1"
    assert summary["params"]["n_prompts"] == params["n_prompts"]
    for fig in ("fresh_metric_strips_described", "fresh_effect_heatmap_described_0"):
        assert (out / f"{fig}.png").stat().st_size > 10_000


def test_executed_notebook_ends_with_findings_and_a_passing_check(smoke_run):
    out, _ = smoke_run
    nb = json.loads((out / "identity_tone.ipynb").read_text())
    text = json.dumps(nb["cells"][-2].get("outputs", []))
    assert "Fresh audit" in text and "Power" in text and "detects" in text
    assert "Length control" in text and "Symmetry" in text
    last = nb["cells"][-1]
    assert "result.check()" in "".join(last["source"])
    assert not any(o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", []))
    images = sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))
    assert images >= 2


def test_reproduction_outputs(smoke_run):
    out, _ = smoke_run
    summary = json.loads((out / "summary.json").read_text())
    if not SHARED_FILE.is_file():
        assert summary["released_data_available"] is False
        assert not (out / "table2_as_run.csv").exists()
        pytest.skip(f"released workbook absent at {SHARED_FILE}; the run skipped the reproduction as designed")
    assert summary["released_data_available"] is True
    assert len(pd.read_csv(out / "table2_as_run.csv")) == 16
    assert len(pd.read_csv(out / "table2_described.csv")) == 16
    assert len(pd.read_csv(out / "pairs_as_run.csv")) == 336
    assert len(pd.read_csv(out / "pairs_described.csv")) == 336
    check = pd.read_csv(out / "repro_pairs_check.csv")
    assert (check.n_match == 336).all()
    assert all(v == 16 for v in summary["reproduction"]["table2"].values())
    assert all(v == 480 for v in summary["reproduction"]["per_response"].values())
    assert summary["tables34_same_pairs_as_released"] is True
    t34 = pd.read_csv(out / "tables34_as_run.csv")
    assert len(t34) == 8 and t34.ci_method.str.startswith("paired t").all()
    both = pd.read_csv(out / "tables34_interval_methods.csv")
    assert both.reading_changes.sum() == 1
    assert summary["refusals_rebuilt"]["matches_released"] is True
    assert (out / "figure2_sentiment_as_run.png").stat().st_size > 10_000
