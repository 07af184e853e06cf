"""CFR (Eq. 3) and MASD (Eq. 4): hand-computed cases and a brute-force pair enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from cfbench.errors import InputError
from cfbench.metrics.counterfactual import flip_rate, mean_abs_score_diff, pair_table


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
    assert a["ci_method"].iloc[0] == "bootstrap"
    m = mean_abs_score_diff(f, n_boot=300, seed=5)
    assert m["ci_low"].iloc[0] <= m["masd"].iloc[0] <= m["ci_high"].iloc[0]


def test_pair_table_counts():
    f = _frame([("j", "g", "a", "q", c, y, 0, True) for c, y in zip("wxyz", (1, 1, 1, 0))])
    p = pair_table(f, value="answer_yes")
    assert p[["n_conditions", "n_valid", "n_yes", "stat", "n_pairs"]].iloc[0].tolist() == [4, 4, 3, 3, 6]
