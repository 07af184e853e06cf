"""The streamed contact-center run (transcript by transcript, item statistics) gives the in-memory tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from cfbench.judges import CacheMissError
from cfbench.judges.cache import ResponseCache
from cfbench.studies.contact_center_qa import Params, run
from cfbench.studies.contact_center_qa.streamed import NOT_STREAMED, STREAMED_TABLES, ItemStats
from cfbench.studies.contact_center_qa.study import StreamedContactCenterResult, run_streamed

REPO = Path(__file__).resolve().parents[1]


def _config(name: str, **over) -> Params:
    m = yaml.safe_load((REPO / "configs" / "contact_center_qa" / f"{name}.yaml").read_text())
    m.update(real_items=0, **over)
    return Params.from_config(m)


#: smoke as shipped (two judges for the judge order and the per-judge tables); a default-like design
#: (the default's sampled conditions, compact contract, paraphrase, two temperatures) on 6 transcripts,
#: with the fairness arm and coaching notes switched on so that every streamed table has rows
CASES = {
    "smoke": _config("smoke", judges=["scripted:cc-qa", "scripted:cc-coach"]),
    "default-like": _config("default", judges=["scripted:cc-qa", "scripted:cc-coach"], n_items=6, n_boot=200,
                            fairness=True, coaching=True, coaching_items=2),
    # the answer / rationale / evidence contract (evidence_checks and the fairness arm's evidence shares)
    "evidence": _config("smoke", judges=["scripted:cc-qa", "scripted:cc-coach"], qa_mode="json", evidence_chars=80,
                        n_items=4, paraphrases=0, coaching=False),
}
#: tables a case leaves empty by design (both paths are still compared)
EMPTY = {"evidence": set(), "smoke": {"evidence_checks"}, "default-like": {"evidence_checks"}}


def _comparable(name: str, tab: pd.DataFrame) -> pd.DataFrame:
    return tab.reset_index(drop=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_tables_equal_the_in_memory_tables(case, tmp_path, monkeypatch):
    params = CASES[case]
    monkeypatch.setattr("cfbench.studies.contact_center_qa.streamed.COMPACT_EVERY", 2)  # compacted chunks too
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))  # where the item statistics are spilled
    (tmp_path / "tmp").mkdir()
    read_back, real_read_back = [], ItemStats._read_back

    def spy(self):  # how many chunks of a statistic each read-back found
        read_back.append(max((n for _, n in self.spilled.values()), default=0))
        return real_read_back(self)

    monkeypatch.setattr(ItemStats, "_read_back", spy)
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    run(params, progress=False, say_warnings=False)  # fills the cache live
    monkeypatch.setenv("CFBENCH_MODE", "replay")  # both paths answer from the cache only
    memory = run(params, progress=False, say_warnings=False)
    streamed = run_streamed(params, tmp_path / "out", progress=False, say_warnings=False)
    assert set(STREAMED_TABLES) <= set(memory.tables) and set(STREAMED_TABLES) <= set(streamed.tables)
    for name in STREAMED_TABLES:
        a, b = _comparable(name, memory.tables[name]), _comparable(name, streamed.tables[name])
        assert len(a) or name in EMPTY[case] | {"warnings"}, f"{name} is empty in the in-memory run"
        pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-9, atol=1e-12, obj=f"{case}: {name}")
    # every interval was compared above; make sure there were intervals to compare
    assert streamed.tables["cfr"]["ci_high"].notna().any() and streamed.tables["masd"]["ci_high"].notna().any()
    # every table of the in-memory run is built (none is listed as left out)
    assert NOT_STREAMED == () and streamed.summary["streamed"]["not_built"] == []
    assert set(memory.tables) == set(streamed.tables)
    assert max(read_back) == params.n_items // 2  # the tables above were made from spilled chunks
    assert list((tmp_path / "tmp").iterdir()) == []  # the spilled item statistics were read back and removed
    # the judged rows are in Parquet, as many as the in-memory run's (a small run's rows fit in one
    # 16 MiB row group; tests/test_cc_parquet_rows.py checks the grouping)
    rows = pq.ParquetFile(tmp_path / "out" / "rows.parquet")
    assert rows.metadata.num_rows == len(memory.frames["rows"])
    assert rows.metadata.num_row_groups == 1
    assert pq.ParquetFile(tmp_path / "out" / "judgments.parquet").metadata.num_rows == len(memory.frames["judgments"])
    back = pq.read_table(tmp_path / "out" / "rows.parquet", columns=["judge", "request_id", "answer_yes"]).to_pandas()
    want = memory.frames["rows"][["judge", "request_id", "answer_yes"]]
    pd.testing.assert_frame_equal(back.sort_values(["judge", "request_id"]).reset_index(drop=True),
                                  want.sort_values(["judge", "request_id"]).reset_index(drop=True),
                                  check_dtype=False)


def test_streamed_replay_fails_on_a_cache_miss(tmp_path, monkeypatch):
    params = CASES["smoke"]
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CFBENCH_MODE", "replay")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(CacheMissError):
        run_streamed(params, tmp_path / "out", progress=False, say_warnings=False)
    assert list((tmp_path / "tmp").iterdir()) == []  # the item-statistics folder it made is gone
    # nothing was called (the cache holds no reply) and no partial rows file was left as if complete
    assert len(ResponseCache(tmp_path / "cache" / "responses.sqlite")) == 0
    assert not (tmp_path / "out" / "rows.parquet").exists()


def test_a_replay_of_a_design_too_large_for_memory_runs_streamed(tmp_path, monkeypatch):
    """run() in replay mode above the request threshold streams; the notebook's cells get a result that
    checks, has findings and the first transcripts' frames; summary.json describes the whole run."""
    import json

    from cfbench.studies.contact_center_qa import study

    params = CASES["smoke"]
    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    memory = run(params, progress=False, say_warnings=False)
    monkeypatch.setenv("CFBENCH_MODE", "replay")
    monkeypatch.setattr(study, "PLAN_ONLY_MAX_REQUESTS", 10)  # smoke is "too large" for this test
    monkeypatch.setattr(study, "PLAN_ONLY_PREVIEW_ITEMS", 2)
    res = run(params, tmp_path / "out", progress=False, say_warnings=False)
    assert isinstance(res, StreamedContactCenterResult)
    res.check()
    assert "Streamed run" in res.header() and "first 2 transcripts" in res.header()
    for name in memory.tables:  # the whole design's tables, not the preview's (memory ran live: no cache hits)
        a, b = res.tables[name], memory.tables[name]
        if name == "parse_rates":
            a, b = a.drop(columns=["cache_hit"]), b.drop(columns=["cache_hit"])
        pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-9, obj=name)
    assert "What this run shows" in res.findings()
    assert set(res.frames["rows"]["item_id"]) == set(memory.summary["items"][:2])
    pd.testing.assert_frame_equal(res.tables["cfr"], memory.tables["cfr"], check_dtype=False, rtol=1e-9)
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["n_requests"] == memory.summary["n_requests"] and saved["streamed"]["preview_items"] == 2
    assert pd.read_csv(tmp_path / "out" / "cfr.csv").shape[0] == len(memory.tables["cfr"])
    # the explorer page is built on the first transcripts only; the whole design's rows stay where they are
    res.view(tmp_path / "out")
    assert "streamed run: the first 2 of 3 transcripts" in (tmp_path / "out" / "view.html").read_text()
    assert pq.ParquetFile(tmp_path / "out" / "view_preview" / "rows.parquet").metadata.num_rows == len(res.frames["rows"])
    assert pq.ParquetFile(tmp_path / "out" / "rows.parquet").metadata.num_rows == len(memory.frames["rows"])
