"""The streamed contact-center run's real-dialogue (STAR) arm equals the in-memory run's, and the design
table of a streamed replay counts the whole design's requests, not its preview transcripts'."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pyarrow.parquet as pq
import pytest

from cfbench.studies.contact_center_qa import run
from cfbench.studies.contact_center_qa.calculator import design_table
from cfbench.studies.contact_center_qa.requests import count_requests
from cfbench.studies.contact_center_qa.study import (REAL_TABLES, Params, StreamedContactCenterResult,
                                                     _resolve_real_path, run_streamed)
from star_util import STAR_DIR
from test_cc_streamed import CASES, _comparable


def _star_dir():
    """The shared STAR dialogues: beside the repo (tests/star_util.py), else where the study's default
    ``real_path`` resolves (a git worktree sits one folder deeper than ``../shared``)."""
    path = STAR_DIR if STAR_DIR.is_dir() else _resolve_real_path(Params().real_path)
    if path is None or not path.is_dir():
        pytest.skip(f"STAR dialogues not found at {STAR_DIR} (the project does not commit them)")
    return path


def _by_keys(tab: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by the table's key (non-float) columns, index reset."""
    keys = [c for c in tab.columns if not pd.api.types.is_float_dtype(tab[c])]
    tab = _comparable("", tab)
    return tab.sort_values(keys, kind="stable").reset_index(drop=True) if keys and len(tab) else tab


def test_streamed_star_arm_equals_the_in_memory_one(tmp_path, monkeypatch):
    # smoke (two scripted judges, 3 synthetic transcripts) with the real-dialogue arm on 4 STAR dialogues
    params = dataclasses.replace(CASES["smoke"], real_items=4, real_path=str(_star_dir()), seed=0, n_boot=200)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    run(params, progress=False, say_warnings=False)  # fills the cache live
    monkeypatch.setenv("CFBENCH_MODE", "replay")  # both paths answer from the cache only
    memory = run(params, progress=False, say_warnings=False)
    streamed = run_streamed(params, tmp_path / "out", progress=False, say_warnings=False)
    star_tables = sorted(n for n in memory.tables if n.startswith("star_"))
    # the arm's own tables and its gate (gates.gate_tables: responsiveness on the customers' labels, net CFR)
    assert star_tables == sorted(f"star_{n}" for n in REAL_TABLES + ("net_cfr_gate", "responsiveness"))
    assert sorted(n for n in streamed.tables if n.startswith("star_")) == star_tables
    for name in star_tables + ["warnings"]:  # the STAR arm's warning rows join the run's warnings
        a, b = _by_keys(memory.tables[name]), _by_keys(streamed.tables[name])
        pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-9, atol=1e-12, obj=f"streamed {name}")
    # the comparison was not empty against empty: the STAR arm judged dialogues and formed intervals
    for name in ("accuracy", "cfr", "masd", "robustness", "table2"):
        assert len(streamed.tables[f"star_{name}"]), name
    assert streamed.tables["star_accuracy"]["n"].sum() == 4 * len(params.judges)
    assert streamed.tables["star_cfr"]["ci_high"].notna().any()
    assert (streamed.tables["star_cfr"]["n_pairs"] > 0).any()
    # every table says what it rests on, in both paths: STAR for the arm, synthetic for the main run
    for res in (memory, streamed):
        for name, tab in res.tables.items():
            if name.startswith("star_"):
                assert (tab["source"] == "star").all(), name
            elif name != "warnings":
                assert (tab["source"] == "synthetic").all(), name
    assert list(streamed.tables["star_table2"].columns)[0] == "source"
    # the main tables still equal too (the STAR arm did not disturb them)
    for name in ("cfr", "masd", "accuracy", "table2"):
        pd.testing.assert_frame_equal(_by_keys(memory.tables[name]), _by_keys(streamed.tables[name]),
                                      check_dtype=False, rtol=1e-9, atol=1e-12, obj=name)
    drop = {"wall_s"}
    assert ({k: v for k, v in streamed.summary["star"].items() if k not in drop}
            == {k: v for k, v in memory.summary["star"].items() if k not in drop})
    assert len(streamed.summary["star"]["items"]) == 4


def test_design_table_of_a_streamed_replay_counts_the_whole_design(tmp_path, monkeypatch):
    """The notebook's ``design_table({"this run": result})`` on a streamed replay: requests and transcripts
    of the whole streamed design (the judgments it looked up), not of its first (preview) transcripts."""
    from cfbench.studies.contact_center_qa import study

    params = dataclasses.replace(CASES["smoke"], seed=0)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    memory = run(params, progress=False, say_warnings=False)  # fills the cache live
    monkeypatch.setenv("CFBENCH_MODE", "replay")
    monkeypatch.setattr(study, "PLAN_ONLY_MAX_REQUESTS", 10)  # smoke is "too large": streamed
    monkeypatch.setattr(study, "PLAN_ONLY_PREVIEW_ITEMS", 2)
    res = run(params, tmp_path / "out", progress=False, say_warnings=False)
    assert isinstance(res, StreamedContactCenterResult) and res.summary["streamed"]["preview_items"] == 2
    looked_up = pq.ParquetFile(tmp_path / "out" / "judgments.parquet").metadata.num_rows
    counted = count_requests(params)["n_requests"]
    assert res.plan.n_requests < looked_up == counted  # the preview's plan is smaller than the design
    row = design_table({"this run": res}).iloc[0]
    assert (row["n_items"], row["requests"]) == (params.n_items, looked_up)
    ref = design_table({"this run": memory}).iloc[0]  # the in-memory run of the same design
    assert (row["n_items"], row["requests"]) == (ref["n_items"], ref["requests"])


def test_design_table_of_run_streamed_called_directly(tmp_path, monkeypatch):
    """``run_streamed`` keeps no plan of its first transcripts; ``design_table`` plans them again (a dry run)
    and still counts the whole design. A streamed run on transcripts its parameters do not select cannot
    be re-planned, and says so in one line."""
    from cfbench.core.errors import InputError
    from cfbench.studies.contact_center_qa.items import load_items

    params = dataclasses.replace(CASES["smoke"], seed=0)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    memory = run(params, progress=False, say_warnings=False)  # fills the cache live
    monkeypatch.setenv("CFBENCH_MODE", "replay")
    direct = run_streamed(params, tmp_path / "out", progress=False, say_warnings=False)
    assert direct.plan is None
    row = design_table({"direct": direct}).iloc[0]
    ref = design_table({"memory": memory}).iloc[0]
    assert (row["n_items"], row["requests"]) == (ref["n_items"], ref["requests"]) == (
        params.n_items, count_requests(params)["n_requests"])
    assert row["est_minutes"] > 0 and row["pairs_per_unit"] > 0

    others = load_items(dataclasses.replace(params, n_items=params.n_items + 2))[2:]  # not the first ones
    monkeypatch.setenv("CFBENCH_MODE", "live")
    moved = run_streamed(params, progress=False, say_warnings=False, transcripts=others)
    with pytest.raises(InputError, match="cannot be planned again"):
        design_table({"moved": moved})
