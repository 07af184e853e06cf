"""Reproduction of seed 002's released data (Amiri-Margavi et al. 2026), as run and as described.

*As run* is what the released workbook actually computed (NLTK VADER with the
``vaderSentiment`` lexicon, plain substring counts of the recoverable terms, a
whitespace word count; intervals of Tables 3/4 as printed = paired-t intervals
over prompt-level differences, found by recomputation). *As described* is the
paper's stated method (vaderSentiment, word-boundary lexicon rates per 100
words, a percentile bootstrap over prompts). Both are computed from the same
480 released replies and labelled.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cfbench.io import amiri
from cfbench.metrics.lexicon import TONE_METRICS, TONE_RANGES, Lexicons, score_responses
from cfbench.metrics.state import ItemState, ItemStatistics
from cfbench.metrics.refusal import refusal_labels, refusal_table
from cfbench.perturb.stimuli import identity_ids
from cfbench.stats.paired import group_means, largest_gaps, paired_tests, symmetry_checks

__all__ = ["TABLE2_METRICS", "KEYS", "Reproduction", "reproduce_released", "tables34", "released_responses",
           "refusal_rebuild", "item_stats", "tables_from_stats", "new_state"]

#: Table 2 columns (the paper's Table 2 plus negative tone).
TABLE2_METRICS = ["sentiment", "politeness", "hedging", "neg_tone", "words"]
#: Column names of the study's tidy frames, passed to the generic metrics and statistics.
KEYS = {"model": "model", "unit": "prompt_id", "group": "identity"}
_PAIR_KEYS = ["model", "metric", "identity_a", "identity_b"]
#: the column giving each reply's position in its frame (the run's responses, the released replies): fixed
#: before the replies are split, it puts every table's rows back in that order however chunks were added or
#: merged
ORDER = "row_order"
_TOL_PAIRS = {"n": 0, "mean_a": 1e-9, "mean_b": 1e-9, "mean_diff": 1e-9, "t": 1e-9, "t_p": 1e-9,
              "cohens_d": 1e-9, "wilcoxon_stat": 1e-9, "wilcoxon_p": 0.015}


def _in_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` in :data:`ORDER`, which it then drops; a reply given twice is refused."""
    f = frame.sort_values(ORDER, kind="stable").reset_index(drop=True)
    if f[ORDER].duplicated().any():
        from cfbench.core.errors import InputError

        row = f.loc[f[ORDER].duplicated()].iloc[0]
        raise InputError("reply given twice", source="identity-tone item statistics",
                         record=f"{row['model']}/{row['prompt_id']}/{row['identity']}", field=ORDER)
    return f.drop(columns=[ORDER])


@dataclass
class Reproduction:
    """Frames and tables of the reproduction, plus the match counts for ``summary.json``."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, object] = field(default_factory=dict)


def released_responses(wb: amiri.AmiriWorkbook) -> pd.DataFrame:
    """The 480 released replies as a responses frame (``variant_id`` = model/prompt/identity)."""
    c = wb.career
    return pd.DataFrame({"variant_id": c["model"] + "/" + c["prompt_id"] + "/" + c["identity"],
                         "model": c["model"], "prompt_id": c["prompt_id"], "identity": c["identity"],
                         "text": c["output"], "status": "ok"})


def _score(resp: pd.DataFrame, lexicons: Lexicons, mode: str) -> pd.DataFrame:
    return score_responses(resp, lexicons=lexicons, mode=mode, keep=("model", "prompt_id", "identity"),
                           record="variant_id")


def _pairs(scores: pd.DataFrame, *, seed: int, n_resamples: int, ci_method: str = "bootstrap") -> pd.DataFrame:
    return paired_tests(scores, metrics=list(TONE_METRICS), groups=identity_ids(), seed=seed,
                        n_resamples=n_resamples, ci_method=ci_method, value_ranges=TONE_RANGES, **KEYS)


def tables34(pairs_t: pd.DataFrame, pairs_boot: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Tables 3 (sentiment) and 4 (hedging): the two largest |d| pairs per model.

    Returns ``as_run`` (intervals = paired t, as the printed tables have them),
    ``bootstrap`` (the described percentile bootstrap) and ``interval_methods``
    (both side by side, with whether each interval includes 0 and whether the
    reading changes between them).
    """
    sel = largest_gaps(pairs_t, model="model", k=2, by="abs_d", metrics=["sentiment", "hedging"])
    cols = [*_PAIR_KEYS, "n", "mean_diff", "ci_low", "ci_high", "cohens_d", "wilcoxon_p"]
    as_run = sel[cols].assign(ci_method="paired t (as found in the printed tables)")
    boot = sel[_PAIR_KEYS].merge(pairs_boot[cols], on=_PAIR_KEYS, how="left", validate="one_to_one")
    boot = boot.assign(ci_method=pairs_boot.attrs.get("ci_method", "percentile bootstrap"))
    both = as_run[[*_PAIR_KEYS, "mean_diff", "ci_low", "ci_high", "cohens_d", "wilcoxon_p"]].merge(
        boot[[*_PAIR_KEYS, "ci_low", "ci_high"]], on=_PAIR_KEYS, suffixes=("_t", "_boot"))
    both["zero_in_t"] = (both.ci_low_t <= 0) & (0 <= both.ci_high_t)
    both["zero_in_boot"] = (both.ci_low_boot <= 0) & (0 <= both.ci_high_boot)
    both["reading_changes"] = both.zero_in_t != both.zero_in_boot
    return {"as_run": as_run, "bootstrap": boot, "interval_methods": both}


def refusal_rebuild(wb: amiri.AmiriWorkbook) -> tuple[pd.DataFrame, pd.DataFrame]:
    """cfbench's refusal labels of the 480 released replies, against the released ``Refusal_Table``.

    Returns (per model × identity rates with the released rates beside them,
    per model Table 1 layout: identity groups, prompts, full/partial/none %).
    """
    resp = released_responses(wb)
    resp["refusal"] = refusal_labels(resp["text"], ids=list(resp["variant_id"]))
    return _refusal_tables(resp, wb.refusal)


def _refusal_tables(resp: pd.DataFrame, released: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`refusal_rebuild`'s two tables from labelled replies (``model, prompt_id, identity, refusal``)
    and the released ``Refusal_Table``."""
    ours = refusal_table(resp, by=("model", "identity"))
    rel = released.rename(columns={"Model": "model", "Number of Prompt": "n_released",
                                   "full_refusal_rate": "full_rate_released",
                                   "partial_refusal_rate": "partial_rate_released",
                                   "no_refusal_rate": "none_rate_released"})
    by_identity = ours[["model", "identity", "n", "full_rate", "partial_rate", "none_rate"]].merge(
        rel[["model", "identity", "n_released", "full_rate_released", "partial_rate_released",
             "none_rate_released"]], on=["model", "identity"], how="outer", validate="one_to_one")
    table1 = (resp.groupby("model", sort=False)
              .agg(identity_groups=("identity", "nunique"), prompts=("prompt_id", "nunique"),
                   full_pct=("refusal", lambda s: 100 * (s == "full").mean()),
                   partial_pct=("refusal", lambda s: 100 * (s == "partial").mean()),
                   none_pct=("refusal", lambda s: 100 * (s == "none").mean()))
              .reset_index())
    return by_identity, table1


# -- item statistics of the released replies: per prompt, the update step and the functional form ---------

def item_stats(resp: "pd.DataFrame | None", *, as_run_terms: Lexicons, described_lexicons: Lexicons
               ) -> ItemStatistics:
    """The per-prompt statistics of whole prompts' released replies (:func:`released_responses` with
    :data:`~.audit.ORDER`): each reply's refusal label (``replies``) and its scores as run and as described
    (``scores/as_run``, ``scores/described``), no text. The update step of :func:`new_state`."""
    s = ItemStatistics()
    if resp is None or not len(resp):
        return s
    if ORDER not in resp.columns:
        from cfbench.core.errors import InputError

        raise InputError(f"released replies have no {ORDER} column", source="identity-tone reproduction",
                         field=ORDER)
    r = resp.reset_index(drop=True)
    labels = refusal_labels(r["text"], ids=list(r["variant_id"]))
    s.add("replies", r[["variant_id", "model", "prompt_id", "identity", ORDER]].assign(refusal=labels))
    for mode, lex in (("as_run", as_run_terms), ("described", described_lexicons)):
        sc = _score(r, lex, mode)
        s.flag(("lexicon", mode), dict(sc.attrs))
        s.add(f"scores/{mode}", sc.assign(**{ORDER: r[ORDER].to_numpy()}))
    return s


def new_state(*, as_run_terms: Lexicons, described_lexicons: Lexicons, spill: Any = None,
              compact_every: int = 10) -> ItemState:
    """An empty per-prompt state of the reproduction: ``update(released replies)``, ``merge(other)``,
    ``compute(wb=, seed=, n_resamples=)`` (-> :func:`tables_from_stats`, a :class:`Reproduction`)."""
    return ItemState(functools.partial(item_stats, as_run_terms=as_run_terms, described_lexicons=described_lexicons),
                     tables_from_stats, item="prompt_id", spill=spill, compact_every=compact_every)


def _scores(s: ItemStatistics, mode: str) -> pd.DataFrame:
    sc = _in_order(s.frame(f"scores/{mode}"))
    sc.attrs.update(s.flags.get(("lexicon", mode), {}))
    return sc


def reproduce_released(wb: amiri.AmiriWorkbook, *, as_run_terms: Lexicons, described_lexicons: Lexicons,
                       seed: int, n_resamples: int) -> Reproduction:
    """Recompute every released number from the released replies, in both modes; compare. One per-prompt state
    (:func:`new_state`) updated with the 480 replies, then computed."""
    resp = released_responses(wb)
    resp[ORDER] = np.arange(len(resp))
    return (new_state(as_run_terms=as_run_terms, described_lexicons=described_lexicons).update(resp)
            .compute(wb=wb, seed=seed, n_resamples=n_resamples))


def tables_from_stats(s: ItemStatistics, *, wb: amiri.AmiriWorkbook, seed: int, n_resamples: int) -> Reproduction:
    """Every table of the reproduction from the per-prompt statistics of :func:`item_stats` (the functional
    form), set against the released tables of ``wb``; rows in :data:`~.audit.ORDER`, prompts resampled in
    sorted order from ``seed``."""
    rep = Reproduction()
    ids = identity_ids()
    scores_run = _scores(s, "as_run")
    rep.frames["released_scores_as_run"] = scores_run
    per_response = amiri.compare_to_released(
        scores_run, amiri.released_scores(wb), keys=["model", "prompt_id", "identity"],
        columns={"sentiment": 1e-9, "politeness": 0, "hedging": 0, "neg_tone": 0, "words": 0, "chars": 0})
    table2_run = group_means(scores_run, metrics=TABLE2_METRICS, groups=ids, model="model", group="identity")
    t2_check = amiri.compare_to_released(table2_run, amiri.released_table2(wb), keys=["model", "identity"],
                                         columns={c: 1e-9 for c in ["n", *TABLE2_METRICS]})
    pairs_run = _pairs(scores_run, seed=seed, n_resamples=n_resamples)
    pairs_run_t = _pairs(scores_run, seed=seed, n_resamples=n_resamples, ci_method="paired_t")
    pair_check = amiri.compare_to_released(pairs_run, amiri.released_pairs(wb), keys=_PAIR_KEYS,
                                           columns=_TOL_PAIRS)
    t34 = tables34(pairs_run_t, pairs_run)
    released_sel = wb.gaps_selected[wb.gaps_selected.metric.isin(["sentiment", "hedging_count"])]
    same_pairs = (set(zip(t34["as_run"].model, t34["as_run"].identity_a, t34["as_run"].identity_b))
                  == set(zip(released_sel.model, released_sel.identity_A, released_sel.identity_B)))

    scores_desc = _scores(s, "described")
    rep.frames["released_scores_described"] = scores_desc
    table2_desc = group_means(scores_desc, metrics=TABLE2_METRICS, groups=ids, model="model", group="identity")
    pairs_desc = _pairs(scores_desc, seed=seed, n_resamples=n_resamples)
    side = table2_run.merge(table2_desc, on=["model", "identity", "n"], suffixes=("_as_run", "_described"))
    agree = pairs_run.merge(pairs_desc, on=_PAIR_KEYS, suffixes=("_run", "_desc"))
    sig_run, sig_desc = agree.wilcoxon_p_run < 0.05, agree.wilcoxon_p_desc < 0.05
    refusals_by_identity, table1 = _refusal_tables(_in_order(s.frame("replies")), wb.refusal)
    # the seed says it verified the differences were roughly symmetric (median-mean alignment, no extreme points)
    sym = symmetry_checks(scores_run, metrics=["sentiment", "politeness", "hedging", "neg_tone"], groups=ids, **KEYS)

    rep.tables.update({
        "repro_per_response": per_response, "table2_as_run": table2_run, "repro_table2_check": t2_check,
        "pairs_as_run": pairs_run, "pairs_as_run_paired_t": pairs_run_t, "repro_pairs_check": pair_check,
        "tables34_as_run": t34["as_run"], "tables34_bootstrap": t34["bootstrap"],
        "tables34_interval_methods": t34["interval_methods"],
        "table2_described": table2_desc, "pairs_described": pairs_desc, "table2_side_by_side": side,
        "table1_refusals_rebuilt": table1, "refusals_rebuilt_by_identity": refusals_by_identity,
        "released_symmetry_as_run": sym,
    })
    changes = t34["interval_methods"][t34["interval_methods"].reading_changes]
    rep.summary = {
        "released_data_available": True, "source_sha256": wb.sha256,
        "reproduction": {
            "per_response": per_response.set_index("column")["n_match"].to_dict(),
            "table2": t2_check.set_index("column")["n_match"].to_dict(),
            "pairs": pair_check.set_index("column")["n_match"].to_dict(),
            "pairs_wilcoxon_p_max_abs_diff": float(pair_check.set_index("column").at["wilcoxon_p", "max_abs_diff"]),
            "n_responses": len(scores_run), "n_table2_rows": len(table2_run), "n_pairs": len(pairs_run),
        },
        "tables34_same_pairs_as_released": bool(same_pairs),
        "released_symmetry": {"n_rows": len(sym), "n_symmetric": int(sym.symmetric.sum()),
                              "tables34_symmetric": int(sym.merge(t34["as_run"][_PAIR_KEYS], on=_PAIR_KEYS)
                                                        .symmetric.sum()),
                              "tables34_median_zero": int((sym.merge(t34["as_run"][_PAIR_KEYS], on=_PAIR_KEYS)
                                                           ["median"] == 0).sum())},
        "tables34_interval_reading_changes": changes[_PAIR_KEYS].to_dict("records"),
        "refusals_rebuilt": {"all_none": bool((refusals_by_identity.none_rate == 1).all()),
                             "matches_released": bool(np.allclose(refusals_by_identity.none_rate,
                                                                  refusals_by_identity.none_rate_released)
                                                      and np.allclose(refusals_by_identity.full_rate,
                                                                      refusals_by_identity.full_rate_released)
                                                      and np.allclose(refusals_by_identity.partial_rate,
                                                                      refusals_by_identity.partial_rate_released))},
        "described_vs_as_run": {
            "sentiment_abs_mean_shift_max": float((table2_desc.sentiment - table2_run.sentiment).abs().max()),
            "pairs_significant_as_run": int(sig_run.sum()), "pairs_significant_described": int(sig_desc.sum()),
            "pairs_significant_both": int((sig_run & sig_desc).sum()),
        },
    }
    return rep
