"""metrics.state.ItemStatistics.compact: compacted chunks merge like a binary counter, spilled chunks come back
in order, and the frames stay what was added."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cfbench.metrics.state import ItemStatistics as ItemStats


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


# -- ItemState: update / merge / compute on a toy statistic that needs all of an item's rows ----------------
def _reduce(rows):
    """Per item: the range (max - min) of ``x``, which no sum over rows can give."""
    from cfbench.metrics.state import ItemStatistics

    s = ItemStatistics()
    if rows is not None and len(rows):
        s.add("range", rows.groupby("item_id")["x"].agg(lambda v: v.max() - v.min()).rename("r").reset_index())
    return s


def _compute(stats):
    f = stats.frame("range")
    return float(f.sort_values("item_id")["r"].sum()) if len(f) else 0.0


def _toy(seed: int, n_items: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 6, size=n_items)
    return pd.DataFrame({"item_id": np.repeat([f"i{k:02d}" for k in range(n_items)], n),
                         "x": rng.integers(0, 100, size=int(n.sum())).astype(float)})


def test_item_state_any_row_chunks_merge_to_one_state():
    from cfbench.metrics.state import ItemState

    rows = _toy(3)
    want = rows.groupby("item_id")["x"].agg(lambda v: v.max() - v.min()).sum()  # independent: all rows at once
    rng = np.random.default_rng(4)
    for _ in range(5):
        shuffled = rows.iloc[rng.permutation(len(rows))]
        cuts = sorted([0, 0, 1, *rng.integers(0, len(rows), size=6).tolist(), len(rows), len(rows)])
        states = [ItemState(_reduce, _compute).update(shuffled.iloc[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
        merged = states[0]
        for s in states[1:]:
            merged.merge(s)
        assert merged.compute() == want
    # sealing per chunk is only right when the chunk holds whole items: a split item is refused, not miscounted
    many = rows.groupby("item_id")["x"].transform("size") > 1
    item = rows.loc[many, "item_id"].iloc[0]
    mine = rows[rows["item_id"] == item]
    state = ItemState(_reduce, _compute).update(mine.iloc[:1], complete=True)
    with pytest.raises(ValueError, match="arrived after"):
        state.update(mine.iloc[1:])


def test_item_state_waves_compacted_and_spilled(tmp_path):
    from cfbench.metrics.state import ItemState

    rows = _toy(5, n_items=40)
    items = rows["item_id"].unique()
    state = ItemState(_reduce, _compute, spill=tmp_path, compact_every=3)
    for k in range(0, len(items), 4):  # waves of 4 whole items, computed after each
        wave = rows[rows["item_id"].isin(items[k:k + 4])]
        state.update(wave, complete=True)
        seen = rows[rows["item_id"].isin(items[:k + 4])]
        assert state.compute() == seen.groupby("item_id")["x"].agg(lambda v: v.max() - v.min()).sum()
    assert list(state.items) == list(items)
    assert list(tmp_path.iterdir()) == []
