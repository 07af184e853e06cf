"""The contact-center study one transcript at a time: replay, item statistics, tables (flat memory).

:func:`.study.run_streamed` walks the selected transcripts one at a time. For each it makes the
variants and the plan of that transcript alone (as :func:`.requests.iter_requests` does), answers
its requests through :func:`cfbench.judges.run_requests` (in replay mode a cache miss raises
:class:`~cfbench.judges.runner.CacheMissError`, as in the in-memory run), parses the replies
(:func:`.judging.run_plan`), appends the judged rows and judgments to Parquet files (row groups
of about 16 MiB, :class:`pyarrow.parquet.ParquetWriter`) and reduces the rows to **item
statistics**: per table cell (judge x arm x dimension, ...) and item, the sums the tables'
estimates and intervals are made of (discordant pairs and pairs for rates, sums of absolute
score differences and pairs for MASD, correct / valid / unparsed for accuracy, score sums and
counts for the judge means, units per minority size for the flip distribution). Every table is
then computed from those small frames with the same interval functions, in the same group and
item order and with the same seeds as :func:`.tables.study_tables`, so the tables equal the
in-memory run's (``tests/test_cc_streamed.py``).

Why pandas on the item-statistic frames and not DuckDB over the Parquet: the item statistics are
small (one row per cell and item per metric, a few hundred thousand rows at paper scale) and
the interval functions of :mod:`cfbench.stats.intervals` take exactly these per-item numerators
and denominators; the unit statistics themselves come from
:func:`cfbench.metrics.counterfactual.pair_table`, so there is one implementation of "a pair".
A SQL re-implementation over the Parquet would be a second one to keep equal. The Parquet files
are there for anyone who wants the judged rows (DuckDB or pyarrow read them directly).

Every table of :func:`.tables.study_tables` and :func:`.study.run` is built (:data:`STREAMED_TABLES`);
:data:`NOT_STREAMED` is empty. Were a table left out, it would be listed there, in the summary
(``streamed.not_built``) and as a ``warnings`` row.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cfbench.metrics import counterfactual as M
from cfbench.studies.contact_center_qa import tables as T
from cfbench.studies.contact_center_qa.judging import iter_judged  # noqa: F401  (the streamed run's input)

__all__ = ["ItemStats", "item_stats", "tables_from_stats", "iter_judged", "ParquetRows",
           "NOT_STREAMED", "STREAMED_TABLES"]

#: tables of :func:`.tables.study_tables` / :func:`.study.run` the streamed path does not build
NOT_STREAMED: tuple = ()  # tables of run() the streamed path does not build (none)
#: tables the streamed path builds (equal to the in-memory run's)
STREAMED_TABLES = ("cfr", "masd", "robustness", "accuracy", "accuracy_by_question", "accuracy_by_label",
                   "flip_distribution", "responsiveness",
                   "cfr_minus_robustness", "cfr_by_category", "fairness_prompting_delta", "judge_means",
                   "net_cfr_gate", "parse_rates", "variant_rejections", "table2", "warnings", "judge_differences",
                   "evidence_checks", "kappa", "direction")

_ITEM = "item_id"
#: the item statistics are compacted (one frame per statistic, categories) every this many transcripts
COMPACT_EVERY = 10
_SUMS = ["stat", "n_pairs", "n_units", "n_pairs_all"]
#: variant columns kept for the rejection table and the warnings (no text)
_VARIANT_COLUMNS = ["item_id", "dimension", "condition", "applicable", "operation", "valid", "rejected_by",
                    "rejection_reason", "reason"]


# -- per transcript: item statistics ---------------------------------------------------------------
def _cells(frame: pd.DataFrame, *, value: str, kind: str, by: list[str], unit: list[str],
           condition: str = "condition") -> pd.DataFrame:
    """Per ``by`` group x item: summed pair statistic, valid pairs, units with a pair, pairs had nothing been
    excluded (what :func:`cfbench.metrics.counterfactual.flip_rate` and ``mean_abs_score_diff`` sum)."""
    pt = M.pair_table(frame, value=value, kind=kind, condition=condition, unit=unit, by=by, ok=T.OK)
    if not len(pt):
        return pd.DataFrame(columns=by + [_ITEM] + _SUMS)
    pt = pt.assign(n_units=(pt["n_pairs"] > 0).astype(float))
    return pt.groupby(by + [_ITEM], sort=True)[_SUMS].sum().reset_index()


def _is_text(col: pd.Series) -> bool:
    """Text (object or pandas string dtype), which the compaction stores as categories."""
    return not isinstance(col.dtype, pd.CategoricalDtype) and (col.dtype == object or pd.api.types.is_string_dtype(col))


def _concat_plain(parts: list) -> pd.DataFrame:
    """The frames one after the other, categories back to their plain values."""
    plain = [p.astype({c: object for c in p.columns if isinstance(p[c].dtype, pd.CategoricalDtype)}) for p in parts]
    return pd.concat(plain, ignore_index=True) if len(plain) > 1 else plain[0]


def _categorized(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as categories."""
    return frame.astype({c: "category" for c in frame.columns if _is_text(frame[c])})


@dataclasses.dataclass
class ItemStats:
    """Item statistics of many transcripts: lists of small frames, concatenated at the end.

    Given ``spill`` (a folder), :meth:`compact` appends the compacted chunks there, one file per
    statistic, instead of keeping them, and the first :meth:`frame` after the loop reads them back one
    statistic at a time: while transcripts stream, memory holds only the statistics of the transcripts
    since the last compaction (kept in memory they were about 0.055 MB per paper transcript, 66 MB at
    1,200). The files are pickles of the chunks (every dtype, category and NaN comes back as it was
    written), made and read by this object only."""

    parts: dict = dataclasses.field(default_factory=dict)
    flags: dict = dataclasses.field(default_factory=dict)  # global facts (which arms have a value, ...)
    compacted: dict = dataclasses.field(default_factory=dict)  # per statistic: leading parts already compacted
    spill: Any = None  # folder for the compacted chunks (None: kept in memory)
    spilled: dict = dataclasses.field(default_factory=dict)  # statistic -> [its file, chunks written]

    def add(self, name: str, frame: pd.DataFrame) -> None:
        if len(frame):
            self.parts.setdefault(name, []).append(frame)

    def frame(self, name: str) -> pd.DataFrame:
        self._read_back()
        parts = self.parts.get(name, [])
        if not parts:
            return pd.DataFrame()
        return _concat_plain(parts)  # the groupbys see plain values (a category would add empty groups)

    def compact(self) -> None:
        """The frames added since the last call as one frame per statistic, text columns as categories: a
        few bytes per row instead of a Python object, and one frame's overhead per chunk instead of per
        transcript. With ``spill`` each chunk is appended to its statistic's file. Otherwise the compacted
        chunks are merged like a binary counter (a chunk is merged into the one before it while that one is
        less than twice its size), so a statistic holds O(log n) frames, not one per chunk (each frame
        carries its own block manager, index and categories, Python objects whose number grew linearly in
        the number of transcripts when every chunk stayed a frame). Row order is kept."""
        if self.spill is not None:
            import pickle

            for name, parts in self.parts.items():
                if not parts:
                    continue
                entry = self.spilled.setdefault(name, [Path(self.spill) / f"item-stats-{len(self.spilled):03d}.pkl", 0])
                with open(entry[0], "ab") as fh:
                    pickle.dump(_categorized(_concat_plain(parts)), fh, protocol=pickle.HIGHEST_PROTOCOL)
                entry[1] += 1
            self.parts = {}
            _release_memory()
            return
        for name, parts in self.parts.items():
            done = self.compacted.get(name, 0)
            tail = parts[done:]
            if not tail:
                continue
            kept = parts[:done] + [_categorized(_concat_plain(tail))]
            while len(kept) > 1 and len(kept[-2]) < 2 * len(kept[-1]):
                kept[-2:] = [_categorized(_concat_plain(kept[-2:]))]
            self.parts[name] = kept
            self.compacted[name] = len(kept)
        _release_memory()

    def _read_back(self) -> None:
        """The spilled chunks back in memory, one statistic at a time, before the statistics added since
        (order kept), as one categorized frame per statistic; each file is removed once read."""
        if not self.spilled:
            return
        import pickle

        while self.spilled:
            name, (path, n) = next(iter(self.spilled.items()))
            with open(path, "rb") as fh:
                frames = [pickle.load(fh) for _ in range(n)]  # noqa: S301 - this object's own file
            frames += self.parts.get(name, [])
            self.parts[name] = [_categorized(_concat_plain(frames))]
            self.compacted[name] = 1
            del frames
            path.unlink()
            del self.spilled[name]
        _release_memory()

    def flag(self, key: Any, value: Any = True) -> None:
        self.flags.setdefault(key, value)

    def merge(self, other: "ItemStats") -> None:
        for k, v in other.parts.items():
            self.parts.setdefault(k, []).extend(v)
        for k, v in other.flags.items():
            self.flags.setdefault(k, v)


def _release_memory() -> None:
    """Hand freed heap pages back to the OS (glibc ``malloc_trim``; elsewhere nothing). Without it the
    per-transcript frames leave freed but mapped memory behind and the resident size creeps up."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def item_stats(rows: pd.DataFrame, judgments: pd.DataFrame, variants: pd.DataFrame | None = None) -> ItemStats:
    """The item statistics of one transcript's (or any set of whole transcripts') judged rows."""
    s = ItemStats()
    r, cf, rob_all, orig, qa_cf = T.split_rows(rows)
    s.add("cfr", _cells(qa_cf, value=T.ANSWER, kind="binary", by=T.BY, unit=T.UNIT))
    for task, (col, name) in T.score_items():
        sub = cf[cf["task"] == task]
        for arm in sub.loc[sub[col].notna(), "arm"].unique():
            s.flag(("arm_has", task, col, arm))
        s.add(f"masd/{task}/{col}", _cells(sub, value=col, kind="score", by=T.BY, unit=T.UNIT))
    for rdim, rob in rob_all.groupby("dimension", sort=True):
        for task in T.SCORES:
            sub = rob[rob["task"] == task]
            if not len(sub):
                continue
            s.flag(("rob_temperature", rdim, task), float(sub["temperature"].iloc[0]))
            if task == "qa":
                s.add(f"rob/{rdim}/{task}/cfr", _cells(sub, value=T.ANSWER, kind="binary", by=["judge"],
                                                       unit=T.UNIT, condition="repeat"))
            for col, _ in T.SCORES[task]:
                if sub[col].notna().any():
                    s.flag(("rob_has", rdim, task, col))
                s.add(f"rob/{rdim}/{task}/{col}", _cells(sub, value=col, kind="score", by=["judge"], unit=T.UNIT,
                                                         condition="repeat"))
    qa_orig = orig[(orig["task"] == "qa") & (orig["arm"] == "baseline")]
    for name, by in (("accuracy", ["judge"]), ("accuracy_by_question", ["judge", "question_id"]),
                     ("accuracy_by_label", ["judge", "label_yes"])):
        s.add(name, _accuracy_cells(T.label_yes(qa_orig), by))
    s.add("flip_hist", _flip_hist(qa_cf))
    s.add("cfr_by_category", _cells(qa_cf, value=T.ANSWER, kind="binary", by=["judge", "arm", "category"],
                                    unit=["item_id", "question_id", "dimension"]))
    for j, d, a in cf[["judge", "dimension", "arm"]].drop_duplicates().itertuples(index=False):
        s.flag(("arm_of", j, d, a))
    fair = cf[cf["arm"].isin(["baseline", "fairness"])]
    s.add("fair/qa", _cells(fair[fair["task"] == "qa"], value=T.ANSWER, kind="binary",
                            by=["judge", "arm", "dimension"], unit=T.UNIT))
    for task, (col, name) in T.score_items():
        t = fair[(fair["task"] == task) & fair[col].notna()]
        s.add(f"fair/{task}/{col}", _cells(t, value=col, kind="score", by=["judge", "arm", "dimension"],
                                           unit=T.UNIT))
    base_qa = qa_cf[qa_cf["arm"] == "baseline"]
    for col, _ in T.SCORES["qa"]:
        if base_qa[col].notna().any():
            s.flag(("jd_has", col))
        s.add(f"jd/{col}", _cells(base_qa[base_qa[col].notna()], value=col, kind="score", by=["dimension", "judge"],
                                  unit=T.UNIT))
    s.add("evidence", _evidence_sums(r))
    cf_marked = cf[cf["condition"] != "original"]
    for task, (col, name) in list(T.score_items()) + [("qa", (T.ANSWER, "yes_rate"))]:
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
    s.add("parse_rates", judgments.assign(_ok=judgments["parse_ok"].astype(float),
                                          _hit=judgments["cache_hit"].astype(float))
          .groupby(["judge", "task"], sort=True).agg(n=("_ok", "size"), ok=("_ok", "sum"), hit=("_hit", "sum"))
          .reset_index())
    qa_ok = r[(r["task"] == "qa") & r["parse_ok"].astype(bool)]
    for judge, g in qa_ok.groupby("judge"):
        s.flag(("p_yes_any", judge), False)
        if g["p_yes"].notna().any():
            s.flags[("p_yes_any", judge)] = True
    if variants is not None:
        s.add("variants", variants[[c for c in _VARIANT_COLUMNS if c in variants.columns]])
    return s


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


def _evidence_checks(sums: pd.DataFrame) -> pd.DataFrame:
    """:func:`.tables.evidence_checks` from the per-transcript sums."""
    if not len(sums):
        return pd.DataFrame(columns=T.EVIDENCE_CHECK_COLUMNS)
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
    return pd.DataFrame(out, columns=T.EVIDENCE_CHECK_COLUMNS)


def _judge_differences(s: "ItemStats", *, n_boot: int, seed: int) -> pd.DataFrame:
    """:func:`.tables.judge_differences` (baseline arm, every pair of judges) from the item statistics."""
    cols = ["dimension"] + M.DIFFERENCE_COLUMNS
    cfr = s.frame("cfr")
    judges = set(cfr["judge"]) if len(cfr) else set()
    for k in s.flags:
        if k[0] == "p_yes_any":
            judges.add(k[1])
    acc = s.frame("accuracy")
    if len(acc):
        judges |= set(acc["judge"])
    if len(judges) < 2:
        return pd.DataFrame(columns=cols)
    parts = []
    base = cfr[cfr["arm"] == "baseline"] if len(cfr) else cfr
    if len(base):
        rows = M._differences(_per_item(base, ["dimension", "judge"]), by=["dimension"], judge="judge", item=_ITEM,
                              judges=None, kind="rate", metric="cfr", n_boot=n_boot, seed=seed, level=0.95,
                              value_range=None, num="stat", den="n_pairs")
        parts.append(pd.DataFrame(rows, columns=cols))
        for col, name in T.SCORES["qa"]:
            cells = s.frame(f"jd/{col}")
            if ("jd_has", col) in s.flags and len(cells):
                rows = M._differences(_per_item(cells, ["dimension", "judge"]), by=["dimension"], judge="judge",
                                      item=_ITEM, judges=None, kind="mean", metric=f"masd_{name}", n_boot=n_boot,
                                      seed=seed, level=0.95, value_range=M._abs_range(T.SCORE_RANGE), num="stat",
                                      den="n_pairs")
                parts.append(pd.DataFrame(rows, columns=cols))
    if len(acc):
        a = acc[acc["n_valid"] > 0]
        if len(a):
            per = a.groupby(["judge", _ITEM], sort=True)[["n_correct", "n_valid"]].sum()
            rows = M._differences(per, by=[], judge="judge", item=_ITEM, judges=None, kind="rate", metric="accuracy",
                                  n_boot=0, seed=0, level=0.95, value_range=None, num="n_correct", den="n_valid")
            parts.append(pd.DataFrame(rows, columns=M.DIFFERENCE_COLUMNS).assign(dimension="originals"))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def _direction_cells(frame: pd.DataFrame, originals: pd.DataFrame, value: str) -> pd.DataFrame:
    """Per judge x arm x dimension x condition x item: sum and count of ``value(c) - value(original)``
    (what :func:`cfbench.metrics.counterfactual.effect_direction` resamples)."""
    by, unit, match, cond = T.BY, T.UNIT, ["judge", "arm"], "condition"
    orig = originals.loc[M._valid_mask(originals, value, T.OK), match + unit + [value]]
    if orig.duplicated(match + unit).any():
        from cfbench.core.errors import InputError

        raise InputError("more than one original per unit", source="originals frame",
                         record=orig.loc[orig.duplicated(match + unit)].iloc[0].to_dict(), field=value)
    f = frame.loc[M._valid_mask(frame, value, T.OK), list(dict.fromkeys(by + unit + [cond, value]))]
    merged = f.merge(orig.rename(columns={value: "_orig"}), on=match + unit, how="inner")
    merged["_diff"] = pd.to_numeric(merged[value]) - pd.to_numeric(merged["_orig"])
    return merged.groupby(by + [cond, _ITEM], sort=True, dropna=False)["_diff"].agg(["sum", "count"]).reset_index()


def _kappa_counts(qa_rob: pd.DataFrame) -> pd.DataFrame:
    """Per judge x repeat baseline x pair of repeats: the 2 x 2 table of the two repeats' answers over the
    units where both parsed (what :func:`cfbench.metrics.counterfactual.repeat_kappa` computes kappa from);
    a pair ``(r, r)`` row marks a group with a parsed answer."""
    valid = qa_rob.loc[M._valid_mask(qa_rob, T.ANSWER, T.OK)]
    out = []
    for (judge, dim), grp in valid.groupby(["judge", "dimension"], sort=True, dropna=False):
        wide = grp.pivot_table(index=T.UNIT, columns="repeat", values=T.ANSWER, aggfunc="first")
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


def _kappa(counts: pd.DataFrame) -> pd.DataFrame:
    """:func:`cfbench.metrics.counterfactual.repeat_kappa` (by judge and repeat baseline) from the 2 x 2 counts."""
    cols = ["judge", "dimension", "kappa", "kappa_min", "n_repeat_pairs", "n_units"]
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

    cols = T.BY + ["condition"]
    w = M._abs_range(value_range)
    diff_range = (-w[1], w[1])
    rng = np.random.default_rng(seed)
    per = cells.groupby(cols + [_ITEM], sort=True, dropna=False)[["sum", "count"]].sum().reset_index()
    rows = []
    for key, g in per.groupby(cols, sort=True, dropna=False):
        lo, hi, method = mean_interval_t(g["sum"].to_numpy(float), g["count"].to_numpy(float), n_boot=n_boot,
                                         rng=rng, value_range=diff_range)
        n = int(g["count"].sum())
        rows.append(dict(zip(cols, key)) | {"mean_diff": float(g["sum"].sum()) / n, "n_units": n, "n_items": len(g),
                                            "ci_low": lo, "ci_high": hi, "ci_method": method})
    return pd.DataFrame(rows, columns=cols + ["mean_diff", "n_units", "n_items", "ci_low", "ci_high", "ci_method"])


def _accuracy_cells(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per ``by`` group x item: labelled answers that parsed (``n_valid``), correct among them, unparsed."""
    f = frame.loc[frame["label"].notna()]
    if not len(f):
        return pd.DataFrame(columns=by + [_ITEM, "n_valid", "n_correct", "n_unparsed"])
    labv = pd.to_numeric(f["label"].map(M._label_to_float), errors="coerce").to_numpy()
    valid = M._valid_mask(f, T.ANSWER, T.OK)
    correct = (pd.to_numeric(f[T.ANSWER], errors="coerce").to_numpy() == labv).astype(float)
    f = f[by + [_ITEM]].assign(n_valid=valid.astype(float), n_correct=np.where(valid, correct, 0.0),
                               n_unparsed=(~valid).astype(float))
    return f.groupby(by + [_ITEM], sort=True, dropna=False)[["n_valid", "n_correct", "n_unparsed"]].sum().reset_index()


def _flip_hist(qa_cf: pd.DataFrame) -> pd.DataFrame:
    by = ["judge", "arm", "dimension"]
    pairs = M.pair_table(qa_cf, value=T.ANSWER, kind="binary", unit=T.UNIT, by=by, ok=T.OK)
    pairs = pairs[pairs["n_valid"] >= 2]
    if not len(pairs):
        return pd.DataFrame(columns=by + ["n_minority", "n_units"])
    pairs = pairs.assign(n_minority=np.minimum(pairs["n_yes"], pairs["n_valid"] - pairs["n_yes"]).astype(int))
    return pairs.groupby(by + ["n_minority"], sort=True).size().rename("n_units").reset_index()


def _mean_cells(r: pd.DataFrame) -> pd.DataFrame:
    """Per score x judge x arm x item: sum and count of the parsed scores (one per prompt), as
    :func:`.tables.judge_means` takes them."""
    r = r[~r["dimension"].astype(str).str.startswith("robustness") & r["parse_ok"].astype(bool)]
    r = r.drop_duplicates(["judge", "arm", "task", "question_id", "variant_id"])
    out = []
    for task, (col, name) in T.score_items():
        sub = r[r["task"] == task]
        sub = sub[pd.to_numeric(sub[col], errors="coerce").notna()] if len(sub) else sub
        if len(sub):
            g = sub.assign(_v=sub[col].astype(float)).groupby(["judge", "arm", _ITEM], sort=True)["_v"]
            out.append(g.agg(["sum", "count"]).reset_index().assign(task=task, col=col, score=name))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


# -- at the end: the tables from the item statistics -------------------------------------------------
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
                              n_boot=n_boot, rng=rng, confidence=level, value_range=None)
        rows.append(kv | {"estimate": d["estimate"], "counterfactual": d["est_1"], "robustness": d["est_2"],
                          "n_items": d["n_items"], "n_pairs": int(ci.loc[both, "n_pairs"].sum()),
                          "n_repeat_pairs": int(ri.loc[both, "n_pairs"].sum()),
                          "ci_low": d["ci_low"], "ci_high": d["ci_high"], "ci_method": d["ci_method"]})
    return pd.DataFrame(rows, columns=cols)


def _fairness_intervals(delta: pd.DataFrame, s: ItemStats, *, n_boot: int, seed: int) -> pd.DataFrame:
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
        (f"fair/{task}/{col}", "score", "mean", f"masd_{name}", M._abs_range(T.SCORE_RANGE))
        for task, (col, name) in T.score_items()]
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
    return T.merge_pooled_deltas(delta, parts, extra)


def _judge_means(cells: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    from cfbench.stats.intervals import mean_interval_t

    cols = ["judge", "arm", "score", "mean", "n", "n_items", "ci_low", "ci_high", "ci_method"]
    rng = np.random.default_rng(seed)
    out = []
    if not len(cells):
        return pd.DataFrame(columns=cols)
    for task, (col, name) in T.score_items():
        sub = cells[(cells["task"] == task) & (cells["col"] == col)]
        for (judge, arm), g in sub.groupby(["judge", "arm"], sort=True):
            per = g.groupby(_ITEM, sort=True)[["sum", "count"]].sum()
            lo, hi, how = mean_interval_t(per["sum"].to_numpy(float), per["count"].to_numpy(float),
                                          n_boot=n_boot, rng=rng, value_range=T.SCORE_RANGE)
            n = int(per["count"].sum())
            out.append({"judge": judge, "arm": arm, "score": name, "mean": float(per["sum"].sum()) / n,
                        "n": n, "n_items": len(per), "ci_low": lo, "ci_high": hi, "ci_method": how})
    return pd.DataFrame(out, columns=cols)


def tables_from_stats(s: ItemStats, *, n_boot: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The tables of :func:`.tables.study_tables` (those in :data:`STREAMED_TABLES`) from item statistics."""
    out: dict[str, pd.DataFrame] = {}
    by = T.BY
    out["cfr"] = _metric(s.frame("cfr"), by, "binary", "cfr", n_boot=n_boot, seed=seed)
    masd_parts = []
    for task, (col, name) in T.score_items():
        cells = s.frame(f"masd/{task}/{col}")
        arms = {k[3] for k in s.flags if k[:3] == ("arm_has", task, col)}
        if len(cells) and arms:
            cells = cells[cells["arm"].isin(arms)]
            masd_parts.append(_metric(cells, by, "score", "masd", n_boot=n_boot, seed=seed,
                                      value_range=M._abs_range(T.SCORE_RANGE)).assign(score=name))
    out["masd"] = (pd.concat(masd_parts, ignore_index=True) if masd_parts else
                   pd.DataFrame(columns=by + ["score", "masd", "n_items", "n_units", "n_pairs",
                                              "n_pairs_excluded", "ci_low", "ci_high", "ci_method"]))
    out["masd"] = out["masd"][by + ["score"] + [c for c in out["masd"].columns if c not in by + ["score"]]]

    rob_parts = []
    rdims = sorted({k[1] for k in s.flags if k[0] == "rob_temperature"})
    rcols = ["judge", "metric", "value", "n_items", "n_units", "n_pairs", "n_pairs_excluded", "ci_low", "ci_high",
             "ci_method"]
    for rdim in rdims:
        for task in T.SCORES:
            if ("rob_temperature", rdim, task) not in s.flags:
                continue
            parts = []
            if task == "qa":
                parts.append(_metric(s.frame(f"rob/{rdim}/{task}/cfr"), ["judge"], "binary", "value", n_boot=n_boot,
                                     seed=seed).assign(metric="cfr"))
            for col, name in T.SCORES[task]:
                if ("rob_has", rdim, task, col) in s.flags:
                    parts.append(_metric(s.frame(f"rob/{rdim}/{task}/{col}"), ["judge"], "score", "value",
                                         n_boot=n_boot, seed=seed, value_range=M._abs_range(T.SCORE_RANGE))
                                 .assign(metric=f"masd_{name}"))
            t = pd.concat(parts, ignore_index=True)[rcols] if parts else pd.DataFrame(columns=rcols)
            rob_parts.append(t.assign(baseline=rdim, temperature=s.flags[("rob_temperature", rdim, task)]))
    out["robustness"] = pd.concat(rob_parts, ignore_index=True) if rob_parts else pd.DataFrame(
        columns=rcols + ["baseline", "temperature"])

    out["accuracy"] = _accuracy(s.frame("accuracy"), ["judge"])
    out["accuracy_by_question"] = _accuracy(s.frame("accuracy_by_question"), ["judge", "question_id"])
    out["accuracy_by_label"] = _accuracy(s.frame("accuracy_by_label"), ["judge", "label_yes"])
    hist = s.frame("flip_hist")
    if len(hist):
        hist = hist.groupby(["judge", "arm", "dimension", "n_minority"], sort=True)["n_units"].sum().reset_index()
        hist["share"] = hist["n_units"] / hist.groupby(["judge", "arm", "dimension"])["n_units"].transform("sum")
    out["flip_distribution"] = hist
    cfr_cells = s.frame("cfr")
    base = cfr_cells[cfr_cells["arm"] == "baseline"].drop(columns=["arm"]) if len(cfr_cells) else cfr_cells
    cmr = [_cfr_minus_robustness(base, s.frame(f"rob/{rdim}/qa/cfr"), n_boot=n_boot, seed=seed).assign(baseline=rdim)
           for rdim in rdims if ("rob_temperature", rdim, "qa") in s.flags]
    out["cfr_minus_robustness"] = pd.concat(cmr, ignore_index=True) if cmr else pd.DataFrame()
    out["cfr_by_category"] = _metric(s.frame("cfr_by_category"), ["judge", "arm", "category"], "binary", "cfr",
                                     n_boot=n_boot, seed=seed)
    delta = _fairness_intervals(T.fairness_deltas(out), s, n_boot=n_boot, seed=seed)
    k = s.frame("kappa")
    out["kappa"] = (_kappa(k).rename(columns={"dimension": "baseline"}) if ("kappa_any",) in s.flags
                    else pd.DataFrame())
    dir_parts = []
    for task, (col, name) in T.score_items():
        arms = {f[3] for f in s.flags if f[:3] == ("dir_arm", task, col)}
        cells = s.frame(f"dir/{task}/{col}")
        if arms and ("dir_orig", task) in s.flags and len(cells):
            dir_parts.append(_direction(cells[cells["arm"].isin(arms)], n_boot=n_boot, seed=seed,
                                        value_range=T.SCORE_RANGE).assign(score=name))
    if ("dir_qa_cf",) in s.flags:
        dir_parts.append(_direction(s.frame(f"dir/qa/{T.ANSWER}"), n_boot=n_boot, seed=seed, value_range=(0.0, 1.0))
                         .assign(score="yes_rate"))
    out["direction"] = pd.concat(dir_parts, ignore_index=True) if dir_parts else pd.DataFrame()
    out["judge_differences"] = _judge_differences(s, n_boot=n_boot, seed=seed)
    out["evidence_checks"] = _evidence_checks(s.frame("evidence"))
    fair_ev = out["evidence_checks"]
    fair_ev = fair_ev.loc[fair_ev["arm"] == "fairness", ["judge", "yes_evidence_verified", "yes_rule_violated"]]
    out["fairness_prompting_delta"] = delta.merge(
        fair_ev.rename(columns={"yes_evidence_verified": "fair_yes_evidence_verified",
                                "yes_rule_violated": "fair_yes_rule_violated"}), on="judge", how="left")
    out["judge_means"] = _judge_means(s.frame("judge_means"), n_boot=n_boot, seed=seed)
    pr = s.frame("parse_rates")
    if len(pr):
        pr = pr.groupby(["judge", "task"], sort=True)[["n", "ok", "hit"]].sum().reset_index()
        pr = pd.DataFrame({"judge": pr["judge"], "task": pr["task"], "n": pr["n"].astype(int),
                           "parse_ok": pr["ok"] / pr["n"], "cache_hit": pr["hit"] / pr["n"],
                           "n_parse_failures": (pr["n"] - pr["ok"]).astype(int)})
    out["parse_rates"] = pr
    return out


# -- Parquet ------------------------------------------------------------------------------------------
#: columns whose min/max the Parquet row groups keep (filters on them skip row groups); the footer holds
#: every row group's statistics until the file is closed, so not every column gets them
_STATS_COLUMNS = ("judge", "task", "arm", "dimension", "item_id", "question_id")


class ParquetRows:
    """Appends frames of the same columns to one Parquet file.

    Numbers become float64 (an integer column with a gap in one transcript stays one type), booleans
    stay booleans, everything else is text (None stays null). A frame with a column the first frame
    did not have raises (nothing is dropped).

    Frames are held back until they reach ``group_bytes`` (Arrow bytes) and then written as one row
    group. The writer keeps every row group's metadata in memory until the file is closed: one row group
    per paper transcript made the writer grow by about 0.06 MB per transcript (12 MB per 200, measured
    with pyarrow 26), which is most of what grew in a streamed replay. At 16 MiB a row group holds 4–7
    paper transcripts. ``n_rows`` counts the rows already in the file; :meth:`close` writes the rest."""

    GROUP_BYTES = 16 * 2**20

    def __init__(self, path: str | Path, *, group_bytes: int | None = None):
        self.path, self.writer, self.schema, self.n_rows = Path(path), None, None, 0
        self.group_bytes = self.GROUP_BYTES if group_bytes is None else int(group_bytes)
        self._held: list = []
        self._held_bytes = 0

    @staticmethod
    def _normal(frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for c in frame.columns:
            s = frame[c]
            if pd.api.types.is_bool_dtype(s):
                out[c] = s
            elif pd.api.types.is_numeric_dtype(s):
                out[c] = s.astype("float64")
            else:
                out[c] = s.map(lambda v: None if v is None or (isinstance(v, float) and v != v) else str(v),
                               na_action=None).astype(object)
        return pd.DataFrame(out, index=frame.index)

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        f = self._normal(frame)
        if self.writer is None:
            fields = [pa.field(c, pa.bool_() if pd.api.types.is_bool_dtype(f[c]) else
                               pa.float64() if pd.api.types.is_numeric_dtype(f[c]) else pa.string())
                      for c in f.columns]
            self.schema = pa.schema(fields)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            stats = [c for c in _STATS_COLUMNS if c in self.schema.names]
            self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd", write_statistics=stats)
        extra = [c for c in f.columns if c not in self.schema.names]
        if extra:
            raise ValueError(f"{self.path.name}: columns {extra} appeared after the first row group")
        f = f.reindex(columns=self.schema.names)
        for c in self.schema.names:  # a bool column with a gap comes back as object: keep the schema's type
            if self.schema.field(c).type == pa.bool_() and not pd.api.types.is_bool_dtype(f[c]):
                f[c] = f[c].astype("boolean")
        table = pa.Table.from_pandas(f, schema=self.schema, preserve_index=False)
        self._held.append(table)
        self._held_bytes += table.nbytes
        if self._held_bytes >= self.group_bytes:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._held:
            return
        table = pa.concat_tables(self._held) if len(self._held) > 1 else self._held[0]
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.n_rows += table.num_rows
        self._held, self._held_bytes = [], 0

    def close(self) -> None:
        if self.writer is not None:
            self._flush()
            self.writer.close()
            self.writer = None
