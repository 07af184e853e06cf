"""Plan-only of a large contact-center design states requests, estimated tokens and estimated cost per judge."""

from __future__ import annotations

import json

import pytest

from cfbench.judges.pricing import estimate_from_chars, load_prices
from cfbench.cli.reproduce import load_config_file, project_root

ROOT = project_root()


def test_plan_only_prints_requests_tokens_and_cost_per_judge(monkeypatch, tmp_path):
    from cfbench.studies.contact_center_qa import Params, iter_requests, run, study

    monkeypatch.setattr(study, "PLAN_ONLY_MAX_REQUESTS", 100)  # the smoke design at 5 items counts as large
    monkeypatch.setenv("CFBENCH_MODE", "plan")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    config = load_config_file(ROOT / "configs" / "contact_center_qa" / "smoke.yaml", "contact_center_qa")
    judges = ["openai:gpt-4o-mini", "local:qwen2.5-coder-1.5b"]
    params = Params.from_config(config, n_items=5, transcripts_path="synthetic:seed=0", judges=judges)
    result = run(params, out=tmp_path / "out", config_name="smoke", progress=False)
    reqs = list(iter_requests(params))
    n = len(reqs)
    chars = sum(len(m["content"]) for r in reqs for m in r.messages)
    max_out = sum(r.config.max_tokens for r in reqs)
    rows = {r["judge"]: r for r in result.summary["plan_only"]["cost_by_judge"]}
    assert set(rows) == set(judges)
    expected = estimate_from_chars("gpt-4o-mini", n, chars, max_out, load_prices(), batch=True)
    oa = rows["openai:gpt-4o-mini"]
    assert (oa["n_requests"], oa["prompt_chars"], oa["max_output_tokens"]) == (n, chars, max_out)
    assert oa["prompt_tokens_est"] == expected["prompt_tokens"] > chars // 4
    assert oa["cost_usd_est"] == pytest.approx(expected["cost"]["total_usd"]) and oa["cost_usd_est"] > 0
    assert "Batch API price" in oa["cost_note"]
    local = rows["local:qwen2.5-coder-1.5b"]
    assert local["cost_usd_est"] == 0.0 and "no API cost" in local["cost_note"]
    header = result.header()
    assert f"openai:gpt-4o-mini: {n:,} requests, ≈ {expected['prompt_tokens']:,} prompt tokens" in header
    assert "(estimated from characters)" in header and "USD 0 (no API)" in header
    assert f"≈ USD {expected['cost']['total_usd']:,.2f}" in header
    # two "$" in this one paragraph were set as a formula in JupyterLab (the text between them in italics)
    assert "$" not in header
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["plan_only"]["cost_by_judge"][0]["judge"] == judges[0]
    assert "estimate" in result.frames["plan_cost_estimate"]["token_method"].iloc[0]
