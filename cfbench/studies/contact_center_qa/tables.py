"""Every analysis table of the contact-center study, from item statistics (one implementation per table).

Two halves, the shape of a torchmetrics metric (:mod:`cfbench.metrics.state`):

- the **update** step, :func:`item_stats`: the judged rows of whole transcripts (from
  :func:`.judging.run_plan`) reduced to per-item statistics: per table cell (judge x arm x dimension, ...)
  and item, the sums each table's estimate and interval is made of (discordant pairs and pairs for rates,
  summed absolute score differences and pairs for MASD, correct / valid / unparsed for accuracy, score
  sums and counts for the judge means, 2 x 2 repeat tables for kappa, units per minority size for the
  flip distribution, evidence counts, parse counts), plus a few flags (which arms have a score, ...);
- the **functional form**, :func:`tables_from_stats`: every table from those statistics, with the
  interval functions of :mod:`cfbench.stats.intervals`, groups and items in sorted order, seeded.

:func:`new_state` joins them in an :class:`~cfbench.metrics.state.ItemState`, which the run updates
transcript by transcript (:func:`.study.run`), and which merges with a state of other transcripts (a
shard judged elsewhere, a later wave of a sequential audit) to the same tables as one state of all rows
(``tests/test_cc_chunk_merge.py``). :func:`study_tables` is the short road from a frame of rows.

The study's column names are passed to :mod:`cfbench.metrics.counterfactual` here (the metrics module has
no study defaults); the unit statistics come from its :func:`~cfbench.metrics.counterfactual.pair_table`,
so there is one implementation of "a pair". Unread replies are excluded from every metric through
``parse_ok``; the tables carry the excluded n (``n_pairs_excluded``, ``n_unparsed``), and ``parse_rates``
counts them per reason (``n_timeout``, ``n_unparseable``, ... from :mod:`cfbench.judges.failures`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from cfbench.judges.failures import KIND_COLUMNS, kind_counts
from cfbench.metrics import counterfactual as M
from cfbench.metrics.state import ItemState, ItemStatistics

__all__ = ["new_state", "item_stats", "tables_from_stats", "study_tables", "TABLES", "flipped_units",
           "UNIT", "BY", "SCORES", "SCORE_RANGE", "EVIDENCE_CHECK_COLUMNS", "label_yes", "gate_item_stats",
           "accuracy_table"]

#: a unit: one item x question (conditions are compared within a unit)
UNIT = ["item_id", "question_id"]


#: the grouping of the study's CFR/MASD rows
BY = ["judge", "arm", "dimension"]


#: the binary answer column and the column of the usable flag
ANSWER, OK = "answer_yes", "parse_ok"

#: the condition of a placebo row (a same-group swap, :mod:`cfbench.perturb.placebo`)
PLACEBO = "placebo"


#: task -> [(value column, score name)] fed to MASD, robustness and direction.
#: ``p_yes_pct`` is P(Yes) x 100 from first-token logprobs (compact contract only).
SCORES = {"qa": [("confidence", "confidence"), ("p_yes_pct", "p_yes")],
           "positives": [("score", "positives")], "improvement": [("score", "improvement")],
           "customer": [("score", "customer")]}


#: every score of the study lies in 0..100 (confidence, P(Yes) x 100, coaching scores): the range
#: that bounds MASD and direction intervals and gives the worst-case interval when items show no spread
SCORE_RANGE = (0.0, 100.0)


def score_items():
    for task, pairs in SCORES.items():
        for col, name in pairs:
            yield task, (col, name)


def split_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """The judged rows (a copy, with ``p_yes_pct``) and their parts: counterfactual rows, robustness rows,
    originals, and the counterfactual rows of the QA task."""
    r = rows.copy()
    r["p_yes_pct"] = pd.to_numeric(r["p_yes"], errors="coerce") * 100
    is_rob = r["dimension"].astype(str).str.startswith("robustness")
    cf = r[~is_rob & (r["dimension"] != "original")]
    return r, cf, r[is_rob], r[r["dimension"] == "original"], cf[cf["task"] == "qa"]


_ITEM = "item_id"
_SUMS = ["stat", "n_pairs", "n_units", "n_pairs_all"]
#: variant columns kept for the rejection table and the warnings (no text)
_VARIANT_COLUMNS = ["item_id", "dimension", "condition", "applicable", "operation", "valid", "rejected_by",
                    "rejection_reason", "reason"]
#: the tables :func:`tables_from_stats` returns (the run adds ``variant_rejections``, ``table2`` and
#: ``warnings`` from them and the parameters, and the gates of :mod:`.gates`)
#: ``accuracy_by_label`` is per judge, question and label class: the gates' responsiveness is judged within
#: each question, so a judge that reads only the question (a fixed answer per question) is not credited with
#: the difference between the questions' label mixes
LABEL_BY = ["judge", "question_id", "label_yes"]

TABLES = ("cfr", "masd", "robustness", "accuracy", "accuracy_by_question", "accuracy_by_label", "flip_distribution",
          "cfr_minus_robustness", "cfr_by_category", "kappa", "direction", "judge_differences", "evidence_checks",
          "fairness_prompting_delta", "judge_means", "parse_rates", "placebo_contrast", "flips_by_margin")

#: an original is "near the boundary" when its P(Yes) lies within this distance of 0.5, where the
#: compact contract's first token turns from No to Yes (table ``flips_by_margin``)
NEAR_BOUNDARY = 0.10


def label_yes(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``label_yes`` (1.0 / 0.0 from ``label``, NaN without a label): the class of a labelled row."""
    lab = frame["label"] if "label" in frame.columns else pd.Series(np.nan, index=frame.index)
    return frame.assign(label_yes=lab.map(lambda v: np.nan if v is None or (isinstance(v, float) and np.isnan(v))
                                          else M._label_to_float(v)))


def new_state(*, spill: Any = None, compact_every: int = 10) -> ItemState:
    """An empty item-statistics state of this study: ``update(rows, judgments, variants, complete=...)``,
    ``merge(other)``, ``compute(n_boot=, seed=, judges=)`` (-> :func:`tables_from_stats`); see
    :mod:`cfbench.metrics.state`. ``judgments`` and ``variants`` may be ``None``."""
    return ItemState(item_stats, tables_from_stats, spill=spill, compact_every=compact_every)


def study_tables(rows: pd.DataFrame, judgments: pd.DataFrame | None = None, *, n_boot: int = 1000, seed: int = 0,
                 judges: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of :data:`TABLES` from a frame of judged ``rows`` (and their ``judgments``, for
    ``parse_rates``): one state updated with all of them, then computed."""
    return new_state().update(rows, judgments).compute(n_boot=n_boot, seed=seed, judges=judges)


# -- the update step: item statistics of whole transcripts' rows --------------------------------------

def _cells(frame: pd.DataFrame, *, value: str, kind: str, by: list[str], unit: list[str],
           condition: str = "condition") -> pd.DataFrame:
    """Per ``by`` group x item: summed pair statistic, valid pairs, units with a pair, pairs had nothing been
    excluded (what :func:`cfbench.metrics.counterfactual.flip_rate` and ``mean_abs_score_diff`` sum)."""
    pt = M.pair_table(frame, value=value, kind=kind, condition=condition, unit=unit, by=by, ok=OK)
    if not len(pt):
        return pd.DataFrame(columns=by + [_ITEM] + _SUMS)
    pt = pt.assign(n_units=(pt["n_pairs"] > 0).astype(float))
    return pt.groupby(by + [_ITEM], sort=True)[_SUMS].sum().reset_index()


def item_stats(rows: pd.DataFrame, judgments: pd.DataFrame | None = None,
               variants: pd.DataFrame | None = None) -> ItemStatistics:
    """The item statistics of whole transcripts' judged ``rows`` (one transcript's or many), their ``judgments``
    (for the parse rates) and ``variants`` (for the rejection table and the warnings); the update step of
    :func:`new_state`. Every statistic is per item (or a count summed over items), so the statistics of
    disjoint sets of transcripts add up to those of their union."""
    s = ItemStatistics()
    rows, placebo = _split_placebo(rows)  # placebo arm: its own cells only, no other table sees it
    r, cf, rob_all, orig, qa_cf = split_rows(rows)
    s.add("placebo", _placebo_cells(placebo, orig))
    s.add("cfr", _cells(qa_cf, value=ANSWER, kind="binary", by=BY, unit=UNIT))
    for task, (col, name) in score_items():
        sub = cf[cf["task"] == task]
        for arm in sub.loc[sub[col].notna(), "arm"].unique():
            s.flag(("arm_has", task, col, arm))
        s.add(f"masd/{task}/{col}", _cells(sub, value=col, kind="score", by=BY, unit=UNIT))
    for rdim, rob in rob_all.groupby("dimension", sort=True):
        for task in SCORES:
            sub = rob[rob["task"] == task]
            if not len(sub):
                continue
            s.flag(("rob_temperature", rdim, task), float(sub["temperature"].iloc[0]))
            if task == "qa":
                s.add(f"rob/{rdim}/{task}/cfr", _cells(sub, value=ANSWER, kind="binary", by=["judge"],
                                                       unit=UNIT, condition="repeat"))
            for col, _ in SCORES[task]:
                if sub[col].notna().any():
                    s.flag(("rob_has", rdim, task, col))
                s.add(f"rob/{rdim}/{task}/{col}", _cells(sub, value=col, kind="score", by=["judge"], unit=UNIT,
                                                         condition="repeat"))
    qa_orig = orig[(orig["task"] == "qa") & (orig["arm"] == "baseline")]
    for name, by in (("accuracy", ["judge"]), ("accuracy_by_question", ["judge", "question_id"]),
                     ("accuracy_by_label", LABEL_BY)):  # per question and label class: the gates' responsiveness
        s.add(name, _accuracy_cells(label_yes(qa_orig), by))
    qa_pairs = _qa_unit_pairs(qa_cf)
    s.add("flip_hist", _flip_hist(qa_pairs))
    s.add("margin", _margin_cells(qa_cf, qa_pairs))
    s.add("cfr_by_category", _cells(qa_cf, value=ANSWER, kind="binary", by=["judge", "arm", "category"],
                                    unit=["item_id", "question_id", "dimension"]))
    for j, d, a in cf[["judge", "dimension", "arm"]].drop_duplicates().itertuples(index=False):
        s.flag(("arm_of", j, d, a))
    fair = cf[cf["arm"].isin(["baseline", "fairness"])]
    s.add("fair/qa", _cells(fair[fair["task"] == "qa"], value=ANSWER, kind="binary",
                            by=["judge", "arm", "dimension"], unit=UNIT))
    for task, (col, name) in score_items():
        t = fair[(fair["task"] == task) & fair[col].notna()]
        s.add(f"fair/{task}/{col}", _cells(t, value=col, kind="score", by=["judge", "arm", "dimension"],
                                           unit=UNIT))
    base_qa = qa_cf[qa_cf["arm"] == "baseline"]
    for col, _ in SCORES["qa"]:
        if base_qa[col].notna().any():
            s.flag(("jd_has", col))
        s.add(f"jd/{col}", _cells(base_qa[base_qa[col].notna()], value=col, kind="score", by=["dimension", "judge"],
                                  unit=UNIT))
    s.add("evidence", _evidence_sums(r))
    cf_marked = cf[cf["condition"] != "original"]
    for task, (col, name) in list(score_items()) + [("qa", (ANSWER, "yes_rate"))]:
        sub, o = cf_marked[cf_marked["task"] == task], orig[orig["task"] == task]
        for arm in sub.loc[sub[col].notna(), "arm"].unique():
            s.flag(("dir_arm", task, col, arm))
        if len(o):
            s.flag(("dir_orig", task))
        if len(sub) and len(o):
            s.add(f"dir/{task}/{col}", _direction_cells(sub, o, col))
    if len(qa_cf):
        s.flag(("dir_qa_cf",))
    qa_rob = rob_all[rob_all["task"] == "qa"]
    if len(qa_rob):
        s.flag(("kappa_any",))
        s.add("kappa", _kappa_counts(qa_rob))
    s.add("judge_means", _mean_cells(r))
    if judgments is not None and len(judgments):
        s.add("parse_rates", _read_counts(judgments))
    qa_ok = r[(r["task"] == "qa") & r["parse_ok"].astype(bool)]
    for judge, g in qa_ok.groupby("judge"):  # presence flags only: they merge as a union
        s.flag(("qa_parsed", judge))
        if g["p_yes"].notna().any():
            s.flag(("p_yes_any", judge))
    if variants is not None:
        s.add("variants", variants[[c for c in _VARIANT_COLUMNS if c in variants.columns]])
    return s


def _read_counts(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per judge x task: requests ``n``, read ``ok``, cache hits ``hit`` and, per failure kind
    (:data:`cfbench.judges.failures.KIND_COLUMNS`), the requests not read for that reason; sums, so the
    counts of disjoint chunks add up."""
    counts = kind_counts(judgments, ["judge", "task"])
    sums = (judgments.assign(_ok=judgments["parse_ok"].astype(float), _hit=judgments["cache_hit"].astype(float))
            .groupby(["judge", "task"], sort=True).agg(ok=("_ok", "sum"), hit=("_hit", "sum")).reset_index())
    return sums.merge(counts, on=["judge", "task"], how="left")


def gate_item_stats(rows: pd.DataFrame) -> ItemStatistics:
    """The part of :func:`item_stats` the net CFR gate reads, from whole transcripts' judged ``rows``: ``cfr``
    (per judge x arm x dimension x item), ``rob/<setting>/qa/cfr`` (repeat flips per judge x item) and
    ``accuracy_by_label`` - the same helpers, so the same frames (``tests/test_cc_sequential.py``). What a
    sequential audit (:mod:`.sequential`) reads after each wave without computing every table."""
    s = ItemStatistics()
    rows, _ = _split_placebo(rows)  # as item_stats: the placebo arm is not a counterfactual condition here
    _, _, rob_all, orig, qa_cf = split_rows(rows)
    s.add("cfr", _cells(qa_cf, value=ANSWER, kind="binary", by=BY, unit=UNIT))
    for rdim, rob in rob_all.groupby("dimension", sort=True):
        sub = rob[rob["task"] == "qa"]
        if len(sub):
            s.add(f"rob/{rdim}/qa/cfr", _cells(sub, value=ANSWER, kind="binary", by=["judge"], unit=UNIT,
                                               condition="repeat"))
    qa_orig = orig[(orig["task"] == "qa") & (orig["arm"] == "baseline")]
    s.add("accuracy_by_label", _accuracy_cells(label_yes(qa_orig), LABEL_BY))
    return s


def accuracy_table(cells: pd.DataFrame, by: Sequence[str] = LABEL_BY, *, level: float = 0.95) -> pd.DataFrame:
    """An accuracy table (as ``accuracy_by_label``) from accumulated accuracy cells of :func:`gate_item_stats`,
    its intervals at ``level`` (a sequential audit looking after every wave asks for more)."""
    return _accuracy(cells, list(by), level=level)


def _split_placebo(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``rows`` without the placebo arm's rows (condition :data:`PLACEBO`), and those rows."""
    is_pl = rows["condition"].astype(str) == PLACEBO if len(rows) else pd.Series(False, index=rows.index)
    return rows[~is_pl], rows[is_pl]


def _placebo_cells(placebo: pd.DataFrame, orig: pd.DataFrame) -> pd.DataFrame:
    """Per judge x dimension x item: discordant (original, placebo) pairs and pairs, baseline Auto-QA (the
    placebo's own flip rate; :func:`_placebo_contrast` sets it against the identity flip rate)."""
    by = ["judge", "dimension"]
    pl = placebo[(placebo["task"] == "qa") & (placebo["arm"] == "baseline")] if len(placebo) else placebo
    if not len(pl):
        return pd.DataFrame(columns=by + [_ITEM] + _SUMS)
    o = orig[(orig["task"] == "qa") & (orig["arm"] == "baseline") & orig[_ITEM].isin(set(pl[_ITEM]))]
    refs = [o.assign(dimension=d) for d in sorted(pl["dimension"].unique())]
    return _cells(pd.concat([pl, *refs], ignore_index=True), value=ANSWER, kind="binary", by=by, unit=UNIT)


_EVIDENCE_SUMS = ["n_replies", "n_parsed", "n_yes", "n_yes_quoted", "n_yes_evidence_verified", "n_rule_violated",
                  "n_quotes", "n_quotes_found"]


def _evidence_sums(rows: pd.DataFrame) -> pd.DataFrame:
    """Per judge x arm: the counts :func:`.tables.evidence_checks` shares are made of (one per distinct prompt;
    a prompt holds its transcript, so de-duplicating within a transcript is de-duplicating the run)."""
    if "evidence_status" not in rows.columns:
        return pd.DataFrame(columns=["judge", "arm"] + _EVIDENCE_SUMS)
    r = rows[(rows["task"] == "qa") & ~rows["dimension"].astype(str).str.startswith("robustness")]
    r = r.drop_duplicates(["judge", "request_id"] if "request_id" in r.columns else
                          ["judge", "arm", "question_id", "variant_id"])
    r = r[r["evidence_status"].notna()]
    if not len(r):
        return pd.DataFrame(columns=["judge", "arm"] + _EVIDENCE_SUMS)
    ok = r["parse_ok"].astype(bool)
    yes = ok & (r["answer"] == "Yes")
    verified = r["evidence_found"].map(lambda v: v is True or v == 1.0).astype(bool)
    violated = r["evidence_rule_violated"].map(lambda v: v is True or v == 1.0).astype(bool)
    f = pd.DataFrame({"judge": r["judge"], "arm": r["arm"], "n_replies": 1.0, "n_parsed": ok.astype(float),
                      "n_yes": yes.astype(float), "n_yes_quoted": (yes & (r["evidence_status"] == "quoted")).astype(float),
                      "n_yes_evidence_verified": (yes & verified).astype(float),
                      "n_rule_violated": (yes & violated).astype(float),
                      "n_quotes": np.where(ok, pd.to_numeric(r["n_quotes"], errors="coerce"), 0.0),
                      "n_quotes_found": np.where(ok, pd.to_numeric(r["n_quotes_found"], errors="coerce"), 0.0)})
    return f.groupby(["judge", "arm"], sort=True)[_EVIDENCE_SUMS].sum().reset_index()


def _direction_cells(frame: pd.DataFrame, originals: pd.DataFrame, value: str) -> pd.DataFrame:
    """Per judge x arm x dimension x condition x item: sum and count of ``value(c) - value(original)``
    (what :func:`cfbench.metrics.counterfactual.effect_direction` resamples)."""
    by, unit, match, cond = BY, UNIT, ["judge", "arm"], "condition"
    orig = originals.loc[M._valid_mask(originals, value, OK), match + unit + [value]]
    if orig.duplicated(match + unit).any():
        from cfbench.core.errors import InputError

        raise InputError("more than one original per unit", source="originals frame",
                         record=orig.loc[orig.duplicated(match + unit)].iloc[0].to_dict(), field=value)
    f = frame.loc[M._valid_mask(frame, value, OK), list(dict.fromkeys(by + unit + [cond, value]))]
    merged = f.merge(orig.rename(columns={value: "_orig"}), on=match + unit, how="inner")
    merged["_diff"] = pd.to_numeric(merged[value]) - pd.to_numeric(merged["_orig"])
    return merged.groupby(by + [cond, _ITEM], sort=True, dropna=False)["_diff"].agg(["sum", "count"]).reset_index()


def _kappa_counts(qa_rob: pd.DataFrame) -> pd.DataFrame:
    """Per judge x repeat baseline x pair of repeats: the 2 x 2 table of the two repeats' answers over the
    units where both parsed (what :func:`cfbench.metrics.counterfactual.repeat_kappa` computes kappa from);
    a pair ``(r, r)`` row marks a group with a parsed answer."""
    valid = qa_rob.loc[M._valid_mask(qa_rob, ANSWER, OK)]
    out = []
    for (judge, dim), grp in valid.groupby(["judge", "dimension"], sort=True, dropna=False):
        wide = grp.pivot_table(index=UNIT, columns="repeat", values=ANSWER, aggfunc="first")
        reps = list(wide.columns)
        out.append({"judge": judge, "dimension": dim, "rep_a": -1, "rep_b": -1, "n00": 0, "n01": 0, "n10": 0, "n11": 0})
        for i in range(len(reps)):
            for j in range(i + 1, len(reps)):
                both = wide[[reps[i], reps[j]]].dropna()
                a, b = both[reps[i]].to_numpy(float), both[reps[j]].to_numpy(float)
                out.append({"judge": judge, "dimension": dim, "rep_a": reps[i], "rep_b": reps[j],
                            "n00": int(((a == 0) & (b == 0)).sum()), "n01": int(((a == 0) & (b == 1)).sum()),
                            "n10": int(((a == 1) & (b == 0)).sum()), "n11": int(((a == 1) & (b == 1)).sum())})
    return pd.DataFrame(out, columns=["judge", "dimension", "rep_a", "rep_b", "n00", "n01", "n10", "n11"])


def _accuracy_cells(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per ``by`` group x item: labelled answers that parsed (``n_valid``), correct among them, unparsed."""
    f = frame.loc[frame["label"].notna()]
    if not len(f):
        return pd.DataFrame(columns=by + [_ITEM, "n_valid", "n_correct", "n_unparsed"])
    labv = pd.to_numeric(f["label"].map(M._label_to_float), errors="coerce").to_numpy()
    valid = M._valid_mask(f, ANSWER, OK)
    correct = (pd.to_numeric(f[ANSWER], errors="coerce").to_numpy() == labv).astype(float)
    f = f[by + [_ITEM]].assign(n_valid=valid.astype(float), n_correct=np.where(valid, correct, 0.0),
                               n_unparsed=(~valid).astype(float))
    return f.groupby(by + [_ITEM], sort=True, dropna=False)[["n_valid", "n_correct", "n_unparsed"]].sum().reset_index()


def _qa_unit_pairs(qa_cf: pd.DataFrame) -> pd.DataFrame:
    """The pair statistics of the QA counterfactual units (:data:`BY` x :data:`UNIT`), which the flip
    distribution and ``flips_by_margin`` both read."""
    return M.pair_table(qa_cf, value=ANSWER, kind="binary", unit=UNIT, by=BY, ok=OK)


def _flip_hist(pairs: pd.DataFrame) -> pd.DataFrame:
    pairs = pairs[pairs["n_valid"] >= 2]
    if not len(pairs):
        return pd.DataFrame(columns=BY + ["n_minority", "n_units"])
    pairs = pairs.assign(n_minority=np.minimum(pairs["n_yes"], pairs["n_valid"] - pairs["n_yes"]).astype(int))
    return pairs.groupby(BY + ["n_minority"], sort=True).size().rename("n_units").reset_index()


_MARGIN_KEYS = ["judge", "arm", "band", "item_id"]


def _margin_cells(qa_cf: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Per judge x arm x band x item: the flips (discordant pairs, ``stat``) and valid pairs of the QA
    counterfactual units (``pairs``, from :func:`_qa_unit_pairs`), each unit in the band of its original's
    P(Yes) (:data:`NEAR_BOUNDARY`): sums, so the cells of disjoint transcripts add up."""
    if not len(pairs):
        return pd.DataFrame(columns=_MARGIN_KEYS + ["stat", "n_pairs"])
    keys = BY + UNIT
    orig = qa_cf[(qa_cf["condition"] == "original") & qa_cf[OK].astype(bool)]
    p = pd.to_numeric(orig["p_yes"], errors="coerce").groupby([orig[k] for k in keys], sort=True).first()
    p_unit = pd.Series(p.reindex(pd.MultiIndex.from_frame(pairs[keys])).to_numpy(), index=pairs.index)
    band = np.where(p_unit.isna(), "no_p_yes", np.where((p_unit - 0.5).abs() < NEAR_BOUNDARY, "near", "far"))
    return (pairs.assign(band=band).groupby(_MARGIN_KEYS, sort=True)[["stat", "n_pairs"]].sum().reset_index())


MARGIN_COLUMNS = ["judge", "arm", "band", "n_items", "n_pairs", "n_flips", "cfr", "share_of_flips"]


def _flips_by_margin(cells: pd.DataFrame) -> pd.DataFrame:
    """``flips_by_margin``: per judge x arm x band, the transcripts with a compared pair there, the pairs, the
    flips, the flip rate among those pairs and the band's share of the judge's flips in that arm.
    Descriptive counts (no interval): where a judge's flips fall, not how often it flips."""
    if not len(cells):
        return pd.DataFrame(columns=MARGIN_COLUMNS)
    g = cells[cells["n_pairs"] > 0].groupby(["judge", "arm", "band"], sort=True)
    out = pd.DataFrame({"n_items": g["item_id"].nunique(), "n_pairs": g["n_pairs"].sum(),
                        "n_flips": g["stat"].sum()}).reset_index()
    out["band"] = out["band"].astype(str)
    out["cfr"] = out["n_flips"] / out["n_pairs"]
    total = out.groupby(["judge", "arm"])["n_flips"].transform("sum")
    out["share_of_flips"] = (out["n_flips"] / total).where(total > 0)
    for c in ("n_items", "n_pairs", "n_flips"):
        out[c] = out[c].astype(int)
    return out[MARGIN_COLUMNS]


def _mean_cells(r: pd.DataFrame) -> pd.DataFrame:
    """Per score x judge x arm x item: sum and count of the parsed scores (one per prompt), as
    :func:`.tables.judge_means` takes them."""
    r = r[~r["dimension"].astype(str).str.startswith("robustness") & r["parse_ok"].astype(bool)]
    r = r.drop_duplicates(["judge", "arm", "task", "question_id", "variant_id"])
    out = []
    for task, (col, name) in score_items():
        sub = r[r["task"] == task]
        sub = sub[pd.to_numeric(sub[col], errors="coerce").notna()] if len(sub) else sub
        if len(sub):
            g = sub.assign(_v=sub[col].astype(float)).groupby(["judge", "arm", _ITEM], sort=True)["_v"]
            out.append(g.agg(["sum", "count"]).reset_index().assign(task=task, col=col, score=name))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


# -- the functional form: every table from the item statistics ----------------------------------------

def tables_from_stats(s: ItemStatistics, *, n_boot: int = 1000, seed: int = 0,
                      judges: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of :data:`TABLES` from the item statistics of :func:`item_stats` (the functional form).

    ``cfr``, ``masd``, ``robustness``, ``accuracy``, ``accuracy_by_question``, ``accuracy_by_label`` (per
    judge and label class ``label_yes``), ``kappa``, ``flip_distribution``, ``cfr_minus_robustness``,
    ``direction``, ``cfr_by_category``, ``fairness_prompting_delta`` (with the fairness arm's evidence shares
    per judge), ``judge_differences`` (every pair of judges in ``judges`` order, default sorted),
    ``evidence_checks``, ``judge_means``, ``parse_rates``, ``placebo_contrast`` (:func:`_placebo_contrast`),
    ``flips_by_margin`` (:func:`_flips_by_margin`).
    Every interval is over items and names its method in ``ci_method`` (``docs/statistics.md``); CFR is a
    fraction in [0, 1]. Groups and items are taken in sorted order and every interval is seeded from
    ``seed``, so the tables depend on the statistics only, not on the order in which transcripts were added
    or states merged."""
    out: dict[str, pd.DataFrame] = {}
    by = BY
    out["cfr"] = _metric(s.frame("cfr"), by, "binary", "cfr", n_boot=n_boot, seed=seed)
    masd_parts = []
    for task, (col, name) in score_items():
        cells = s.frame(f"masd/{task}/{col}")
        arms = {k[3] for k in s.flags if k[:3] == ("arm_has", task, col)}
        if len(cells) and arms:
            cells = cells[cells["arm"].isin(arms)]
            masd_parts.append(_metric(cells, by, "score", "masd", n_boot=n_boot, seed=seed,
                                      value_range=M._abs_range(SCORE_RANGE)).assign(score=name))
    out["masd"] = (pd.concat(masd_parts, ignore_index=True) if masd_parts else
                   pd.DataFrame(columns=by + ["score", "masd", "n_items", "n_units", "n_pairs",
                                              "n_pairs_excluded", "ci_low", "ci_high", "ci_method"]))
    out["masd"] = out["masd"][by + ["score"] + [c for c in out["masd"].columns if c not in by + ["score"]]]

    rob_parts = []
    rdims = sorted({k[1] for k in s.flags if k[0] == "rob_temperature"})
    rcols = ["judge", "metric", "value", "n_items", "n_units", "n_pairs", "n_pairs_excluded", "ci_low", "ci_high",
             "ci_method"]
    for rdim in rdims:
        for task in SCORES:
            if ("rob_temperature", rdim, task) not in s.flags:
                continue
            parts = []
            if task == "qa":
                parts.append(_metric(s.frame(f"rob/{rdim}/{task}/cfr"), ["judge"], "binary", "value", n_boot=n_boot,
                                     seed=seed).assign(metric="cfr"))
            for col, name in SCORES[task]:
                if ("rob_has", rdim, task, col) in s.flags:
                    parts.append(_metric(s.frame(f"rob/{rdim}/{task}/{col}"), ["judge"], "score", "value",
                                         n_boot=n_boot, seed=seed, value_range=M._abs_range(SCORE_RANGE))
                                 .assign(metric=f"masd_{name}"))
            t = pd.concat(parts, ignore_index=True)[rcols] if parts else pd.DataFrame(columns=rcols)
            rob_parts.append(t.assign(baseline=rdim, temperature=s.flags[("rob_temperature", rdim, task)]))
    out["robustness"] = pd.concat(rob_parts, ignore_index=True) if rob_parts else pd.DataFrame(
        columns=rcols + ["baseline", "temperature"])

    out["accuracy"] = _accuracy(s.frame("accuracy"), ["judge"])
    out["accuracy_by_question"] = _accuracy(s.frame("accuracy_by_question"), ["judge", "question_id"])
    out["accuracy_by_label"] = _accuracy(s.frame("accuracy_by_label"), LABEL_BY)
    hist = s.frame("flip_hist")
    if len(hist):
        hist = hist.groupby(["judge", "arm", "dimension", "n_minority"], sort=True)["n_units"].sum().reset_index()
        hist["share"] = hist["n_units"] / hist.groupby(["judge", "arm", "dimension"])["n_units"].transform("sum")
    out["flip_distribution"] = hist if len(hist) else pd.DataFrame(
        columns=["judge", "arm", "dimension", "n_minority", "n_units", "share"])
    cfr_cells = s.frame("cfr")
    base = cfr_cells[cfr_cells["arm"] == "baseline"].drop(columns=["arm"]) if len(cfr_cells) else cfr_cells
    cmr = [_cfr_minus_robustness(base, s.frame(f"rob/{rdim}/qa/cfr"), n_boot=n_boot, seed=seed).assign(baseline=rdim)
           for rdim in rdims if ("rob_temperature", rdim, "qa") in s.flags]
    out["cfr_minus_robustness"] = pd.concat(cmr, ignore_index=True) if cmr else pd.DataFrame()
    out["placebo_contrast"] = _placebo_contrast(base, s.frame("placebo"), n_boot=n_boot, seed=seed)
    out["cfr_by_category"] = _metric(s.frame("cfr_by_category"), ["judge", "arm", "category"], "binary", "cfr",
                                     n_boot=n_boot, seed=seed)
    delta = _fairness_intervals(fairness_deltas(out), s, n_boot=n_boot, seed=seed)
    k = s.frame("kappa")
    out["kappa"] = (_kappa(k).rename(columns={"dimension": "baseline"}) if ("kappa_any",) in s.flags
                    else pd.DataFrame())
    dir_parts = []
    for task, (col, name) in score_items():
        arms = {f[3] for f in s.flags if f[:3] == ("dir_arm", task, col)}
        cells = s.frame(f"dir/{task}/{col}")
        if arms and ("dir_orig", task) in s.flags and len(cells):
            dir_parts.append(_direction(cells[cells["arm"].isin(arms)], n_boot=n_boot, seed=seed,
                                        value_range=SCORE_RANGE).assign(score=name))
    if ("dir_qa_cf",) in s.flags:
        dir_parts.append(_direction(s.frame(f"dir/qa/{ANSWER}"), n_boot=n_boot, seed=seed, value_range=(0.0, 1.0))
                         .assign(score="yes_rate"))
    out["direction"] = pd.concat(dir_parts, ignore_index=True) if dir_parts else pd.DataFrame()
    out["judge_differences"] = _judge_differences(s, n_boot=n_boot, seed=seed, judges=judges)
    out["evidence_checks"] = _evidence_checks(s.frame("evidence"))
    fair_ev = out["evidence_checks"]
    fair_ev = fair_ev.loc[fair_ev["arm"] == "fairness", ["judge", "yes_evidence_verified", "yes_rule_violated"]]
    out["fairness_prompting_delta"] = delta.merge(
        fair_ev.rename(columns={"yes_evidence_verified": "fair_yes_evidence_verified",
                                "yes_rule_violated": "fair_yes_rule_violated"}), on="judge", how="left")
    out["judge_means"] = _judge_means(s.frame("judge_means"), n_boot=n_boot, seed=seed)
    out["parse_rates"] = _parse_rates(s.frame("parse_rates"))
    out["flips_by_margin"] = _flips_by_margin(s.frame("margin"))
    return out


#: the columns of ``parse_rates``: ``n_not_read`` is every request without a usable answer, and the kind
#: columns split it by reason (a timeout or a request never sent is not a parse failure; ``n_unparseable`` is)
PARSE_RATE_COLUMNS = ["judge", "task", "n", "parse_ok", "cache_hit", "n_not_read", *KIND_COLUMNS]


def _parse_rates(pr: pd.DataFrame) -> pd.DataFrame:
    """``parse_rates`` (:data:`PARSE_RATE_COLUMNS`) from the summed per-chunk counts of :func:`_read_counts`."""
    if not len(pr):
        return pd.DataFrame(columns=PARSE_RATE_COLUMNS)
    pr = pr.groupby(["judge", "task"], sort=True)[["n", "ok", "hit", *KIND_COLUMNS]].sum().reset_index()
    out = pd.DataFrame({"judge": pr["judge"], "task": pr["task"], "n": pr["n"].astype(int),
                        "parse_ok": pr["ok"] / pr["n"], "cache_hit": pr["hit"] / pr["n"],
                        "n_not_read": (pr["n"] - pr["ok"]).astype(int)})
    for col in KIND_COLUMNS:
        out[col] = pr[col].astype(int)
    return out


def _metric(cells: pd.DataFrame, by: list[str], kind: str, name: str, *, n_boot: int, seed: int,
            value_range: tuple[float, float] | None = None, level: float = 0.95) -> pd.DataFrame:
    """What ``metrics.counterfactual._metric`` computes, from per group x item sums (same order, same seed)."""
    if not len(cells):
        return pd.DataFrame(columns=by + [name, "n_items", "n_units", "n_pairs", "n_pairs_excluded", "ci_low",
                                          "ci_high", "ci_method"])
    c = cells.groupby(by + [_ITEM], sort=True)[_SUMS].sum().reset_index()
    gid = c.groupby(by, sort=True).ngroup().to_numpy()
    keys = c.groupby(by, sort=True).size().index.tolist()
    cs, cp, cu, pa_ = (c[k].to_numpy(float) for k in _SUMS)
    return M.cell_interval_rows(keys, np.searchsorted(gid, np.arange(len(keys) + 1)), cs, cp, cu, pa_, cp > 0,
                                by=by, kind=kind, name=name, n_boot=n_boot, seed=seed, level=level,
                                value_range=value_range)


def _accuracy(cells: pd.DataFrame, by: list[str], level: float = 0.95) -> pd.DataFrame:
    from cfbench.stats.intervals import clustered_rate_intervals

    cols = by + ["accuracy", "n", "n_correct", "n_unparsed", "n_items", "ci_low", "ci_high", "ci_method"]
    if not len(cells):
        return pd.DataFrame(columns=cols)
    c = cells.groupby(by + [_ITEM], sort=True, dropna=False)[["n_valid", "n_correct", "n_unparsed"]].sum()
    c = c.reset_index()
    c["_g"] = c.groupby(by, sort=True, dropna=False).ngroup()
    keys = c.groupby(by, sort=True, dropna=False).size().index.tolist()
    per = c[c["n_valid"] > 0]
    est, lo, hi, methods = clustered_rate_intervals(per["n_correct"].to_numpy(float), per["n_valid"].to_numpy(float),
                                                    per["_g"].to_numpy(np.int64), n_groups=len(keys),
                                                    confidence=level)
    n_items = np.bincount(per["_g"].to_numpy(np.int64), minlength=len(keys))
    tot = c.groupby("_g")[["n_valid", "n_correct", "n_unparsed"]].sum()
    rows = []
    for g, key in enumerate(keys):
        key = key if isinstance(key, tuple) else (key,)
        n, k = int(tot.loc[g, "n_valid"]), int(tot.loc[g, "n_correct"])
        rows.append(dict(zip(by, key)) | {"accuracy": k / n if n else np.nan, "n": n, "n_correct": k,
                                          "n_unparsed": int(tot.loc[g, "n_unparsed"]), "n_items": int(n_items[g]),
                                          "ci_low": float(lo[g]), "ci_high": float(hi[g]), "ci_method": methods[g]})
    return pd.DataFrame(rows, columns=cols)


def _per_item(cells: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return cells.groupby(keys + [_ITEM], sort=True, dropna=False)[["stat", "n_pairs"]].sum()


def _cfr_minus_robustness(cf: pd.DataFrame, rb: pd.DataFrame, *, n_boot: int, seed: int,
                          level: float = 0.95) -> pd.DataFrame:
    """``metrics.counterfactual.cfr_minus_robustness`` (binary) from the two sides' cells."""
    from cfbench.stats.intervals import paired_difference

    by = ["judge", "dimension"]
    cols = by + ["estimate", "counterfactual", "robustness", "n_items", "n_pairs", "n_repeat_pairs",
                 "ci_low", "ci_high", "ci_method"]
    if not len(cf):
        return pd.DataFrame(columns=cols)
    rb_item = _per_item(rb, ["judge"]) if len(rb) else pd.DataFrame(columns=["stat", "n_pairs"])
    rng = np.random.default_rng(seed)
    rows = []
    for key, grp in cf.groupby(by, sort=True, dropna=False):
        kv = dict(zip(by, key))
        ci = grp.groupby(_ITEM)[["stat", "n_pairs"]].sum()
        ri = (rb_item.xs(kv["judge"], level="judge") if len(rb_item) and kv["judge"] in
              rb_item.index.get_level_values(0) else pd.DataFrame(columns=["stat", "n_pairs"], dtype=float))
        items = ci.index.union(ri.index)
        ci, ri = ci.reindex(items, fill_value=0.0), ri.reindex(items, fill_value=0.0)
        both = (ci["n_pairs"] > 0) & (ri["n_pairs"] > 0)
        d = paired_difference(ci["stat"].to_numpy(float), ci["n_pairs"].to_numpy(float),
                              ri["stat"].to_numpy(float), ri["n_pairs"].to_numpy(float), kind="rate",
                              n_boot=n_boot, rng=rng, confidence=level, value_range=None, pairing="corrected")
        rows.append(kv | {"estimate": d["estimate"], "counterfactual": d["est_1"], "robustness": d["est_2"],
                          "n_items": d["n_items"], "n_pairs": int(ci.loc[both, "n_pairs"].sum()),
                          "n_repeat_pairs": int(ri.loc[both, "n_pairs"].sum()),
                          "ci_low": d["ci_low"], "ci_high": d["ci_high"], "ci_method": d["ci_method"]})
    return pd.DataFrame(rows, columns=cols)


#: columns of the ``placebo_contrast`` table
PLACEBO_COLUMNS = ["judge", "dimension", "estimate", "identity_cfr", "placebo_cfr", "n_items", "n_pairs",
                   "n_placebo_pairs", "ci_low", "ci_high", "ci_method"]


def _placebo_contrast(cf: pd.DataFrame, pl: pd.DataFrame, *, n_boot: int, seed: int,
                      level: float = 0.95) -> pd.DataFrame:
    """Per judge x dimension with placebo rows: the identity flip rate (baseline CFR cells) minus the
    placebo's flip rate (original against a same-group swap), on the items that have both, with the paired
    interval of :func:`cfbench.stats.intervals.paired_difference` (``pairing="items"``: Tango's interval when
    every item holds one pair on each side, scaled by the items' design effect when every item holds the same
    number of pairs on both sides, else a bootstrap-t over items of the per-item difference, else the capped
    MOVER when the differences show no spread). Estimate and interval only: no maximum applies, so no
    verdict (docs/statistics.md, Placebo contrast)."""
    from cfbench.stats.intervals import paired_difference

    by = ["judge", "dimension"]
    if not len(pl):
        return pd.DataFrame(columns=PLACEBO_COLUMNS)
    cf_item = _per_item(cf, by) if len(cf) else pd.DataFrame(columns=["stat", "n_pairs"])
    rng = np.random.default_rng(seed)
    rows = []
    for key, grp in pl.groupby(by, sort=True, dropna=False):
        kv = dict(zip(by, key))
        pi = grp.groupby(_ITEM)[["stat", "n_pairs"]].sum()
        ci = (cf_item.xs(key, level=by) if len(cf_item) and key in cf_item.index.droplevel(_ITEM)
              else pd.DataFrame(columns=["stat", "n_pairs"], dtype=float))
        items = ci.index.union(pi.index)
        ci, pi = ci.reindex(items, fill_value=0.0), pi.reindex(items, fill_value=0.0)
        both = (ci["n_pairs"] > 0) & (pi["n_pairs"] > 0)
        d = paired_difference(ci["stat"].to_numpy(float), ci["n_pairs"].to_numpy(float),
                              pi["stat"].to_numpy(float), pi["n_pairs"].to_numpy(float), kind="rate",
                              n_boot=n_boot, rng=rng, confidence=level, pairing="items")
        rows.append(kv | {"estimate": d["estimate"], "identity_cfr": d["est_1"], "placebo_cfr": d["est_2"],
                          "n_items": d["n_items"], "n_pairs": int(ci.loc[both, "n_pairs"].sum()),
                          "n_placebo_pairs": int(pi.loc[both, "n_pairs"].sum()),
                          "ci_low": d["ci_low"], "ci_high": d["ci_high"], "ci_method": d["ci_method"]})
    return pd.DataFrame(rows, columns=PLACEBO_COLUMNS)


def _fairness_intervals(delta: pd.DataFrame, s: ItemStatistics, *, n_boot: int, seed: int) -> pd.DataFrame:
    """:func:`.tables._fairness_intervals` from the fairness cells (dimensions both arms ran)."""
    extra = ["delta_pooled", "ci_low", "ci_high", "ci_method"]
    if not len(delta):
        return delta.reindex(columns=list(delta.columns) + extra)
    arms: dict = {}
    for k in s.flags:
        if k[0] == "arm_of":
            arms.setdefault((k[1], k[2]), set()).add(k[3])
    both = {jd for jd, a in arms.items() if {"baseline", "fairness"} <= a}
    parts = []
    specs = [("fair/qa", "binary", "rate", "cfr_pp", None)] + [
        (f"fair/{task}/{col}", "score", "mean", f"masd_{name}", M._abs_range(SCORE_RANGE))
        for task, (col, name) in score_items()]
    for key, kind, how, metric, vr in specs:
        cells = s.frame(key)
        if not len(cells):
            continue
        keep = [(j, d) in both for j, d in zip(cells["judge"], cells["dimension"])]
        cells = cells[np.asarray(keep, bool)]
        if not len(cells):
            continue
        per = _per_item(cells, ["judge", "arm"])
        rows = M._differences(per, by=["judge"], judge="arm", item=_ITEM, judges=["fairness", "baseline"],
                              kind=how, metric=metric, n_boot=n_boot, seed=seed, level=0.95, value_range=vr,
                              num="stat", den="n_pairs")
        t = pd.DataFrame(rows, columns=["judge"] + M.DIFFERENCE_COLUMNS)
        if len(t):
            parts.append(t)
    return merge_pooled_deltas(delta, parts, extra)


def _judge_means(cells: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    from cfbench.stats.intervals import mean_interval_t

    cols = ["judge", "arm", "score", "mean", "n", "n_items", "ci_low", "ci_high", "ci_method"]
    rng = np.random.default_rng(seed)
    out = []
    if not len(cells):
        return pd.DataFrame(columns=cols)
    for task, (col, name) in score_items():
        sub = cells[(cells["task"] == task) & (cells["col"] == col)]
        for (judge, arm), g in sub.groupby(["judge", "arm"], sort=True):
            per = g.groupby(_ITEM, sort=True)[["sum", "count"]].sum()
            lo, hi, how = mean_interval_t(per["sum"].to_numpy(float), per["count"].to_numpy(float),
                                          n_boot=n_boot, rng=rng, value_range=SCORE_RANGE)
            n = int(per["count"].sum())
            out.append({"judge": judge, "arm": arm, "score": name, "mean": float(per["sum"].sum()) / n,
                        "n": n, "n_items": len(per), "ci_low": lo, "ci_high": hi, "ci_method": how})
    return pd.DataFrame(out, columns=cols)


def _judge_differences(s: "ItemStatistics", *, n_boot: int, seed: int, judges: Sequence[str] | None) -> pd.DataFrame:
    """Judge A minus judge B on the same items, baseline arm, every pair of judges (in ``judges`` order):
    CFR and MASD of confidence and of P(Yes) per dimension (Auto-QA variants against their originals), and
    accuracy over the originals' labelled answers (``dimension`` = ``"originals"``), each with a paired
    interval over the items both judges have (as :func:`cfbench.metrics.counterfactual.judge_differences`).
    CFR and accuracy in [0, 1]; MASD in points (0..100)."""
    cols = ["dimension"] + M.DIFFERENCE_COLUMNS
    cfr = s.frame("cfr")
    seen = set(cfr["judge"]) if len(cfr) else set()
    for k in s.flags:
        if k[0] == "qa_parsed":
            seen.add(k[1])
    acc = s.frame("accuracy")
    if len(acc):
        seen |= set(acc["judge"])
    if len(seen) < 2:
        return pd.DataFrame(columns=cols)
    given = [j for j in (judges or ()) if j in seen]
    judges = given + sorted(seen - set(given), key=str)  # every judge present; the given ones first, in order
    parts = []
    base = cfr[cfr["arm"] == "baseline"] if len(cfr) else cfr
    if len(base):
        rows = M._differences(_per_item(base, ["dimension", "judge"]), by=["dimension"], judge="judge", item=_ITEM,
                              judges=judges, kind="rate", metric="cfr", n_boot=n_boot, seed=seed, level=0.95,
                              value_range=None, num="stat", den="n_pairs")
        parts.append(pd.DataFrame(rows, columns=cols))
        for col, name in SCORES["qa"]:
            cells = s.frame(f"jd/{col}")
            if ("jd_has", col) in s.flags and len(cells):
                rows = M._differences(_per_item(cells, ["dimension", "judge"]), by=["dimension"], judge="judge",
                                      item=_ITEM, judges=judges, kind="mean", metric=f"masd_{name}", n_boot=n_boot,
                                      seed=seed, level=0.95, value_range=M._abs_range(SCORE_RANGE), num="stat",
                                      den="n_pairs")
                parts.append(pd.DataFrame(rows, columns=cols))
    if len(acc):
        a = acc[acc["n_valid"] > 0]
        if len(a):
            per = a.groupby(["judge", _ITEM], sort=True)[["n_correct", "n_valid"]].sum()
            rows = M._differences(per, by=[], judge="judge", item=_ITEM, judges=judges, kind="rate", metric="accuracy",
                                  n_boot=0, seed=0, level=0.95, value_range=None, num="n_correct", den="n_valid")
            parts.append(pd.DataFrame(rows, columns=M.DIFFERENCE_COLUMNS).assign(dimension="originals"))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def _evidence_checks(sums: pd.DataFrame) -> pd.DataFrame:
    """:func:`.tables.evidence_checks` from the per-transcript sums."""
    if not len(sums):
        return pd.DataFrame(columns=EVIDENCE_CHECK_COLUMNS)
    g = sums.groupby(["judge", "arm"], sort=True)[_EVIDENCE_SUMS].sum()
    out = []
    for (judge, arm), v in g.iterrows():
        n_yes, n_q, n_found = int(v["n_yes"]), float(v["n_quotes"]), float(v["n_quotes_found"])
        out.append({"judge": judge, "arm": arm, "n_replies": int(v["n_replies"]), "n_parsed": int(v["n_parsed"]),
                    "n_yes": n_yes, "n_yes_quoted": int(v["n_yes_quoted"]),
                    "n_yes_evidence_verified": int(v["n_yes_evidence_verified"]),
                    "yes_evidence_verified": v["n_yes_evidence_verified"] / n_yes if n_yes else np.nan,
                    "n_rule_violated": int(v["n_rule_violated"]),
                    "yes_rule_violated": v["n_rule_violated"] / n_yes if n_yes else np.nan,
                    "n_quotes": int(n_q), "n_quotes_found": int(n_found),
                    "quote_found_rate": n_found / n_q if n_q else np.nan})
    return pd.DataFrame(out, columns=EVIDENCE_CHECK_COLUMNS)


def _kappa(counts: pd.DataFrame) -> pd.DataFrame:
    """:func:`cfbench.metrics.counterfactual.repeat_kappa` (by judge and repeat baseline) from the 2 x 2 counts."""
    cols = ["judge", "dimension", "kappa", "kappa_min", "n_repeat_pairs", "n_units"]
    if not len(counts):  # no repeat parsed anywhere: no row (not an error)
        return pd.DataFrame(columns=cols)
    rows = []
    for (judge, dim), g in counts.groupby(["judge", "dimension"], sort=True, dropna=False):
        pairs = g[g["rep_a"] != -1].groupby(["rep_a", "rep_b"], sort=True)[["n00", "n01", "n10", "n11"]].sum()
        kappas, ns = [], []
        for _, c in pairs.iterrows():
            cm = np.array([[c["n00"], c["n01"]], [c["n10"], c["n11"]]], float)
            n = cm.sum()
            if not n:
                continue
            present = (cm.sum(0) + cm.sum(1)) > 0  # cohen_kappa's labels: the values that occur
            cm = cm[np.ix_(present, present)]
            po = np.trace(cm) / n
            pe = float((cm.sum(0) * cm.sum(1)).sum()) / n**2
            kappas.append((1.0 if po == 1.0 else float("nan")) if pe == 1.0 else float((po - pe) / (1 - pe)))
            ns.append(int(n))
        rows.append({"judge": judge, "dimension": dim,
                     "kappa": float(np.nanmean(kappas)) if kappas and not np.all(np.isnan(kappas)) else np.nan,
                     "kappa_min": float(np.nanmin(kappas)) if kappas and not np.all(np.isnan(kappas)) else np.nan,
                     "n_repeat_pairs": len(kappas), "n_units": int(min(ns)) if ns else 0})
    return pd.DataFrame(rows, columns=cols)


def _direction(cells: pd.DataFrame, *, n_boot: int, seed: int, value_range: tuple[float, float]) -> pd.DataFrame:
    """:func:`cfbench.metrics.counterfactual.effect_direction` from the per-item sums (same order, same seed)."""
    from cfbench.stats.intervals import mean_interval_t

    cols = BY + ["condition"]
    w = M._abs_range(value_range)
    diff_range = (-w[1], w[1])
    out_cols = cols + ["mean_diff", "n_units", "n_items", "ci_low", "ci_high", "ci_method"]
    if not len(cells):  # no parsed pair anywhere: no row (not an error)
        return pd.DataFrame(columns=out_cols)
    rng = np.random.default_rng(seed)
    per = cells.groupby(cols + [_ITEM], sort=True, dropna=False)[["sum", "count"]].sum().reset_index()
    rows = []
    for key, g in per.groupby(cols, sort=True, dropna=False):
        lo, hi, method = mean_interval_t(g["sum"].to_numpy(float), g["count"].to_numpy(float), n_boot=n_boot,
                                         rng=rng, value_range=diff_range)
        n = int(g["count"].sum())
        rows.append(dict(zip(cols, key)) | {"mean_diff": float(g["sum"].sum()) / n, "n_units": n, "n_items": len(g),
                                            "ci_low": lo, "ci_high": hi, "ci_method": method})
    return pd.DataFrame(rows, columns=out_cols)


# -- helpers of the tables and the release gate ---------------------------------------------------------

def fairness_deltas(out: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Fairness arm minus baseline per judge and dimension, for CFR (pp) and each MASD, before intervals."""
    long = [out["cfr"].assign(metric="cfr_pp", value=out["cfr"]["cfr"] * 100)]
    if len(out["masd"]):
        long.append(out["masd"].assign(metric="masd_" + out["masd"]["score"], value=out["masd"]["masd"]))
    stacked = pd.concat(long, ignore_index=True)[["judge", "arm", "dimension", "metric", "value"]]
    return M.fairness_prompting_delta(stacked, baseline="baseline", treated="fairness", by=["judge"],
                                      over="dimension")


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


def flipped_units(rows: pd.DataFrame) -> pd.DataFrame:
    """Baseline Auto-QA units (judge x dimension x item x question) whose parsed answers differ between conditions.

    Columns: ``judge``, ``dimension``, ``item_id``, ``question_id``, ``n_answers`` (distinct answers).
    """
    r = rows[(rows["task"] == "qa") & (rows["arm"] == "baseline") & rows["parse_ok"].astype(bool)]
    r = r[(r["dimension"] != "original") & ~r["dimension"].astype(str).str.startswith("robustness")]
    r = r[r["condition"].astype(str) != PLACEBO]  # the placebo arm is not a compared condition
    g = r.groupby(["judge", "dimension", "item_id", "question_id"])["answer"].nunique().rename("n_answers")
    return g[g > 1].reset_index()
