"""CFR (Eq. 3) and MASD (Eq. 4): hand-computed cases and a brute-force pair enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cc_fixtures import cfr_masd, flip_rate, mean_abs_score_diff, pair_table


def _frame(rows):
    return pd.DataFrame(rows, columns=["judge", "dimension", "item_id", "question_id", "condition",
                                       "answer_yes", "confidence", "parse_ok"])


def test_cfr_hand_computed_eq3():
    # 3 conditions -> |P_d| = 3 pairs; N = 2 items.
    # item a: Y = (1, 1, 0) -> 2 discordant pairs; item b: (0, 0, 0) -> 0.
    # CFR = (2 + 0) / (3 * 2) = 1/3
    f = _frame([("j", "eth", "a", "q", c, y, 50, True) for c, y in zip("xyz", (1, 1, 0))] +
               [("j", "eth", "b", "q", c, 0, 50, True) for c in "xyz"])
    t = flip_rate(f, n_boot=0)
    assert t["cfr"].iloc[0] == pytest.approx(1 / 3)
    assert (t["n_items"].iloc[0], t["n_pairs"].iloc[0], t["n_pairs_excluded"].iloc[0]) == (2, 6, 0)


def test_masd_hand_computed_eq4():
    # item a: s = (10, 40, 20): |10-40| + |10-20| + |40-20| = 60; item b: (50, 50, 80): 0 + 30 + 30 = 60
    # MASD = 120 / 6 = 20
    f = _frame([("j", "pol", "a", "q", c, 1, s, True) for c, s in zip("xyz", (10, 40, 20))] +
               [("j", "pol", "b", "q", c, 1, s, True) for c, s in zip("xyz", (50, 50, 80))])
    assert mean_abs_score_diff(f, n_boot=0)["masd"].iloc[0] == pytest.approx(20.0)


def test_failed_judgments_remove_their_pairs_and_are_counted():
    # item a: condition z unparsed -> only pair (x, y) remains, and it flips
    f = _frame([("j", "g", "a", "q", "x", 1, 10, True), ("j", "g", "a", "q", "y", 0, 30, True),
                ("j", "g", "a", "q", "z", np.nan, np.nan, False),
                ("j", "g", "b", "q", "x", 1, 10, True), ("j", "g", "b", "q", "y", 1, 10, True),
                ("j", "g", "b", "q", "z", 1, 40, True)])
    t = flip_rate(f, n_boot=0)
    assert t["cfr"].iloc[0] == pytest.approx(1 / 4)  # 1 flip among 1 + 3 valid pairs
    assert t["n_pairs"].iloc[0] == 4 and t["n_pairs_excluded"].iloc[0] == 2
    m = mean_abs_score_diff(f, n_boot=0)
    assert m["masd"].iloc[0] == pytest.approx((20 + 0 + 30 + 30) / 4)


def test_parse_failure_with_a_stale_value_is_still_excluded():
    f = _frame([("j", "g", "a", "q", "x", 1, 10, True), ("j", "g", "a", "q", "y", 0, 90, False)])
    assert np.isnan(flip_rate(f, n_boot=0)["cfr"].iloc[0])
    assert flip_rate(f, n_boot=0)["n_pairs_excluded"].iloc[0] == 1


def _brute(frame, value, binary):
    out = {}
    for (j, d), g in frame.groupby(["judge", "dimension"]):
        tot = n = 0
        for _, u in g.groupby(["item_id", "question_id"]):
            u = u[u["parse_ok"] & u[value].notna()]
            for (_, a), (_, b) in itertools.combinations(u.iterrows(), 2):
                tot += (a[value] != b[value]) if binary else abs(a[value] - b[value])
                n += 1
        out[(j, d)] = tot / n if n else np.nan
    return out


def test_matches_brute_force_pair_enumeration():
    rng = np.random.default_rng(7)
    rows = []
    for j in ("j1", "j2"):
        for d, conds in (("gender", ["m", "f"]), ("eth", list("abcdef")), ("style", ["n", "o", "p"])):
            for item in range(6):
                for q in ("q1", "q2"):
                    for c in conds:
                        ok = rng.random() > 0.1
                        rows.append((j, d, f"i{item}", q, c, float(rng.integers(0, 2)) if ok else np.nan,
                                     float(rng.integers(0, 101)), ok))
    f = _frame(rows)
    cfr = flip_rate(f, n_boot=0).set_index(["judge", "dimension"])["cfr"]
    masd = mean_abs_score_diff(f, n_boot=0).set_index(["judge", "dimension"])["masd"]
    bc, bm = _brute(f, "answer_yes", True), _brute(f, "confidence", False)
    for k in bc:
        assert cfr[k] == pytest.approx(bc[k])
        assert masd[k] == pytest.approx(bm[k])


def test_duplicate_condition_in_a_unit_is_an_input_error():
    f = _frame([("j", "g", "a", "q", "x", 1, 10, True), ("j", "g", "a", "q", "x", 0, 10, True)])
    with pytest.raises(InputError) as e:
        flip_rate(f, n_boot=0)
    assert e.value.field == "condition" and e.value.record["item_id"] == "a"


def test_non_binary_answer_and_missing_column_are_input_errors():
    f = _frame([("j", "g", "a", "q", "x", 2, 10, True), ("j", "g", "a", "q", "y", 0, 10, True)])
    with pytest.raises(InputError) as e:
        flip_rate(f, n_boot=0)
    assert e.value.field == "answer_yes"
    with pytest.raises(InputError) as e:
        flip_rate(f.drop(columns=["condition"]), n_boot=0)
    assert e.value.field == "condition"


def test_bootstrap_interval_is_seeded_and_contains_estimate():
    rng = np.random.default_rng(1)
    f = _frame([("j", "g", f"i{i}", "q", c, float(rng.integers(0, 2)), float(rng.integers(0, 100)), True)
                for i in range(30) for c in "abc"])
    a = flip_rate(f, n_boot=300, seed=5)
    b = flip_rate(f, n_boot=300, seed=5)
    pd.testing.assert_frame_equal(a, b)
    assert a["ci_low"].iloc[0] <= a["cfr"].iloc[0] <= a["ci_high"].iloc[0]
    assert a["ci_method"].iloc[0] == "clopper-pearson, cluster-adjusted n_eff"
    m = mean_abs_score_diff(f, n_boot=300, seed=5)
    assert m["ci_low"].iloc[0] <= m["masd"].iloc[0] <= m["ci_high"].iloc[0]
    assert m["ci_method"].iloc[0] == "bootstrap-t and t over items (union)"


def test_pair_table_counts():
    f = _frame([("j", "g", "a", "q", c, y, 0, True) for c, y in zip("wxyz", (1, 1, 1, 0))])
    p = pair_table(f, value="answer_yes")
    assert p[["n_conditions", "n_valid", "n_yes", "stat", "n_pairs"]].iloc[0].tolist() == [4, 4, 3, 3, 6]


_KEYS = ["judge", "dimension", "item_id", "question_id"]


def _random_frame(seed: int, keys: str, shuffle: bool, sizes: str = "mixed") -> pd.DataFrame:
    """NaN values, parse failures (some with a stale value), keys as ``keys``, units of ``sizes``:
    "mixed" (1 to 7 conditions), "equal" (4 each: with rows in order, the layout is a transpose) or
    "big" (one dimension with 40: conditions checked by counting, scores sorted)."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in ("j1", "j2"):
        for d in ("eth", "gen", "sty"):
            n_cond = {"mixed": int(rng.integers(2, 8)), "equal": 4, "big": 40 if d == "sty" else 3}[sizes]
            conds = [f"c{k:02d}" for k in range(n_cond)]
            for it in range(int(rng.integers(2, 7))):
                for q in ("q1", "q2"):
                    take = int(rng.integers(1, n_cond + 1)) if sizes == "mixed" else n_cond
                    for c in rng.permutation(conds)[:take]:
                        rows.append((j, d, f"i{it}", q, c,
                                     float(rng.integers(0, 2)) if rng.random() > 0.1 else np.nan,
                                     round(float(rng.random()) * 100, 1) if rng.random() > 0.1 else np.nan,
                                     bool(rng.random() > 0.15)))
    f = _frame(rows)
    if keys == "object":
        f[_KEYS + ["condition"]] = f[_KEYS + ["condition"]].astype(object)
    elif keys == "category":  # category order is not the sorted order; one category never occurs
        for c in ("judge", "dimension", "question_id", "condition"):
            f[c] = pd.Categorical(f[c], categories=sorted(f[c].unique(), reverse=True) + ["unused"])
        f.loc[rng.random(len(f)) < 0.05, "dimension"] = np.nan
    elif keys == "nan":
        f[["judge", "item_id"]] = f[["judge", "item_id"]].astype(object)
        f.loc[rng.random(len(f)) < 0.1, "judge"] = None
        f.loc[rng.random(len(f)) < 0.1, "item_id"] = np.nan
        f.loc[rng.random(len(f)) < 0.1, "question_id"] = np.nan
    elif keys == "int":
        f["item_id"] = f["item_id"].str[1:].astype(int) * 10**12 - 5
    f = f.drop_duplicates(_KEYS + ["condition"])
    return f.sample(frac=1, random_state=seed) if shuffle else f


def _na(v):
    return "<missing>" if pd.isna(v) else v


def _reference(frame, value, binary, by, unit):
    """Per ``by`` key: every pair of valid conditions within each unit, enumerated in plain Python."""
    units = {}
    for r in frame.to_dict("records"):
        units.setdefault(tuple(_na(r[c]) for c in by + unit), []).append(r)
    out = {}
    for key, rows in units.items():
        vals = [r[value] for r in rows if r["parse_ok"] and not pd.isna(r[value])]
        pairs = list(itertools.combinations(vals, 2))
        a = out.setdefault(key[:len(by)], {"stat": 0.0, "n_pairs": 0, "n_all": 0, "n_units": 0, "items": set()})
        a["stat"] += sum((x != y) if binary else abs(x - y) for x, y in pairs)
        a["n_pairs"] += len(pairs)
        a["n_all"] += len(rows) * (len(rows) - 1) // 2
        a["n_units"] += bool(pairs)
        if pairs and not pd.isna(rows[0]["item_id"]):
            a["items"].add(rows[0]["item_id"])
    return out


def _check_against_reference(table, frame, name, value, binary, by, unit):
    ref = _reference(frame, value, binary, by, unit)
    order = frame.groupby(by, sort=True, dropna=False, observed=True).size().index.tolist() if by else [()]
    assert [tuple(_na(v) for v in (k if isinstance(k, tuple) else (k,))) for k in order] == \
        [tuple(_na(v) for v in k) for k in table[by].itertuples(index=False)]
    for row in table.to_dict("records"):
        a = ref[tuple(_na(row[c]) for c in by)]
        est = a["stat"] / a["n_pairs"] if a["n_pairs"] else np.nan
        assert row[name] == pytest.approx(est, rel=1e-12, nan_ok=True)
        assert (row["n_items"], row["n_units"], row["n_pairs"], row["n_pairs_excluded"]) == \
            (len(a["items"]), a["n_units"], a["n_pairs"], a["n_all"] - a["n_pairs"])


@pytest.mark.parametrize("shuffle", [False, True], ids=["contiguous", "shuffled"])
@pytest.mark.parametrize("keys", ["str", "object", "category", "nan", "int"])
@pytest.mark.parametrize("sizes", ["mixed", "equal", "big"])
@pytest.mark.parametrize("seed", range(2))
def test_tables_match_a_brute_force_reference(seed, sizes, keys, shuffle):
    f = _random_frame(seed, keys, shuffle, sizes)
    for by in (["judge", "dimension"], ["judge"], []):
        unit = ["item_id", "question_id"] + [c for c in ("judge", "dimension") if c not in by]
        cfr, masd = cfr_masd(f, by=by, unit=unit, n_boot=50, seed=seed)
        _check_against_reference(cfr, f, "cfr", "answer_yes", True, by, unit)
        _check_against_reference(masd, f, "masd", "confidence", False, by, unit)
        pd.testing.assert_frame_equal(cfr, flip_rate(f, by=by, unit=unit, n_boot=50, seed=seed))
        pd.testing.assert_frame_equal(masd, mean_abs_score_diff(f, by=by, unit=unit, n_boot=50, seed=seed))


@pytest.mark.parametrize("keys", ["str", "category", "nan"])
def test_pair_table_matches_a_brute_force_reference(keys):
    f = _random_frame(5, keys, shuffle=True)
    p = pair_table(f, value="confidence", kind="score")
    expected_order = f.groupby(_KEYS, sort=True, dropna=False, observed=True).size().index.tolist()
    assert [tuple(map(_na, k)) for k in p[_KEYS].itertuples(index=False)] == \
        [tuple(map(_na, k)) for k in expected_order]
    units = {}
    for r in f.to_dict("records"):
        units.setdefault(tuple(_na(r[c]) for c in _KEYS), []).append(r)
    for row in p.to_dict("records"):
        rows = units[tuple(_na(row[c]) for c in _KEYS)]
        vals = [r["confidence"] for r in rows if r["parse_ok"] and not pd.isna(r["confidence"])]
        assert (row["n_conditions"], row["n_valid"]) == (len(rows), len(vals))
        assert row["stat"] == pytest.approx(sum(abs(x - y) for x, y in itertools.combinations(vals, 2)))


def test_many_sparse_key_columns():
    # 7 integer key columns of ~1000 values each: their combined range overflows int64 and is
    # compressed on the way; the (unit, condition) key is sparse, so duplicates are found by sorting
    rng = np.random.default_rng(2)
    n = 3000  # 1000 units of 3 rows
    f = pd.DataFrame({f"k{i}": np.repeat(rng.integers(0, 1000, n // 3), 3) for i in range(7)})
    f["judge"], f["dimension"], f["item_id"] = "j", "d", np.repeat(np.arange(n // 3), 3)
    f["condition"] = rng.permutation(n)
    f["answer_yes"], f["parse_ok"] = rng.integers(0, 2, n).astype(float), True
    unit = ["item_id"] + [f"k{i}" for i in range(7)]
    t = flip_rate(f, unit=unit, n_boot=0)
    assert t["n_units"].iloc[0] == n // 3
    _check_against_reference(t, f, "cfr", "answer_yes", True, ["judge", "dimension"], unit)
    f.loc[5, "condition"] = f.loc[4, "condition"]
    with pytest.raises(InputError) as e:
        flip_rate(f, unit=unit, n_boot=0)
    assert e.value.field == "condition" and e.value.record["item_id"] == 1


@pytest.mark.parametrize("shuffle", [False, True], ids=["contiguous", "shuffled"])
@pytest.mark.parametrize("sizes", ["mixed", "equal", "big"])
def test_repeated_condition_names_the_first_of_its_rows(sizes, shuffle):
    f = _random_frame(2, "str", shuffle, sizes).reset_index(drop=True)
    unit = (f[_KEYS] == f.loc[len(f) // 2, _KEYS]).all(axis=1).to_numpy().nonzero()[0]
    f.loc[unit[-1], "condition"] = f.loc[unit[0], "condition"]  # unit sizes unchanged
    with pytest.raises(InputError) as e:
        flip_rate(f, n_boot=0)
    assert e.value.field == "condition"
    assert e.value.record == f.loc[unit[0], _KEYS + ["condition"]].to_dict()


@pytest.mark.parametrize("keys", ["str", "category", "nan"])
def test_duplicate_names_the_first_offending_row(keys):
    f = _random_frame(1, keys, shuffle=True)
    dup = f.iloc[[7]].copy()
    dup["answer_yes"] = 1.0
    f = pd.concat([f.iloc[:3], dup, f.iloc[3:]])  # the copy comes first, the original later
    with pytest.raises(InputError) as e:
        mean_abs_score_diff(f, n_boot=0)
    assert e.value.field == "condition"
    assert {k: _na(v) for k, v in e.value.record.items()} == \
        {k: _na(f.iloc[3][k]) for k in _KEYS + ["condition"]}


def _reference_intervals(f: pd.DataFrame, n_boot: int, seed: int) -> tuple[list, list]:
    """Straightforward per-group code: valid rows only, pairs per unit, sums per item; CFR by
    statsmodels' Clopper-Pearson ("beta") on the effective counts, MASD by a bootstrap-t written with
    index resamples and explicit per-resample loops (the same draws as the library's count matrix)."""
    from statsmodels.stats.proportion import proportion_confint
    from scipy import stats as st

    v = f[f["parse_ok"] & f["item_id"].notna()]
    cfr_rows, masd_rows = [], []
    rng = np.random.default_rng(seed)
    for _, g in v.groupby(["judge", "dimension"], sort=True):
        per = []
        for it, gi in g.groupby("item_id", sort=True):
            flips = pairs = absd = 0.0
            for _, u in gi.groupby("question_id"):
                y, x = u["answer_yes"].to_numpy(), u["confidence"].to_numpy()
                for i in range(len(u)):
                    for j in range(i + 1, len(u)):
                        flips += y[i] != y[j]
                        absd += abs(x[i] - x[j])
                        pairs += 1
            if pairs:
                per.append((flips, absd, pairs))
        e, s_, m = (np.array(c) for c in zip(*per))
        K, X, M = len(m), e.sum(), m.sum()
        p = X / M
        if 0 < X < M:
            deff = min(max((K / (K - 1) * ((e - p * m) ** 2).sum() / M ** 2) / (p * (1 - p) / M), 1.0), M / K)
        else:
            deff = M / K
        cfr_rows.append(proportion_confint(p * M / deff, M / deff, alpha=0.05, method="beta"))
        r = s_.sum() / M
        se = np.sqrt(((s_ - r * m) ** 2).sum() / (M / K) ** 2 / (K * (K - 1)))
        idx = rng.integers(0, K, size=(n_boot, K))
        t = []
        for b in range(n_boot):
            sb, mb = s_[idx[b]], m[idx[b]]
            rb = sb.sum() / mb.sum()
            seb = np.sqrt(((sb - rb * mb) ** 2).sum() * K / (K - 1)) / mb.sum()
            # floored: a resample with no spread takes se / sqrt(K), any other at least se / K
            seb = se / np.sqrt(K) if seb <= 1e-9 * se else max(seb, se / K)
            t.append((rb - r) / seb)
        lo_t, hi_t = np.quantile(t, [0.025, 0.975])
        # the long side of t (2.5 % quantile farther from 0) at its 1 % quantile, at most 1.35x as far
        if -lo_t > hi_t:
            lo_t = max(np.quantile(t, 0.01), 1.35 * lo_t)
        else:
            hi_t = min(np.quantile(t, 0.99), 1.35 * hi_t)
        q = st.t.ppf(0.975, K - 1)
        c = (K / (K - 1)) ** 2  # the small-sample widening of the bootstrap-t half-widths (docs/statistics.md)
        masd_rows.append((min(r - c * hi_t * se, r - q * se), max(r - c * lo_t * se, r + q * se)))
    return cfr_rows, masd_rows


def test_intervals_match_an_independent_reference():
    rng = np.random.default_rng(11)
    rows = []
    for j in ("j1", "j2"):
        for d in ("eth", "gen"):
            for it in range(12):
                for q in ("q1", "q2"):
                    for c in "abcd"[: 2 + it % 3]:
                        ok = bool(rng.random() > 0.1)
                        rows.append((j, d, None if it == 11 else f"i{it:02d}", q, c, float(rng.integers(0, 2)),
                                     float(rng.integers(0, 101)), ok))
    f = _frame(rows)
    cfr, masd = cfr_masd(f.iloc[::-1], n_boot=200, seed=3)
    want_cfr, want_masd = _reference_intervals(f, 200, 3)
    assert cfr["n_items"].tolist() == [11] * 4
    np.testing.assert_allclose(cfr[["ci_low", "ci_high"]].to_numpy(float), want_cfr, rtol=1e-9)
    np.testing.assert_allclose(masd[["ci_low", "ci_high"]].to_numpy(float), want_masd, rtol=1e-9)
    assert (cfr["ci_method"] == "clopper-pearson, cluster-adjusted n_eff").all()
    assert (masd["ci_method"] == "bootstrap-t and t over items (union)").all()


def test_empty_frame():
    f = _frame([])
    assert flip_rate(f, n_boot=0).empty
    t = mean_abs_score_diff(f, by=[], n_boot=0)
    assert len(t) == 1 and np.isnan(t["masd"].iloc[0]) and t["n_pairs"].iloc[0] == 0


def test_metrics_have_no_study_column_defaults():
    """The metrics module names no study column: value, unit and grouping must be given."""
    from cfbench.metrics import counterfactual as M

    f = pd.DataFrame({"judge": "j", "dimension": "d", "item_id": ["a", "a"], "question_id": "q",
                      "condition": ["x", "y"], "answer_yes": [1, 0], "parse_ok": True})
    for fn in (M.flip_rate, M.mean_abs_score_diff, M.pair_table, M.flip_distribution):
        with pytest.raises(TypeError, match="required keyword-only"):
            fn(f)
    assert not any(name in ("_UNIT", "_BY") for name in vars(M))
    t = M.flip_rate(f, value="answer_yes", unit=["item_id", "question_id"], by=["dimension"], n_boot=0)
    assert list(t.columns[:2]) == ["dimension", "cfr"] and t["cfr"].iloc[0] == 1.0
