"""ItemStats.compact: compacted chunks merge like a binary counter, and the frames stay what was added."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cfbench.studies.contact_center_qa.streamed import ItemStats


def _part(rng: np.random.Generator, item: int) -> pd.DataFrame:
    n = int(rng.integers(1, 6))
    return pd.DataFrame({"judge": rng.choice(["a", "b", "c"], size=n), "item_id": f"t{item:04d}",
                         "stat": rng.random(n), "n_pairs": rng.integers(0, 4, size=n).astype(float)})


def test_compacted_frames_equal_the_added_frames_and_stay_few():
    rng = np.random.default_rng(7)
    s, added = ItemStats(), []
    for item in range(1, 401):
        p = _part(rng, item)
        added.append(p)
        s.add("cfr", p)
        if item % 10 == 0:
            s.compact()
            # one frame per chunk would be item // 10 frames; the binary counter keeps O(log) of them
            assert len(s.parts["cfr"]) <= 2 * math.log2(item // 10) + 2, (item, len(s.parts["cfr"]))
            assert all(isinstance(f["judge"].dtype, pd.CategoricalDtype) for f in s.parts["cfr"])
    assert len(s.parts["cfr"]) < 40 // 2
    want = pd.concat(added, ignore_index=True)
    got = s.frame("cfr")
    pd.testing.assert_frame_equal(got, want, check_dtype=False)  # text comes back as object, as before
    assert got["item_id"].nunique() == 400


def test_spilled_chunks_come_back_in_order_and_their_files_are_removed(tmp_path):
    rng = np.random.default_rng(11)
    s, added, other = ItemStats(spill=tmp_path), [], []
    for item in range(1, 58):  # the last 7 items stay in memory, after 5 spilled chunks
        p, q = _part(rng, item), _part(rng, item).assign(stat=np.nan)
        added.append(p)
        other.append(q)
        s.add("cfr", p)
        s.add("masd", q)
        if item % 10 == 0:
            s.compact()
            assert s.parts == {}  # nothing compacted stays in memory
            assert [n for _, n in s.spilled.values()] == [item // 10] * 2  # one chunk per call and statistic
    assert len(list(tmp_path.iterdir())) == 2  # one file per statistic
    pd.testing.assert_frame_equal(s.frame("cfr"), pd.concat(added, ignore_index=True), check_dtype=False)
    pd.testing.assert_frame_equal(s.frame("masd"), pd.concat(other, ignore_index=True), check_dtype=False)
    assert list(tmp_path.iterdir()) == []  # read back once, then removed
    assert s.frame("none").empty
