"""Invariants and the Markdown findings of a judge-bias run, generated from its tables."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["invariants", "findings_markdown", "run_header"]


def _interval_rows_ok(t: pd.DataFrame, est: str, lo: str, hi: str, how: str) -> bool:
    """Every row: NaN bounds with a 'none:' method, or lo <= est <= hi with lo < hi (never [x, x])."""
    for r in t.itertuples(index=False):
        e, l, h, m = getattr(r, est), getattr(r, lo), getattr(r, hi), str(getattr(r, how))
        if not (np.isfinite(l) and np.isfinite(h)):
            if not m.startswith("none:"):
                return False
            continue
        if not (l - 1e-9 <= e <= h + 1e-9) or not l < h:
            return False
    return True


def invariants(result: Any) -> dict[str, bool]:
    T, S, p = result.tables, result.summary, result.params
    parsed = result.frames["parsed"]
    cues = T["cues"]
    checks = {
        "every planned request answered or recorded as failed": len(result.frames["judgments"]) == S["n_requests"]
                                                                  == len(result.sent_ids),
        "every reply parsed or counted as a parse failure": len(parsed) == S["n_requests"]
        and int(T["parse_failures"]["failures"].sum()) == S["n_parse_failures"],
        "pairwise answers are A or B only": set(parsed.loc[parsed["parse_ok"] & (parsed["task"] == "pairwise"),
                                                       "answer"]) <= {"A", "B"},
        "pointwise scores within 1..10": bool(parsed.loc[parsed["task"] == "pointwise", "score"].dropna()
                                              .between(1, 10).all()),
        "position intervals valid": _interval_rows_ok(T["position"], "estimate", "ci_low", "ci_high", "ci_method"),
        "accuracy intervals valid": _interval_rows_ok(T["accuracy"], "estimate", "ci_low", "ci_high", "ci_method")
        if len(T["accuracy"]) else True,
        "cue shift intervals valid": _interval_rows_ok(cues, "shift", "shift_ci_low", "shift_ci_high",
                                                       "shift_ci_method"),
        "net flip intervals valid": _interval_rows_ok(cues, "net_flip_rate", "net_ci_low", "net_ci_high",
                                                      "net_ci_method"),
        "gate passes only below the maximum": all((g == "pass") == (np.isfinite(h) and h < p.gate_max_net_flip)
                                                  for g, h in zip(cues["gate"], cues["net_ci_high"])),
        "adjusted p-values not below raw": bool(((cues["p_adjusted"] >= cues["p_sign"] - 1e-12)
                                                 | cues["p_sign"].isna()).all()),
        "one row per requested cue": list(cues["cue"]) == list(p.cues),
        "item source recorded": S.get("source") in ("star", "synthetic", "user"),
    }
    if "pointwise" in T and len(T["pointwise"]):
        checks["pointwise intervals valid"] = _interval_rows_ok(T["pointwise"], "score_shift", "ci_low", "ci_high",
                                                                "ci_method")
    return checks


def _pct(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:.0f}%"


def _num(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:+.2f}"


def _iv(lo: float, hi: float, pct: bool = True) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "no interval"
    return f"[{_pct(lo)}, {_pct(hi)}]" if pct else f"[{lo:+.2f}, {hi:+.2f}]"


def run_header(result: Any) -> str:
    S = result.summary
    kinds = ", ".join(f"{v} {k}" for k, v in S["items_by_kind"].items())
    double = (" **This judge is a scripted test double: its numbers show the machinery works and say nothing about "
              "any model.**" if S["judge_is_test_double"] else "")
    return (f"Judge `{S['judge']}` on {S['n_items']} items ({kinds}) from **{S['source']}** ({S['source_note']}); "
            f"{S['n_requests']} requests, {S['n_parse_failures']} parse failures (never read as a verdict). "
            f"Noise reference: {S['noise_reference']}.{double}")


def findings_markdown(result: Any) -> str:
    T, p = result.tables, result.params
    lines = [run_header(result), ""]
    pos = T["position"].set_index("metric")
    pc, pb = pos.loc["position_consistency"], pos.loc["position_bias_slot_a"]
    lines.append(f"- **Position.** The judge kept its choice when the two replies swapped slots on {_pct(pc.estimate)} "
                 f"of {int(pc.n_items)} items (95% interval {_iv(pc.ci_low, pc.ci_high)}, {pc.ci_method}). Net of "
                 f"content it picked slot A {_num(pb.estimate)} above one half (interval "
                 f"{_iv(pb.ci_low, pb.ci_high, pct=False)}, {pb.ci_method}).")
    acc = T["accuracy"].set_index("kind") if len(T["accuracy"]) else pd.DataFrame()
    if "control" in acc.index:
        a = acc.loc["control"]
        lines.append(f"- **Accuracy on known-worse controls.** It preferred the reply actually sent in {_pct(a.estimate)} "
                     f"of {int(a.n_pairs)} answers over {int(a.n_items)} items ({_iv(a.ci_low, a.ci_high)}, "
                     f"{a.ci_method}); 50% is what a coin would do.")
    if "draft" in acc.index:
        a = acc.loc["draft"]
        lines.append(f"- Against the agent's own typed drafts it preferred the sent reply in {_pct(a.estimate)} of "
                     f"{int(a.n_pairs)} answers ({_iv(a.ci_low, a.ci_high)}); there is no right answer here.")
    nz = T["noise"].iloc[0]
    lines.append(f"- **Noise reference.** Rewording the prompt changed the choice in {_pct(nz.estimate)} of "
                 f"{int(nz.n_pairs)} answers ({_iv(nz.ci_low, nz.ci_high)}).")
    cues = T["cues"]
    moved = cues[cues["significant"] & cues["beyond_noise"]]
    lines.append("")
    lines.append(f"**Cues (pairwise; {p.multiplicity} across {len(cues)} cues at {p.alpha:g}; gate: net flip rate "
                 f"upper bound < {p.gate_max_net_flip:g}).**")
    for r in cues.itertuples(index=False):
        way = "toward" if r.shift > 0 else "away from"
        excl = np.isfinite(r.shift_ci_low) and (r.shift_ci_low > 0 or r.shift_ci_high < 0)
        if r.significant and r.beyond_noise:
            verdict = f"moves this judge {way} the cued reply beyond its own noise"
        elif r.significant:
            verdict = (f"shifts the judge {way} the cued reply (adjusted p < {p.alpha:g}), but its net flips are not "
                       "shown to exceed the reworded prompt's")
        elif r.beyond_noise:
            verdict = "flips answers more than the reworded prompt does, without a direction that survives the adjustment"
        elif excl:
            verdict = (f"shows a shift {way} the cued reply whose interval excludes 0, which does not survive the "
                       "adjustment across cues")
        else:
            verdict = "is not distinguishable from noise at this n"
        det = ("no share of items is detectable at this n" if not np.isfinite(r.detectable_share) else
               f"the design detects (80% power) a cue that moves at least {_pct(r.detectable_share)} of items")
        lines.append(f"- `{r.cue}` {verdict}: chose the cued reply {_pct(r.chose_cued_with_cue)} with the cue vs "
                     f"{_pct(r.chose_cued_without)} without (shift {_num(r.shift)}, {_iv(r.shift_ci_low, r.shift_ci_high, False)}; "
                     f"{r.items_toward_cue} items toward, {r.items_away} away, adjusted p = "
                     f"{'n/a' if math.isnan(r.p_adjusted) else f'{r.p_adjusted:.3g}'}); net flips "
                     f"{_num(r.net_flip_rate)} {_iv(r.net_ci_low, r.net_ci_high, False)}; gate: {r.gate}; {det}.")
    if "pointwise" in T and len(T["pointwise"]):
        lines.append("")
        lines.append("**Cues (pointwise, 1-10).**")
        for r in T["pointwise"].itertuples(index=False):
            lines.append(f"- `{r.cue}`: score shift {r.score_shift:+.2f} points {_iv(r.ci_low, r.ci_high, False)} "
                         f"({r.ci_method}; {r.items_up} up, {r.items_down} down, adjusted p = "
                         f"{'n/a' if math.isnan(r.p_adjusted) else f'{r.p_adjusted:.3g}'}); mean |shift| "
                         f"{r.mean_abs_shift:.2f} vs {r.mean_abs_reworded_shift:.2f} under the reworded prompt "
                         f"(net {_iv(r.net_ci_low, r.net_ci_high, False)}).")
    lines.append("")
    if len(moved):
        lines.append(f"**In short:** {', '.join(f'`{c}`' for c in moved['cue'])} moved this judge beyond its own noise.")
    else:
        lines.append("**In short:** no cue moved this judge beyond its own noise at this n; that is not evidence that "
                     "the cues do not matter - read the detectable shares and the gate rows above.")
    passed = cues[cues["gate"] == "pass"]["cue"].tolist()
    lines.append(f"Gate: {', '.join(passed) if passed else 'no cue'} shown to keep net flips under "
                 f"{p.gate_max_net_flip:g}.")
    return "\n".join(lines)
