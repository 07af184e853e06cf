""""What this run shows": Markdown generated from a contact-center result's numbers.

Nothing here is a hand-written conclusion: each sentence is filled from the
tables (estimates, intervals, n) and says which effects are distinguishable
from noise, which are not, and how large an effect the run could have seen.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cfbench.judges.failures import KIND_COLUMNS, describe_kinds
from cfbench.stats import verdicts as V
from cfbench.core.text import md_code, md_text
from cfbench.studies.contact_center_qa.tables import NEAR_BOUNDARY

__all__ = ["findings_markdown", "zero_flip_upper_bound", "flip_counts", "flip_count_line"]


def zero_flip_upper_bound(n_pairs: int, *, level: float = 0.95) -> float:
    """Largest flip rate still consistent (one-sided ``level``) with 0 flips in ``n_pairs`` pairs.

    The exact binomial bound ``1 - (1 - level) ** (1 / n)`` (about ``3 / n``,
    the "rule of three"); NaN for no pairs.

    >>> round(zero_flip_upper_bound(100), 4)
    0.0295
    """
    if n_pairs <= 0:
        return float("nan")
    return 1.0 - (1.0 - level) ** (1.0 / n_pairs)


def _count(n: int, word: str, plural: str | None = None) -> str:
    """``1 transcript``, ``2 transcripts``: a count with its noun in the right number."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _of(n: int, total: int, word: str) -> str:
    """``1 of 1 dimension``, ``2 of 3 dimensions``."""
    return f"{n} of {_count(total, word)}"


def _range(lo: int, hi: int, word: str) -> str:
    """``4 transcripts``, ``1 transcript``, ``3-4 transcripts`` (a range only when the ends differ)."""
    return _count(lo, word) if lo == hi else f"{lo}-{hi} {word}s"


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _interval(lo: float, hi: float, scale: float = 100.0, unit: str = "") -> str:
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (lo, hi)):
        return "no interval"
    return f"[{scale * lo:.1f}, {scale * hi:.1f}]{unit}"


#: how the findings name the transcripts a table rests on (its ``source`` column; ``study.source_of``)
SOURCE_WORDS = {"synthetic": "synthetic transcripts", "star": "STAR dialogues", "file": "audited transcripts"}


def flip_counts(tables: dict[str, pd.DataFrame]) -> dict[str, tuple[int, int]]:
    """Flips and compared pairs of the baseline arm per table the findings cite: ``cfr`` (the main arm,
    named by its ``source`` column: synthetic, STAR or a researcher's own transcripts) and ``star_cfr``
    (the real-dialogue arm) when the run has it. Keys are ``"<words> (`<table>`)"``. Flips per row are
    ``round(cfr * n_pairs)`` (CFR is flips over pairs), summed over judges and dimensions."""
    out: dict[str, tuple[int, int]] = {}
    for name in ("cfr", "star_cfr"):
        c = tables.get(name)
        if c is None or not len(c):
            continue
        src = "star" if name == "star_cfr" else (str(c["source"].iloc[0]) if "source" in c.columns else "synthetic")
        c = c[(c["arm"] == "baseline") & (c["n_pairs"] > 0)] if "arm" in c.columns else c[c["n_pairs"] > 0]
        flips = (c["cfr"].fillna(0) * c["n_pairs"]).round().astype(int)
        out[f"{SOURCE_WORDS.get(src, 'audited transcripts')} (`{name}`)"] = (int(flips.sum()), int(c["n_pairs"].sum()))
    return out


def flip_count_line(tables: dict[str, pd.DataFrame]) -> str:
    """One sentence counting the flips of every arm the run has, each named by what it rests on (so "no
    flips" is never said of one arm while another has some, nor "synthetic" of real dialogues)."""
    counts = flip_counts(tables)
    if not counts:
        return "No compared pair in any arm."
    return "Flips (baseline arm, all judges and dimensions): " + "; ".join(
        f"{k} of {_count(n, 'compared pair')} on the {where}" for where, (k, n) in counts.items()) + "."


def _unread_words(judge: str, t: dict[str, pd.DataFrame], n_failed: int) -> str:
    """"3 not read (2 timeout, 1 unparseable)": the judge's unread requests with their kinds from ``parse_rates``."""
    pr = t.get("parse_rates")
    why = ""
    if pr is not None and len(pr) and set(KIND_COLUMNS) <= set(pr.columns):
        why = describe_kinds(pr.loc[pr["judge"] == judge, list(KIND_COLUMNS)].sum())
    return f"{n_failed} not read" + (f" ({md_text(why)})" if why and n_failed else "")


def _judge_block(judge: str, t: dict[str, pd.DataFrame], n_parsed: int, n_failed: int,
                 n_requested: int | None = None) -> list[str]:
    lines = [f"**{md_text(judge)}** - {n_parsed} replies read, {_unread_words(judge, t, n_failed)}, excluded from "
             "every metric."]
    if n_parsed == 0:
        lines.append("No reply could be read as an answer in the output contract, so this run reports no "
                     "CFR, MASD or accuracy for this judge.")
        return lines
    cfr = t["cfr"][(t["cfr"]["judge"] == judge) & (t["cfr"]["arm"] == "baseline")]
    cmr_all = t.get("cfr_minus_robustness", pd.DataFrame())
    cmr_all = cmr_all[cmr_all["judge"] == judge] if len(cmr_all) else cmr_all
    cmr = cmr_all[cmr_all["baseline"] == "robustness"] if len(cmr_all) else cmr_all
    judged = cfr[cfr["n_pairs"] > 0]
    n_items = judged["n_items"]
    n_dims = int(judged["dimension"].nunique())
    asked = n_requested if n_requested is not None else int(cfr["dimension"].nunique())
    lines.append(f"CFR rows: {_of(n_dims, asked, 'requested dimension')}, "
                 + (_range(int(n_items.min()), int(n_items.max()), "transcript") + " per row, " if len(n_items)
                    else "")
                 + f"{_count(int(cfr['n_pairs'].sum()), 'compared pair')} in all"
                 + (" (the others are listed under Not measured)." if n_dims < asked else "."))
    has_ci = cmr["ci_low"].notna() & cmr["ci_high"].notna() if len(cmr) else pd.Series(dtype=bool)
    above = cmr[has_ci & (cmr["ci_low"] > 0)] if len(cmr) else cmr
    no_ci = cmr[~has_ci] if len(cmr) else cmr
    if len(above):
        lines.append("Flips beyond the judge's own repeat noise (interval of CFR minus robustness above 0): "
                     + "; ".join(f"{md_text(r.dimension)} {100 * r.estimate:+.1f} pp {_interval(r.ci_low, r.ci_high, unit=' pp')}"
                                 for r in above.itertuples()) + ".")
    elif len(cmr) > len(no_ci):
        lines.append("No dimension's CFR is distinguishable from the judge's repeat noise: every interval of "
                     "CFR minus robustness includes 0.")
    if len(no_ci):
        lines.append(f"{_count(len(no_ci), 'dimension')} {'has' if len(no_ci) == 1 else 'have'} no interval for CFR minus robustness "
                     f"({', '.join(map(str, no_ci['dimension']))}: fewer than 2 transcripts with both kinds of "
                     "pairs), so nothing is said about them either way.")
    gate = t.get("net_cfr_gate", pd.DataFrame())
    gate = gate[gate["judge"] == judge] if len(gate) else gate
    if len(gate):
        lines.append(_gate_line(gate))
    star_gate = t.get("star_net_cfr_gate", pd.DataFrame())
    star_gate = star_gate[star_gate["judge"] == judge] if len(star_gate) else star_gate
    if len(star_gate):
        lines.append(_gate_line(star_gate, " on the STAR dialogues" + _screened_words(t, threshold=False)))
    margin = _margin_line(judge, t.get("flips_by_margin", pd.DataFrame()))
    if margin:
        lines.append(margin)
    for base in sorted(set(cmr_all["baseline"]) - {"robustness"}) if len(cmr_all) else []:
        sub = cmr_all[cmr_all["baseline"] == base]
        ref = sub["robustness"].iloc[0] if len(sub) else float("nan")
        what = "the question asked in other words" if base == "robustness_wording" else f"repeats ({base})"
        hits = sub[sub["ci_low"] > 0]
        lines.append(f"Against {what} (flip rate {_pct(ref)}): {_of(len(hits), len(sub), 'dimension')} "
                     f"{'flips' if len(hits) == 1 else 'flip'} more, interval above 0" + (": " + ", ".join(hits["dimension"]) if len(hits) else "") + ".")
    flipped = cfr[cfr["cfr"] > 0]
    zero = cfr[(cfr["cfr"] == 0) & (cfr["n_pairs"] > 0) & cfr["ci_high"].notna()]
    if len(flipped):
        top = flipped.sort_values("cfr", ascending=False).head(3)
        lines.append("Largest observed CFR: " + "; ".join(
            f"{md_text(r.dimension)} {_pct(r.cfr)} {_interval(r.ci_low, r.ci_high, unit=' %')} (n={r.n_items})"
            for r in top.itertuples()) + ".")
    if len(zero):
        w = zero.sort_values(["ci_high", "n_pairs"], ascending=[False, True]).iloc[0]
        lines.append(f"{_count(len(zero), 'dimension')} {'shows' if len(zero) == 1 else 'show'} no flip: no flips "
                     f"observed in {_count(int(w.n_pairs), 'pair')} ({_count(int(w.n_items), 'transcript')}) in the "
                     f"least covered of them; a CFR up to {_pct(w.ci_high)} "
                     "cannot be ruled out (upper bound of its 95% interval).")
    m = t["masd"]
    m = m[(m["judge"] == judge) & (m["arm"] == "baseline") & (m["score"] == "p_yes")] if len(m) else m
    if len(m) and m["masd"].notna().any():
        top = m.sort_values("masd", ascending=False).head(3)
        width = float(np.nanmedian(m["ci_high"] - m["ci_low"])) if m["ci_high"].notna().any() else float("nan")
        lines.append("MASD of P(Yes) (points of probability x 100), largest: " + "; ".join(
            f"{md_text(r.dimension)} {r.masd:.2f} {_interval(r.ci_low, r.ci_high, scale=1.0)}" for r in top.itertuples())
            + (f"; the median interval is {width:.2f} points wide, so differences between dimensions smaller "
               "than that are not resolved." if not math.isnan(width) else "."))
        lines += _wording_scale(judge, m, t.get("robustness", pd.DataFrame()))
    acc = t["accuracy"]
    acc = acc[acc["judge"] == judge]
    if len(acc) and acc["n"].iloc[0] > 0:
        a = acc.iloc[0]
        lines.append(f"Accuracy on the originals: {_pct(a.accuracy)} {_interval(a.ci_low, a.ci_high, unit=' %')} "
                     f"({md_code(str(a.ci_method)) if 'ci_method' in acc.columns else 'interval'} over "
                     f"{_count(int(a.n_items) if 'n_items' in acc.columns else 0, 'transcript')}, "
                     f"{_count(int(a.n), 'answer')}; {int(a.n_unparsed)} unparsed).")
    ev = t.get("evidence_checks", pd.DataFrame())
    ev = ev[(ev["judge"] == judge) & (ev["arm"] == "fairness")] if len(ev) else ev
    if len(ev) and ev["n_yes"].iloc[0] > 0:
        e = ev.iloc[0]
        lines.append(f"Fairness arm, evidence: of {int(e.n_yes)} Yes answers, {int(e.n_yes_evidence_verified)} "
                     f"({_pct(e.yes_evidence_verified)}) quote only words that are in the call and "
                     f"{int(e.n_rule_violated)} ({_pct(e.yes_rule_violated)}) cite nothing found in it - Yes "
                     "answers the rule \"no evidence means No\" would turn into No; the tables keep them as given.")
    return lines


def _gate_line(gate: pd.DataFrame, where: str = "") -> str:
    """The gate's verdicts in the one vocabulary (:mod:`cfbench.stats.verdicts`), each with what it means;
    only a ``pass`` claims the net rate stays under the maximum, and an uninformative row says why."""
    mx = 100 * float(gate["max_net"].iloc[0])
    kinds = gate["verdict_kind"].astype(str)
    n_point = int((gate["point_rule"] == V.PASS).sum())
    parts = [f"Gate on CFR net of repeat noise{where} (at most {mx:.0f} pp, 95% interval): "
             f"{_of(n_point, len(gate), 'dimension')} {'is' if n_point == 1 else 'are'} at or under it on the "
             "point estimate alone (`point_rule`), which rules nothing out"]
    for kind in V.KINDS:
        rows = gate[kinds == kind]
        if not len(rows):
            continue
        names = ", ".join(map(str, rows["dimension"]))
        parts.append(f"{len(rows)} `{kind}` ({names}): {V.MEANINGS[kind]}")
        if kind == V.UNINFORMATIVE:
            why = "; ".join(dict.fromkeys(rows["responsiveness"].astype(str)))
            parts.append(f"why: {why}")
        if kind == V.INCONCLUSIVE:
            need = rows["items_needed"].dropna()
            parts.append(f"forecast: {_forecast_words(rows, need)}")
    return "; ".join(parts) + "."


def _screen(t: Any) -> pd.DataFrame:
    """The margin screen's rows (``star_screen``), empty when the STAR arm was not screened."""
    sc = t.get("star_screen", pd.DataFrame())
    return sc if sc is not None and len(sc) else pd.DataFrame()


def _screened_words(t: Any, *, threshold: bool = True) -> str:
    """" the judge was sure of (...)" after "the STAR dialogues" when the arm was screened, else ""."""
    sc = _screen(t)
    if not len(sc):
        return ""
    return " the judge was sure of" + (f" (original P(Yes) at least {float(sc['threshold'].iloc[0]):g} from 0.5)"
                                       if threshold else "")


def _screen_line(t: Any, n_kept: int) -> str:
    """What the margin screen did (table ``star_screen``): how many dialogues were judged once, how many went on
    to the variants, and what rests on which."""
    sc = _screen(t)
    if not len(sc):
        return ""
    n = sc["item_id"].nunique()
    left = sc[sc["why"].astype(str) != ""].drop_duplicates("item_id")  # a dialogue's first reason to leave it out
    reasons = "; ".join(f"{k}: {v}" for k, v in left["why"].value_counts().items())
    kept = sc[sc["kept"].astype(bool)].drop_duplicates("item_id")
    mix = ", ".join(f"{v} {k}" for k, v in kept["answer"].astype(str).value_counts().items())
    said = ", ".join(f"{v} {k}" for k, v in kept["label"].astype(str).value_counts().items())
    return (f"Screen (`star_screen`): the originals of {_count(n, 'dialogue')} were judged once, and the "
            f"{_count(n_kept, 'dialogue')}{_screened_words(t)} went on to the variants and the repeat"
            + (f" (left out - {reasons})" if reasons else "")
            + (f"; the judge's answers on those: {mix}; the customers': {said}" if len(kept) else "")
            + ". The CFR rows and the gate rest on those "
            f"{n_kept}; the accuracy below, and the responsiveness the gate reads, on all {n}, so the screen "
            "does not choose the dialogues the judge gets right.")


def _margin_line(judge: str, margin: pd.DataFrame, unit: str = "transcript", table: str = "flips_by_margin") -> str:
    """Where the judge's baseline flips fall (``table``, the arm's ``flips_by_margin``): on transcripts whose
    original's P(Yes) lies near the Yes/No boundary or farther from it, ``unit`` naming the items. Empty
    without P(Yes) or without a flip."""
    if not len(margin):
        return ""
    m = margin[(margin["judge"] == judge) & (margin["arm"] == "baseline")].set_index("band")
    if "near" not in m.index or int(m["n_flips"].sum()) == 0:
        return ""
    near, total = m.loc["near"], int(m["n_flips"].sum())
    elsewhere = "no pair elsewhere"
    if "far" in m.index:
        far = m.loc["far"]
        elsewhere = (f"{int(far.n_flips)} of {_count(int(far.n_pairs), 'pair')} elsewhere "
                     f"({_count(int(far.n_items), unit)})")
    return (f"Where the flips fall (`{table}`): {_count(int(near.n_items), unit)} had an original "
            f"whose P(Yes) lay within {NEAR_BOUNDARY:.2f} of 0.5, the Yes/No boundary; {int(near.n_flips)} of "
            f"the {_count(total, 'flip')} were on them ({int(near.n_flips)} of {_count(int(near.n_pairs), 'pair')}), "
            f"{elsewhere}. A flip there shows that an edit tipped a {unit} the judge was unsure of, not how "
            "far the edit moved it (MASD of P(Yes) reads that).")


def _forecast_words(rows: pd.DataFrame, need: pd.Series) -> str:
    """The inconclusive rows' forecast in words (the smallest and largest items needed, or why none)."""
    if not len(need):
        return str(rows["forecast"].iloc[0])
    lo, hi = int(need.min()), int(need.max())
    span = f"about {lo}" if lo == hi else f"from about {lo} to {hi}"
    undecidable = int((rows["forecast"] == V.NOT_DECIDABLE).sum())
    extra = f"; {undecidable} {V.NOT_DECIDABLE}" if undecidable else ""
    return (f"{span} transcripts would decide {len(need)} of them if the estimates held ({rows['forecast_assumes'].iloc[0]})"
            f"{extra}")


def _differences_lines(t: dict[str, pd.DataFrame]) -> list[str]:
    """Judge A minus judge B, stated only where the paired interval excludes 0."""
    d = t.get("judge_differences", pd.DataFrame())
    if not len(d):
        return []
    out = []
    for (a, b), g in d.groupby(["judge_a", "judge_b"], sort=False):
        sure = g[g["ci_low"].notna() & ((g["ci_low"] > 0) | (g["ci_high"] < 0))]
        scale = {"cfr": 100.0, "accuracy": 100.0}
        desc = "; ".join(f"{md_text(r.metric)} {md_text(r.dimension)} {scale.get(r.metric, 1.0) * r.delta:+.1f} "
                         f"{_interval(r.ci_low, r.ci_high, scale=scale.get(r.metric, 1.0))}"
                         for r in sure.itertuples())
        out.append(f"**{a} minus {b}** on the same transcripts: {_of(len(sure), len(g), 'difference')} (CFR and "
                   "accuracy in pp, MASD in points) have a paired 95% interval that excludes 0"
                   + (f": {desc}." if len(sure) else "; the others are not distinguishable from no difference."))
    return out


def _wording_scale(judge: str, masd: pd.DataFrame, robustness: pd.DataFrame) -> list[str]:
    """The MASD of P(Yes) of each dimension set against the same question asked in other words."""
    if not len(robustness) or "baseline" not in robustness.columns:
        return []
    w = robustness[(robustness["judge"] == judge) & (robustness["baseline"] == "robustness_wording")
                   & (robustness["metric"] == "masd_p_yes")]
    if not len(w) or pd.isna(w["value"].iloc[0]):
        return []
    w = w.iloc[0]
    lo, hi = masd["ci_low"], masd["ci_high"]
    nonzero = int((lo > 0).sum())
    above = masd.loc[lo > w.ci_high, "dimension"].tolist()
    below = int((hi < w.ci_low).sum())
    return [f"For scale, asking the same question in other words moves P(Yes) by {w.value:.2f} "
            f"{_interval(w.ci_low, w.ci_high, scale=1.0)} points on the originals. {nonzero} of {len(masd)} "
            f"dimensions move it by more than zero (interval above 0); {len(above)} move it clearly more than "
            f"rewording does" + (f" ({', '.join(above)})" if above else "") + f" and {below} clearly less "
            "(intervals apart)." + (f" Those {below} shifts may be real, but they are smaller than what the "
                                   "phrasing of the question alone does to this judge." if below else "")]


def _star_block(judge: str, t: dict[str, pd.DataFrame], n_dialogues: int | None) -> list[str]:
    """The real-dialogue (STAR) arm of one judge, read through its intervals: flips per dimension with
    counts, what the intervals leave open, the flips beyond repeat noise, and accuracy against the
    customers' own answers. Empty when the run has no STAR tables for this judge."""
    cfr = t.get("star_cfr", pd.DataFrame())
    acc = t.get("star_accuracy", pd.DataFrame())
    cfr = cfr[(cfr["judge"] == judge) & (cfr["arm"] == "baseline") & (cfr["n_pairs"] > 0)] if len(cfr) else cfr
    acc = acc[(acc["judge"] == judge) & (acc["n"] > 0)] if len(acc) else acc
    if not len(cfr) and not len(acc):
        return []
    k = n_dialogues if n_dialogues else int(max(cfr["n_items"].max() if len(cfr) else 0,
                                                acc["n_items"].max() if len(acc) else 0))
    lines = [f"**{md_text(judge)}, real dialogues (STAR arm)** - {_count(k, 'dialogue')} from the STAR corpus, judged "
             "against the customers' own answers; the main arm's numbers above do not rest on them."]
    screened = _screen_line(t, k)
    if screened:
        lines.append(screened)
    if len(cfr):
        flips = (cfr["cfr"] * cfr["n_pairs"]).round().astype(int)
        has = cfr["ci_low"].notna() & cfr["ci_high"].notna()
        seen = cfr[flips > 0].assign(n_flips=flips[flips > 0]).sort_values(["cfr", "n_pairs"], ascending=[False, False])
        desc = "; ".join(f"{md_text(r.dimension)} {int(r.n_flips)}/{int(r.n_pairs)} {_interval(r.ci_low, r.ci_high, unit=' %')}"
                         for r in seen.head(5).itertuples())
        more = f" and {len(seen) - 5} more" if len(seen) > 5 else ""
        line = (f"CFR: flips seen in {_of(len(seen), len(cfr), 'dimension')}" + (f" ({desc}{more})" if len(seen) else "")
                + ".")
        zero = cfr[(flips == 0) & has]
        if len(zero):
            w = zero.sort_values(["ci_high", "n_pairs"], ascending=[False, True]).iloc[0]
            line += (f" {_count(len(zero), 'dimension')} {'shows' if len(zero) == 1 else 'show'} none, in "
                     f"{_range(int(zero['n_pairs'].min()), int(zero['n_pairs'].max()), 'pair')}: a CFR up to "
                     f"{_pct(w.ci_high)} cannot be ruled out for the least covered ({w.dimension}).")
        if int(has.sum()) > 1:  # one row: its interval is in the parenthesis above; nothing to rank
            lows, highs = cfr.loc[has, "ci_low"], cfr.loc[has, "ci_high"]
            line += (f" The lower bounds reach at most {_pct(lows.max())} and the upper bounds lie between "
                     f"{_pct(highs.min())} and {_pct(highs.max())}"
                     + (": every interval overlaps every other, so these rows do not rank the dimensions."
                        if lows.max() <= highs.min() else "."))
        no_ci = int((~has).sum())
        if no_ci:
            line += (f" {_count(no_ci, 'dimension')} {'rests' if no_ci == 1 else 'rest'} on one dialogue and "
                     f"{'has' if no_ci == 1 else 'have'} no interval.")
        lines.append(line)
        cmr = t.get("star_cfr_minus_robustness", pd.DataFrame())
        if len(cmr):
            cmr = cmr[(cmr["judge"] == judge) & (cmr["baseline"] == "robustness")
                      & cmr["ci_low"].notna() & cmr["ci_high"].notna()]
        if len(cmr):
            above = cmr[cmr["ci_low"] > 0]
            lines.append("Beyond the judge's own repeat noise on these dialogues (interval of CFR minus robustness "
                         "above 0): " + ("; ".join(f"{md_text(r.dimension)} {100 * r.estimate:+.1f} pp "
                                                   f"{_interval(r.ci_low, r.ci_high, unit=' pp')}"
                                                   for r in above.itertuples())
                                         if len(above) else f"none of {_count(len(cmr), 'dimension')}") + ".")
        margin = _margin_line(judge, t.get("star_flips_by_margin", pd.DataFrame()), unit="dialogue",
                              table="star_flips_by_margin")
        if margin:
            lines.append(margin)
    if len(acc):
        a = acc.iloc[0]
        n_correct = int(a.n_correct) if "n_correct" in acc.columns else int(round(a.accuracy * a.n))
        lines.append(f"Accuracy against the customers' answers: {n_correct}/{int(a.n)} ({_pct(a.accuracy)}) "
                     f"{_interval(a.ci_low, a.ci_high, unit=' %')} on {_count(int(a.n_items), 'dialogue')}.")
    return lines


def findings_markdown(result: Any) -> str:
    """The findings paragraph of a :class:`ContactCenterResult` (Markdown)."""
    s, t, p = result.summary, result.tables, result.params
    n_items = len(s.get("items", []))
    head = (f"### What this run shows\n\n{n_items} transcript{'s' if n_items != 1 else ''}, "
            f"{len(s.get('questions', []))} question{'s' if len(s.get('questions', [])) != 1 else ''}, "
            f"{_count(len(s.get('dimensions', [])), 'dimension')} requested, "
            f"judges: {', '.join(md_code(j) for j in s.get('judges', []))}; "
            f"{s.get('n_requests', 0)} distinct requests. Intervals are 95% intervals over transcripts: "
            "Clopper-Pearson with a cluster adjustment for rates, bootstrap-t "
            f"({p.n_boot} resamples) for mean score differences; for differences on the same transcripts Tango's "
            "matched-pairs interval or MOVER (each row's `ci_method` names it); "
            "a row resting on one transcript has none (docs/statistics.md). An effect counts as "
            "distinguishable from noise only when its interval excludes 0.")
    parts = [head, flip_count_line(t)]
    w = t.get("warnings")
    if w is not None and len(w):
        parts += [f"**Not measured:** {m.rstrip()}" + ("" if m.rstrip().endswith((".", ")")) else ".")
                  for m in w["message"].astype(str)]  # one paragraph each
    if any(str(j).startswith("scripted:") for j in s.get("judges", [])):
        parts.append("_A scripted test double is among the judges: its numbers exercise the pipeline and "
                     "say nothing about any model._")
    for judge in s.get("judges", []):
        parts.append("\n".join(f"- {ln}" if i else ln for i, ln in enumerate(
            _judge_block(judge, t, int(s["n_parsed"].get(judge, 0)), int(s["n_not_read"].get(judge, 0)),
                         n_requested=len(s.get("dimensions", []))))))
    star = s.get("star") or {}
    n_star = len(star.get("items", [])) or None
    for judge in s.get("judges", []):
        block = _star_block(judge, t, n_star)
        if block:
            parts.append("\n".join(f"- {ln}" if i else ln for i, ln in enumerate(block)))
    parts += _differences_lines(t)
    parts += _sequential_lines(t, s)
    return "\n\n".join(parts)


def _sequential_lines(t: Any, s: Any) -> list[str]:
    """The sequential audit's sentence (issue 35), when the run was sequential."""
    from cfbench.studies.contact_center_qa.sequential import sequential_sentence

    seq = s.get("sequential")
    if not seq:
        return []
    line = sequential_sentence(t.get("sequential_cells"), n_walked=seq["n_walked"], budget=seq["budget"],
                               n_cells=seq["n_cells"], stopped_by=seq.get("stopped_by", ""),
                               alpha=seq.get("alpha", 0.05))
    return [line] if line else []
