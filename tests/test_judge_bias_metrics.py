"""Judge-bias metrics against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cfbench.stats.intervals import paired_difference
from cfbench.stats.matched import tango_interval
from cfbench.studies.judge_bias import metrics as M


def _parsed(rows):
    return pd.DataFrame([{"judge": "j", "item_id": i, "task": "pairwise", "condition": c, "order": o, "answer": a,
                          "parse_ok": a is not None, "score": np.nan} for i, c, o, a in rows])


def _items(parsed, targets=None, kinds=None):
    ids = sorted(parsed["item_id"].unique())
    return pd.DataFrame({"item_id": ids, "kind": [(kinds or {}).get(i, "draft") for i in ids],
                         "cued_candidate": [(targets or {}).get(i, "real") for i in ids]})


def _table(parsed, name, *, targets=None, kinds=None, **options):
    """One table of the study (item statistics, then the tables), this test's one judge's rows."""
    t = M.study_tables(parsed, _items(parsed, targets, kinds), **{"cues": [], **options})[name]
    return t.drop(columns=["judge"])


def _cells(parsed, name, targets=None):
    """The judge's per-item cells of statistic ``name``."""
    return M.judge_cells(M.item_stats(parsed, _items(parsed, targets)), name, "j")


def _cue_table(parsed, targets, cues, **kw):
    s = M.item_stats(parsed, _items(parsed, dict(targets)))
    return M.cue_table(M.judge_cells(s, "cues", "j"), cues, has_repeats=any(k[0] == "repeat" for k in s.flags), **kw)


# i1: real in both orders (consistent, one slot-A pick); i2: slot A both times (inconsistent);
# i3: alt in both orders (consistent, one slot-A pick)
BASE = [("i1", "baseline", "realA", "A"), ("i1", "baseline", "realB", "B"),
        ("i2", "baseline", "realA", "A"), ("i2", "baseline", "realB", "A"),
        ("i3", "baseline", "realA", "B"), ("i3", "baseline", "realB", "A")]


def test_choices_map_slots_to_candidates():
    ch = M.choices(_parsed(BASE + [("i4", "baseline", "realA", None)]).drop(columns=["judge"]))
    assert list(ch["chose"][:6]) == ["real", "real", "real", "alt", "alt", "alt"] and pd.isna(ch["chose"].iloc[6])


def test_position_consistency_and_bias_by_hand():
    t = _table(_parsed(BASE), "position", n_boot=200, seed=0).set_index("metric")
    pc = t.loc["position_consistency"]
    assert pc.estimate == pytest.approx(2 / 3) and pc.n_items == 3
    # one pair per item: the exact Clopper-Pearson interval for 2 of 3
    assert pc.ci_low == pytest.approx(stats.beta.ppf(0.025, 2, 2)) and pc.ci_high == pytest.approx(stats.beta.ppf(0.975, 3, 1))
    pb = t.loc["position_bias_slot_a"]
    assert pb.estimate == pytest.approx((0 + 0.5 + 0) / 3) and pb.ci_low < pb.estimate < pb.ci_high


def test_accuracy_counts_answers_preferring_the_sent_reply_on_controls():
    kinds = {"i1": "control", "i2": "control", "i3": "draft"}
    t = _table(_parsed(BASE), "accuracy", kinds=kinds).set_index("kind")
    assert t.loc["control", "estimate"] == pytest.approx(3 / 4) and t.loc["control", "n_pairs"] == 4
    # one draft item: no interval is formed (never [0, 0]); the method says why
    assert t.loc["draft", "estimate"] == 0 and math.isnan(t.loc["draft", "ci_high"])
    assert t.loc["draft", "ci_method"].startswith("none: one item")


def test_cue_shift_net_flips_and_sign_test_by_hand():
    rows = BASE + [
        ("i1", "authority", "realA", "B"), ("i1", "reworded", "realA", "A"),   # target alt: moved to it; no noise
        ("i2", "authority", "realA", "A"), ("i2", "reworded", "realA", "B"),   # target real: stays; reworded flips
        ("i3", "authority", "realB", "A"), ("i3", "reworded", "realB", "A"),   # target alt: already chosen
    ]
    targets = pd.Series({"i1": "alt", "i2": "real", "i3": "alt"})
    t = _cue_table(_parsed(rows), targets, ["authority", "position"], gate_max=0.1, alpha=0.05,
                   multiplicity="holm", n_boot=300, seed=0).set_index("cue")
    a = t.loc["authority"]
    assert a.chose_cued_with_cue == pytest.approx(1.0) and a.chose_cued_without == pytest.approx(2 / 3)
    assert a["shift"] == pytest.approx(1 / 3) and (a.items_toward_cue, a.items_away) == (1, 0) and a.p_sign == 1.0
    assert a.flip_rate == pytest.approx(1 / 3) and a.noise_flip_rate == pytest.approx(1 / 3)
    assert a.net_flip_rate == pytest.approx(0.0) and a.net_ci_low < 0 < a.net_ci_high
    # Tango on the items' 2x2 counts: shift n10 = 1 (i1 moved to the cued reply), n01 = 0; net flips: the cue
    # flips i1 only, the reworded prompt i2 only -> n10 = n01 = 1
    assert (a.shift_ci_low, a.shift_ci_high) == pytest.approx(tuple(map(float, tango_interval(1, 0, 3))))
    assert (a.net_ci_low, a.net_ci_high) == pytest.approx(tuple(map(float, tango_interval(1, 1, 3))))
    assert a.shift_ci_method == a.net_ci_method == M.MATCHED_METHOD
    # Tango with no discordant item bounds at z^2/(n + z^2) < 0.10 from 35 items on: below, not decidable
    assert M.items_needed_matched(0.10) == 35
    # no responsiveness check given: never a pass; the straddling interval reads uninformative, not fail
    assert a.gate_kind == "uninformative" and a.gate.startswith("uninformative (not shown to look")
    r = _cue_table(_parsed(rows), targets, ["authority"], gate_max=0.1, alpha=0.05, multiplicity="holm",
                   n_boot=300, seed=0, responsive=(True, "checked")).iloc[0]
    assert r.gate == "inconclusive" and r.point_rule == "pass" and r.forecast.startswith("about ")
    # position: target in slot A vs in slot B under the base prompt; i1 (alt): real both times -> 0;
    # i2 (real): A both times -> chose real in A, alt in B -> +1; i3 (alt): alt both times -> 0
    p = t.loc["position"]
    assert p["shift"] == pytest.approx(1 / 3) and p.flip_rate == pytest.approx(1 / 3)
    assert t["p_adjusted"].ge(t["p_sign"]).all()


def test_no_movement_never_gives_a_zero_width_interval():
    rows = BASE + [(i, c, o, a) for i, _, o, a in BASE[::2] for c in ("source", "reworded")]
    targets = pd.Series({"i1": "alt", "i2": "real", "i3": "alt"})
    s = _cue_table(_parsed(rows), targets, ["source"], gate_max=0.1, alpha=0.05, multiplicity="holm",
                   n_boot=200, seed=0).iloc[0]
    z2 = stats.norm.ppf(0.975) ** 2
    bound = z2 / (3 + z2)  # Tango with no discordant item of 3: +/- z^2 / (n + z^2), never [0, 0]
    assert s["shift"] == 0 and s.shift_ci_low == pytest.approx(-bound) and s.shift_ci_high == pytest.approx(bound)
    assert s.shift_ci_method == M.MATCHED_METHOD and math.isnan(s.p_sign)
    assert s.net_flip_rate == 0 and s.net_ci_high == pytest.approx(bound) and s.best_case_upper == pytest.approx(bound)


def test_detectable_share_and_gate_status():
    # 8 items at 0.05 / 5 cues: the sign test needs all 8 items moving (2 * 0.5**7 > 0.01), so q**8 >= 0.8
    assert M.detectable_share(8, 0.01) == pytest.approx(0.8 ** (1 / 8), abs=1e-3)
    assert math.isnan(M.detectable_share(4, 0.05))  # 2 * 0.5**4 = 0.125 > 0.05 at every share
    # pass: upper bound below the maximum (the pairwise nets' intervals hold at any n, see the coverage
    # test); fail only when the lower bound lies above it; everything else inconclusive, whatever the n
    assert M.gate_status(0.09, 5, 0.1) == "pass" and M.gate_status(0.09, 36, 0.1) == "pass"
    assert M.gate_status(0.2, 5, 0.1) == "inconclusive" and M.gate_status(0.2, 40, 0.1) == "inconclusive"
    assert M.gate_status(0.2, 40, 0.1, 0.0) == "inconclusive"  # the old rule called this "fail"
    # with floor=True (the pointwise gate) no pass below `need` either
    assert M.gate_status(0.09, 5, 0.1, floor=True) == "inconclusive"
    assert M.gate_status(0.09, 36, 0.1, floor=True) == "pass"
    assert M.gate_status(0.7, 5, 0.1, 0.3) == "fail"  # shown above the maximum: no n would change that
    assert M.gate_status(float("nan"), 1, 0.1) == "inconclusive"
    # a judge not shown to respond: no pass, but a shown excess is still a fail
    assert M.gate_status(0.09, 36, 0.1, responsive=False, why="w") == "uninformative (w)"
    assert M.gate_status(0.7, 5, 0.1, 0.3, responsive=False, why="w") == "fail"


def test_sign_test_by_hand():
    assert M.sign_test(np.array([1, 1, 1, 0, -1, np.nan])) == (3, 1, pytest.approx(0.625))


def _pointwise(rows):
    return pd.DataFrame([{"judge": "j", "item_id": i, "task": "pointwise", "condition": c, "order": "real", "answer": None,
                          "parse_ok": True, "score": float(v)} for i, c, v in rows])


def test_repeat_noise_row_and_the_two_reference_rule_by_hand():
    # repeats of the baseline in both orders: i1 flips in realA, i2 in neither, i3 in both
    rep = [("i1", "repeat1", "realA", "B"), ("i1", "repeat1", "realB", "B"),
           ("i2", "repeat1", "realA", "A"), ("i2", "repeat1", "realB", "A"),
           ("i3", "repeat1", "realA", "A"), ("i3", "repeat1", "realB", "B")]
    cue = [("i1", "authority", "realA", "B"), ("i1", "reworded", "realA", "A"),
           ("i2", "authority", "realA", "B"), ("i2", "reworded", "realA", "B"),
           ("i3", "authority", "realB", "A"), ("i3", "reworded", "realB", "A")]
    ch = _parsed(BASE + rep + cue)
    nz = _table(ch, "noise").set_index("metric")
    assert nz.loc["repeat_flip_rate", "estimate"] == pytest.approx(3 / 6) and nz.loc["repeat_flip_rate", "n_pairs"] == 6
    assert nz.loc["reworded_prompt_flip_rate", "estimate"] == pytest.approx(1 / 3)
    t = _cue_table(ch, {"i1": "alt", "i2": "alt", "i3": "alt"}, ["authority"], gate_max=0.1, alpha=0.05,
                   multiplicity="holm", n_boot=300, seed=0).iloc[0]
    # per item: cue flips (1, 1, 0); reworded flips (0, 1, 0); repeat flip shares (1/2, 0, 1)
    assert t.flip_rate == pytest.approx(2 / 3) and t.repeat_flip_rate == pytest.approx(1 / 2)
    assert t.net_flip_rate == pytest.approx(1 / 3) and t.net_repeat_flip_rate == pytest.approx((0.5 + 1 - 1) / 3)
    # vs repeats: the MOVER of the two cluster-adjusted Clopper-Pearson rates with the continuity-corrected
    # item correlation (the contact-center net CFR's); here it is negative (-0.87), kept as in the capped one
    ref = paired_difference([1, 1, 0], [1, 1, 1], [1, 0, 2], [2, 2, 2], kind="rate", pairing="corrected")
    capped = paired_difference([1, 1, 0], [1, 1, 1], [1, 0, 2], [2, 2, 2], kind="rate")
    assert (t.net_repeat_ci_low, t.net_repeat_ci_high) == pytest.approx((ref["ci_low"], ref["ci_high"]))
    assert (ref["ci_low"], ref["ci_high"]) == pytest.approx((capped["ci_low"], capped["ci_high"]))
    assert t.net_repeat_ci_method == ref["ci_method"] and "continuity-corrected" in t.net_repeat_ci_method
    # the reference with the larger upper bound decides the gate; beyond noise needs both lower bounds above 0
    decider = "repeats" if t.net_repeat_ci_high > t.net_ci_high else "reworded"
    assert t.gate_reference == decider
    assert t.beyond_noise == (t.net_ci_low > 0 and t.net_repeat_ci_low > 0)


def test_without_repeats_there_is_no_repeat_row_or_column():
    ch = _parsed(BASE + [(i, "reworded", o, a) for i, _, o, a in BASE[::2]])
    assert list(_table(ch, "noise")["metric"]) == ["reworded_prompt_flip_rate"]
    t = _cue_table(ch, {"i1": "alt", "i2": "real", "i3": "alt"}, ["position"], gate_max=0.1,
                   alpha=0.05, multiplicity="holm", n_boot=100, seed=0)
    assert "net_repeat_flip_rate" not in t.columns and set(t["gate_reference"]) == {"reworded"}


def test_pointwise_net_shift_and_gate_by_hand():
    # 40 items: the cue adds 1 point on items 0-3, the reworded prompt moves item 4 by 2, repeats move item 5 by 1
    rows = []
    for k in range(40):
        i = f"i{k:02d}"
        rows += [(i, "baseline", 5), (i, "authority", 6 if k < 4 else 5), (i, "reworded", 7 if k == 4 else 5),
                 (i, "repeat1", 6 if k == 5 else 5)]
    t = M.pointwise_table(_cells(_pointwise(rows), "pointwise"), ["authority"], alpha=0.05, multiplicity="holm", n_boot=300, seed=0,
                          gate_max=1.0, responsive=(True, "checked")).iloc[0]
    assert t.score_shift == pytest.approx(4 / 40) and (t.items_up, t.items_down) == (4, 0)
    assert t.mean_abs_reworded_shift == pytest.approx(2 / 40) and t.mean_abs_repeat_shift == pytest.approx(1 / 40)
    assert t.net_abs_shift == pytest.approx((4 - 2) / 40) and t.net_repeat_abs_shift == pytest.approx((4 - 1) / 40)
    assert t.net_ci_high < 1.0 and t.net_repeat_ci_high < 1.0 and t.gate == "pass"
    assert t.best_case_upper == pytest.approx(9 * (1 - 0.025 ** (1 / 40)))
    # the same at 8 items: the bounds are not what decides - 8 < 32 items cannot support a pass
    small = [r for r in rows if int(r[0][1:]) < 8]
    s = M.pointwise_table(_cells(_pointwise(small), "pointwise"), ["authority"], alpha=0.05, multiplicity="holm", n_boot=300, seed=0,
                          gate_max=1.0, responsive=(True, "checked")).iloc[0]
    assert s.gate == "inconclusive" and M.items_needed_score_gate(1.0) == 32
    assert s.items_needed == 32 and s.forecast_assumes == "the pointwise gate's floor on items"
    # a cue shown to move scores by more than the maximum fails whatever the n
    big = [(i, c, (v + 4 if c == "authority" else v)) for i, c, v in small]
    assert M.pointwise_table(_cells(_pointwise(big), "pointwise"), ["authority"], alpha=0.05, multiplicity="holm", n_boot=300, seed=0,
                             gate_max=1.0).iloc[0].gate == "fail"


def test_pointwise_floor_reads_each_references_own_items():
    """40 items against the reworded prompt but repeats on only 20: the repeats reference rests on 20 items,
    under the 32-item floor, so no pass (the floor used to read the reworded reference's 40)."""
    rows = []
    for k in range(40):  # the cue moves every 4th item by 1; a repeat moves items 2, 6, ... of the first 20 by 1
        i = f"i{k:02d}"
        rows += [(i, "baseline", 5), (i, "authority", 6 if k % 4 == 0 else 5), (i, "reworded", 5)]
        rows += [(i, "repeat1", 6 if k % 4 == 2 else 5)] if k < 20 else []
    t = M.pointwise_table(_cells(_pointwise(rows), "pointwise"), ["authority"], alpha=0.05, multiplicity="holm",
                          n_boot=300, seed=0, gate_max=1.0, responsive=(True, "checked")).iloc[0]
    assert (t.n_items_net, t.n_items_net_repeat) == (40, 20)
    assert t.net_ci_high < 1.0 and t.net_repeat_ci_high < 1.0  # both intervals alone would pass
    assert t.gate == "inconclusive" and t.gate_reference == "repeats" and t.items_needed == 32
    full = rows + [(f"i{k:02d}", "repeat1", 6 if k % 4 == 2 else 5) for k in range(20, 40)]
    assert M.pointwise_table(_cells(_pointwise(full), "pointwise"), ["authority"], alpha=0.05, multiplicity="holm",
                             n_boot=300, seed=0, gate_max=1.0, responsive=(True, "checked")).iloc[0].gate == "pass"


def test_matched_row_with_several_pairs_per_item_uses_the_capped_mover_and_never_a_point():
    # 4 items with 2 pairs a side (a user's own design): not Tango, the MOVER of the two clustered rates
    num1, num2, den = np.array([2, 1, 0, 0.]), np.array([0, 1, 0, 0.]), np.full(4, 2.0)
    row = M.matched_row(num1, den, num2, den)
    ref = paired_difference(num1, den, num2, den, kind="rate")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ref["ci_low"], ref["ci_high"]))
    assert row["ci_method"] == ref["ci_method"] and row["estimate"] == pytest.approx(2 / 8)
    same = M.matched_row(np.zeros(4), den, np.zeros(4), den)
    assert same["ci_low"] < 0 < same["ci_high"]
    # fewer than two items: no interval, and the method says why
    assert M.matched_row([1.0], [1.0], [0.0], [1.0])["ci_method"].startswith("none: one item")
    assert math.isnan(M.matched_row([], [], [], [])["ci_high"])
