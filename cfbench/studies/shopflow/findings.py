"""What a ShopFlow run prints and concludes, generated from its numbers: the seed's lines, the
invariants :meth:`ShopflowResult.check` verifies, and the "What this run shows" Markdown."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cfbench.judges.failures import describe_kinds
from cfbench.stats import verdicts as VD
from cfbench.core.text import md_code

from .gate import PairAudit

__all__ = ["seed_lines", "invariants", "findings_markdown", "run_header", "nominal_false_pass"]

#: The seed's expected figures for its own fixture (checked only when the shipped fixture is used).
_SEED_FLIPS = [["p4", "auto_serve", "human_review"], ["p5", "auto_serve", "human_review"],
               ["n1", "auto_serve", "human_review"]]


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def nominal_false_pass(confidence: float) -> float:
    """The interval rule's nominal false-pass rate when the true gap equals the maximum: the gate passes only when
    the whole two-sided ``confidence`` interval lies inside ±maximum, so only the side at the maximum can miss:
    ``(1 - confidence) / 2`` (2.5 % at 95 %). The one number every sentence about it is written from.

    >>> round(nominal_false_pass(0.95), 4)
    0.025
    """
    return (1.0 - float(confidence)) / 2.0


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
        f"{prefix}: every defined TPR lies inside its Clopper-Pearson and Wilson intervals":
            all(math.isnan(rr["tpr"]) or all(s[k][sl][0] - 1e-12 <= rr["tpr"] <= s[k][sl][1] + 1e-12
                                             for k in ("tpr_intervals", "wilson_tpr"))
                for sl, rr in s["rates"].items()),
        f"{prefix}: every rate interval names its method and none is a point": bool(all(
            r.n == 0 or (r.ci_high > r.ci_low and r.ci_method.startswith("clopper-pearson"))
            for r in audit.rate_intervals().itertuples(index=False))),
        f"{prefix}: each slice's positives + negatives = its rows":
            all(rr["n_pos"] + rr["n_neg"] == s["n_rows"] // n_variants for rr in s["rates"].values()),
        f"{prefix}: flips are audited pairs": {f[0] for f in s["flips"]} <= set(audit.routed["pair_id"]),
        f"{prefix}: routes follow the threshold": bool((audit.routed["route"] == np.where(
            ~audit.routed["evidence_passed"], "blocked_by_evidence",
            np.where(audit.routed["score"] >= audit.threshold, "auto_serve", "human_review"))).all()),
        f"{prefix}: suppressed intersection cells carry no rate": bool(
            audit.intersections.loc[audit.intersections["tpr_status"] == "insufficient", "tpr"].isna().all()
            and audit.intersections.loc[audit.intersections["fpr_status"] == "insufficient", "fpr"].isna().all()),
        f"{prefix}: each signed gap lies inside its own interval, and gap_upper bounds its size": bool(all(
            r.n_pairs == 0 or (r.ci_low - 1e-12 <= r.value <= r.ci_high + 1e-12
                               and r.gap_upper >= abs(r.value) - 1e-12)
            for r in audit.interval_checks.itertuples(index=False))),
        f"{prefix}: no gap interval is a single point": bool(all(
            r.n_pairs == 0 or r.ci_high > r.ci_low for r in audit.interval_checks.itertuples(index=False))),
        f"{prefix}: a gap passes only inside ±limit, at a decidable n, for a responsive judge": bool(all(
            r.status == "FAIL" or (r.verdict == "pass" and r.pass_possible and r.responsive
                                   and -r.limit < r.ci_low and r.ci_high < r.limit)
            for r in audit.interval_checks.itertuples(index=False))),
        f"{prefix}: a gap fails only when its whole interval lies beyond the limit": bool(all(
            (r.verdict == "fail") == (r.n_pairs > 0 and (r.ci_low > r.limit or r.ci_high < -r.limit))
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
    return out


# --------------------------------------------------------------------------- findings


_METHOD_WORDS = {"tango": "Tango score", "exact": "exact unconditional (Tango's statistic)",
                 "newcombe_paired": "Newcombe paired (method 10)"}
_ZERO_WORDS = {
    "inside": "0 lies inside it, so this difference cannot be told apart from noise",
    "outside": "0 lies outside it, so this difference is unlikely to be noise alone",
    "touches 0 (boundary)": "one end is exactly 0 (the interval touches 0 at its boundary), so this is a borderline "
                            "case: neither clearly noise nor clearly a difference",
    "undefined": "it is undefined",
}


def _stratum_sentence(row: Any, label: str, vs: Sequence[str]) -> str:
    a_only, b_only = int(row[f"only_{vs[0]}"]), int(row[f"only_{vs[1]}"])
    if int(row["n_pairs"]) == 0:
        return f"{label}: no pair in the {row['stratum']}, so there is nothing to test."
    return (f"{label} — asked on the {int(row['n_pairs'])} {row['stratum']}: {a_only} pair(s) were auto-served only "
            f"in the {vs[0]} wording and {b_only} only in the {vs[1]} wording (exact McNemar p = "
            f"{row['mcnemar_p']:.3g}). {row['definition']} = {row['estimate']:+.3f}; its {_METHOD_WORDS.get(row['ci_method'], row['ci_method'])} "
            f"{row['confidence']:.0%} interval for matched pairs is [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]: "
            f"{_ZERO_WORDS[row['zero']]}.")


def _favours(row: Any, vs: Sequence[str]) -> str:
    a_only, b_only = int(row[f"only_{vs[0]}"]), int(row[f"only_{vs[1]}"])
    return vs[0] if a_only > b_only else vs[1] if b_only > a_only else "neither wording"


def _interval_sentence(audit: PairAudit, check: str) -> str:
    rows = audit.interval_checks[audit.interval_checks["check"] == check]
    label = "TPR" if check == "tpr_gap" else "FPR"
    out = []
    for row in rows.itertuples(index=False):
        if row.n_pairs == 0:
            out.append(f"{label} gap: no {row.stratum}, so no interval (`inconclusive`; the release requirement "
                       "is not met)")
            continue
        kind = VD.verdict_kind(row.verdict)
        extra = f"; forecast: {row.forecast}" if kind in (VD.INCONCLUSIVE, VD.UNINFORMATIVE) else ""
        why = f" ({row.responsiveness})" if kind == VD.UNINFORMATIVE else ""
        out.append(f"{label} gap ({row.definition}, {row.n_pairs} {row.stratum}): interval [{row.ci_low:+.3f}, "
                   f"{row.ci_high:+.3f}], which allows a gap as large as {row.gap_upper:.3f} in size against the "
                   f"limit ±{row.limit:.2f} — `{kind}`: {VD.MEANINGS[kind]}{why}{extra}; the release requirement "
                   f"is {'met' if row.status == 'PASS' else 'not met'}")
    return "; ".join(out)


def _part_paragraphs(name: str, audit: PairAudit, summary: dict[str, Any], *, judged: bool) -> list[str]:
    vs = audit.variants
    s = summary
    n_pairs = s["n_pairs"]
    n_ready = int(audit.rates["n_pos"].iloc[0])
    n_review = int(audit.rates["n_neg"].iloc[0])
    checks = s["baseline_checks"] if "baseline_checks" in s else s["checks"]
    r = audit.rates
    paras = [
        f"**{name}.** {n_pairs} matched pairs ({n_ready} ready, {n_review} needing review; each pair is the same "
        f"request in both wordings), routed at threshold {audit.threshold:.2f}: {audit.n_flips} pair(s) change route "
        f"between {vs[0]} and {vs[1]}. TPR is {_pct(r.at[vs[0], 'tpr'])} vs {_pct(r.at[vs[1], 'tpr'])}, FPR "
        f"{_pct(r.at[vs[0], 'fpr'])} vs {_pct(r.at[vs[1], 'fpr'])}. Every gap below is {vs[0]} minus {vs[1]} "
        f"(positive: the {vs[0]} wording is auto-served more often). Point rule (|gap| ≤ limit): TPR "
        f"{checks['tpr_gap']}, FPR {checks['fpr_gap']}.",
    ]
    tests = audit.stratum_tests
    if len(tests):
        by = {row["stratum"]: row for _, row in tests.iterrows()}
        tpr, fpr, pooled = by["ready pairs"], by["needs-review pairs"], by["all pairs"]
        paras.append("**Each rate is tested on its own pairs.** " + _stratum_sentence(tpr, "TPR difference", vs)
                     + " " + _stratum_sentence(fpr, "FPR difference", vs))
        mixed = {_favours(tpr, vs), _favours(fpr, vs)} == set(vs)
        paras.append(
            f"Extra, not an answer to either question: McNemar pooled over all {int(pooled['n_pairs'])} pairs "
            f"({int(pooled[f'only_{vs[0]}'])} vs {int(pooled[f'only_{vs[1]}'])} discordant, p = "
            f"{pooled['mcnemar_p']:.3g}) tests the overall auto-serve rate. "
            + (f"Here it mixes ready pairs that favour {_favours(tpr, vs)} with needs-review pairs that favour "
               f"{_favours(fpr, vs)}, so the two effects partly cancel and the pooled p says nothing about the TPR "
               "gap." if mixed else "It blends the ready and needs-review pairs, so it cannot stand in for the "
               "TPR or FPR test."))
    paras.append(
        f"**Interval rule** (pass only when the whole interval lies inside ±limit): "
        f"{_interval_sentence(audit, 'tpr_gap')}; {_interval_sentence(audit, 'fpr_gap')}. The contract's support "
        f"minimum is {audit.contract.min_positive_per_slice} ready and {audit.contract.min_negative_per_slice} "
        f"needs-review rows per wording (here: {'met' if audit.support_ok else 'not met'}).")
    return paras


def findings_markdown(result: "ShopflowResult") -> str:
    """The "What this run shows" cell: generated sentences, no hand-written numbers."""
    parts = ["### What this run shows"]
    seed = result.summary.get("seed")
    if seed:
        base, cand = result.audits["seed"], result.audits["seed_candidate"]
        parts += _part_paragraphs("Seed fixture" if seed.get("shipped_fixture") else "Scored pairs",
                                  base, seed, judged=False)
        civ = cand.interval_checks[cand.interval_checks["check"] == "tpr_gap"].iloc[0]
        parts.append(
            f"The candidate rerun has TPR gap {cand.tpr_gap:.3f} and FPR gap {cand.fpr_gap:.3f} "
            f"(point rule {'PASS' if cand.checks_ok else 'FAIL'}), yet on its {civ['n_pairs']} ready pairs the "
            f"TPR gap could still be as large as {civ['gap_upper']:.3f} in size (interval "
            f"[{civ['ci_low']:+.3f}, {civ['ci_high']:+.3f}]; {civ['verdict']}). "
            f"Release: **{cand.release.decision}**"
            + (f", missing {', '.join(cand.release.missing)}." if cand.release.missing else "."))
        ti = base.tpr_intervals.set_index("slice")
        vs = base.variants
        parts.append(
            "The seed prints Wilson intervals for the TPRs (reproduced above); with "
            + " and ".join(f"{int(ti.at[v, 'n'])}" for v in vs)
            + " ready rows per wording Wilson can cover as little as 83 % (docs/statistics.md), so the tables "
            "report exact Clopper-Pearson intervals instead: "
            + "; ".join(f"{v} {int(ti.at[v, 'successes'])}/{int(ti.at[v, 'n'])} "
                        f"[{_pct(ti.at[v, 'ci_low'])}, {_pct(ti.at[v, 'ci_high'])}]" for v in vs) + ".")
    judged = result.summary.get("judged")
    if judged:
        audit = result.audits["judged"]
        name = f"Judge `{judged['judge']}`" + (" (a scripted test double: these numbers mean nothing about any "
                                               "model)" if judged["judge_is_test_double"] else "")
        not_read = judged["score_sources"].get("not read", 0)
        why = describe_kinds(judged.get("failures_by_kind", {}))
        if result.summary.get("sequential"):  # issue 35: which gap cells stopped early and why
            from .sequential import sequential_sentence

            parts.append(sequential_sentence(result.tables.get("judged_sequential_cells"),
                                             result.summary["sequential"]))
        parts += _part_paragraphs(name, audit, judged, judged=True)
        parts.append(f"Parsing: {not_read} of {sum(judged['score_sources'].values())} requests gave no Yes/No "
                     f"answer{f' ({why})' if why else ''}; {judged['n_pairs_excluded']} pair(s) were excluded whole "
                     "(listed in "
                     f"`judged_excluded.csv`). Release: **{judged['decision']}**"
                     + (f", missing {', '.join(judged['missing'])}." if judged["missing"] else "."))
        if "candidate" in judged:
            c = judged["candidate"]
            parts.append(f"Candidate prompt `{c['prompt']}` on the same pairs: TPR gap {c['tpr_gap']:.3f}, "
                         f"FPR gap {c['fpr_gap']:.3f}, {len(c['flips'])} flip(s); release {c['decision']}.")
    elif result.judged_error:
        parts.append(f"**Judged audit: no result.** {result.judged_error}")
    audit = result.audits.get("judged") or result.audits.get("seed")
    level = float(audit.contract.gap_interval.confidence) if audit is not None else 0.95
    parts.append(
        "**Which gate to read.** The point rule (observed gap ≤ maximum) suits a regression check on fixed "
        "fixtures: it asks whether this judge treats *these* cases differently. The interval rule (the whole "
        "matched-pair interval of the signed gap inside ±maximum) suits a release claim about the population the "
        "pairs sample: it passes only when the data show the gap is small, and in simulated audits whose true gap "
        f"equals the maximum it passes at most {nominal_false_pass(level):.1%} of the time at the contract's "
        f"{level:.0%} level (one side of the interval; simulated in `benchmarks/bench_gate_shopflow.py`). Its verdicts: "
        "`pass` (the interval inside ±maximum, for a judge whose scores separate ready from needs-review requests), "
        "`fail` (the interval wholly beyond one side), `inconclusive` (neither; `forecast` says about how many "
        "pairs might decide, from the observed interval), `uninformative` (the scores do not separate the "
        "requests, so staying unmoved says nothing). Below `n_needed` pairs not even a zero gap can pass. "
        "These pairs are synthetic fixtures; their wordings are test conditions, not demographic groups.")
    return "\n\n".join(parts)


def run_header(result: "ShopflowResult") -> str:
    """A Markdown line describing this run, generated from its parameters and counts."""
    p = result.params
    seed = result.summary.get("seed", {})
    judged = result.summary.get("judged")
    text = (f"**This run.** Part 1: {seed.get('n_pairs', 0)} pairs from {md_code(Path(seed.get('source', '')).name)} at "
            f"threshold {p.seed_threshold:.2f}.")
    if judged:
        stats = judged.get("judge_stats", {})
        text += (f" Part 2: judge {md_code(p.judge)}, prompt {md_code(p.prompt)}"
                 + (f" (candidate {md_code(p.candidate_prompt)})" if p.candidate_prompt else "")
                 + f", {judged['n_pairs_loaded']} pairs loaded, {judged['n_pairs']} audited, "
                 f"{judged['n_pairs_excluded']} excluded, threshold {p.judged_threshold:.2f}; "
                 f"{stats.get('n_called', 0)} calls made and {stats.get('n_cached', 0)} read from the cache "
                 f"in {stats.get('wall_s', float('nan')):.1f} s.")
    return text
