"""Every analysis table of the contact-center study, from the tidy ``rows`` of :func:`.judging.run_plan`.

The study's column names are passed to :mod:`cfbench.metrics.counterfactual`
here (the metrics module has no study defaults). Parse failures are excluded
from every metric through ``parse_ok``; the tables carry the excluded n
(``n_pairs_excluded``, ``n_unparsed``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cfbench.metrics import counterfactual as M

__all__ = ["study_tables", "flipped_units", "judge_means", "judge_differences", "evidence_checks",
           "UNIT", "BY", "SCORES", "SCORE_RANGE", "EVIDENCE_CHECK_COLUMNS", "label_yes"]

#: a unit: one item x question (conditions are compared within a unit)
UNIT = ["item_id", "question_id"]
#: the grouping of the study's CFR/MASD rows
BY = ["judge", "arm", "dimension"]
#: the binary answer column and the column of the usable flag
ANSWER, OK = "answer_yes", "parse_ok"


#: task -> [(value column, score name)] fed to MASD, robustness and direction.
#: ``p_yes_pct`` is P(Yes) x 100 from first-token logprobs (compact contract only).
SCORES = {"qa": [("confidence", "confidence"), ("p_yes_pct", "p_yes")],
           "positives": [("score", "positives")], "improvement": [("score", "improvement")],
           "customer": [("score", "customer")]}


#: every score of the study lies in 0..100 (confidence, P(Yes) x 100, coaching scores): the range
#: that bounds MASD and direction intervals and gives the worst-case interval when items show no spread
SCORE_RANGE = (0.0, 100.0)


def label_yes(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``label_yes`` (1.0 / 0.0 from ``label``, NaN without a label): the class of a labelled row."""
    lab = frame["label"] if "label" in frame.columns else pd.Series(np.nan, index=frame.index)
    return frame.assign(label_yes=lab.map(lambda v: np.nan if v is None or (isinstance(v, float) and np.isnan(v))
                                          else M._label_to_float(v)))


def score_items():
    for task, pairs in SCORES.items():
        for col, name in pairs:
            yield task, (col, name)


def _arms_with_values(rows: pd.DataFrame, col: str) -> pd.DataFrame:
    """``rows`` of the arms where ``col`` has a value (P(Yes) exists only in contracts that open with the answer,
    so an arm in another contract gets no all-NaN rows)."""
    if not len(rows):
        return rows
    return rows[rows["arm"].isin(rows.loc[rows[col].notna(), "arm"].unique())]


def split_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """The judged rows (a copy, with ``p_yes_pct``) and their parts: counterfactual rows, robustness rows,
    originals, and the counterfactual rows of the QA task."""
    r = rows.copy()
    r["p_yes_pct"] = pd.to_numeric(r["p_yes"], errors="coerce") * 100
    is_rob = r["dimension"].astype(str).str.startswith("robustness")
    cf = r[~is_rob & (r["dimension"] != "original")]
    return r, cf, r[is_rob], r[r["dimension"] == "original"], cf[cf["task"] == "qa"]


def study_tables(rows: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Every table of the contact-center study from the parsed ``rows`` of :func:`run_plan`.

    Keys: ``cfr``, ``masd``, ``robustness``, ``accuracy``, ``accuracy_by_question``, ``accuracy_by_label``
    (per judge and label class ``label_yes``),
    ``kappa``, ``flip_distribution``, ``cfr_minus_robustness``, ``direction``,
    ``cfr_by_category``, ``fairness_prompting_delta`` (with the fairness arm's evidence
    shares per judge), ``judge_differences`` (every pair of judges, in the order they
    first occur in ``rows``), ``evidence_checks``. Every interval is over items and
    names its method in ``ci_method`` (``docs/statistics.md``); CFR is a fraction in [0, 1].
    """
    r, cf, rob_all, orig, qa_cf = split_rows(rows)
    by = ["judge", "arm", "dimension"]
    out: dict[str, pd.DataFrame] = {}

    out["cfr"] = M.flip_rate(qa_cf, value=ANSWER, unit=UNIT, by=by, ok=OK, n_boot=n_boot, seed=seed)
    masd_parts = []
    for task, (col, name) in score_items():
        sub = _arms_with_values(cf[cf["task"] == task], col)
        if len(sub) and sub[col].notna().any():
            masd_parts.append(M.mean_abs_score_diff(sub, value=col, unit=UNIT, by=by, ok=OK, n_boot=n_boot, seed=seed,
                                                   score_range=SCORE_RANGE)
                              .assign(score=name))
    out["masd"] = (pd.concat(masd_parts, ignore_index=True) if masd_parts else
                   pd.DataFrame(columns=by + ["score", "masd", "n_items", "n_units", "n_pairs",
                                              "n_pairs_excluded", "ci_low", "ci_high", "ci_method"]))
    out["masd"] = out["masd"][by + ["score"] + [c for c in out["masd"].columns if c not in by + ["score"]]]

    rob_parts = []
    for rdim, rob in rob_all.groupby("dimension", sort=True):
        for task in SCORES:
            sub = rob[rob["task"] == task]
            if not len(sub):
                continue
            cols = [c for c, _ in SCORES[task]]
            sub = sub if task == "qa" else sub.drop(columns=["answer_yes"])
            t = M.robustness_baseline(sub, answer=ANSWER, scores=cols, unit=UNIT, by=["judge"], ok=OK,
                                      n_boot=n_boot, seed=seed, score_range=SCORE_RANGE)
            t["metric"] = t["metric"].replace({f"masd_{c}": f"masd_{n}" for c, n in SCORES[task]})
            rob_parts.append(t.assign(baseline=rdim, temperature=float(sub["temperature"].iloc[0])))
    out["robustness"] = pd.concat(rob_parts, ignore_index=True) if rob_parts else pd.DataFrame(
        columns=["judge", "metric", "value", "n_items", "n_units", "n_pairs", "n_pairs_excluded",
                 "ci_low", "ci_high", "ci_method", "baseline", "temperature"])

    qa_orig = orig[(orig["task"] == "qa") & (orig["arm"] == "baseline")]
    out["accuracy"] = M.accuracy(qa_orig, answer=ANSWER, label="label", by=["judge"], ok=OK, item="item_id")
    out["accuracy_by_question"] = M.accuracy(qa_orig, answer=ANSWER, label="label", by=["judge", "question_id"], ok=OK,
                                             item="item_id")
    # per label class (Yes / No), for the responsiveness check of the gates (balanced accuracy, gates.py)
    out["accuracy_by_label"] = M.accuracy(label_yes(qa_orig), answer=ANSWER, label="label", by=["judge", "label_yes"],
                                          ok=OK, item="item_id")
    qa_rob = rob_all[rob_all["task"] == "qa"]
    out["kappa"] = (M.repeat_kappa(qa_rob, answer=ANSWER, unit=UNIT, by=["judge", "dimension"], ok=OK).rename(columns={"dimension": "baseline"})
                    if len(qa_rob) else pd.DataFrame())
    out["flip_distribution"] = M.flip_distribution(qa_cf, value=ANSWER, unit=UNIT, by=["judge", "arm", "dimension"], ok=OK)
    base_cf = qa_cf[qa_cf["arm"] == "baseline"]
    cmr = [M.cfr_minus_robustness(base_cf, g, value=ANSWER, unit=UNIT, by=["judge", "dimension"], ok=OK,
                                  n_boot=n_boot, seed=seed)
           .assign(baseline=rdim) for rdim, g in qa_rob.groupby("dimension", sort=True)]
    out["cfr_minus_robustness"] = pd.concat(cmr, ignore_index=True) if cmr else pd.DataFrame()
    dir_parts = []
    cf_marked = cf[cf["condition"] != "original"]
    for task, (col, name) in score_items():
        sub, o = _arms_with_values(cf_marked[cf_marked["task"] == task], col), orig[orig["task"] == task]
        if len(sub) and len(o) and sub[col].notna().any():
            dir_parts.append(M.effect_direction(sub, o, value=col, unit=UNIT, by=by, match=["judge", "arm"], ok=OK,
                                                n_boot=n_boot, seed=seed, value_range=SCORE_RANGE).assign(score=name))
    if len(qa_cf):
        dir_parts.append(M.effect_direction(cf_marked[cf_marked["task"] == "qa"], orig[orig["task"] == "qa"], value=ANSWER,
                                            unit=UNIT, by=by, match=["judge", "arm"], ok=OK, n_boot=n_boot, seed=seed,
                                            value_range=(0.0, 1.0))
                         .assign(score="yes_rate"))
    out["direction"] = pd.concat(dir_parts, ignore_index=True) if dir_parts else pd.DataFrame()
    # pooled over dimensions: a unit is item x question x dimension
    out["cfr_by_category"] = M.flip_rate(qa_cf, value=ANSWER, by=["judge", "arm", "category"], ok=OK,
                                         unit=["item_id", "question_id", "dimension"], n_boot=n_boot, seed=seed)

    delta = _fairness_intervals(fairness_deltas(out), cf, n_boot=n_boot, seed=seed)
    out["judge_differences"] = judge_differences(rows, n_boot=n_boot, seed=seed)
    out["evidence_checks"] = evidence_checks(r)
    # beside each judge's deltas: how well the fairness arm's Yes answers are backed by quotes from the call
    fair_ev = out["evidence_checks"]
    fair_ev = fair_ev.loc[fair_ev["arm"] == "fairness", ["judge", "yes_evidence_verified", "yes_rule_violated"]]
    out["fairness_prompting_delta"] = delta.merge(
        fair_ev.rename(columns={"yes_evidence_verified": "fair_yes_evidence_verified",
                                "yes_rule_violated": "fair_yes_rule_violated"}), on="judge", how="left")
    return out


def fairness_deltas(out: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Fairness arm minus baseline per judge and dimension, for CFR (pp) and each MASD, before intervals."""
    long = [out["cfr"].assign(metric="cfr_pp", value=out["cfr"]["cfr"] * 100)]
    if len(out["masd"]):
        long.append(out["masd"].assign(metric="masd_" + out["masd"]["score"], value=out["masd"]["masd"]))
    stacked = pd.concat(long, ignore_index=True)[["judge", "arm", "dimension", "metric", "value"]]
    return M.fairness_prompting_delta(stacked, baseline="baseline", treated="fairness", by=["judge"],
                                      over="dimension")


def _fairness_intervals(delta: pd.DataFrame, cf: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Beside each judge x metric delta: the pooled change (fairness minus baseline) over the dimensions
    both arms ran, on the same transcripts, with its paired MOVER interval (``delta_pooled``,
    ``ci_low``, ``ci_high``, ``ci_method``; CFR in pp, MASD in points). Pooled = all pairs of those
    dimensions together, which equals the mean over dimensions when every dimension has the same pairs."""
    extra = ["delta_pooled", "ci_low", "ci_high", "ci_method"]
    if not len(delta):
        return delta.reindex(columns=list(delta.columns) + extra)
    unit = UNIT + ["dimension"]
    both_arms = cf.groupby(["judge", "dimension"])["arm"].transform(
        lambda a: {"baseline", "fairness"} <= set(a))
    sub = cf[both_arms & cf["arm"].isin(["baseline", "fairness"])]
    parts = []
    qa = sub[sub["task"] == "qa"]
    if len(qa):
        parts.append(M.judge_differences(qa, value=ANSWER, kind="binary", unit=unit, by=["judge"], judge="arm",
                                         judges=["fairness", "baseline"], ok=OK, metric="cfr_pp",
                                         n_boot=n_boot, seed=seed))
    for task, (col, name) in score_items():
        if col not in sub.columns:
            continue
        t = sub[(sub["task"] == task) & sub[col].notna()]
        if len(t):
            parts.append(M.judge_differences(t, value=col, kind="score", unit=unit, by=["judge"], judge="arm",
                                             judges=["fairness", "baseline"], ok=OK, metric=f"masd_{name}",
                                             n_boot=n_boot, seed=seed, score_range=SCORE_RANGE))
    parts = [x for x in parts if len(x)]
    return merge_pooled_deltas(delta, parts, extra)


def merge_pooled_deltas(delta: pd.DataFrame, parts: list[pd.DataFrame], extra: list[str]) -> pd.DataFrame:
    """Beside each fairness delta: the pooled paired difference and its interval (CFR in pp)."""
    if not parts:
        return delta.reindex(columns=list(delta.columns) + extra)
    d = pd.concat(parts, ignore_index=True)
    scale = np.where(d["metric"] == "cfr_pp", 100.0, 1.0)
    d = d.assign(delta_pooled=d["delta"] * scale, ci_low=d["ci_low"] * scale, ci_high=d["ci_high"] * scale)
    return delta.merge(d[["judge", "metric"] + extra], on=["judge", "metric"], how="left")


EVIDENCE_CHECK_COLUMNS = ["judge", "arm", "n_replies", "n_parsed", "n_yes", "n_yes_quoted",
                          "n_yes_evidence_verified", "yes_evidence_verified", "n_rule_violated",
                          "yes_rule_violated", "n_quotes", "n_quotes_found", "quote_found_rate"]


def evidence_checks(rows: pd.DataFrame) -> pd.DataFrame:
    """The answer / rationale / evidence replies' checks per judge and arm (one count per distinct prompt).

    Over Auto-QA judgments in that contract (``evidence_status`` set, ``unparsed`` included in
    ``n_replies`` only; repeats left out):
    ``n_yes_quoted`` Yes answers citing at least one quote; ``yes_evidence_verified`` the share
    of Yes answers whose quotes all occur in the transcript (a Yes without quotes counts as not
    verified); ``yes_rule_violated`` the share of Yes answers with no quote found in the transcript
    (the seed's "no evidence means No", as a check - the answers themselves are left as given);
    ``quote_found_rate`` quotes found / quotes cited. Shares are NaN without a Yes (or a quote).
    """
    if "evidence_status" not in rows.columns:
        return pd.DataFrame(columns=EVIDENCE_CHECK_COLUMNS)
    r = rows[(rows["task"] == "qa") & ~rows["dimension"].astype(str).str.startswith("robustness")]
    r = r.drop_duplicates(["judge", "request_id"] if "request_id" in r.columns else
                          ["judge", "arm", "question_id", "variant_id"])
    out = []
    for (judge, arm), g in r[r["evidence_status"].notna()].groupby(["judge", "arm"], sort=True):
        ok = g[g["parse_ok"].astype(bool)]
        yes = ok[ok["answer"] == "Yes"]
        verified = yes["evidence_found"].map(lambda v: v is True or v == 1.0)
        violated = yes["evidence_rule_violated"].map(lambda v: v is True or v == 1.0)
        n_q, n_found = float(ok["n_quotes"].sum()), float(ok["n_quotes_found"].sum())
        out.append({"judge": judge, "arm": arm, "n_replies": len(g), "n_parsed": len(ok), "n_yes": len(yes),
                    "n_yes_quoted": int((yes["evidence_status"] == "quoted").sum()),
                    "n_yes_evidence_verified": int(verified.sum()),
                    "yes_evidence_verified": float(verified.mean()) if len(yes) else np.nan,
                    "n_rule_violated": int(violated.sum()),
                    "yes_rule_violated": float(violated.mean()) if len(yes) else np.nan,
                    "n_quotes": int(n_q), "n_quotes_found": int(n_found),
                    "quote_found_rate": n_found / n_q if n_q else np.nan})
    return pd.DataFrame(out, columns=EVIDENCE_CHECK_COLUMNS)


def flipped_units(rows: pd.DataFrame) -> pd.DataFrame:
    """Baseline Auto-QA units (judge x dimension x item x question) whose parsed answers differ between conditions.

    Columns: ``judge``, ``dimension``, ``item_id``, ``question_id``, ``n_answers`` (distinct answers).
    """
    r = rows[(rows["task"] == "qa") & (rows["arm"] == "baseline") & rows["parse_ok"].astype(bool)]
    r = r[(r["dimension"] != "original") & ~r["dimension"].astype(str).str.startswith("robustness")]
    g = r.groupby(["judge", "dimension", "item_id", "question_id"])["answer"].nunique().rename("n_answers")
    return g[g > 1].reset_index()


def judge_means(rows: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Mean confidence, P(Yes) and coaching scores per judge and arm (the seed's Figures 8, 9 and 11).

    Over every parsed baseline/fairness judgment at the evaluation settings (originals
    and variants; repeats left out), with a bootstrap-t interval over items
    (:func:`cfbench.stats.intervals.mean_interval_t`, bounded by :data:`SCORE_RANGE`).
    Columns: ``judge``, ``arm``, ``score``, ``mean``, ``n``, ``n_items``, ``ci_low``, ``ci_high``, ``ci_method``.
    """
    from cfbench.stats.intervals import mean_interval_t

    cols = ["judge", "arm", "score", "mean", "n", "n_items", "ci_low", "ci_high", "ci_method"]
    r = rows[~rows["dimension"].astype(str).str.startswith("robustness") & rows["parse_ok"].astype(bool)]
    r = r.drop_duplicates(["judge", "arm", "task", "question_id", "variant_id"])  # one per prompt
    r = r.assign(p_yes_pct=pd.to_numeric(r["p_yes"], errors="coerce") * 100)
    rng = np.random.default_rng(seed)
    out = []
    for task, (col, name) in score_items():
        sub = r[r["task"] == task]
        sub = sub[pd.to_numeric(sub[col], errors="coerce").notna()] if len(sub) else sub
        for (judge, arm), g in sub.groupby(["judge", "arm"], sort=True):
            per_item = g.groupby("item_id")[col].agg(["sum", "count"])
            lo, hi, how = mean_interval_t(per_item["sum"].to_numpy(float), per_item["count"].to_numpy(float),
                                          n_boot=n_boot, rng=rng, value_range=SCORE_RANGE)
            out.append({"judge": judge, "arm": arm, "score": name, "mean": float(g[col].astype(float).mean()),
                        "n": len(g), "n_items": len(per_item), "ci_low": lo, "ci_high": hi, "ci_method": how})
    return pd.DataFrame(out, columns=cols)


def judge_differences(rows: pd.DataFrame, *, judges: list[str] | None = None, n_boot: int = 1000,
                      seed: int = 0) -> pd.DataFrame:
    """Judge A minus judge B on the same items: CFR, MASD of confidence and of P(Yes) per dimension, accuracy.

    Every pair of judges in ``judges`` order (the run's order), baseline arm
    only. CFR and MASD rows are per dimension (Auto-QA variants against
    their originals); the accuracy row is over the originals' labelled
    answers (``dimension`` = ``"originals"``). Each row has a paired interval
    over the items both judges have (:func:`cfbench.metrics.counterfactual.judge_differences`).
    CFR and accuracy in [0, 1]; MASD in points (0..100).
    Columns: ``dimension``, then :data:`cfbench.metrics.counterfactual.DIFFERENCE_COLUMNS`.
    """
    cols = ["dimension"] + M.DIFFERENCE_COLUMNS
    if not len(rows) or rows["judge"].nunique() < 2:
        return pd.DataFrame(columns=cols)
    r = rows.copy()
    r["p_yes_pct"] = pd.to_numeric(r["p_yes"], errors="coerce") * 100
    r = r[r["arm"] == "baseline"]
    is_rob = r["dimension"].astype(str).str.startswith("robustness")
    qa_cf = r[~is_rob & (r["dimension"] != "original") & (r["task"] == "qa")]
    parts = []
    if len(qa_cf):
        parts.append(M.judge_differences(qa_cf, value=ANSWER, kind="binary", unit=UNIT, by=["dimension"],
                                         judges=judges, ok=OK, metric="cfr", n_boot=n_boot, seed=seed))
        for col, name in SCORES["qa"]:
            if qa_cf[col].notna().any():
                parts.append(M.judge_differences(qa_cf[qa_cf[col].notna()], value=col, kind="score", unit=UNIT,
                                                 by=["dimension"], judges=judges, ok=OK, metric=f"masd_{name}",
                                                 n_boot=n_boot, seed=seed, score_range=SCORE_RANGE))
    qa_orig = r[(r["dimension"] == "original") & (r["task"] == "qa")]
    if len(qa_orig) and "label" in qa_orig.columns:
        parts.append(M.accuracy_differences(qa_orig, answer=ANSWER, label="label", judges=judges, ok=OK)
                     .assign(dimension="originals"))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]
