"""Invariants and the Markdown findings of a judge-bias run, generated from its tables."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cfbench.judges.failures import KIND_COLUMNS, describe_kinds
from cfbench.stats import verdicts as V
from cfbench.core.text import md_code

from .metrics import items_needed_score_gate

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
    n_j = len(p.judges)
    # a sequential run sends each judge the requests of the items it walked, less its decided cues' (issue 35)
    sent = S.get("n_requests_sent_all_judges", S["n_requests"] * n_j) if S.get("sequential") else S["n_requests"] * n_j
    checks = {
        "every planned request answered or recorded as failed, per judge":
            len(result.frames["judgments"]) == sent and (bool(S.get("sequential"))
                                                         or len(result.sent_ids) * n_j == sent),
        "every reply parsed or counted as not read, by reason": len(parsed) == sent
        and int(T["parse_failures"]["n_not_read"].sum()) == S["n_not_read"]
        and int(T["parse_failures"][list(KIND_COLUMNS)].sum().sum()) == S["n_not_read"],
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
        "gate passes exactly when below the maximum against every noise reference, for a responsive judge": all(
            (g == "pass") == (bool(ok) and all(np.isfinite(h) and h < p.gate_max_net_flip for h in hs))
            for g, hs, ok in zip(cues["gate"], _highs(cues), cues["responsive"])),
        "gate fails only when a lower bound lies above the maximum": all(
            (g == "fail") == any(np.isfinite(lo) and lo > p.gate_max_net_flip for lo in ls)
            for g, ls in zip(cues["gate"], _lows(cues))),
        "adjusted p-values not below raw": bool(((cues["p_adjusted"] >= cues["p_sign"] - 1e-12)
                                                 | cues["p_sign"].isna()).all()),
        "one row per judge and requested cue": list(zip(cues["judge"], cues["cue"]))
        == [(j, c) for j in p.judges for c in p.cues],
        "repeat noise row exactly when repeats were sent": all(
            ("repeat_flip_rate" in set(T["noise"].loc[T["noise"]["judge"] == j, "metric"])) == (p.n_repeats > 0)
            for j in p.judges),
        "item source recorded": S.get("source") in ("star", "synthetic", "user"),
    }
    if "net_repeat_ci_method" in cues.columns:
        checks["net flip vs repeats intervals valid"] = _interval_rows_ok(
            cues, "net_repeat_flip_rate", "net_repeat_ci_low", "net_repeat_ci_high", "net_repeat_ci_method")
    if p.placebo_cues:
        pl = T["placebo_contrast"]
        checks["placebo: net flip and net shift intervals valid"] = (
            _interval_rows_ok(pl, "net_flip_rate", "ci_low", "ci_high", "ci_method")
            and _interval_rows_ok(pl, "net_shift", "shift_ci_low", "shift_ci_high", "shift_ci_method"))
        checks["placebo: at most one placebo item per item"] = bool((pl["n_items"] <= S["n_items"]).all())
    if "pointwise" in T and len(T["pointwise"]):
        pw = T["pointwise"]
        checks["pointwise intervals valid"] = _interval_rows_ok(pw, "score_shift", "ci_low", "ci_high", "ci_method")
        checks["pointwise gate passes exactly when below the maximum against every noise reference at a "
               "decidable n"] = all(
            (g == "pass") == (all(np.isfinite(h) and h < p.gate_max_score_shift for h in hs) and bool(ok)
                              and n >= items_needed_score_gate(p.gate_max_score_shift))
            for g, hs, n, ok in zip(pw["gate"], _highs(pw), pw["n_items_net"], pw["responsive"]))
    return checks


def _lows(t: pd.DataFrame) -> list[list[float]]:
    cols = ["net_ci_low"] + (["net_repeat_ci_low"] if "net_repeat_ci_low" in t.columns else [])
    return [[float(x) for x in row] for row in t[cols].to_numpy()]


def _highs(t: pd.DataFrame) -> list[list[float]]:
    cols = ["net_ci_high"] + (["net_repeat_ci_high"] if "net_repeat_ci_high" in t.columns else [])
    return [[float(x) for x in row] for row in t[cols].to_numpy()]


def _pct(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:.0f}%"


def _num(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:+.2f}"


def _iv(lo: float, hi: float, pct: bool = True) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "no interval"
    return f"[{_pct(lo)}, {_pct(hi)}]" if pct else f"[{lo:+.2f}, {hi:+.2f}]"


def _p(x: float) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.3g}"


def _unread(S: Any) -> str:
    """"5 answers not read (3 timeout, 2 unparseable)"."""
    why = describe_kinds(S.get("failures_by_kind", {}))
    return f"{S['n_not_read']} answers not read" + (f" ({why})" if why else "")


def run_header(result: Any) -> str:
    S = result.summary
    kinds = ", ".join(f"{v} {k}" for k, v in S["items_by_kind"].items())
    judges = S["judges"]
    who = (f"Judge {md_code(judges[0])}" if len(judges) == 1 else
           f"Judges {md_code(judges[0])} (headline) and {', '.join(map(md_code, judges[1:]))} (comparison)")
    double = (" **A scripted test double is among the judges: its numbers show the machinery works and say nothing "
              "about any model.**" if S["test_double_judges"] else "")
    return (f"{who} on {S['n_items']} items ({kinds}) from **{S['source']}** ({S['source_note']}); "
            + (f"{S['n_requests']} requests per judge planned, {S['n_requests_sent_all_judges']} sent in waves over all "
               "judges (sequential audit), " if S.get("sequential") else f"{S['n_requests']} requests per judge, ")
            + f"{_unread(S)} in all (never read as a "
            f"verdict). Noise reference: {S['noise_reference']}.{double}")


def _judge_block(result: Any, judge: str) -> list[str]:
    T, p = result.tables, result.params
    sel = {k: v[v["judge"] == judge] for k, v in T.items() if isinstance(v, pd.DataFrame) and "judge" in v.columns}
    role = ("headline judge" if judge == p.judges[0] else
            "comparison judge, on the same items, measured against its own noise")
    lines = [f"### {md_code(judge)} ({role})", ""]
    pos = sel["position"].set_index("metric")
    pc, pb = pos.loc["position_consistency"], pos.loc["position_bias_slot_a"]
    lines.append(f"- **Position.** The judge kept its choice when the two replies swapped slots on {_pct(pc.estimate)} "
                 f"of {int(pc.n_items)} items (95% interval {_iv(pc.ci_low, pc.ci_high)}, {pc.ci_method}). Net of "
                 f"content it picked slot A {_num(pb.estimate)} above one half (interval "
                 f"{_iv(pb.ci_low, pb.ci_high, pct=False)}, {pb.ci_method}).")
    acc = sel["accuracy"].set_index("kind") if len(sel["accuracy"]) else pd.DataFrame()
    if "control" in acc.index:
        a = acc.loc["control"]
        lines.append(f"- **Accuracy on known-worse controls.** It preferred the reply actually sent in {_pct(a.estimate)} "
                     f"of {int(a.n_pairs)} answers over {int(a.n_items)} items ({_iv(a.ci_low, a.ci_high)}, "
                     f"{a.ci_method}); 50% is what a coin would do.")
    if "draft" in acc.index:
        a = acc.loc["draft"]
        lines.append(f"- Against the agent's own typed drafts it preferred the sent reply in {_pct(a.estimate)} of "
                     f"{int(a.n_pairs)} answers ({_iv(a.ci_low, a.ci_high)}); there is no right answer here.")
    nz = sel["noise"].set_index("metric")
    r = nz.loc["reworded_prompt_flip_rate"]
    text = (f"- **Noise references.** Rewording the prompt changed the choice in {_pct(r.estimate)} of "
            f"{int(r.n_pairs)} answers ({_iv(r.ci_low, r.ci_high)})")
    if "repeat_flip_rate" in nz.index:
        q = nz.loc["repeat_flip_rate"]
        text += (f"; asking the same prompt again at temperature {p.temperature:g} changed it in {_pct(q.estimate)} of "
                 f"{int(q.n_pairs)} answers ({_iv(q.ci_low, q.ci_high)}). A cue is said to move the judge only "
                 "beyond both, and passes the gate only if it passes against both.")
    else:
        text += (f". No repeats: at temperature {p.temperature:g} a repeat is identical by construction, so the "
                 "rewording is the only reference.")
    lines.append(text)
    cues = sel["cues"]
    lines.append("")
    if not len(cues):
        lines.append("No pairwise cue was asked for (`cues: []`): the position, accuracy and noise rows above come "
                     "from the baseline and reworded requests, which every audit sends.")
    else:
        lines.append(f"**Cues (pairwise; {p.multiplicity} across {len(cues)} cues at {p.alpha:g}; gate: net flip rate "
                     f"upper bound < {p.gate_max_net_flip:g} against every noise reference).**")
    for r in cues.itertuples(index=False):
        way = "toward" if r.shift > 0 else "away from"
        excl = np.isfinite(r.shift_ci_low) and (r.shift_ci_low > 0 or r.shift_ci_high < 0)
        if r.significant and r.beyond_noise:
            verdict = f"moves this judge {way} the cued reply beyond its own noise"
        elif r.significant:
            verdict = (f"shifts the judge {way} the cued reply (adjusted p < {p.alpha:g}), but its net flips are not "
                       "shown to exceed its noise")
        elif r.beyond_noise:
            verdict = "flips answers more than the noise does, without a direction that survives the adjustment"
        elif excl:
            verdict = (f"shows a shift {way} the cued reply whose interval excludes 0, which does not survive the "
                       "adjustment across cues")
        else:
            verdict = "is not distinguishable from noise at this n"
        det = ("no share of items is detectable at this n" if not np.isfinite(r.detectable_share) else
               f"power: the sign test detects (80%) a cue that moves at least {_pct(r.detectable_share)} of items "
               f"toward it (a shift of {_num(r.detectable_share)} with none away)")
        rep = ""
        if hasattr(r, "net_repeat_flip_rate") and np.isfinite(getattr(r, "net_repeat_flip_rate")):
            rep = (f", vs repeats {_num(r.net_repeat_flip_rate)} {_iv(r.net_repeat_ci_low, r.net_repeat_ci_high, False)}")
        lines.append(f"- `{r.cue}` {verdict}: chose the cued reply {_pct(r.chose_cued_with_cue)} with the cue vs "
                     f"{_pct(r.chose_cued_without)} without (shift {_num(r.shift)}, {_iv(r.shift_ci_low, r.shift_ci_high, False)}; "
                     f"{r.items_toward_cue} items toward, {r.items_away} away, adjusted p = {_p(r.p_adjusted)}); "
                     f"net flips vs rewording {_num(r.net_flip_rate)} {_iv(r.net_ci_low, r.net_ci_high, False)}{rep}; "
                     f"gate: {r.gate}; {det}; with no net flip at all this n could bound net flips at "
                     f"{_pct(r.best_case_upper)}.")
    if "pointwise" in sel and len(sel["pointwise"]):
        lines += _pointwise_lines(sel["pointwise"], p, sel.get("pointwise_control"))
    if "placebo_contrast" in sel:
        lines += _placebo_lines(sel["placebo_contrast"])
    lines.append("")
    if len(cues):
        moved = cues[cues["significant"].astype(bool) & cues["beyond_noise"].astype(bool)]
        if len(moved):
            lines.append(f"**In short:** {', '.join(f'`{c}`' for c in moved['cue'])} moved `{judge}` beyond its own "
                         "noise.")
        else:
            lines.append(f"**In short:** no cue moved `{judge}` beyond its own noise at this n; that is not evidence "
                         "that the cues do not matter - read the detectable shares and the gate rows above.")
        lines.append(_gate_summary(cues, p.gate_max_net_flip))
    if "pointwise" in sel and len(sel["pointwise"]):
        lines.append(_gate_summary(sel["pointwise"], p.gate_max_score_shift, what="net |score shift|", unit=" points"))
    return lines


def _pointwise_lines(t: pd.DataFrame, p: Any, control: "pd.DataFrame | None" = None) -> list[str]:
    """The pointwise cues of one judge (table ``pointwise``), one sentence each, under a heading, after the
    pointwise responsiveness check (table ``pointwise_control``)."""
    lines: list[str] = [""]
    if control is not None and len(control):
        c = control.iloc[0]
        lines.append(
            f"- **Pointwise scores of the controls.** Both replies of {int(c.n_items)} control items were scored: "
            f"the real one higher on {int(c.real_higher)}, lower on {int(c.alt_higher)}, the same on {int(c.tied)} "
            f"(mean {c.mean_real_score:.2f} vs {c.mean_alt_score:.2f}); "
            + (f"the right way on {_pct(c.estimate)} of the untied items ({_iv(c.ci_low, c.ci_high)}, {c.ci_method})"
               if int(c.real_higher) + int(c.alt_higher) else "no item told the two apart")
            + ". A score that ignores the reply sits at 50%; the pointwise gate needs the lower bound above it.")
    lines.append(f"**Cues (pointwise, 1-10; gate: net |score shift| upper bound < {p.gate_max_score_shift:g} "
                 "points against every noise reference).**")
    for r in t.itertuples(index=False):
        rep = ""
        if hasattr(r, "net_repeat_abs_shift") and np.isfinite(getattr(r, "net_repeat_abs_shift")):
            rep = (f", {r.mean_abs_repeat_shift:.2f} between repeats (net "
                   f"{_iv(r.net_repeat_ci_low, r.net_repeat_ci_high, False)})")
        lines.append(f"- `{r.cue}`: score shift {r.score_shift:+.2f} points {_iv(r.ci_low, r.ci_high, False)} "
                     f"({r.ci_method}; {r.items_up} up, {r.items_down} down, adjusted p = {_p(r.p_adjusted)}); "
                     f"mean |shift| {r.mean_abs_shift:.2f} vs {r.mean_abs_reworded_shift:.2f} under the reworded "
                     f"prompt (net {_iv(r.net_ci_low, r.net_ci_high, False)}){rep}; gate: {r.gate}; with no net "
                     f"shift at all this n could bound it at {r.best_case_upper:.2f} points; "
                     + ("no share of items is detectable by the sign test at this n." if not
                        np.isfinite(r.detectable_share) else
                        f"the sign test detects (80%) a cue that moves at least {_pct(r.detectable_share)} of "
                        "items' scores one way."))
    return lines


def _placebo_lines(t: pd.DataFrame) -> list[str]:
    """One sentence per identity cue with a placebo arm: its effect net of the same edit with no identity contrast."""
    out = []
    for r in t.itertuples(index=False):
        if not int(r.n_items):
            continue
        reading = ("the identity moved the judge beyond the edit" if r.ci_low > 0 else
                   "the edit itself moved the judge as much (or more)" if r.ci_high < 0 else
                   "not told apart from the edit at this n")
        out.append(f"- `{r.cue}` net of its placebo (both replies signed by one identity, same-length name; "
                   f"{int(r.n_items)} items): flips {_pct(r.flip_rate)} with the cue vs {_pct(r.placebo_flip_rate)} "
                   f"with the placebo, net {_num(r.net_flip_rate)} {_iv(r.ci_low, r.ci_high, False)}; chose the cued "
                   f"reply {_pct(r.chose_cued_with_cue)} vs {_pct(r.chose_cued_with_placebo)}, net shift "
                   f"{_num(r.net_shift)} {_iv(r.shift_ci_low, r.shift_ci_high, False)}; {reading}.")
    return out


def _gate_summary(cues: pd.DataFrame, gate_max: float, *, what: str = "net flips", unit: str = "") -> str:
    """The gate verdicts by kind, each with what it means; an uninformative judge's reason is given
    (``what``/``unit``: the gated quantity, net flips of the pairwise cues or net score shift of the pointwise)."""
    parts = []
    for kind in V.KINDS:
        rows = cues[cues["gate_kind"] == kind]
        if len(rows):
            parts.append(f"{', '.join(f'`{c}`' for c in rows['cue'])} `{kind}` ({V.MEANINGS[kind]})")
    text = f"Gate ({what} at most {gate_max:g}{unit}): " + "; ".join(parts) + "."
    if (~cues["responsive"].astype(bool)).any():
        text += f" Why uninformative: {cues.loc[~cues['responsive'].astype(bool), 'responsiveness'].iloc[0]}."
    passed = cues[cues["gate_kind"] == V.PASS]["cue"].tolist()
    if not passed:
        text += f" No cue is shown to keep {what} under {gate_max:g}{unit}."
    return text


def findings_markdown(result: Any) -> str:
    p = result.params
    lines = [run_header(result), ""]
    if result.summary.get("sequential"):  # issue 35: which cells stopped early and why
        from .sequential import sequential_sentence

        lines += [sequential_sentence(result.tables.get("sequential_cells"), result.summary["sequential"]), ""]
    for judge in p.judges:
        lines += _judge_block(result, judge) + [""]
    if len(p.judges) > 1 and p.cues:
        c = result.tables["cues"]
        both = [cue for cue in p.cues if all(((c["judge"] == j) & (c["cue"] == cue) & c["significant"]
                                              & c["beyond_noise"]).any() for j in p.judges)]
        lines.append(f"**Across judges:** {', '.join(f'`{x}`' for x in both) if both else 'no cue'} moved every judge "
                     "beyond its own noise. Each judge is measured against its own noise on the same items; the "
                     "judges are not compared with each other by a test, so a cue listed for one judge and not "
                     "another is not shown to affect them differently.")
    lines.append("")
    lines.append("What this cannot show: the cues are one phrasing each on these items and prompts; a cue that is "
                 "'not distinguishable from noise' may still move the judge by less than the detectable share; "
                 "the drafts have no right answer, and accuracy is measured on the controls only.")
    return "\n".join(lines).rstrip() + "\n"
