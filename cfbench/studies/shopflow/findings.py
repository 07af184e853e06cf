"""What a ShopFlow run prints and concludes, generated from its numbers: the seed's lines, the
invariants :meth:`ShopflowResult.check` verifies, and the "What this run shows" Markdown."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .gate import PairAudit

__all__ = ["seed_lines", "invariants", "findings_markdown", "run_header"]

#: The seed's expected figures for its own fixture (checked only when the shipped fixture is used).
_SEED_FLIPS = [["p4", "auto_serve", "human_review"], ["p5", "auto_serve", "human_review"],
               ["n1", "auto_serve", "human_review"]]


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def seed_lines(base: PairAudit, cand: PairAudit, *, fixture: bool, variants: Sequence[str]) -> list[str]:
    """Every line the seed prints, in its order, computed from the two audits."""
    r = base.rates
    routed = base.routed
    lines = [("Fixture type: synthetic matched wording audit" if fixture
              else "Fixture type: user-supplied matched pairs"),
             f"Matched pairs: {routed['pair_id'].nunique()}; scored rows: {len(routed)}",
             f"Routing threshold: {base.threshold:.2f}", "Flipped matched pairs:"]
    for row in base.flips.itertuples(index=False):
        lines.append("  " + f"{row[0]}: " + ", ".join(f"{v}={route}" for v, route in zip(variants, row[1:])))
    for v in variants:
        lines.append(f"{v:14} selection={r.at[v, 'selection']:.1%} TPR={r.at[v, 'tpr']:.1%} FPR={r.at[v, 'fpr']:.1%}")
    lines.append(f"TPR gap={base.tpr_gap:.1%}; FPR gap={base.fpr_gap:.1%}")
    status = dict(zip(base.checks["check"], base.checks["status"]))
    lines += [f"TPR gap: {status['tpr_gap']}", f"FPR guardrail: {status['fpr_gap']}"]
    w = base.wilson_tpr.set_index("slice")
    for v in variants:
        lines.append(f"{v:14} TPR={int(w.at[v, 'successes'])}/{int(w.at[v, 'n'])} "
                     f"95% interval=[{w.at[v, 'ci_low']:.1%}, {w.at[v, 'ci_high']:.1%}]")
    lines.append(f"Minimum slice support: {'PASS' if base.support_ok else 'FAIL'}")
    cal = base.calibration.sort_values(["variant", "band"])
    for row in cal.itertuples(index=False):
        lines.append(f"{row.variant:14} {row.band:14}: n={row.n}, ready={row.observed_ready:.1%}")
    lines.append("Calibration decision: " + ("sufficient support" if base.calibration["sufficient"].all()
                                              else "insufficient support"))
    for row in base.intersections.sort_values(["channel", "variant"]).itertuples(index=False):
        lines.append(f"{row.channel:5} / {row.variant:14}: n={row.n_pos}, {row.tpr_status}")
    lines.append(str(dict(zip(base.attribution["pair_id"], base.attribution["stage"]))))
    lines.append(f"Candidate TPR gap={cand.tpr_gap:.1%}; FPR gap={cand.fpr_gap:.1%}")
    repaired = cand.checks_ok and cand.n_flips == 0
    lines.append("Interpretation: " + (
        ("regression repaired on these pairs" if repaired else "regression not repaired on these pairs")
        + (", not validated for release" if cand.release.decision != "APPROVED" else ", release gate passed")))
    lines.append(f"Metric promotion: {cand.release.decision}")
    lines += [f"  missing: {m}" for m in cand.release.missing]
    return lines


def _audit_invariants(prefix: str, audit: PairAudit) -> dict[str, bool]:
    s = audit.summary()
    n_variants = len(audit.variants)
    checks = {
        f"{prefix}: decision is BLOCKED exactly when a requirement is missing":
            s["decision"] in ("APPROVED", "BLOCKED") and (s["decision"] == "BLOCKED") == bool(s["missing"]),
        f"{prefix}: every defined TPR lies inside its Wilson interval":
            all(math.isnan(rr["tpr"]) or s["wilson_tpr"][sl][0] - 1e-12 <= rr["tpr"] <= s["wilson_tpr"][sl][1] + 1e-12
                for sl, rr in s["rates"].items()),
        f"{prefix}: each slice's positives + negatives = its rows":
            all(rr["n_pos"] + rr["n_neg"] == s["n_rows"] // n_variants for rr in s["rates"].values()),
        f"{prefix}: flips are audited pairs": {f[0] for f in s["flips"]} <= set(audit.routed["pair_id"]),
        f"{prefix}: routes follow the threshold": bool((audit.routed["route"] == np.where(
            ~audit.routed["evidence_passed"], "blocked_by_evidence",
            np.where(audit.routed["score"] >= audit.threshold, "auto_serve", "human_review"))).all()),
        f"{prefix}: suppressed intersection cells carry no rate": bool(
            audit.intersections.loc[audit.intersections["tpr_status"] == "insufficient", "tpr"].isna().all()
            and audit.intersections.loc[audit.intersections["fpr_status"] == "insufficient", "fpr"].isna().all()),
        f"{prefix}: each gap's interval upper bound is at least the point gap": bool(all(
            math.isnan(r.upper) or math.isnan(r.value) or r.upper >= r.value - 1e-12
            for r in audit.interval_checks.itertuples(index=False))),
    }
    return checks


def invariants(result: "ShopflowResult") -> dict[str, bool]:
    """Named checks of a run (see :meth:`cfbench.report.StudyResult.check`)."""
    out: dict[str, bool] = {}
    for part in ("seed", "seed_candidate", "judged", "judged_candidate"):
        if part in result.audits:
            out.update(_audit_invariants(part, result.audits[part]))
    seed = result.summary.get("seed", {})
    if seed.get("shipped_fixture"):
        r = seed["rates"]
        pct = lambda x: round(100 * x, 1)  # noqa: E731  (the seed prints one decimal)
        out["seed fixture: 10 pairs, 20 rows, the seed's three flips"] = (
            seed["n_pairs"] == 10 and seed["n_rows"] == 20 and seed["flips"] == _SEED_FLIPS)
        out["seed fixture: rates 60.0/83.3/25.0 and 30.0/50.0/0.0 %"] = (
            [pct(r["formal"][m]) for m in ("selection", "tpr", "fpr")] == [60.0, 83.3, 25.0]
            and [pct(r["conversational"][m]) for m in ("selection", "tpr", "fpr")] == [30.0, 50.0, 0.0])
        out["seed fixture: Wilson TPR intervals [43.6, 97.0] and [18.8, 81.2] %"] = (
            [pct(x) for x in seed["wilson_tpr"]["formal"]] == [43.6, 97.0]
            and [pct(x) for x in seed["wilson_tpr"]["conversational"]] == [18.8, 81.2])
        out["seed fixture: both gap checks FAIL, support FAIL, candidate gaps 0, BLOCKED with 4 missing"] = (
            seed["baseline_checks"] == {"tpr_gap": "FAIL", "fpr_gap": "FAIL"} and seed["minimum_support"] == "FAIL"
            and seed["candidate"]["tpr_gap"] == 0.0 and seed["candidate"]["fpr_gap"] == 0.0
            and seed["decision"] == "BLOCKED" and len(seed["missing"]) == 4)
    boot = seed.get("bootstrap_tpr_diff")
    if boot:
        out["seed: bootstrap interval contains its estimate"] = boot["ci_low"] <= boot["estimate"] <= boot["ci_high"]
    judged = result.summary.get("judged")
    if judged:
        parsed = result.frames["requests_parsed"]
        pairs = result.frames["pairs"]
        audit = result.audits["judged"]
        out["judged: every loaded pair is audited or listed as excluded"] = (
            judged["n_pairs"] + judged["n_pairs_excluded"] == judged["n_pairs_loaded"])
        out["judged: one parsed reply per pair variant"] = len(parsed) == len(pairs) == 2 * pairs["pair_id"].nunique()
        out["judged: audited scores are in [0, 1]"] = bool(audit.routed["score"].between(0, 1).all())
        out["judged: parse_ok exactly when a score source exists"] = bool(
            (parsed["parse_ok"] == parsed["score_source"].notna()).all())
        out["judged: no unparsed reply has a score"] = bool(parsed.loc[~parsed["parse_ok"], "score"].isna().all())
        b = judged["bootstrap_tpr_diff"]
        out["judged: bootstrap interval contains its estimate"] = b["ci_low"] <= b["estimate"] <= b["ci_high"]
    return out


# --------------------------------------------------------------------------- findings


def _interval_sentence(audit: PairAudit, check: str) -> str:
    row = audit.interval_checks.set_index("check").loc[f"{check}_upper"]
    label = "TPR" if check == "tpr_gap" else "FPR"
    if math.isnan(row["upper"]):
        return f"the {label} gap's interval is undefined (a slice has no rows of that class)"
    return (f"the {row['method']} {row['confidence']:.0%} interval of the {label} difference is "
            f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}], so the data allow a {label} gap up to "
            f"{row['upper']:.3f} (limit {row['limit']:.2f}: interval rule {row['status']})")


def _part_paragraphs(name: str, audit: PairAudit, summary: dict[str, Any], *, judged: bool) -> list[str]:
    vs = audit.variants
    s = summary
    mc = s["mcnemar"]["all"] if judged else s["mcnemar"]
    boot = s["bootstrap_tpr_diff"]
    n_pairs = s["n_pairs"]
    n_ready = int(audit.rates["n_pos"].iloc[0])
    n_review = int(audit.rates["n_neg"].iloc[0])
    checks = s["baseline_checks"] if "baseline_checks" in s else s["checks"]
    distinguishable = not (boot["ci_low"] <= 0.0 <= boot["ci_high"])
    paras = [
        f"**{name}.** {n_pairs} matched pairs ({n_ready} ready, {n_review} needing review per wording), "
        f"routed at threshold {audit.threshold:.2f}: {audit.n_flips} pair(s) flip route between {vs[0]} and "
        f"{vs[1]}. TPR is {_pct(audit.rates.at[vs[0], 'tpr'])} vs {_pct(audit.rates.at[vs[1], 'tpr'])} "
        f"(gap {audit.tpr_gap:.3f}, point rule {checks['tpr_gap']}); FPR {_pct(audit.rates.at[vs[0], 'fpr'])} vs "
        f"{_pct(audit.rates.at[vs[1], 'fpr'])} (gap {audit.fpr_gap:.3f}, point rule {checks['fpr_gap']}).",
        f"Is the TPR difference distinguishable from noise? The paired bootstrap ({boot['n_boot']} resamples of "
        f"pairs) puts TPR[{vs[0]}] − TPR[{vs[1]}] = {boot['estimate']:+.3f} in [{boot['ci_low']:+.3f}, "
        f"{boot['ci_high']:+.3f}]: " + ("zero lies outside, so this difference is distinguishable from noise at "
                                        "the 95% level" if distinguishable else
                                        "zero lies inside, so the difference is **not** distinguishable from noise")
        + f". The exact McNemar test on all {mc['n_pairs']} pairs sees {mc['a_only']} pair(s) auto-served only as "
        f"{vs[0]} and {mc['b_only']} only as {vs[1]}: p = {mc['p_value']:.3g}"
        + (" (a split this even carries no evidence either way)." if mc["p_value"] >= 0.5 else "."),
        f"Interval rule: {_interval_sentence(audit, 'tpr_gap')}; {_interval_sentence(audit, 'fpr_gap')}. "
        f"Resolution: with {n_ready} ready pairs per wording the TPR interval is about "
        f"{_half_width(audit):.2f} wide on each side, so gaps smaller than that cannot be told apart from zero "
        f"with this design; the contract's support minimum is {audit.contract.min_positive_per_slice} ready and "
        f"{audit.contract.min_negative_per_slice} needs-review rows per wording (here: "
        f"{'met' if audit.support_ok else 'not met'}).",
    ]
    return paras


def _half_width(audit: PairAudit) -> float:
    row = audit.interval_checks.set_index("check").loc["tpr_gap_upper"]
    return float((row["ci_high"] - row["ci_low"]) / 2) if not math.isnan(row["ci_low"]) else float("nan")


def findings_markdown(result: "ShopflowResult") -> str:
    """The "What this run shows" cell: generated sentences, no hand-written numbers."""
    parts = ["### What this run shows"]
    seed = result.summary.get("seed")
    if seed:
        base, cand = result.audits["seed"], result.audits["seed_candidate"]
        parts += _part_paragraphs("Seed fixture" if seed.get("shipped_fixture") else "Scored pairs",
                                  base, seed, judged=False)
        cand_iv = cand.interval_checks.set_index("check")
        parts.append(
            f"The candidate rerun has TPR gap {cand.tpr_gap:.3f} and FPR gap {cand.fpr_gap:.3f} "
            f"(point rule {'PASS' if cand.checks_ok else 'FAIL'}), yet its TPR gap could still be as large as "
            f"{cand_iv.at['tpr_gap_upper', 'upper']:.3f} (interval rule {cand_iv.at['tpr_gap_upper', 'status']}). "
            f"Release: **{cand.release.decision}**"
            + (f", missing {', '.join(cand.release.missing)}." if cand.release.missing else "."))
    judged = result.summary.get("judged")
    if judged:
        audit = result.audits["judged"]
        name = f"Judge `{judged['judge']}`" + (" (a scripted test double: these numbers mean nothing about any "
                                               "model)" if judged["judge_is_test_double"] else "")
        parse_fail = judged["score_sources"].get("parse_failure", 0)
        parts += _part_paragraphs(name, audit, judged, judged=True)
        parts.append(f"Parsing: {parse_fail} of {sum(judged['score_sources'].values())} replies were not a Yes/No "
                     f"answer; {judged['n_pairs_excluded']} pair(s) were excluded whole (listed in "
                     f"`judged_excluded.csv`). Release: **{judged['decision']}**"
                     + (f", missing {', '.join(judged['missing'])}." if judged["missing"] else "."))
        if "candidate" in judged:
            c = judged["candidate"]
            parts.append(f"Candidate prompt `{c['prompt']}` on the same pairs: TPR gap {c['tpr_gap']:.3f}, "
                         f"FPR gap {c['fpr_gap']:.3f}, {len(c['flips'])} flip(s); release {c['decision']}.")
    elif result.judged_error:
        parts.append(f"**Judged audit: no result.** {result.judged_error}")
    parts.append(
        "**Which gate to read.** The point rule (observed gap ≤ maximum) suits a regression check on fixed "
        "fixtures: it asks whether this judge treats *these* cases differently. The interval rule (upper "
        "confidence bound ≤ maximum, non-inferiority style) suits a release claim about the population the pairs "
        "sample: it passes only when the data show the gap is small. With a few dozen pairs it fails by design. "
        "These pairs are synthetic fixtures; their wordings are test conditions, not demographic groups.")
    return "\n\n".join(parts)


def run_header(result: "ShopflowResult") -> str:
    """A Markdown line describing this run, generated from its parameters and counts."""
    p = result.params
    seed = result.summary.get("seed", {})
    judged = result.summary.get("judged")
    text = (f"**This run.** Part 1: {seed.get('n_pairs', 0)} pairs from `{Path(seed.get('source', '')).name}` at "
            f"threshold {p.seed_threshold:.2f}.")
    if judged:
        stats = judged.get("judge_stats", {})
        text += (f" Part 2: judge `{p.judge}`, prompt `{p.prompt}`"
                 + (f" (candidate `{p.candidate_prompt}`)" if p.candidate_prompt else "")
                 + f", {judged['n_pairs_loaded']} pairs loaded, {judged['n_pairs']} audited, "
                 f"{judged['n_pairs_excluded']} excluded, threshold {p.judged_threshold:.2f}; "
                 f"{stats.get('n_called', 0)} calls made and {stats.get('n_cached', 0)} read from the cache "
                 f"in {stats.get('wall_s', float('nan')):.1f} s. Bootstrap: {p.n_boot} resamples, seed {p.seed}.")
    return text
