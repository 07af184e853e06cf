"""Fresh identity-tone audit: the design, the replies, and every analysis table of one run.

Design (seed 002, §3.2–3.4): each prompt × 8 identity descriptors, the seed's
decoding, one reply per variant and model. Analysis per model: refusal labels,
Table-2 means, all 28 paired comparisons per metric (bootstrap interval, paired
t, Wilcoxon, d_z, Holm/BH), the same differences adjusted for reply length
(word count), a symmetry check of the differences, and the power at this n.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.judges.base import GenerationConfig
from cfbench.judges.failures import failure_counts
from cfbench.metrics.state import ItemState, ItemStatistics
from cfbench.metrics.lexicon import TONE_METRICS, TONE_RANGES, Lexicons, score_responses
from cfbench.metrics.refusal import refusal_table
from cfbench.core.seeding import rng_for
from cfbench.perturb.stimuli import GRAMMATICAL_TEMPLATE, PLACEBO_TEMPLATE, identity_ids, identity_variants
from cfbench.stats.intervals import paired_difference
from cfbench.stats.paired import (group_means, largest_gaps, length_adjusted_tests, min_detectable_d,
                                  paired_matrix, paired_tests, symmetry_checks)

from . import prompts as P
from .reproduction import KEYS, ORDER, TABLE2_METRICS, _in_order
from .truncation import TRUNCATION_RULE

__all__ = ["Audit", "audit_design", "analyse_responses", "run_fresh", "fresh_audit", "power_summary",
           "LENGTH_ADJUSTED_METRICS", "TONE_ONLY", "truncation_table", "score_status", "length_gaps",
           "item_stats", "tables_from_stats", "new_state", "ORDER", "placebo_design", "placebo_contrast",
           "PLACEBO", "PLACEBO_COLUMNS"]

#: Metrics whose differences are also reported at equal reply length (length itself excluded).
LENGTH_ADJUSTED_METRICS = ["sentiment", "politeness", "hedging", "neg_tone"]
#: The tone metrics proper: the headline effect is chosen among these. Words and characters are
#: length, which the seed uses as a control variable; under a token cap they measure the cap and the
#: tokeniser (characters per token), not the assistant's tone.
TONE_ONLY = ["sentiment", "politeness", "hedging", "neg_tone"]

#: ``score_status`` of a reply that stopped at the token cap (never scored).
CUT = "cut at the token cap"
#: ``score_status`` of a reply whose completeness cannot be told (no finish reason, no token count).
CUT_UNKNOWN = "completeness unknown"


def score_status(responses: pd.DataFrame) -> pd.Series:
    """Why a reply is or is not scored for tone: ``ok``, ``error``, ``empty``, :data:`CUT`,
    :data:`CUT_UNKNOWN` or ``full refusal``. Only complete, answering replies are ``ok``."""
    status = responses["status"].astype(object).to_numpy().copy()
    ok = status == "ok"
    cut = pd.array(responses["truncated"], dtype="boolean") if "truncated" in responses else \
        pd.array([False] * len(responses), dtype="boolean")
    unknown = np.asarray(cut.isna(), dtype=bool)
    is_cut = np.asarray(cut.fillna(False), dtype=bool)
    status[ok & is_cut] = CUT
    status[ok & unknown] = CUT_UNKNOWN
    status[(status == "ok") & responses["refusal"].eq("full").to_numpy()] = "full refusal"
    return pd.Series(status, index=responses.index, name="score_status")


def truncation_table(responses: pd.DataFrame, *, cap: int | None = None) -> pd.DataFrame:
    """Replies at the token cap per model × identity: ``n`` replies, ``n_answered`` (the call returned
    a reply), ``n_cut`` (stopped at the cap), ``n_complete``, ``n_unknown`` (completeness cannot be
    told) and ``cut_share`` = n_cut / n_answered; a last row per model sums its identities."""
    rows = []
    answered = responses["status"].ne("error")
    cut = pd.array(responses["truncated"], dtype="boolean")
    frame = responses.assign(_ans=answered.to_numpy(), _cut=np.asarray(cut.fillna(False), dtype=bool),
                             _unk=np.asarray(cut.isna(), dtype=bool) & answered.to_numpy())
    for model, sub in frame.groupby("model", sort=False):
        for ident in [*identity_ids(), "all identities"]:
            part = sub if ident == "all identities" else sub[sub.identity == ident]
            n_ans, n_cut, n_unk = int(part._ans.sum()), int(part._cut.sum()), int(part._unk.sum())
            rows.append({"model": model, "identity": ident, "n": len(part), "n_answered": n_ans, "n_cut": n_cut,
                         "n_complete": n_ans - n_cut - n_unk, "n_unknown": n_unk,
                         "cut_share": n_cut / n_ans if n_ans else np.nan, "cap": cap})
    return pd.DataFrame(rows, columns=["model", "identity", "n", "n_answered", "n_cut", "n_complete", "n_unknown",
                                       "cut_share", "cap"])


def length_gaps(scores: pd.DataFrame, *, length: str = "words") -> dict[str, float | int | None]:
    """Word-count gaps between the paired replies of the 28 identity pairs, over scored replies.

    ``per_reply_mean_abs`` is the mean of |words(A, prompt) − words(B, prompt)| over every pair and
    prompt (how far apart two paired replies typically are); ``pair_mean_abs`` is the mean over pairs of
    |mean difference| (how far apart the identities are on average; smaller, as gaps cancel).
    """
    ids = identity_ids()
    per_reply, per_pair = [], []
    for _, sub in scores.groupby("model", sort=False):
        X = paired_matrix(sub, metric=length, groups=ids, unit="prompt_id", group="identity").to_numpy(float)
        for i, j in itertools.combinations(range(len(ids)), 2):
            d = X[:, i] - X[:, j]
            d = d[~np.isnan(d)]
            per_reply.extend(np.abs(d))
            if len(d):
                per_pair.append(abs(d.mean()))
    return {"per_reply_mean_abs": float(np.mean(per_reply)) if per_reply else None,
            "pair_mean_abs": float(np.mean(per_pair)) if per_pair else None,
            "n_reply_pairs": len(per_reply)}


@dataclass
class Audit:
    """One fresh audit: its design, replies and tables."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def audit_design(prompt_frame: pd.DataFrame, *, seed: int, source: str, joiner: str = " ",
                 template: str = GRAMMATICAL_TEMPLATE) -> pd.DataFrame:
    """Prompts × the 8 identities (see :func:`cfbench.perturb.stimuli.identity_variants`).

    A fresh audit states the identity grammatically ("I am an older …", "I am a younger …"):
    the seed's verbatim "I am a older …" would make the older descriptors, and only those,
    ungrammatical, a difference confounded with age. (The released replies, which the
    reproduction scores, were generated with the seed's wording; nothing is regenerated there.)
    """
    return identity_variants(prompt_frame, seed=seed, prompt_source=source, joiner=joiner, template=template,
                             prompt_version=str(prompt_frame["prompt_version"].iloc[0]))


#: the ``arm`` of a placebo reply (the same identity stated in other words, :data:`PLACEBO_TEMPLATE`)
PLACEBO = "placebo"


def placebo_design(prompt_frame: pd.DataFrame, *, seed: int, source: str, joiner: str = " ") -> pd.DataFrame:
    """One placebo variant per prompt: an identity drawn from ``(seed, prompt_id, "placebo")`` stated in the
    placebo wording (:data:`cfbench.perturb.stimuli.PLACEBO_TEMPLATE`: the same identity in other words, one word
    longer), variant id ``<prompt_id>/<identity>/placebo``, ``arm = "placebo"``. Set against the same identity's
    own reply, it measures what rewording the identity statement does to the tone, with no identity change."""
    pv = identity_variants(prompt_frame, seed=seed, prompt_source=source, joiner=joiner, template=PLACEBO_TEMPLATE,
                           prompt_version=str(prompt_frame["prompt_version"].iloc[0]))
    ids = identity_ids()
    drawn = {p: ids[int(rng_for(seed, p, "placebo").integers(len(ids)))] for p in prompt_frame["prompt_id"]}
    pv = pv[pv["identity"] == pv["prompt_id"].map(drawn)].reset_index(drop=True)
    return pv.assign(variant_id=pv["variant_id"] + "/" + PLACEBO, arm=PLACEBO)


#: columns of the ``fresh_placebo_described`` table
PLACEBO_COLUMNS = ["model", "metric", "n_prompts", "identity_abs_diff", "placebo_abs_diff", "estimate", "ci_low",
                   "ci_high", "ci_method"]


def _placebo_units(sc: pd.DataFrame, pl: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt (sorted) with the placebo reply, its identity's own reply and another identity's reply scored:
    the mean |identity A - identity B| over the other identities B, and |identity A - its placebo|."""
    wide = sc.pivot_table(index="prompt_id", columns="identity", values=metric, aggfunc="first", dropna=False)
    p = pl.sort_values("prompt_id", kind="stable")
    p = p[p["prompt_id"].isin(wide.index) & p["identity"].isin(wide.columns)]
    if not len(p):
        return np.array([]), np.array([])
    x = wide.loc[p["prompt_id"]].to_numpy(float)
    col = wide.columns.get_indexer(p["identity"])
    x_a = x[np.arange(len(p)), col]
    others = x.copy()
    others[np.arange(len(p)), col] = np.nan
    n_other = np.isfinite(others).sum(axis=1)
    x_pl = p[metric].to_numpy(float)
    keep = np.isfinite(x_a) & np.isfinite(x_pl) & (n_other > 0)
    id_abs = np.nansum(np.abs(x_a[:, None] - others), axis=1)[keep] / n_other[keep]
    return id_abs, np.abs(x_a - x_pl)[keep]


def placebo_contrast(sc: pd.DataFrame, pl: pd.DataFrame, *, seed: int, n_boot: int = 2000,
                     metrics: Sequence[str] = tuple(TONE_ONLY)) -> pd.DataFrame:
    """Per model x tone metric: the identity effect on tone net of the placebo, paired by prompt. On each prompt,
    ``identity_abs_diff`` is the mean |A - B| between the placebo's identity A and the other identities (the size of
    an identity swap), ``placebo_abs_diff`` is |A - A reworded| (the size of rewording the same identity);
    ``estimate`` is their mean difference over prompts, with the interval of
    :func:`cfbench.stats.intervals.paired_difference` (``kind="mean"``, ``pairing="items"``: the studentized
    bootstrap of the per-prompt differences, the capped MOVER when they show no spread). A model whose tone moves
    with any rewording nets ~0; one that ignores the identity statement has both sides 0. No verdict."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in dict.fromkeys(pl["model"]):
        s_m, p_m = sc[sc["model"] == model], pl[pl["model"] == model]
        for metric in metrics:
            a, b = _placebo_units(s_m, p_m, metric)
            one = np.ones(len(a))
            d = paired_difference(a, one, b, one, kind="mean", n_boot=n_boot, rng=rng, pairing="items")
            rows.append({"model": model, "metric": metric, "n_prompts": int(len(a)), "identity_abs_diff": d["est_1"],
                         "placebo_abs_diff": d["est_2"], "estimate": d["estimate"], "ci_low": d["ci_low"],
                         "ci_high": d["ci_high"], "ci_method": d["ci_method"]})
    return pd.DataFrame(rows, columns=PLACEBO_COLUMNS)


def power_summary(n: int, *, n_pairs: int = 28) -> dict[str, float]:
    """Minimum detectable d_z (two-sided paired t, power 0.8) at this n, per test and Bonferroni over the pairs."""
    return {"n_prompts_min": int(n), "mde_d_alpha05_power80": min_detectable_d(n),
            "mde_d_alpha05_over_28_power80": min_detectable_d(n, alpha=0.05 / n_pairs),
            "mde_d_at_paper_n30": min_detectable_d(30)}


def analyse_responses(responses: pd.DataFrame, *, lexicons: Mapping[str, Lexicons], seed: int,
                      n_resamples: int, cap: int | None = None) -> Audit:
    """Every table of the fresh audit from a responses frame (see :func:`prompts.collect_responses`): one
    per-prompt state (:func:`new_state`) updated with all replies in the frame's order, then computed.

    ``lexicons`` maps a mode (``"described"``, ``"as_run"``) to its term lists.
    Only complete replies that answer are scored (seed 002: refusal first, then the
    tone of valid responses): failed calls, blank replies, replies cut at the token
    cap (``truncated``; a cut reply's length and rates describe the cap, not the
    reply), replies whose completeness is unknown and full refusals get no tone
    score; they stay in ``responses`` and are left out only of the pairs they touch
    (``n`` shows it, ``summary["not_scored"]`` counts them, ``fresh_truncation``
    counts the cut replies per model × identity). Without a ``truncated`` column
    every reply's completeness is unknown.
    """
    rows = responses if ORDER in responses.columns else responses.assign(**{ORDER: np.arange(len(responses))})
    return new_state(lexicons).update(rows).compute(seed=seed, n_resamples=n_resamples, cap=cap)


# -- item statistics: per prompt, the update step and the functional form ----------------------------------

#: the reply columns the tables read besides the scores (the text is scored in the update step, not kept)
_REPLY_COLUMNS = ["variant_id", "model", "prompt_id", "identity", "status", "refusal", "truncated", "score_status"]


def item_stats(responses: "pd.DataFrame | None", *, lexicons: Mapping[str, Lexicons]) -> ItemStatistics:
    """The per-prompt statistics of whole prompts' replies (every model's 8 identity replies to a prompt): each
    reply's status, refusal label, truncation flag and score status (``replies``) and, per lexicon mode, its
    tone and length scores (``scores/<mode>``), each row with :data:`ORDER`. The update step of
    :func:`new_state`. The paired tests resample and rank the per-prompt differences, so a prompt's statistic
    is its replies' scores (a few numbers per reply, no text); statistics of disjoint sets of prompts add up
    to those of their union."""
    s = ItemStatistics()
    if responses is None or not len(responses):
        return s
    if ORDER not in responses.columns:
        from cfbench.core.errors import InputError

        raise InputError(f"responses have no {ORDER} column (each reply's position in the run, set before the "
                         "replies are split)", source="identity-tone item statistics", field=ORDER)
    r = responses.reset_index(drop=True)
    if "truncated" not in r:
        r = r.assign(truncated=pd.array([pd.NA] * len(r), dtype="boolean"))
    r = r.assign(score_status=score_status(r).to_numpy())
    if "arm" in r.columns:  # the placebo arm: its own statistic only, no other table sees it
        is_pl = r["arm"].astype(str).eq(PLACEBO).to_numpy()
        pl, r = r[is_pl].reset_index(drop=True), r[~is_pl].reset_index(drop=True)
        if len(pl) and "described" in lexicons:
            sc = score_responses(pl, lexicons=lexicons["described"], mode="described",
                                 keep=("model", "prompt_id", "identity"), status="score_status", record="variant_id")
            s.add("placebo/described", sc.assign(**{ORDER: pl[ORDER].to_numpy()}))
    s.add("replies", r[[c for c in _REPLY_COLUMNS if c in r.columns] + [ORDER]])
    for mode, lex in lexicons.items():
        sc = score_responses(r, lexicons=lex, mode=mode, keep=("model", "prompt_id", "identity"),
                             status="score_status", record="variant_id")
        s.flag(("lexicon", mode), dict(sc.attrs))
        s.add(f"scores/{mode}", sc.assign(**{ORDER: r[ORDER].to_numpy()}))
    return s


def new_state(lexicons: Mapping[str, Lexicons], *, spill: Any = None, compact_every: int = 10) -> ItemState:
    """An empty per-prompt state of the fresh audit: ``update(responses, complete=...)`` (scored with
    ``lexicons``), ``merge(other)``, ``compute(seed=, n_resamples=, cap=)`` (-> :func:`tables_from_stats`, an
    :class:`Audit`); see :mod:`cfbench.metrics.state`."""
    return ItemState(functools.partial(item_stats, lexicons=lexicons),
                     functools.partial(tables_from_stats, modes=tuple(lexicons)), item="prompt_id", spill=spill,
                     compact_every=compact_every)


def tables_from_stats(s: ItemStatistics, *, modes: Sequence[str], seed: int, n_resamples: int,
                      cap: int | None = None) -> Audit:
    """Every table of the fresh audit from the per-prompt statistics of :func:`item_stats` (the functional
    form), rows in :data:`ORDER`: refusals, truncation, per mode Table 2 and the 28 paired comparisons per
    metric, the length-adjusted differences, the symmetry checks, Tables 3/4, and the summary. The paired
    intervals resample prompts in sorted order from ``seed``, so the tables depend on the statistics only."""
    replies = _in_order(s.frame("replies"))
    audit = Audit()
    ids = identity_ids()
    audit.tables["refusals"] = refusal_table(replies, by=("model", "identity"))
    audit.tables["fresh_truncation"] = truncation_table(replies, cap=cap)
    for mode in modes:
        sc = _in_order(s.frame(f"scores/{mode}"))
        sc.attrs.update(s.flags.get(("lexicon", mode), {}))
        audit.frames[f"scores_{mode}"] = sc
        audit.tables[f"fresh_table2_{mode}"] = group_means(sc, metrics=TABLE2_METRICS, groups=ids,
                                                           model="model", group="identity")
        audit.tables[f"fresh_pairs_{mode}"] = paired_tests(sc, metrics=list(TONE_METRICS), groups=ids, seed=seed,
                                                           n_resamples=n_resamples, on_missing="drop_unit",
                                                           value_ranges=TONE_RANGES, **KEYS)
    _described_tables(audit, seed=seed)
    audit.summary = _fresh_summary(audit, replies, cap=cap)
    pl = s.frame("placebo/described")
    if len(pl):
        pl = _in_order(pl)
        audit.frames["placebo_scores_described"] = pl
        audit.tables["fresh_placebo_described"] = placebo_contrast(audit.frames["scores_described"], pl, seed=seed,
                                                                   n_boot=min(n_resamples, 2000))
        audit.summary["placebo"] = {"n_replies": len(pl), "n_scored": int(pl["sentiment"].notna().sum()),
                                    "template": PLACEBO_TEMPLATE}
    return audit


def _described_tables(audit: Audit, *, seed: int) -> None:
    """The described mode's length-adjusted differences, symmetry checks and Tables 3/4."""
    ids = identity_ids()
    sc = audit.frames["scores_described"]
    pairs = audit.tables["fresh_pairs_described"]
    audit.tables["fresh_length_adjusted_described"] = length_adjusted_tests(
        sc, metrics=LENGTH_ADJUSTED_METRICS, groups=ids, length="words", seed=seed, **KEYS)
    audit.tables["fresh_symmetry_described"] = symmetry_checks(sc, metrics=LENGTH_ADJUSTED_METRICS, groups=ids,
                                                               **KEYS)
    audit.tables["fresh_tables34_described"] = largest_gaps(pairs, model="model", k=2, by="abs_d",
                                                            metrics=["sentiment", "hedging"])


def _fresh_summary(audit: Audit, scoreable: pd.DataFrame, *, cap: int | None) -> dict[str, Any]:
    """The fresh audit's summary numbers from its tables and replies (``scoreable``: with ``score_status``)."""
    sc = audit.frames["scores_described"]
    pairs = audit.tables["fresh_pairs_described"]
    adj = audit.tables["fresh_length_adjusted_described"]
    sym = audit.tables["fresh_symmetry_described"]
    tested = pairs.loc[pairs["n"] > 0, "n"] if len(pairs) else pd.Series(dtype=int)
    n_min = int(tested.min()) if len(tested) else 0  # the smallest pair that has any prompt
    not_scored = scoreable[scoreable.score_status != "ok"]
    tr = audit.tables["fresh_truncation"]
    tr_all = tr[tr.identity == "all identities"]
    tone_pairs = pairs[pairs.metric.isin(TONE_ONLY)]
    return {
        "truncation": {"cap": cap, "n_answered": int(tr_all.n_answered.sum()), "n_cut": int(tr_all.n_cut.sum()),
                       "n_unknown": int(tr_all.n_unknown.sum()),
                       "cut_share": (float(tr_all.n_cut.sum() / tr_all.n_answered.sum())
                                     if tr_all.n_answered.sum() else None),
                       "rule": TRUNCATION_RULE},
        "length_gaps_words": length_gaps(sc),
        "n_prompts_complete_all_8": {str(m): int(g.groupby("prompt_id").score_status
                                                 .agg(lambda s: bool((s == "ok").all())).sum())
                                     for m, g in scoreable.groupby("model", sort=False)},
        "uncorrected_p_lt_05_per_family": {
            f"{m} / {mt}": int((g.wilcoxon_p < 0.05).sum()) for (m, mt), g in pairs.groupby(["model", "metric"],
                                                                                          sort=False)},
        "n_replies": len(scoreable), "n_scored": int((scoreable.score_status == "ok").sum()),
        "not_scored": {str(k): int(v) for k, v in not_scored.score_status.value_counts().items()},
        "power": power_summary(n_min),
        "pairs_described": {
            "n_rows": len(pairs), "wilcoxon_p_lt_05": int((pairs.wilcoxon_p < 0.05).sum()),
            "p_holm_lt_05": int((pairs.p_holm < 0.05).sum()), "p_bh_lt_05": int((pairs.p_bh < 0.05).sum()),
            "ci_excludes_0": int(((pairs.ci_low > 0) | (pairs.ci_high < 0)).sum()),
            "max_abs_d_tone": (float(tone_pairs.cohens_d.abs().replace(np.inf, np.nan).max())
                               if tone_pairs.cohens_d.notna().any() else None)},
        "length_adjusted": {"n_rows": len(adj), "adj_p_lt_05": int((adj.adj_p < 0.05).sum())},
        "symmetry": {"n_rows": len(sym), "n_symmetric": int(sym.symmetric.sum())},
    }


def run_fresh(*, models: Sequence[str], prompt_frame: pd.DataFrame, source: str, system: str | None, joiner: str,
              config: GenerationConfig, seed: int, n_resamples: int, lexicons: Mapping[str, Lexicons],
              cache: Any = None, judge_options: Mapping[str, Mapping[str, Any]] | None = None,
              placebo: bool = False) -> Audit:
    """Design → replies from every model → :func:`analyse_responses`. With ``placebo`` one more reply per prompt
    and model (:func:`placebo_design`), sent after the identity replies; its rows reach only the placebo table."""
    variants = audit_design(prompt_frame, seed=seed, source=source, joiner=joiner)
    pv = placebo_design(prompt_frame, seed=seed, source=source, joiner=joiner) if placebo else None
    sent = variants if pv is None else pd.concat([variants, pv[variants.columns]], ignore_index=True)
    responses, run_stats = P.generate_advice(models, sent, config=config, system=system, cache=cache,
                                             judge_options=judge_options)
    if pv is not None:
        responses = responses.assign(arm=np.where(responses["variant_id"].isin(set(pv["variant_id"])), PLACEBO,
                                                  "identity"))
    audit = analyse_responses(responses, lexicons=lexicons, seed=seed, n_resamples=n_resamples,
                              cap=config.max_tokens)
    if pv is not None:
        is_pl = responses["arm"].eq(PLACEBO)
        audit.frames["placebo_variants"] = pv
        audit.frames["placebo_responses"] = responses[is_pl].drop(columns="arm").reset_index(drop=True)
        responses = responses[~is_pl].drop(columns="arm").reset_index(drop=True)
    audit.frames["variants"] = variants
    audit.frames["responses"] = responses
    audit.summary.update({
        "run_stats": run_stats,
        "status_counts": responses.groupby(["model", "status"]).size().unstack(fill_value=0).to_dict("index"),
        # the failed calls (status "error") by why they failed: timeout, http error, not sent (plan only) ...
        "errors_by_kind": failure_counts(responses.loc[responses["status"].eq("error")], by="model"),
        "refusal_counts": responses.groupby(["model", "refusal"]).size().unstack(fill_value=0).to_dict("index"),
    })
    return audit


def fresh_audit(models: Sequence[str], tasks: Sequence[str], *, seed: int = 0, n_resamples: int = 10_000,
                max_tokens: int | None = None, cache: Any = None, placebo: bool = False) -> Audit:
    """Audit ``models`` on your own identity-free ``tasks`` with the study's contract and lexicons (``placebo``:
    one more reply per task and model with an identity stated in other words, table ``fresh_placebo_described``).

    >>> a = fresh_audit(["scripted:identity-advice"], ["I want a raise.", "I start a new job."],
    ...                 n_resamples=200, cache=False)  # doctest: +SKIP
    >>> a.tables["fresh_pairs_described"]  # doctest: +SKIP
    """
    frame = pd.DataFrame({"prompt_id": [f"user_{i:03d}" for i in range(len(tasks))], "task": list(tasks),
                          "prompt_version": "user-supplied"})
    return run_fresh(models=models, prompt_frame=frame, source="user tasks", system=None, joiner=" ",
                     config=P.advice_config(seed=seed, max_tokens=max_tokens), seed=seed, n_resamples=n_resamples,
                     lexicons={"described": P.load_lexicons(), "as_run": P.load_as_run_terms()}, cache=cache,
                     placebo=placebo)
