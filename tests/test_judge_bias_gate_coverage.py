"""The judge-bias intervals' coverage and the gate's false-pass rate, simulated at the study's sizes.

Per cue the study reports three differences on the same items (``metrics.cue_table``):

* ``shift``: chose the cued reply with the cue minus without, one binary pair per item;
* ``net_flip_rate``: flipped under the cue minus flipped under the reworded prompt, one binary pair per item;
* ``net_repeat_flip_rate``: the cue's flip (one pair) minus the item's repeat flips (2 orders x 1 repeat).

The first two use Tango's score interval on the items' 2x2 counts (``metrics.matched_row``), the third the
MOVER difference of the two cluster-adjusted Clopper-Pearson rates with the continuity-corrected item
correlation (``metrics.repeat_net_row``, ``pairing="corrected"``). The pairwise gate passes when the upper bound is below 0.10, at any n; at a true
net of exactly 0.10 a pass is a false pass and must stay at or below 5 % (nominal 2.5 %); coverage must stay
at or above 93 %. Cells: n in {8, 16, 36, 60, 120} x reference flip rate p0 in {0, 0.01, 0.05, 0.2}, the cue
flipping at p0 + 0.10, with the two sides independent or nested/matched item by item. 800 seeded audits per
cell: the binomial SE of a 95 % coverage is 0.8 points, of a 2.5 % false pass 0.55 points, so 93 % and 5 %
are 2.5 and 4.5 SE from the nominal values; the matched-pair cells are also checked exactly (trinomial sums).

The negative control is the previous interval (bootstrap-t/t mean over the per-item differences): with rare
flips at 8 items it false-passes the repeat net far above 5 % on the same draws, so the check can fail.

``python tests/test_judge_bias_gate_coverage.py`` prints the tables quoted in docs/judge_bias.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from cfbench.stats.intervals import mean_interval_t
from cfbench.stats.matched import matched_counts_pmf, tango_interval
from cfbench.studies.judge_bias import metrics as M

REPS = 800
SIZES = (8, 16, 36, 60, 120)
P0S = (0.0, 0.01, 0.05, 0.20)
GATE = 0.10


# --- matched pairs, one per item (shift, net vs the reworded prompt): Tango ---------------------------------------
def _cells(p0: float, delta: float, structure: str) -> tuple[float, float, float]:
    """(p11, p10, p01) for side 1 positive at p0 + delta, side 2 at p0. ``independent``: the two outcomes of an
    item are independent; ``nested``: side 1 is positive whenever side 2 is (the items a judge is unstable on
    flip under both), which puts all discordance on one side."""
    p1 = p0 + delta
    if structure == "independent":
        return p1 * p0, p1 * (1 - p0), p0 * (1 - p1)
    return p0, delta, 0.0


def _draw_items(n: int, cells, reps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per audit and item the two binary outcomes (a, b), drawn item by item."""
    p11, p10, p01 = cells
    u = np.random.default_rng(seed).random((reps, n))
    a = u < p11 + p10
    b = (u < p11) | ((u >= p11 + p10) & (u < p11 + p10 + p01))
    return a, b


def sim_matched(n: int, p0: float, delta: float, structure: str, reps: int = REPS, seed: int = 0) -> dict:
    a, b = _draw_items(n, _cells(p0, delta, structure), reps, seed)
    lo, hi = tango_interval((a & ~b).sum(1), (~a & b).sum(1), n)  # what matched_row computes, for all audits
    return {"coverage": float(np.mean((lo <= delta + 1e-12) & (hi >= delta - 1e-12))),
            "false_pass": float(np.mean(hi < GATE)), "zero_width": float(np.mean(hi - lo <= 0))}


def exact_matched(n: int, p0: float, delta: float, structure: str) -> dict:
    _, p10, p01 = _cells(p0, delta, structure)
    b, c, prob = matched_counts_pmf(n, p10, p01)
    lo, hi = tango_interval(b, c, n)
    return {"coverage": float(prob[(lo <= delta + 1e-12) & (hi >= delta - 1e-12)].sum()),
            "false_pass": float(prob[hi < GATE].sum())}


NET_CELLS = [(n, p0, s) for n in SIZES for p0 in P0S for s in ("independent", "nested")]
# the shift: chose the cued reply without the cue at 0.5 + ... is immaterial to the interval (only the
# discordant cells enter); true shifts 0, 0.10 and 0.30 with p0 the rate of moves away from the cued reply
SHIFT_CELLS = [(n, p0, d) for n in SIZES for p0 in P0S for d in (0.0, 0.10, 0.30)]


@pytest.mark.parametrize("n,p0,structure", NET_CELLS)
def test_net_vs_reworded_tango_covers_and_the_gate_false_passes_at_most_5_percent(n, p0, structure):
    sim = sim_matched(n, p0, GATE, structure, seed=1000 * n + int(1000 * p0))
    assert sim["coverage"] >= 0.93 and sim["false_pass"] <= 0.05 and sim["zero_width"] == 0, sim
    ex = exact_matched(n, p0, GATE, structure)
    assert ex["coverage"] >= 0.935 and ex["false_pass"] <= 0.03, ex


@pytest.mark.parametrize("n,p0,delta", SHIFT_CELLS)
def test_shift_tango_covers(n, p0, delta):
    sim = sim_matched(n, p0, delta, "independent", seed=7 + 1000 * n + int(1000 * p0) + int(100 * delta))
    assert sim["coverage"] >= 0.93 and sim["zero_width"] == 0, sim
    assert exact_matched(n, p0, delta, "independent")["coverage"] >= 0.93


def test_matched_row_is_tango_on_the_items_counts():
    a, b = _draw_items(12, _cells(0.05, 0.10, "independent"), 20, seed=3)
    for x, y in zip(a, b):
        row = M.matched_row(x.astype(float), np.ones(12), y.astype(float), np.ones(12))
        lo, hi = tango_interval(int((x & ~y).sum()), int((~x & y).sum()), 12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((float(lo), float(hi)))
        assert row["estimate"] == pytest.approx(x.mean() - y.mean()) and row["ci_method"] == M.MATCHED_METHOD


# --- net vs repeats: one cue pair against 2 repeat pairs per item: MOVER of two rates, corrected correlation -----
def draw_repeats(n: int, p0: float, structure: str, reps: int, seed: int, net: float = GATE):
    """Cue flips (reps x n) and repeat flips per item (0..2). ``independent``: every pair flips on its own, the
    cue at p0 + net, each repeat at p0. ``matched``: item instability u ~ Beta(0.5, .) with mean p0; both repeats
    flip with probability u, and the cue flips when a third draw at u flips or, otherwise, with probability
    net / (1 - p0), so the true net is exactly ``net`` and unstable items flip on both sides."""
    rng = np.random.default_rng(seed)
    if structure == "independent":
        cue = rng.random((reps, n)) < p0 + net
        rep = (rng.random((reps, n, 2)) < p0).sum(2)
    else:
        u = rng.beta(0.5, 0.5 * (1 - p0) / p0, (reps, n)) if p0 > 0 else np.zeros((reps, n))
        rep = (rng.random((reps, n, 2)) < u[..., None]).sum(2)
        cue = (rng.random((reps, n)) < u) | (rng.random((reps, n)) < net / (1 - p0))
    return cue.astype(float), rep.astype(float)


def sim_repeats(n: int, p0: float, structure: str, reps: int = REPS, seed: int = 0, old: bool = False) -> dict:
    cue, rep = draw_repeats(n, p0, structure, reps, seed)
    lo, hi = np.empty(reps), np.empty(reps)
    rng = np.random.default_rng(seed + 1)
    for k in range(reps):
        if old:  # the previous interval: bootstrap-t/t mean over the per-item differences in [-1, 1]
            lo[k], hi[k], _ = mean_interval_t(cue[k] - rep[k] / 2, np.ones(n), n_boot=300, rng=rng,
                                              value_range=(-1, 1))
        else:
            r = M.repeat_net_row(cue[k], np.ones(n), rep[k], np.full(n, 2.0))
            lo[k], hi[k] = r["ci_low"], r["ci_high"]
    return {"coverage": float(np.mean((lo <= GATE) & (hi >= GATE))), "false_pass": float(np.mean(hi < GATE)),
            "zero_width": float(np.mean(hi - lo <= 0))}


REPEAT_CELLS = [(n, p0, s) for n in SIZES for p0 in P0S for s in ("independent", "matched")]


@pytest.mark.parametrize("n,p0,structure", REPEAT_CELLS)
def test_net_vs_repeats_covers_and_the_gate_false_passes_at_most_5_percent(n, p0, structure):
    sim = sim_repeats(n, p0, structure, seed=17 + 1000 * n + int(1000 * p0))
    assert sim["coverage"] >= 0.93 and sim["false_pass"] <= 0.05 and sim["zero_width"] == 0, sim


def test_negative_control_the_old_mean_interval_false_passes_with_rare_flips_at_8_items():
    """At 8 items, cue flips 0.15 vs repeat flips 0.05 (true net 0.10): the mean interval over per-item
    differences (0 or -1/2 when the cue never flips) false-passes far above 5 %; the MOVER on the same draws
    does not."""
    old = sim_repeats(8, 0.05, "independent", seed=17, old=True)
    new = sim_repeats(8, 0.05, "independent", seed=17)
    assert old["false_pass"] > 0.08 and new["false_pass"] <= 0.05, (old, new)


def test_the_gate_passes_below_35_items_only_when_the_reference_flips_more():
    """No floor: at 8 items 0 cue flips against 5 reworded flips bound the net below 0.10 and pass; 0 flips on
    both sides do not (Tango's bound z^2/(n + z^2) = 0.32): ``inconclusive``."""
    cue, ref = np.zeros(8), np.r_[np.ones(5), np.zeros(3)]
    ok = M.matched_row(cue, np.ones(8), ref, np.ones(8))
    assert ok["ci_high"] < GATE and M.gate_status(ok["ci_high"], 8, GATE, ok["ci_low"], need=35) == "pass"
    zero = M.matched_row(cue, np.ones(8), np.zeros(8), np.ones(8))
    assert zero["ci_high"] == pytest.approx(float(tango_interval(0, 0, 8)[1])) and zero["ci_high"] > 0.3
    assert M.gate_status(zero["ci_high"], 8, GATE, zero["ci_low"], need=35) == "inconclusive"


# --- the pointwise gate: per item |score shift under the cue| - |shift under the reference|, in [-9, 9] ----------
# True net = 1.0 point = the default maximum; shapes from "every item moves 1 point" to rare large jumps.
def _zero_inflated(p, values):
    values = np.asarray(values, float)
    return lambda rng, n: np.where(rng.random(n) < p, rng.choice(values, size=n), 0.0)


SHAPES = {
    "every item +1, reference 0": (lambda rng, n: np.ones(n), lambda rng, n: np.zeros(n)),
    "+3 on a third, reference 0": (_zero_inflated(1 / 3, [3]), lambda rng, n: np.zeros(n)),
    "+9 on a ninth, reference 0": (_zero_inflated(1 / 9, [9]), lambda rng, n: np.zeros(n)),
    "+2 on 3/4, reference 1 on half": (_zero_inflated(0.75, [2]), _zero_inflated(0.5, [1])),
    "1-3 on 60%, reference 1 on 20%": (_zero_inflated(0.6, [1, 2, 3]), _zero_inflated(0.2, [1])),
    "+5 on 30%, reference 1 on half": (_zero_inflated(0.3, [5]), _zero_inflated(0.5, [1])),
}
POINTWISE_SIZES = (16, 32, 36, 60, 120)  # 32: the fewest items that can pass at 1.0 point; 36 default; 120 paper


def sim_pointwise(n, cue, ref, reps=REPS, seed=7):
    rng = np.random.default_rng(seed)
    false_pass = 0
    for _ in range(reps):
        v = cue(rng, n) - ref(rng, n)
        _, hi, _ = mean_interval_t(v, np.ones(n), n_boot=300, rng=rng, value_range=(-9, 9))
        false_pass += hi < 1.0
    return false_pass / reps


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("n", POINTWISE_SIZES)
def test_pointwise_gate_false_pass_at_the_maximum_stays_below_5_percent(n, shape):
    assert sim_pointwise(n, *SHAPES[shape]) <= 0.05


def test_the_pointwise_floor_at_8_items_is_needed():
    """Why the pointwise gate keeps its floor (no pass below 32 items): at 8 items the mean interval
    false-passes one shape at about twice its nominal 2.5 % (4.5 % here), where a
    5 % limit leaves no margin. With the floor the gate cannot pass there."""
    assert sim_pointwise(8, *SHAPES["+5 on 30%, reference 1 on half"]) > 0.035
    assert M.gate_status(0.5, 8, 1.0, -1.0, need=M.items_needed_score_gate(1.0), floor=True) == "inconclusive"


if __name__ == "__main__":  # the tables of docs/judge_bias.md
    def cell(d):
        return f"{100 * d['coverage']:.1f} ({100 * d['false_pass']:.1f})"

    head = "| case | " + " | ".join(f"n={n}" for n in SIZES) + " |\n|---|" + "---|" * len(SIZES)
    print("net vs reworded (Tango), true net 0.10: coverage % (gate false pass %), simulated / exact")
    print(head)
    for s in ("independent", "nested"):
        for p0 in P0S:
            cells = [f"{cell(sim_matched(n, p0, GATE, s, seed=1000 * n + int(1000 * p0)))} / "
                     f"{cell(exact_matched(n, p0, GATE, s))}" for n in SIZES]
            print(f"| {s}, reference {p0:g} | " + " | ".join(cells) + " |")
    print("\nshift (Tango), independent sides: coverage %, exact; worst over p0 in", P0S)
    print(head)
    for d in (0.0, 0.10, 0.30):
        cells = [f"{100 * min(exact_matched(n, p0, d, 'independent')['coverage'] for p0 in P0S):.1f}" for n in SIZES]
        print(f"| shift {d:g} | " + " | ".join(cells) + " |")
    print("\nnet vs repeats (MOVER, corrected correlation), true net 0.10: coverage % (gate false pass %), simulated")
    print(head)
    for s in ("independent", "matched"):
        for p0 in P0S:
            cells = [cell(sim_repeats(n, p0, s, seed=17 + 1000 * n + int(1000 * p0))) for n in SIZES]
            print(f"| {s}, repeats {p0:g} | " + " | ".join(cells) + " |")
    print("\nold mean interval, repeats, independent, 8 items, p0 0.05:",
          cell(sim_repeats(8, 0.05, "independent", seed=17, old=True)))
    print("\npointwise false pass % at 8 / 16 items")
    for name, (c, r) in SHAPES.items():
        print(f"| {name} | {100 * sim_pointwise(8, c, r):.1f} | {100 * sim_pointwise(16, c, r):.1f} |")
