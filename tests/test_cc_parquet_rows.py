"""The streamed run's Parquet writer: frames held back into row groups, nothing lost or retyped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cfbench.studies.contact_center_qa.streamed import ParquetRows


def _frame(i: int, n: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"item_id": [f"t{i}"] * n, "row": np.arange(n) + 1000 * i,
                         "ok": [bool(k % 2) for k in range(n)],
                         "answer": [None if k % 7 == 0 else "Yes" for k in range(n)]})


def test_frames_are_grouped_and_every_row_reaches_the_file(tmp_path):
    frames = [_frame(i) for i in range(9)]
    one = pd.concat(frames, ignore_index=True)
    w = ParquetRows(tmp_path / "rows.parquet", group_bytes=3 * 1500)  # a few frames per row group
    for f in frames:
        w.write(f)
    held = sum(len(f) for f in frames) - w.n_rows
    assert held > 0  # the tail is held back until close ...
    w.close()
    assert w.n_rows == len(one)  # ... and written then
    meta = pq.ParquetFile(tmp_path / "rows.parquet").metadata
    assert 1 < meta.num_row_groups < len(frames)
    back = pd.read_parquet(tmp_path / "rows.parquet")
    assert back["row"].tolist() == one["row"].astype(float).tolist()  # order kept, numbers as float64
    assert back["answer"].tolist() == one["answer"].tolist()  # None stays null
    assert back["ok"].dtype == bool


def test_default_groups_hold_several_paper_sized_transcripts(tmp_path):
    # a frame of about 2.6 MB (the Arrow size of one paper transcript's judged rows) per write
    big = pd.DataFrame({"text": ["x" * 300] * 8000, "item_id": "t", "score": 1.0})
    w = ParquetRows(tmp_path / "r.parquet")
    for _ in range(12):
        w.write(big)
    w.close()
    groups = pq.ParquetFile(tmp_path / "r.parquet").metadata.num_row_groups
    assert 1 < groups <= 3 and w.n_rows == 12 * len(big)


def test_a_column_that_appears_later_still_raises(tmp_path):
    w = ParquetRows(tmp_path / "rows.parquet")
    w.write(_frame(0))
    with pytest.raises(ValueError, match="appeared after the first row group"):
        w.write(_frame(1).assign(extra=1))
    w.close()


def test_an_object_column_of_booleans_stays_boolean(tmp_path):
    """The evidence flags (True / False / None in an object column) come back as booleans, not as text."""
    f = pd.DataFrame({"item_id": ["a", "a", "b"], "evidence_found": pd.Series([True, None, False], dtype=object)})
    w = ParquetRows(tmp_path / "rows.parquet")
    w.write(f)
    w.write(f.assign(item_id="c"))
    w.close()
    back = pd.read_parquet(tmp_path / "rows.parquet")
    assert back["evidence_found"].tolist()[:3] == [True, None, False] or \
        back["evidence_found"].astype(object).where(back["evidence_found"].notna(), None).tolist()[:3] == [True, None, False]
    assert pq.read_schema(tmp_path / "rows.parquet").field("evidence_found").type == "bool"


def test_the_explorers_variants_keep_their_turns_and_reach_the_file(tmp_path):
    from cfbench.studies.contact_center_qa.streamed import VariantsParquet

    turns = [{"speaker": "agent", "text": "Hello, this is Maria."}, {"speaker": "customer", "text": "Hi"}]
    frames = [pd.DataFrame({"variant_id": [f"t{i}::original", f"t{i}::gender::male"], "item_id": [f"t{i}"] * 2,
                            "dimension": ["original", "gender"], "condition": ["original", "male"],
                            "turns": [turns, turns[:1]], "header": [None, {"Past QA": "80"}]}) for i in range(5)]
    w = VariantsParquet(tmp_path / "variants.parquet")
    for f in frames:
        w.write(f)
    w.write(frames[0].iloc[:0])  # an empty frame writes nothing
    w.close()
    back = pd.read_parquet(tmp_path / "variants.parquet")
    assert len(back) == 10 and back["item_id"].tolist() == [f"t{i}" for i in range(5) for _ in range(2)]
    assert [dict(t) for t in back["turns"].iloc[0]] == turns
    assert back["header"].isna().iloc[0] and back["header"].iloc[1] == "Past QA: 80"
    assert pq.ParquetFile(tmp_path / "variants.parquet").metadata.num_row_groups == 1  # held back: one group
    w = VariantsParquet(tmp_path / "each.parquet", group_bytes=1)  # every frame its own row group
    for f in frames:
        w.write(f)
    w.close()
    assert pq.ParquetFile(tmp_path / "each.parquet").metadata.num_row_groups == 5
