"""Coverage of every interval cfbench reports, and the gate's false-pass rate, by simulation.

Simulated audits with a known truth (:mod:`cfbench.stats.coverage`), run through the
interval code the tables use, over n in {5, 8, 12, 20, 60, 200} items x true effect
(0 included) x pairs per item (per-slice rates: n in {4, ..., 50} rows per slice, ShopFlow's sizes) (1, and 3 with the pairs of an item correlated through
an item-level rate or scale). Printed as Markdown tables: coverage of the nominal
95 % interval and, beside it, the one-sided miss above (upper bound below the truth:
what a gate on the upper bound turns into a false pass). Then the gate's false-pass
rate when the true net CFR *equals* the maximum (0.10), and the length-adjusted tone
difference of the identity-tone study (``coverage.length_adjusted_coverage``).

Then the families of data the studies produce (``coverage.FAMILIES``: mostly-zero coaching scores,
heavy-tailed P(Yes) shifts, skewed tone differences, unequal variants per item, correlated judges,
correlated flips, repeat noise) at 8, 20 and 60 items with one-sided misses on both sides and the
mean width over the estimator's sampling spread, each beside the same audits run through the
intervals as they were before issue 33.

Usage: ``python benchmarks/bench_coverage.py [--reps 2000] [--quick] [--write-docs] [--only-differences] [--only-families]``
(``--write-docs`` replaces the measured section of ``docs/statistics.md``; with
``--only-differences`` only the tables from the differences on (differences, length-adjusted
differences, per-slice rates, matched sides, the gate) are re-run, and only they are replaced -
the rate and mean tables above them do not use MOVER).
"""

from __future__ import annotations

import argparse
import time

from _common import REPO, header, machine

from cfbench.stats import coverage as C
from cfbench.stats.coverage import _summary


def matched_rate_diff_coverage(*, n_units: int, pa: float, pb: float, reps: int, seed: int) -> dict:
    """Coverage of ``cfbench.metrics.groups.paired_rate_diff_interval`` (matched slices, e.g. one
    case under two variants): the two outcomes of a unit share a latent draw half of the time."""
    import numpy as np
    import pandas as pd

    from cfbench.metrics.groups import paired_rate_diff_interval

    rng = np.random.default_rng(seed)
    lo, hi = np.empty(reps), np.empty(reps)
    for i in range(reps):
        u = rng.random(n_units)
        a = u < pa
        b = np.where(rng.random(n_units) < 0.5, u < pb, rng.random(n_units) < pb)
        d = paired_rate_diff_interval(pd.DataFrame({"a": a, "b": b, "positive": True}), among=True)
        lo[i], hi[i] = d["ci_low"], d["ci_high"]
    return _summary(lo, hi, pa - pb)

def slice_rate_coverage(*, n: int, p: float, method: str, reps: int, seed: int) -> dict:
    """Coverage of ``cfbench.metrics.groups.rate_table`` (ShopFlow's per-wording rates: independent rows,
    no clustering): the table is run on every outcome 0..n once and each simulated audit picks its row."""
    import numpy as np
    import pandas as pd

    from cfbench.metrics.groups import rate_table

    t = rate_table(pd.DataFrame({"tp": np.arange(n + 1), "n_pos": n}), "tpr", method=method)
    lo, hi = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    k = np.random.default_rng(seed).binomial(n, p, size=reps)
    return _summary(lo[k], hi[k], p)


def slice_rate_exact_worst(*, n: int, method: str) -> dict:
    """Exact (binomial sum) worst coverage and worst one-sided miss over true rates 0.001..0.999 (step 0.001)."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    from cfbench.metrics.groups import rate_table

    t = rate_table(pd.DataFrame({"tp": np.arange(n + 1), "n_pos": n}), "tpr", method=method)
    lo, hi = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    ps = np.arange(1, 1000) / 1000
    w = stats.binom.pmf(np.arange(n + 1)[None, :], n, ps[:, None])
    cov = (w * ((lo[None, :] <= ps[:, None]) & (ps[:, None] <= hi[None, :]))).sum(axis=1)
    miss = (w * (hi[None, :] < ps[:, None])).sum(axis=1)
    return {"coverage": float(cov.min()), "miss_high": float(miss.max())}


FAMILY_NS = (8, 20, 60)


class legacy_intervals:
    """The intervals as they were before issue 33, patched in for the before/after columns of the
    families table (same process, same seeds): a resample with no spread keeps its infinite t (the
    old code clipped it to 1e12; either way the bound goes to the value range or, without one, off
    the scale), the half-widths get K/(K-1) for means and no factor for paired tone differences, the
    t quantiles are equal-tailed (no long-side level), and judge differences use the capped MOVER.
    ``benchmarks/bench_skew_tails.py`` compares the long-side level alone with equal tails."""

    def __enter__(self):
        import numpy as np

        from cfbench.stats import intervals as I
        from cfbench.stats import paired as P

        self.saved = (I.floored_se, I.small_sample_factor, I.paired_difference, P.bootstrap_t_interval, I._t_bounds,
                      I.LONG_SIDE_SHARE)
        I.floored_se = lambda se_b, se, K: se_b
        I.LONG_SIDE_SHARE = 1.0  # equal tails
        t_bounds = I._t_bounds
        I._t_bounds = lambda r, se, tb, K, c: t_bounds(r, se, np.clip(tb, -1e12, 1e12), K, c)
        I.small_sample_factor = lambda K: K / (K - 1)
        pd_new, bt_new = I.paired_difference, P.bootstrap_t_interval

        def paired_difference(*args, pairing="capped", **kw):
            return pd_new(*args, pairing="capped", **kw)

        def bootstrap_t_interval(D, **kw):
            I.small_sample_factor = lambda K: 1.0
            try:
                lo, hi = bt_new(D, **kw)
            finally:
                I.small_sample_factor = lambda K: K / (K - 1)
            return lo, hi

        I.paired_difference, P.bootstrap_t_interval = paired_difference, bootstrap_t_interval
        import cfbench.stats.coverage as C
        self.saved_c = C.paired_difference
        C.paired_difference = paired_difference
        return self

    def __exit__(self, *exc):
        from cfbench.stats import intervals as I
        from cfbench.stats import paired as P
        import cfbench.stats.coverage as C

        (I.floored_se, I.small_sample_factor, I.paired_difference, P.bootstrap_t_interval, I._t_bounds,
         I.LONG_SIDE_SHARE) = self.saved
        C.paired_difference = self.saved_c


def _family_cell(r: dict) -> str:
    return (f"{100 * r['coverage']:.1f} ({100 * r['miss_low']:.1f} / {100 * r['miss_high']:.1f}) "
            f"x{r['width_ratio']:.2f}")


def families_table(R: int, *, before: bool) -> list[str]:
    """Coverage, one-sided misses (low / high) and mean width over the estimator's sampling spread for
    every family of :data:`cfbench.stats.coverage.FAMILIES` at 8, 20 and 60 items; with ``before`` a
    second line per family with the intervals as they were before issue 33 (same seeds)."""
    out = ["**Families of data the studies produce (`coverage.family_coverage`)** - each cell: coverage % "
           "(one-sided miss low % / high %) x mean width / sampling spread (the 2.5-97.5 % range of the "
           f"estimate over {C.SPREAD_AUDITS:,} other audits of the family, `coverage.family_spread`); {R} audits "
           "per cell"
           + ("; `before` rows: the same audits through the intervals as they were before issue 33 "
              "(`legacy_intervals` in this script)" if before else ""), "",
           "| family | interval | " + " | ".join(f"n={n}" for n in FAMILY_NS) + " |",
           "|---|---|" + "---|" * len(FAMILY_NS)]
    for name, (what, how) in C.FAMILIES.items():
        cells = [C.family_coverage(name, n_items=n, reps=R, n_boot=1000, seed=1000 + n) for n in FAMILY_NS]
        out.append(f"| {name}: {what} | {how} | " + " | ".join(_family_cell(r) for r in cells) + " |")
        print(out[-1], flush=True)
        if before and not name.endswith("_capped") and name not in ("cfr_correlated_flips", "net_cfr_repeat_noise",
                                                                    "judges_cfr_capped") \
                and not name.startswith("net_cfr_matched"):
            with legacy_intervals():
                old = [C.family_coverage(name, n_items=n, reps=R, n_boot=1000, seed=1000 + n) for n in FAMILY_NS]
            out.append(f"| {name}, before | | " + " | ".join(_family_cell(r) for r in old) + " |")
            print(out[-1], flush=True)
    return out + [""]


SLICE_NS = (4, 6, 10, 17, 27, 44, 50)
NS = (5, 8, 12, 20, 60, 200)
START, END = "<!-- bench_coverage:start -->", "<!-- bench_coverage:end -->"
DIFF_MARK = "<!-- bench_coverage:differences -->"


def _cell(r: dict) -> str:
    return f"{100 * r['coverage']:.1f} ({100 * r['miss_high']:.1f})"


def _table(title: str, rows: list[tuple[str, dict[int, dict]]]) -> list[str]:
    out = [f"**{title}** - coverage % (one-sided miss above %)", "",
           "| case | " + " | ".join(f"n={n}" for n in NS) + " |", "|---|" + "---|" * len(NS)]
    out += [f"| {label} | " + " | ".join(_cell(cells[n]) for n in NS) + " |" for label, cells in rows]
    return out + [""]


def _rates_and_means(R: int, R2: int) -> list[str]:
    """The rate, mean and families tables (no MOVER), then the differences marker."""
    out: list[str] = []
    rows = []
    for m in (1, 3):
        for p in (0.0, 0.02, 0.05, 0.2, 0.5):
            rows.append((f"rate p={p:g}, {m} pair(s)/item",
                         {n: C.rate_coverage(n_items=n, p=p, pairs_per_item=m, reps=R, seed=n + m) for n in NS}))
    if rows:
        out += _table("Rates (CFR, flip rates, robustness, accuracy): cluster-adjusted Clopper-Pearson", rows)
        print("\n".join(out[-len(rows) - 5:]), flush=True)

    rows = []
    for m in (1, 3):
        for shape in C.MEAN_SHAPES:
            for eff in ((0.0, 2.0) if shape == "halfnormal" else (2.0,)):  # signed: a location family
                rows.append((f"mean {shape} effect={eff:g}, {m} pair(s)/item",
                             {n: C.mean_coverage(n_items=n, effect=eff, shape=shape, pairs_per_item=m,
                                                 reps=R, n_boot=1000, seed=n + m) for n in NS}))
    if rows:
        part = _table("Means (MASD, direction, judge means): bootstrap-t (floored resample SE, half-widths x (K/(K-1))^2, "
                      "long side of t* at 1 %, capped at 1.35x) and t over items (union); "
                      "all-equal items: worst-case two-point bound", rows)
        out += part
        print("\n".join(part), flush=True)
        part = families_table(R2, before=True)
        out += part
        out.append(DIFF_MARK)
        out.append("")
    return out


def _difference_tables(R: int, R2: int) -> list[str]:
    """The tables from the differences marker on: differences, length-adjusted, per-slice rates, matched sides, gate."""
    out: list[str] = []
    rows = []
    for p_rep, net in ((0.0, 0.0), (0.05, 0.0), (0.05, 0.1), (0.2, 0.1)):
        rows.append((f"net CFR={net:g}, repeat flips {p_rep:g}",
                     {n: C.net_cfr_coverage(n_items=n, net=net, p_rep=p_rep, reps=R2, seed=n) for n in NS}))
    for kind, base, deltas in (("rate", 0.1, (0.0, 0.1)), ("mean", 2.0, (0.0, 1.0))):
        for d in deltas:
            rows.append((f"judge A-B {'CFR/accuracy' if kind == 'rate' else 'MASD'} delta={d:g}",
                         {n: C.judge_delta_coverage(n_items=n, delta=d, base=base, kind=kind, reps=R2 // 2,
                                                    n_boot=500, seed=n) for n in NS}))
    for pa, pb in ((0.0, 0.0), (0.3, 0.1)):
        rows.append((f"matched slices rate a-b, {pa:g} vs {pb:g}",
                     {n: matched_rate_diff_coverage(n_units=n, pa=pa, pb=pb, reps=R2, seed=n) for n in NS}))
    for eff in (0.0,):  # a location family: coverage is the same at every shift
        rows.append((f"paired tone difference effect={eff:g}",
                     {n: C.paired_mean_coverage(n_units=n, effect=eff, reps=R // 2, seed=n) for n in NS}))
    part = _table("Differences on the same items: net CFR: MOVER with the continuity-corrected item correlation "
                  "(`pairing=\"corrected\"`, 1 counterfactual pair + 3 repeat pairs per item); matched slices: Tango "
                  "on the units' discordant counts (`groups.paired_rate_diff_interval`); judges: paired by item "
                  "(`pairing=\"items\"`: Tango for CFR/accuracy, scaled by the items' design effect with several pairs "
                  "per item; bootstrap-t of the item differences for MASD); paired tone "
                  "differences: bootstrap-t and paired t (union)", rows)
    out += part
    print("\n".join(part), flush=True)

    rows = []
    for err in C.LENGTH_ERRORS:
        rows.append((f"length-adjusted tone difference, {err} errors",
                     {n: C.length_adjusted_coverage(n_units=n, errors=err, reps=R // 2, seed=n) for n in NS}))
    rows.append(("skewed errors, OLS t alone (the previous method, for comparison)",
                 {n: C.length_adjusted_coverage(n_units=n, errors="skewed", reps=R // 2, seed=n, ci_method="ols_t")
                  for n in NS}))
    part = _table("Paired tone difference at equal reply length (identity tone `fresh_length_adjusted_described`, "
                  "`paired.length_adjusted_tests`): residual bootstrap-t (x K/(K-1)) and OLS t (union). Prompts' "
                  "length differences L ~ N(1, 1) (centred away from 0), tone differences 0.5 + 0.3 L + error of unit "
                  "variance; the truth is the intercept 0.5", rows)
    out += part
    print("\n".join(part), flush=True)

    rows = []
    for p in (0.005, 0.02, 0.05, 0.2, 0.5, 0.8, 0.95, 0.98, 0.995):
        rows.append((f"rate p={p:g}, Clopper-Pearson",
                     {n: slice_rate_coverage(n=n, p=p, method="clopper-pearson", reps=R, seed=n) for n in SLICE_NS}))
    for method in ("clopper-pearson", "wilson"):
        rows.append((f"worst over p = 0.001..0.999, {method}, exact",
                     {n: slice_rate_exact_worst(n=n, method=method) for n in SLICE_NS}))
    part = ["**Per-slice rates (ShopFlow's selection / TPR / FPR per wording, `groups.rate_table`): Clopper-Pearson "
            "(exact); Wilson, which the seed prints, for comparison** - coverage % (one-sided miss above %); the "
            "`exact` rows are binomial sums, the worst cell over a grid of 999 true rates (the worst coverage and "
            "the worst one-sided miss need not fall at the same rate)", "",
            "| case | " + " | ".join(f"n={n}" for n in SLICE_NS) + " |", "|---|" + "---|" * len(SLICE_NS)]
    part += [f"| {label} | " + " | ".join(_cell(cells[n]) for n in SLICE_NS) + " |" for label, cells in rows]
    part.append("")
    out += part
    print("\n".join(part), flush=True)

    rows = []
    for m in (1, 3):
        for p_rep in (0.1, 0.3):
            rows.append((f"net CFR=0.1, repeat flips {p_rep:g}, cf flips whenever repeat flips, {m} pair(s)/item",
                         {n: C.matched_net_cfr(n_items=n, net=0.10, p_rep=p_rep, pairs_per_item=m, reps=R2,
                                               seed=100 * m + n) for n in NS}))
        rows.append((f"identical sides (net 0), repeat flips 0.3, {m} pair(s)/item",
                     {n: C.matched_net_cfr(n_items=n, p_rep=0.3, pairs_per_item=m, identical=True, reps=R2,
                                           seed=7 * n + m) for n in NS}))
    for p_rep, net in ((0.1, 0.1), (0.3, 0.1), (0.5, 0.05), (0.3, 0.0)):  # the study's 1 + 3 design
        rows.append((f"net CFR={net:g}, repeat flips {p_rep:g}, cf pair flips whenever the first repeat pair "
                     "does, 1 cf + 3 repeat pairs/item",
                     {n: C.matched_net_cfr(n_items=n, net=net, p_rep=p_rep, pairs_per_item=1, repeat_pairs=3,
                                           reps=R2, seed=300 + n) for n in NS}))
    part = _table("Net CFR with the two sides matched item by item (`coverage.matched_net_cfr`: item instability "
                  "u ~ Beta(0.5, .) with mean = repeat flip rate; each counterfactual pair flips when its repeat "
                  "pair flips, plus extra flips so the true net CFR is exactly 0.10; identical sides: the same "
                  "flips on both). In the net CFR=0.1 rows the one-sided miss above is the gate's false-pass rate "
                  "at the maximum. Interval: `pairing=\"corrected\"` (continuity-corrected item correlation; "
                  "Tango's matched-pairs interval at one pair per item on both sides)", rows)
    zw = max(r["zero_width"] for _, cells in rows for r in cells.values())
    part += [f"Largest share of zero-width intervals in these rows: {100 * zw:.1f} %.", ""]
    out += part
    print("\n".join(part), flush=True)

    gate = ["**Gate false-pass rate** - share of audits passing `net_cfr_gate` (upper bound < 0.10) when the "
            "true net CFR equals 0.10 (%); one counterfactual pair per item against 3 repeat pairs (the MOVER with "
            "the corrected correlation) or 1 (Tango, the committed default's design)", "",
            "| repeat pairs per item, repeat flip rate | " + " | ".join(f"n={n}" for n in NS) + " |",
            "|---|" + "---|" * len(NS)]
    for rep_pairs in (3, 1):
        for p_rep in (0.0, 0.05, 0.2):
            fps = [C.gate_false_pass(n_items=n, max_net=0.10, p_rep=p_rep, rep_pairs=rep_pairs, reps=R2, seed=n)
                   for n in NS]
            gate.append(f"| {rep_pairs}, {p_rep:g} | " + " | ".join(f"{100 * f:.1f}" for f in fps) + " |")
    from cfbench.studies.contact_center_qa.calculator import gate_items_needed
    gate += ["", "Items needed before 0 flips can pass a 0.10 maximum: "
             f"{gate_items_needed(0.10, repeat_pairs=3)} with 3 repeat pairs per item, "
             f"{gate_items_needed(0.10, repeat_pairs=1)} with 1 (below that a gate row with no flip stays "
             "`inconclusive`).", ""]
    out += gate
    print("\n".join(gate), flush=True)
    return out


def _write_docs(lines: list[str], only_differences: bool) -> None:
    """Replace the measured section of docs/statistics.md (from the differences marker on with ``only_differences``)."""
    path = REPO / "docs" / "statistics.md"
    text = path.read_text(encoding="utf-8")
    i, j = text.index(START) + len(START), text.index(END)
    if only_differences:
        i = text.index(DIFF_MARK, i)
        lines[0:2] = []  # the marker is kept in place
        i += len(DIFF_MARK) + 1
    path.write_text(text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:], encoding="utf-8")
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=2000, help="audits per cell for the analytic intervals")
    ap.add_argument("--quick", action="store_true", help="a quarter of the replications (a smoke run)")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--only-differences", action="store_true",
                    help="re-run only the differences, matched-sides and gate tables")
    ap.add_argument("--only-families", action="store_true",
                    help="print only the families table (with the before rows), write nothing")
    a = ap.parse_args()
    if a.only_families:
        header("bench_coverage --only-families")
        t0 = time.time()
        families_table(max(200, a.reps // 4) if a.quick else a.reps, before=True)
        print(f"Run time: {time.time() - t0:.0f} s.")
        return
    header("bench_coverage")
    R = max(200, a.reps // 4) if a.quick else a.reps
    R2 = R // 2  # loops (MOVER, bootstrap per audit)
    t0 = time.time()
    lines = [f"Measured with `python benchmarks/bench_coverage.py --reps {a.reps}{' --quick' if a.quick else ''}"
             f"{' --write-docs' if a.write_docs else ''}` on {machine()}: simulated audits per cell: {R} for rates and means, {R // 2} for "
             f"paired tone differences and length-adjusted differences, {R2} for net CFR, matched-slice differences and the gate, "
             f"{R2 // 2} for judge differences. The binomial SE of a coverage near 95 % from R audits is "
             f"sqrt(0.0475 / R): {100 * (0.0475 / R) ** 0.5:.1f} points at {R}, "
             f"{100 * (0.0475 / R2) ** 0.5:.1f} at {R2}, {100 * (0.0475 / (R2 // 2)) ** 0.5:.1f} at {R2 // 2}.",
             ""]
    if a.only_differences:
        lines = [DIFF_MARK, "",
                 f"The tables from here on were re-measured with `python benchmarks/bench_coverage.py --reps {a.reps}"
                 f"{' --quick' if a.quick else ''} --only-differences{' --write-docs' if a.write_docs else ''}` "
                 f"on {machine()} "
                 f"({R2} audits per cell; {R2 // 2} for judge differences; {R // 2} for paired tone differences and "
                 "length-adjusted differences); the rate, mean and families tables above were not re-run.", ""]

    if not a.only_differences:
        lines += _rates_and_means(R, R2)
    lines += _difference_tables(R, R2)
    lines.append(f"Run time: {time.time() - t0:.0f} s.")
    print(lines[-1])

    if a.write_docs:
        _write_docs(lines, a.only_differences)


if __name__ == "__main__":
    main()
