"""The faster effect-direction grouping and whole-number bootstrap give the same numbers as the
straightforward per-group code they replaced (kept here as the reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cfbench.metrics.counterfactual import effect_direction
from cfbench.stats.bootstrap import percentile_interval, ratio_interval, resample_counts
from cfbench.stats.intervals import mean_interval_t


def _reference_ratio_interval(num, den, *, n_boot, rng, confidence=0.95):
    """The count-matrix form: resample weights times the per-unit sums."""
    w = resample_counts(num.size, n_boot, rng)
    d = w @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w @ num) / d
    r = r[d > 0]
    low, high = percentile_interval(r, confidence)
    return float(low), float(high)


@pytest.mark.parametrize("kind", ["whole floats", "ints", "fractions", "huge whole"])
def test_ratio_interval_is_the_count_matrix_interval(kind):
    g = np.random.default_rng(3)
    m = 400
    den = g.integers(0, 5, m).astype(float)
    num = {"whole floats": g.integers(-30, 30, m).astype(float), "ints": g.integers(0, 3, m),
           "fractions": g.random(m) * 9.7, "huge whole": np.full(m, 2.0 ** 50)}[kind]
    for seed in range(5):
        got = ratio_interval(num, den, n_boot=300, rng=np.random.default_rng(seed))
        want = _reference_ratio_interval(num.astype(float), den, n_boot=300, rng=np.random.default_rng(seed))
        assert got[:2] == want and got[2] == "bootstrap"


def _reference_direction(frame, originals, *, value, unit, by, match, item="item_id", ok="parse_ok",
                         n_boot=200, seed=0):
    """Per group: copy its rows, group them by item, bootstrap, in group order."""
    orig = originals.loc[originals[value].notna() & originals[ok], match + unit + [value]]
    f = frame.loc[frame[value].notna() & frame[ok], list(dict.fromkeys(by + unit + ["condition", value]))]
    merged = f.merge(orig.rename(columns={value: "_orig"}), on=match + unit, how="inner")
    merged["_diff"] = merged[value] - merged["_orig"]
    rng = np.random.default_rng(seed)
    rows = []
    cols = by + ["condition"]
    for key, grp in merged.groupby(cols, sort=True, dropna=False):
        per_item = grp.groupby(item)["_diff"].agg(["sum", "count"])
        lo, hi, how = mean_interval_t(per_item["sum"].to_numpy(float), per_item["count"].to_numpy(float),
                                      n_boot=n_boot, rng=rng)
        rows.append(dict(zip(cols, key)) | {"mean_diff": float(grp["_diff"].mean()), "n_units": len(grp),
                                             "n_items": len(per_item), "ci_low": lo, "ci_high": hi, "ci_method": how})
    return pd.DataFrame(rows, columns=cols + ["mean_diff", "n_units", "n_items", "ci_low", "ci_high", "ci_method"])


def _frames(value_kind: str):
    g = np.random.default_rng(11)
    items = [f"i{k:02d}" for k in range(25)]
    recs, origs = [], []
    for judge in ("j1", "j2"):
        for dim in ("gender", "name", "header"):
            for it in items:
                for q in ("q1", "q2"):
                    base = g.random()
                    origs.append({"judge": judge, "arm": "baseline", "item_id": it, "question_id": q,
                                  "v": round(100 * base) if value_kind == "whole" else 100 * base,
                                  "parse_ok": g.random() > 0.05})
                    for cond in ("a", "b", "c"):
                        x = base + g.normal(0, 0.2)
                        recs.append({"judge": judge, "arm": "baseline", "dimension": dim, "condition": cond,
                                     "item_id": it if g.random() > 0.02 else None, "question_id": q,
                                     "v": round(100 * x) if value_kind == "whole" else 100 * x,
                                     "parse_ok": g.random() > 0.05})
    frame = pd.DataFrame(recs)
    frame["dimension"] = pd.Categorical(frame["dimension"], categories=["name", "gender", "header", "unused"])
    originals = pd.DataFrame(origs).drop_duplicates(["judge", "arm", "item_id", "question_id"])
    return frame, originals


@pytest.mark.parametrize("value_kind", ["whole", "fractional"])
def test_effect_direction_equals_the_per_group_loop(value_kind):
    frame, originals = _frames(value_kind)
    kw = dict(value="v", unit=["item_id", "question_id"], by=["judge", "arm", "dimension"], match=["judge", "arm"])
    got = effect_direction(frame, originals, **kw, n_boot=200, seed=4)
    want = _reference_direction(frame, originals, **kw, n_boot=200, seed=4)
    assert len(got) == 2 * 3 * 3
    pd.testing.assert_frame_equal(got, want, check_exact=True, check_dtype=False, check_categorical=False)


def test_effect_direction_of_nothing_is_an_empty_table():
    frame, originals = _frames("whole")
    got = effect_direction(frame.iloc[:0], originals, value="v", unit=["item_id", "question_id"],
                           by=["judge", "arm", "dimension"], match=["judge", "arm"])
    assert got.empty and list(got.columns) == ["judge", "arm", "dimension", "condition", "mean_diff", "n_units", "n_items",
                                               "ci_low", "ci_high", "ci_method"]
