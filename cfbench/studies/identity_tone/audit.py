"""Fresh identity-tone audit: the design, the replies, and every analysis table of one run.

Design (seed 002, §3.2–3.4): each prompt × 8 identity descriptors, the seed's
decoding, one reply per variant and model. Analysis per model: refusal labels,
Table-2 means, all 28 paired comparisons per metric (bootstrap interval, paired
t, Wilcoxon, d_z, Holm/BH), the same differences adjusted for reply length
(word count), a symmetry check of the differences, and the power at this n.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.judges.base import GenerationConfig
from cfbench.metrics.lexicon import TONE_METRICS, Lexicons, score_responses
from cfbench.metrics.refusal import refusal_table
from cfbench.perturb.stimuli import identity_ids, identity_variants
from cfbench.stats.paired import (group_means, largest_gaps, length_adjusted_tests, min_detectable_d,
                                  paired_tests, symmetry_checks)

from . import prompts as P
from .reproduction import KEYS, TABLE2_METRICS

__all__ = ["Audit", "audit_design", "analyse_responses", "run_fresh", "fresh_audit", "power_summary", "LENGTH_ADJUSTED_METRICS"]

#: Metrics whose differences are also reported at equal reply length (length itself excluded).
LENGTH_ADJUSTED_METRICS = ["sentiment", "politeness", "hedging", "neg_tone"]


@dataclass
class Audit:
    """One fresh audit: its design, replies and tables."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def audit_design(prompt_frame: pd.DataFrame, *, seed: int, source: str, joiner: str = " ") -> pd.DataFrame:
    """Prompts × the 8 identities (see :func:`cfbench.perturb.stimuli.identity_variants`)."""
    return identity_variants(prompt_frame, seed=seed, prompt_source=source, joiner=joiner,
                             prompt_version=str(prompt_frame["prompt_version"].iloc[0]))


def power_summary(n: int, *, n_pairs: int = 28) -> dict[str, float]:
    """Minimum detectable d_z (two-sided paired t, power 0.8) at this n, per test and Bonferroni over the pairs."""
    return {"n_prompts_min": int(n), "mde_d_alpha05_power80": min_detectable_d(n),
            "mde_d_alpha05_over_28_power80": min_detectable_d(n, alpha=0.05 / n_pairs),
            "mde_d_at_paper_n30": min_detectable_d(30)}


def analyse_responses(responses: pd.DataFrame, *, lexicons: Mapping[str, Lexicons], seed: int,
                      n_resamples: int) -> Audit:
    """Every table of the fresh audit from a responses frame (see :func:`prompts.collect_responses`).

    ``lexicons`` maps a mode (``"described"``, ``"as_run"``) to its term lists.
    Only replies that answer are scored (seed 002: refusal first, then the tone
    of valid responses): failed calls, blank replies and full refusals get no
    tone score; they stay in ``responses`` and are left out only of the pairs
    they touch (``n`` shows it, ``summary["not_scored"]`` counts them).
    """
    audit = Audit()
    ids = identity_ids()
    refusals = refusal_table(responses, by=("model", "identity"))
    audit.tables["refusals"] = refusals
    scoreable = responses.assign(
        score_status=np.where(responses["refusal"].eq("full"), "full refusal", responses["status"]))
    for mode, lex in lexicons.items():
        sc = score_responses(scoreable, lexicons=lex, mode=mode, keep=("model", "prompt_id", "identity"),
                             status="score_status", record="variant_id")
        audit.frames[f"scores_{mode}"] = sc
        audit.tables[f"fresh_table2_{mode}"] = group_means(sc, metrics=TABLE2_METRICS, groups=ids,
                                                           model="model", group="identity")
        audit.tables[f"fresh_pairs_{mode}"] = paired_tests(sc, metrics=list(TONE_METRICS), groups=ids, seed=seed,
                                                           n_resamples=n_resamples, on_missing="drop_unit", **KEYS)
    sc = audit.frames["scores_described"]
    pairs = audit.tables["fresh_pairs_described"]
    adj = length_adjusted_tests(sc, metrics=LENGTH_ADJUSTED_METRICS, groups=ids, length="words", **KEYS)
    sym = symmetry_checks(sc, metrics=LENGTH_ADJUSTED_METRICS, groups=ids, **KEYS)
    audit.tables["fresh_length_adjusted_described"] = adj
    audit.tables["fresh_symmetry_described"] = sym
    audit.tables["fresh_tables34_described"] = largest_gaps(pairs, model="model", k=2, by="abs_d",
                                                            metrics=["sentiment", "hedging"])
    n_min = int(pairs["n"].min()) if len(pairs) else 0
    not_scored = scoreable[scoreable.score_status != "ok"]
    audit.summary = {
        "n_replies": len(responses), "n_scored": int((scoreable.score_status == "ok").sum()),
        "not_scored": {str(k): int(v) for k, v in not_scored.score_status.value_counts().items()},
        "power": power_summary(n_min),
        "pairs_described": {
            "n_rows": len(pairs), "wilcoxon_p_lt_05": int((pairs.wilcoxon_p < 0.05).sum()),
            "p_holm_lt_05": int((pairs.p_holm < 0.05).sum()), "p_bh_lt_05": int((pairs.p_bh < 0.05).sum()),
            "ci_excludes_0": int(((pairs.ci_low > 0) | (pairs.ci_high < 0)).sum()),
            "max_abs_d": float(pairs.cohens_d.abs().replace(np.inf, np.nan).max()) if len(pairs) else None},
        "length_adjusted": {"n_rows": len(adj), "adj_p_lt_05": int((adj.adj_p < 0.05).sum()),
                            "mean_abs_len_diff_words": float(adj.mean_len_diff.abs().mean()) if len(adj) else None},
        "symmetry": {"n_rows": len(sym), "n_symmetric": int(sym.symmetric.sum())},
    }
    return audit


def run_fresh(*, models: Sequence[str], prompt_frame: pd.DataFrame, source: str, system: str | None, joiner: str,
              config: GenerationConfig, seed: int, n_resamples: int, lexicons: Mapping[str, Lexicons],
              cache: Any = None, judge_options: Mapping[str, Mapping[str, Any]] | None = None) -> Audit:
    """Design → replies from every model → :func:`analyse_responses`."""
    variants = audit_design(prompt_frame, seed=seed, source=source, joiner=joiner)
    responses, run_stats = P.generate_advice(models, variants, config=config, system=system, cache=cache,
                                             judge_options=judge_options)
    audit = analyse_responses(responses, lexicons=lexicons, seed=seed, n_resamples=n_resamples)
    audit.frames["variants"] = variants
    audit.frames["responses"] = responses
    cap = config.max_tokens
    audit.summary.update({
        "run_stats": run_stats,
        "status_counts": responses.groupby(["model", "status"]).size().unstack(fill_value=0).to_dict("index"),
        "refusal_counts": responses.groupby(["model", "refusal"]).size().unstack(fill_value=0).to_dict("index"),
        "hit_completion_cap": int((pd.to_numeric(responses.completion_tokens, errors="coerce") >= cap).sum()),
    })
    return audit


def fresh_audit(models: Sequence[str], tasks: Sequence[str], *, seed: int = 0, n_resamples: int = 10_000,
                max_tokens: int | None = None, cache: Any = None) -> Audit:
    """Audit ``models`` on your own identity-free ``tasks`` with the study's contract and lexicons.

    >>> a = fresh_audit(["scripted:identity-advice"], ["I want a raise.", "I start a new job."],
    ...                 n_resamples=200, cache=False)  # doctest: +SKIP
    >>> a.tables["fresh_pairs_described"]  # doctest: +SKIP
    """
    frame = pd.DataFrame({"prompt_id": [f"user_{i:03d}" for i in range(len(tasks))], "task": list(tasks),
                          "prompt_version": "user-supplied"})
    return run_fresh(models=models, prompt_frame=frame, source="user tasks", system=None, joiner=" ",
                     config=P.advice_config(seed=seed, max_tokens=max_tokens), seed=seed, n_resamples=n_resamples,
                     lexicons={"described": P.load_lexicons(), "as_run": P.load_as_run_terms()}, cache=cache)
