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
