"""The contact-center run walks its transcripts one at a time: rows to Parquet, tables from item statistics,
the per-row frames read back on use, the design table of the whole run, the STAR arm beside it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from cfbench.judges import CacheMissError
from cfbench.judges.cache import ResponseCache
from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.calculator import design_table
from cfbench.studies.contact_center_qa.requests import count_requests
from cfbench.studies.contact_center_qa.study import REAL_TABLES, _resolve_real_path
from star_util import STAR_DIR

REPO = Path(__file__).resolve().parents[1]


def _smoke(**over) -> Params:
    m = yaml.safe_load((REPO / "configs" / "contact_center_qa" / "smoke.yaml").read_text())
    m.update(real_items=0, judges=["scripted:cc-qa", "scripted:cc-coach"], seed=0, **over)
    return Params.from_config(m)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The smoke design with two scripted judges, first two transcripts as the preview, run into a folder."""
    from cfbench.studies.contact_center_qa import study

    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("run")
    mp.setenv("CFBENCH_CACHE_DIR", str(tmp / "cache"))
    mp.setattr(study, "PREVIEW_ITEMS", 2)
    params = _smoke()
    try:
        res = run(params, tmp / "out", progress=False, say_warnings=False)
    finally:
        mp.undo()
    return params, res, tmp / "out"


def test_rows_reach_parquet_and_the_frames_read_them_back(smoke_run):
    params, res, out = smoke_run
    res.check()  # the row-level checks were made on every transcript
    assert set(res.summary["row_checks"]) >= {"one judgment per distinct request", "no request judged twice",
                                              "a parse failure never becomes an answer"}
    n_rows = pq.ParquetFile(out / "rows.parquet").metadata.num_rows
    assert n_rows == res.summary["n_rows"] == len(res.frames["rows"]) > 0
    assert pq.ParquetFile(out / "judgments.parquet").metadata.num_rows == res.summary["n_requests"]
    assert set(res.frames["rows"]["item_id"]) == set(res.summary["items"])  # every transcript, not a preview
    assert int(res.tables["parse_rates"]["n"].sum()) == res.summary["n_requests"]
    v = pd.read_parquet(out / "variants.parquet")
    assert set(v["item_id"]) == set(res.summary["items"]) and isinstance(v["turns"].iloc[0][0]["text"], str)
    # the per-row frames of the first transcripts only; the counts of all
    assert set(res.frames["variants"]["item_id"]) == set(res.summary["items"][:2])
    assert res.summary["streamed"]["preview_items"] == 2
    assert int(res.frames["plan_summary"]["n_requests"].sum()) == res.summary["n_requests"]
    assert "What this run shows" in res.findings() and "This run" in res.header()


def test_save_elsewhere_copies_the_rows_and_the_summary_matches(smoke_run, tmp_path):
    params, res, out = smoke_run
    res.save(tmp_path / "copy")
    for name in ("rows", "judgments", "variants"):
        assert (tmp_path / "copy" / f"{name}.parquet").read_bytes() == (out / f"{name}.parquet").read_bytes()
    saved = json.loads((out / "summary.json").read_text())
    assert saved["n_requests"] == res.summary["n_requests"] == count_requests(params)["n_requests"]
    assert pd.read_csv(out / "cfr.csv").shape[0] == len(res.tables["cfr"])


def test_design_table_counts_the_whole_run_not_its_preview(smoke_run):
    params, res, _ = smoke_run
    assert res.plan.settings["n_items"] == 2 < params.n_items
    row = design_table({"this run": res}).iloc[0]
    assert (row["n_items"], row["requests"]) == (params.n_items, count_requests(params)["n_requests"])
    ref = design_table({"planned": params}).iloc[0]  # the same design planned from its parameters
    assert (row["n_items"], row["requests"]) == (ref["n_items"], ref["requests"])


def test_the_explorer_of_a_larger_run_shows_its_first_transcripts(smoke_run, tmp_path, monkeypatch):
    from cfbench.studies.contact_center_qa import study

    params, res, out = smoke_run
    monkeypatch.setattr(study, "VIEW_ITEMS", 2)
    res.save(tmp_path)
    res.view(tmp_path)
    assert "the first 2 of 3 transcripts" in (tmp_path / "view.html").read_text(encoding="utf-8")
    first = pq.read_table(tmp_path / "view_preview" / "rows.parquet", columns=["item_id"]).to_pandas()
    assert set(first["item_id"]) == set(res.summary["items"][:2])


def test_a_replay_fails_on_a_cache_miss_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CFBENCH_MODE", "replay")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(CacheMissError):
        run(_smoke(), tmp_path / "out", progress=False, say_warnings=False)
    assert list((tmp_path / "tmp").iterdir()) == []  # the item-statistics folder it made is gone
    assert len(ResponseCache(tmp_path / "cache" / "responses.sqlite")) == 0
    assert not (tmp_path / "out" / "rows.parquet").exists()


def _star_dir():
    path = STAR_DIR if STAR_DIR.is_dir() else _resolve_real_path(Params().real_path)
    if path is None or not path.is_dir():
        pytest.skip(f"STAR dialogues not found at {STAR_DIR} (the project does not commit them)")
    return path


def test_the_star_arm_joins_the_run(tmp_path, monkeypatch):
    params = dataclasses.replace(_smoke(n_items=2, n_boot=50), real_items=4, real_path=str(_star_dir()))
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    res = run(params, progress=False, say_warnings=False)
    # the arm's own tables and its gate (gates.gate_tables: responsiveness on the customers' labels, net CFR)
    assert sorted(n for n in res.tables if n.startswith("star_")) == sorted(
        f"star_{n}" for n in REAL_TABLES + ("net_cfr_gate", "responsiveness"))
    for name in ("accuracy", "cfr", "masd", "robustness", "table2"):
        assert len(res.tables[f"star_{name}"]), name
    assert res.tables["star_accuracy"]["n"].sum() == 4 * len(params.judges)
    assert (res.tables["star_cfr"]["n_pairs"] > 0).any()
    for name, tab in res.tables.items():  # every table says what it rests on
        if name.startswith("star_"):
            assert (tab["source"] == "star").all(), name
        elif name != "warnings":
            assert (tab["source"] == "synthetic").all(), name
    assert len(res.summary["star"]["items"]) == 4
    assert (res.frames["star_judgments"]["source"] == "star").all()


def test_flipped_examples_come_from_the_kept_transcripts(smoke_run):
    params, res, _ = smoke_run
    kept = set(res.frames["variants"]["item_id"])
    examples = res.flipped_examples(k=5)
    assert examples, "the scripted judge flips some answers"
    for answers, edits in examples:
        assert len(answers) and len(edits)
    # every flipped unit of the kept transcripts is a candidate, no other transcript's
    from cfbench.studies.contact_center_qa.tables import flipped_units

    units = flipped_units(res.frames["rows"])
    assert len(examples) == min(5, int(units["item_id"].isin(kept).sum()))
