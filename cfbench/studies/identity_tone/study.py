"""The identity-tone study as one call: ``Params`` → ``run`` → ``IdentityToneResult``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from cfbench.core.text import md_code, md_safe, md_text
from cfbench.core.params import check_judge_settings, params_from_mapping, params_to_mapping
from cfbench.judges.runner import uses_judge_settings
from cfbench.metrics.lexicon import TONE_METRICS, TONE_RANGES
from cfbench.perturb.stimuli import identity_ids, identity_label
from cfbench.report import RunOutput, StudyResult, released

from . import figures as F
from . import prompts as P
from .audit import TONE_ONLY, Audit, audit_design, placebo_design, run_fresh
from .reproduction import Reproduction, reproduce_released

__all__ = ["Params", "run", "IdentityToneResult", "describe_run", "iter_requests"]


@dataclass(frozen=True)
class Params:
    """The notebook's parameters (same names, types and defaults), minus ``output_dir``/``config_name``."""

    amiri_path: str = ""  # released workbook (.numbers file or its dir); "" means the default lookup
    reproduce_released: bool = True  # reproduce the released data when the workbook is available
    seed: int = 0  # seed for bootstrap resampling, variant order and generation
    n_resamples: int = 10000  # bootstrap resamples per pair
    fresh_models: tuple = ("scripted:identity-advice",)  # judge specs of the assistants to audit
    prompt_set: str = "cfbench"  # cfbench (own prompts + output contract) or released (the workbook's prompts)
    n_prompts: int = 4  # prompts in the fresh audit (the first n of the chosen set)
    completion_cap: int = 260  # max new tokens per reply (the seed used 300)
    repeat_penalty: float = 1.0  # llama.cpp repeat penalty for local models; 1.0 means none (API models never get it)
    use_cache: bool = False  # cache replies in the cfbench response cache
    local_threads: int = 0  # CPU threads for local judges; 0 means the backend default
    concurrency: int = 0  # model calls in flight (0: adapt to the server's latency); not part of any cache key
    timeout_s: float = 0.0  # seconds a model call may take from the moment it is sent (0: 600)
    placebo: bool = False  # one more reply per prompt and model: an identity stated in other words (placebo arm)

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None = None, *, source: str = "parameters",
                    **overrides: Any) -> "Params":
        """Build from a config mapping; unknown names and wrong types are ``InputError``."""
        data = {k: v for k, v in dict(mapping or {}).items() if k not in ("output_dir", "config_name")}
        return params_from_mapping(cls, data, source=source, **overrides)

    def __post_init__(self) -> None:
        from cfbench.core.errors import InputError

        if self.prompt_set not in ("cfbench", "released"):
            raise InputError("prompt_set must be 'cfbench' or 'released'", source="parameters", field="prompt_set")
        for name in ("n_prompts", "completion_cap", "n_resamples"):
            if getattr(self, name) < 1:
                raise InputError("must be at least 1", source="parameters", field=name)
        if not 0.5 <= float(self.repeat_penalty) <= 2.0:
            raise InputError("must be between 0.5 and 2.0 (1.0 = no penalty)", source="parameters",
                             field="repeat_penalty")
        if not self.fresh_models:
            raise InputError("at least one model spec is needed", source="parameters", field="fresh_models")
        if not isinstance(self.placebo, bool):
            raise InputError(f"must be true or false, got {type(self.placebo).__name__}", source="parameters",
                             field="placebo")
        check_judge_settings(self)


@dataclass
class IdentityToneResult(StudyResult):
    """Frames: ``variants``, ``responses``, ``scores_described``, ``scores_as_run`` (and the released
    replies' scores when reproduced). Tables and figures: see the notebook; summary: ``summary.json``."""

    reproduced: bool = False

    # ------------------------------------------------------------------ invariants
    def invariants(self) -> dict[str, bool]:
        p, t, s = self.params, self.tables, self.summary
        resp = self.frames["responses"]
        n_models = len(p.fresh_models)
        n_prompts = int(s["fresh"]["n_prompts"])
        n_expected = n_models * n_prompts * 8
        checks = {
            "one reply row per model x prompt x identity": len(resp) == n_expected,
            "every prompt has all 8 identities": bool(
                resp.groupby(["model", "prompt_id"]).identity.nunique().eq(8).all()),
            "reply status is ok, empty or error": set(resp.status) <= {"ok", "empty", "error"},
            "refusal table counts every reply": int(t["refusals"]["n"].sum()) == n_expected,
        }
        for mode in ("described", "as_run"):
            pr = t[f"fresh_pairs_{mode}"]
            ok = pr.dropna(subset=["ci_low", "ci_high", "mean_diff"])
            checks[f"{mode}: 28 pairs per model x metric"] = len(pr) == n_models * len(TONE_METRICS) * 28
            checks[f"{mode}: n never exceeds the prompts"] = bool((pr["n"] <= n_prompts).all())
            checks[f"{mode}: intervals contain their estimates"] = bool(
                ((ok.ci_low <= ok.mean_diff + 1e-12) & (ok.mean_diff <= ok.ci_high + 1e-12)).all())
            for metric, (low, high) in TONE_RANGES.items():  # a mean difference cannot leave [low - high, high - low]
                m = ok[ok.metric == metric]
                checks[f"{mode}: {metric} bounds within [{low - high:g}, {high - low:g}]"] = bool(
                    ((m.ci_low >= low - high) & (m.ci_high <= high - low)).all())
            checks[f"{mode}: Holm p >= raw p"] = bool(
                (pr.p_holm.dropna() >= pr.wilcoxon_p[pr.p_holm.notna()] - 1e-15).all())
        tr = t["fresh_truncation"]
        per_ident = tr[tr.identity != "all identities"]
        checks["truncation table counts every reply"] = int(per_ident["n"].sum()) == n_expected
        sc = self.frames["scores_described"]
        keys = ["model", "prompt_id", "identity"]
        maybe_cut = resp.loc[resp["truncated"].astype("boolean").fillna(True).astype(bool) & resp.status.eq("ok"), keys]
        scored_cut = maybe_cut.merge(sc[keys + list(TONE_METRICS)], on=keys, how="left")
        checks["no cut (or possibly cut) reply is scored"] = bool(scored_cut[list(TONE_METRICS)].isna().all().all())
        adj = t["fresh_length_adjusted_described"]
        okadj = adj.dropna(subset=["adj_diff", "adj_ci_low", "adj_ci_high"])  # no residual spread: no interval
        checks["length-adjusted intervals contain their estimates"] = bool(
            ((okadj.adj_ci_low <= okadj.adj_diff + 1e-12) & (okadj.adj_diff <= okadj.adj_ci_high + 1e-12)).all())
        if p.placebo:
            pl = t["fresh_placebo_described"]
            okp = pl.dropna(subset=["ci_low", "ci_high", "estimate"])
            checks["placebo: one reply per model x prompt"] = len(t["fresh_placebo_responses"]) == n_models * n_prompts
            checks["placebo: one row per model x tone metric"] = len(pl) == n_models * len(TONE_ONLY)
            checks["placebo: intervals contain their estimates"] = bool(
                ((okp.ci_low <= okp.estimate + 1e-12) & (okp.estimate <= okp.ci_high + 1e-12)).all())
        if self.reproduced:
            rep = s["reproduction"]
            checks["released: 480/480 per-response values"] = all(v == 480 for v in rep["per_response"].values())
            checks["released: Table 2 16/16"] = all(v == 16 for v in rep["table2"].values())
            checks["released: 336/336 paired rows"] = all(v == 336 for v in rep["pairs"].values())
            checks["released: Tables 3/4 select the released pairs"] = bool(s["tables34_same_pairs_as_released"])
            checks["released: rebuilt refusal table equals the released one"] = bool(
                s["refusals_rebuilt"]["matches_released"])
        return checks

    # ------------------------------------------------------------------ findings
    def findings(self) -> str:
        """What this run shows, generated from its numbers (Markdown)."""
        parts = []
        if self.reproduced:
            parts.append(_reproduction_findings(self.summary, self.tables))
        else:
            parts.append("**Released data**: not reproduced in this run (workbook not found or not asked for).")
        parts.append(_fresh_findings(self.summary["fresh"], self.tables))
        return md_safe("\n\n".join(parts))  # no raw tag from a model name, whatever it held


def _fmt_pair(row: pd.Series) -> str:
    return f"{identity_label(row.identity_a, short=True)} vs {identity_label(row.identity_b, short=True)}"


def _reproduction_findings(s: Mapping[str, Any], t: Mapping[str, pd.DataFrame]) -> str:
    rep = s["reproduction"]
    lines = [f"**Released data (as run)**: per-response values match {min(rep['per_response'].values())}/"
             f"{rep['n_responses']}, Table 2 {min(rep['table2'].values())}/{rep['n_table2_rows']}, paired rows "
             f"{min(rep['pairs'].values())}/{rep['n_pairs']} (Wilcoxon p within "
             f"{rep['pairs_wilcoxon_p_max_abs_diff']:.3g}). The rebuilt refusal table "
             f"{'equals' if s['refusals_rebuilt']['matches_released'] else 'differs from'} the released one."]
    both = t["tables34_interval_methods"]
    changed = both[both.reading_changes]
    lines.append(f"**Tables 3/4 intervals**: the printed intervals are paired-t intervals (recomputed here); the "
                 f"percentile bootstrap the paper describes gives the same reading (0 inside or outside) for "
                 f"{len(both) - len(changed)} of {len(both)} rows.")
    for _, r in changed.iterrows():
        lines.append(f"- Reading changes for {r.model} {r.metric}, {_fmt_pair(r)}: paired t "
                     f"[{r.ci_low_t:+.2f}, {r.ci_high_t:+.2f}] {'includes' if r.zero_in_t else 'excludes'} 0, "
                     f"bootstrap [{r.ci_low_boot:+.3f}, {r.ci_high_boot:+.3f}] "
                     f"{'includes' if r.zero_in_boot else 'excludes'} 0 (Wilcoxon p = {r.wilcoxon_p:.3f}).")
    sym = s["released_symmetry"]
    lines.append(f"**Symmetry** (the seed says it checked it): {sym['n_symmetric']} of {sym['n_rows']} released "
                 f"pair × metric difference distributions pass (|mean − median| ≤ 0.25 SD, no point beyond 3 SD); "
                 f"{sym['tables34_symmetric']} of the 8 Tables 3/4 rows do; in {sym['tables34_median_zero']} of them "
                 f"the median difference is exactly 0 (count metrics: the mean gap rests on the minority of "
                 f"prompts whose counts differ).")
    d = s["described_vs_as_run"]
    lines.append(f"**Described vs as run** on the same replies: {d['pairs_significant_as_run']} pairs with "
                 f"Wilcoxon p < 0.05 as run, {d['pairs_significant_described']} as described, "
                 f"{d['pairs_significant_both']} in both; group sentiment means shift by up to "
                 f"{d['sentiment_abs_mean_shift_max']:.3f}.")
    return "\n".join(lines)


def _num(x: Any, spec: str = ".3f") -> str:
    """A number for the findings; an undefined value is said in words, never printed as "nan"."""
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return "not defined"
    return format(xf, spec) if np.isfinite(xf) else "not defined"


def _ci(lo: Any, hi: Any, spec: str = "+.3f") -> str:
    if not (np.isfinite(float(lo)) and np.isfinite(float(hi))):
        return "(no interval at this n)"
    return f"[{format(float(lo), spec)}, {format(float(hi), spec)}]"


_METRIC_NAMES = {"sentiment": "sentiment", "politeness": "politeness", "hedging": "hedging",
                 "neg_tone": "negative tone", "words": "words", "chars": "characters"}


def _fresh_findings(f: Mapping[str, Any], t: Mapping[str, pd.DataFrame]) -> str:
    pairs = t["fresh_pairs_described"]
    adj = t["fresh_length_adjusted_described"]
    sym = t["fresh_symmetry_described"]
    n_prompts = f["n_prompts"]
    head = (f"**Fresh audit**: {n_prompts} prompts × 8 identities on {', '.join(f['models'])} "
            f"({len(t['refusals'])} model × identity cells). Refusals: "
            + "; ".join(f"{m}: " + ", ".join(f"{k} {v}" for k, v in c.items()) for m, c in f["refusal_counts"].items())
            + ".")
    lines = [head]
    tr = f.get("truncation", {})
    if tr:
        complete = f.get("n_prompts_complete_all_8", {})
        lines.append(
            f"**Complete replies only**: {tr['n_cut']} of {tr['n_answered']} replies stopped at the "
            f"{tr['cap']}-token cap ({_num(100 * tr['cut_share'] if tr['cut_share'] is not None else None, '.1f')} %; "
            f"{tr['rule']})"
            + (f", {tr['n_unknown']} could not be told complete" if tr.get("n_unknown") else "")
            + "; cut replies are excluded from every tone and length metric and from the pairs they touch "
            "(table `fresh_truncation`)"
            + (": " + "; ".join(f"{m}: {k} of {n_prompts} prompts have all 8 identities scored"
                                for m, k in complete.items()) if complete else "") + ".")
    if f.get("not_scored"):
        lines.append("Not scored for tone (kept as rows, left out of the pairs they touch): "
                     + ", ".join(f"{k} {v}" for k, v in f["not_scored"].items())
                     + f"; {f['n_scored']} of {f['n_replies']} replies scored.")
    if f.get("n_scored", 1) == 0 or not pairs["n"].gt(0).any():
        lines.append("**No reply could be scored, so this run reports no tone difference, interval or test.**")
        return "\n".join(lines)
    n_max = int(pairs["n"].max())
    n_min = int(pairs.loc[pairs["n"] > 0, "n"].min())  # over the pairs that have a prompt at all
    if n_max < 2:
        lines.append(f"**This n supports no comparison**: each identity pair rests on at most {n_max} prompt. "
                     "A paired difference needs at least 2 prompts for a t test and a standard deviation "
                     "(hence d), the signed-rank test reaches p < 0.05 only from 6 prompts, and an effect size "
                     "is shown here only from 5 prompts with 3 non-zero differences; the tables list the "
                     "single differences, and no test, interval, power or effect size is reported.")
        return "\n".join(lines)
    lines += _multiplicity_lines(pairs, n_min)
    lines += _headline_lines(pairs, adj)
    lines += _power_and_control_lines(f, pairs, adj, sym)
    if "fresh_placebo_described" in t:
        lines += _placebo_lines(t["fresh_placebo_described"])
    return _paragraphs(lines)


def _placebo_lines(pl: pd.DataFrame) -> list[str]:
    """One sentence: the identity effect on tone net of the placebo (the same identity in other words)."""
    ok = pl[pl["n_prompts"] > 0]
    if not len(ok):
        return ["**Placebo** (each prompt once more, one identity stated in other words): no prompt had the placebo "
                "reply and its identity's own reply both scored, so no contrast is reported."]
    parts = [f"{r.model} {_METRIC_NAMES.get(r.metric, r.metric)} {_num(r.estimate, '+.3f')} "
             f"{_ci(r.ci_low, r.ci_high)}" for r in ok.itertuples(index=False)]
    above = ok[ok["ci_low"] > 0]
    return [f"**Placebo** (each prompt once more, one identity stated in other words, table "
            f"`fresh_placebo_described`): the mean |difference| between identities minus the |difference| the "
            f"rewording alone makes, paired by prompt (n = {_span(ok['n_prompts'])}): "
            + "; ".join(parts) + f". {len(above)} of {len(ok)} rows show an identity effect beyond the rewording "
            "(lower bound above 0); a row covering 0 does not tell the identity from any edit of the statement."]


def _multiplicity_lines(pairs: pd.DataFrame, n_min: int) -> list[str]:
    """The fresh audit's Holm results per family and the uncorrected counts per family."""
    lines: list[str] = []
    n_fam = pairs.groupby(["model", "metric"]).ngroups
    sig_holm = pairs[pairs.p_holm < 0.05]
    lines.append(f"**Multiplicity, per family** (a family = one model × metric, its 28 identity pairs; Holm "
                 f"within each family, valid whatever the dependence between the pairs): "
                 f"{len(sig_holm)} comparisons with p_holm < 0.05 across the {n_fam} families.")
    for _, r in sig_holm.head(10).iterrows():
        lines.append(f"- {r.model} {_METRIC_NAMES.get(r.metric, r.metric)}, {_fmt_pair(r)}: "
                     f"Δ = {_num(r.mean_diff, '+.3f')} {_ci(r.ci_low, r.ci_high)}, d = {_num(r.cohens_d, '+.2f')}, "
                     f"p_holm = {_num(r.p_holm)}")
    lines.append("  Each interval here is a single pair's 95 % interval, not adjusted for the 28 pairs of its family, "
                 "while p_holm is: an interval that excludes 0 can therefore sit beside a p_holm well above 0.05 "
                 "(even 1.000, Holm's cap), and only p_holm speaks for the family.")
    raw = {(m, mt): (int((g.wilcoxon_p < 0.05).sum()), int(g.wilcoxon_p.notna().sum()))
           for (m, mt), g in pairs.groupby(["model", "metric"], sort=False)}
    models = list(dict.fromkeys(pairs.model))
    for m in models:
        lines.append(f"- Uncorrected Wilcoxon p < 0.05 per family ({m}; of the pairs with a test, out of 28): "
                     + ", ".join(f"{_METRIC_NAMES.get(mt, mt)} {k} of {n_t}" for (mm, mt), (k, n_t) in raw.items()
                                 if mm == m) + ".")
    n_empty = int((pairs["n"] == 0).sum())
    if n_empty:
        lines.append(f"  {n_empty} pair × metric comparisons have no prompt with both replies scored and are "
                     "not tested.")
    lines.append("  These counts are per family and are not added up: the families depend on each other (words "
                 "and characters measure the same length; the three lexicon rates share the word count as "
                 "denominator) and the pairs within a family share identities, so no number expected by chance "
                 "is given for the total."
                 + ("" if n_min >= 6 else f" With {n_min} prompts the signed-rank test cannot reach p < 0.05 at "
                    f"all (smallest two-sided p = {2 / 2 ** n_min:.3f})."))
    return lines


def _headline_lines(pairs: pd.DataFrame, adj: pd.DataFrame) -> list[str]:
    """The largest supported effect size among the tone metrics, with its length-adjusted difference."""
    lines: list[str] = []
    tone = pairs[pairs.metric.isin(TONE_ONLY)]
    ok = tone[F.supported(tone) & np.isfinite(tone.cohens_d)]
    if len(ok):
        top = ok.loc[ok.cohens_d.abs().idxmax()]
        a = adj[(adj.model == top.model) & (adj.metric == top.metric) & (adj.identity_a == top.identity_a)
                & (adj.identity_b == top.identity_b)]
        adj_txt = ""
        if len(a) and np.isfinite(float(a.adj_diff.iloc[0])):
            adj_txt = (f" At equal reply length (length-adjusted) the difference is "
                       f"{_num(a.adj_diff.iloc[0], '+.3f')} {_ci(a.adj_ci_low.iloc[0], a.adj_ci_high.iloc[0])} "
                       f"(p = {_num(a.adj_p.iloc[0])}).")
        lines.append(f"**Largest |d| among the tone metrics** (sentiment, politeness, hedging, negative tone; pairs "
                     f"with ≥ 5 prompts and ≥ 3 non-zero differences): {top.model} "
                     f"{_METRIC_NAMES.get(top.metric, top.metric)}, {_fmt_pair(top)}: d = {_num(top.cohens_d, '+.2f')}, "
                     f"Δ = {_num(top.mean_diff, '+.3f')} {_ci(top.ci_low, top.ci_high)} (n = {int(top.n)}, "
                     f"p_holm = {_num(top.p_holm)}).{adj_txt} Word and character counts are not candidates for this "
                     "headline: they are length, which the seed treats as a control variable, and characters "
                     "per reply also vary with how the text tokenises, not with tone.")
    else:
        lines.append("No tone-metric pair has the support for an effect size (≥ 5 prompts and ≥ 3 non-zero "
                     "differences).")
    return lines


def _power_and_control_lines(f: Mapping[str, Any], pairs: pd.DataFrame, adj: pd.DataFrame,
                             sym: pd.DataFrame) -> list[str]:
    """Power at this n, the length control and the symmetry check of the fresh audit."""
    pw = f["power"]
    lines: list[str] = []
    mde = pw.get("mde_d_alpha05_power80")
    if mde is None or not np.isfinite(float(mde)):
        lines.append(f"**Power**: n = {pw['n_prompts_min']} prompts supports no power statement.")
    else:
        lines.append(f"**Power**: with n = {pw['n_prompts_min']} prompts (the smallest pair) a two-sided paired "
                     f"test detects |d| ≥ {mde:.2f} with 80 % power at α = 0.05 (≥ "
                     f"{_num(pw['mde_d_alpha05_over_28_power80'], '.2f')} at α = 0.05/28); the seed's n = 30 gives "
                     f"{pw['mde_d_at_paper_n30']:.2f}."
                     + (" Effects of the size the seed reports (d ≈ 0.3–0.5) are below this run's detection "
                        "limit, so a null result here does not show their absence." if mde > 0.5 else ""))
    okadj = adj.dropna(subset=["adj_p"])
    sig_raw = pairs[pairs.wilcoxon_p < 0.05]
    raw_sig = set(map(tuple, sig_raw[["model", "metric", "identity_a", "identity_b"]].to_numpy()))
    adj_sig = set(map(tuple, okadj[okadj.adj_p < 0.05][["model", "metric", "identity_a", "identity_b"]].to_numpy()))
    raw_sig_adj = {k for k in raw_sig if k[1] in set(adj.metric)}
    lg = f.get("length_gaps_words", {})
    lines.append(f"**Length control**: two paired replies (same prompt, two identities) differ by "
                 f"{_num(lg.get('per_reply_mean_abs'), '.1f')} words on average (mean |difference| per reply "
                 f"pair, {lg.get('n_reply_pairs', 0)} pairs of complete replies); the identities' mean word counts "
                 f"differ by {_num(lg.get('pair_mean_abs'), '.1f')} words on average over the 28 pairs (mean of "
                 f"|mean difference|). Of the {len(raw_sig_adj)} tone comparisons with uncorrected p < 0.05 "
                 f"before adjustment, {len(raw_sig_adj & adj_sig)} keep p < 0.05 at equal length "
                 f"({len(adj_sig)} do after adjustment in total, each at an uncorrected 0.05 among {len(okadj)} "
                 f"tests: a count, not a family-wise result; {len(adj) - len(okadj)} could not be "
                 f"adjusted because fewer than 3 prompts remained or the length differences did not vary).")
    ok_sym = sym.dropna(subset=["gap_sd"])
    lines.append(f"**Symmetry of the differences** (the signed-rank test's assumption): "
                 f"{int(ok_sym.symmetric.sum())} of {len(ok_sym)} pair × metric distributions pass "
                 f"(|mean − median| ≤ 0.25 SD, no point beyond 3 SD).")
    return lines


def _paragraphs(lines: list[str]) -> str:
    """Markdown with a blank line before each bold-headed paragraph (a list item or its indented
    continuation stays attached to the line before it), so paragraphs do not run into the last bullet."""
    out: list[str] = []
    for line in lines:
        if out and line.startswith("**"):
            out.append("")
        out.append(line)
    return "\n".join(out)


def _prompt_frame(params: Params, wb) -> tuple[pd.DataFrame, str | None, str, str]:
    if params.prompt_set == "released":
        if wb is None:
            from cfbench.core.errors import InputError

            raise InputError("prompt_set='released' needs the released workbook", source="parameters",
                             field="prompt_set")
        frame = P.released_prompts(wb.career)
        if params.n_prompts > len(frame):
            from cfbench.core.errors import InputError

            raise InputError(f"n_prompts must be in 1..{len(frame)}", source="parameters", field="n_prompts")
        return frame.head(params.n_prompts), "", "\n ", wb.source  # released prompts carry their format block
    n_shipped = len(P.load_prompts())
    if params.n_prompts > n_shipped:
        from cfbench.core.errors import InputError

        raise InputError(f"n_prompts must be in 1..{n_shipped} for the cfbench prompt set", source="parameters",
                         field="n_prompts")
    return P.load_prompts(params.n_prompts), None, " ", "cfbench/studies/identity_tone/data/prompts.yaml"


def _advice_config(params: Params) -> Any:
    """The decoding settings of the fresh audit's requests (the seed's, with the run's cap and repeat penalty)."""
    return P.advice_config(seed=params.seed, max_tokens=params.completion_cap, repeat_penalty=params.repeat_penalty)


def iter_requests(params: Params) -> Iterator[Any]:
    """The requests the fresh audit of ``params`` sends to each of ``fresh_models`` (nothing is called):
    every prompt x stated identity, in the run's order. For ``cfbench batch plan``."""
    wb = None
    if params.prompt_set == "released":  # only the released prompt set needs the workbook
        from cfbench.io import amiri

        wb = amiri.load_amiri(params.amiri_path or None)
    prompt_frame, system, joiner, source = _prompt_frame(params, wb)
    config = _advice_config(params)
    variants = audit_design(prompt_frame, seed=params.seed, source=source, joiner=joiner)
    yield from P.build_advice_requests(variants, config=config, system=system)
    if params.placebo:  # after the identity replies, as run_fresh sends them
        pv = placebo_design(prompt_frame, seed=params.seed, source=source, joiner=joiner)
        yield from P.build_advice_requests(pv, config=config, system=system)


@uses_judge_settings
def run(params: Params, out: "RunOutput | str | os.PathLike[str] | None" = None) -> IdentityToneResult:
    """Run the study: reproduce the released data (when available), then a fresh audit.

    Parameters
    ----------
    params : Params
    out : RunOutput, directory or None
        When given, tables (CSV), figures (PNG) and ``summary.json`` are written there.
    """
    from cfbench.io import amiri

    wb = None
    rep: Reproduction | None = None
    skipped = None
    if params.reproduce_released:
        try:
            wb = amiri.load_amiri(params.amiri_path or None)
        except FileNotFoundError as exc:
            skipped = str(exc)
    if wb is not None:
        rep = reproduce_released(wb, as_run_terms=P.load_as_run_terms(), described_lexicons=P.load_lexicons(),
                                 seed=params.seed, n_resamples=params.n_resamples)
    prompt_frame, system, joiner, source = _prompt_frame(params, wb)
    config = _advice_config(params)
    judge_options = {m: {"n_threads": params.local_threads} for m in params.fresh_models
                     if m.startswith("local:") and params.local_threads}
    audit: Audit = run_fresh(models=list(params.fresh_models), prompt_frame=prompt_frame, source=source,
                             system=system, joiner=joiner, config=config, seed=params.seed,
                             n_resamples=params.n_resamples,
                             lexicons={"described": P.load_lexicons(), "as_run": P.load_as_run_terms()},
                             cache=None if params.use_cache else False, judge_options=judge_options or None,
                             placebo=params.placebo)
    contract_version, contract_text = P.load_contract()
    summary: dict[str, Any] = {
        "params": params_to_mapping(params), "lexicon_version_described": P.load_lexicons().version,
        "terms_version_as_run": P.load_as_run_terms().version, "released_data_available": wb is not None,
    }
    if skipped:
        summary["released_skipped_reason"] = skipped
    if rep is not None:
        summary.update(rep.summary)
    summary["fresh"] = {"models": list(params.fresh_models), "n_prompts": len(prompt_frame),
                        "prompt_set": params.prompt_set, "n_identities": len(identity_ids()),
                        "generation": config.as_dict(),
                        "contract_version": contract_version if system is None else "released format block",
                        "prompt_version": str(prompt_frame.prompt_version.iloc[0]), **audit.summary}
    frames = {**audit.frames, **(rep.frames if rep else {})}
    tables = {**(rep.tables if rep else {}), **audit.tables,
              "fresh_responses": audit.frames["responses"], "fresh_variants": audit.frames["variants"],
              **({"fresh_placebo_responses": audit.frames["placebo_responses"]} if params.placebo else {})}
    result = IdentityToneResult(params=params, frames=frames, tables=tables, summary=summary,
                                reproduced=rep is not None)
    result.figures = released(_figures(result))
    if out is not None:
        result.save(out)
    return result


#: Panels of the fresh strip figure: every metric the findings may cite (the four tone metrics and length).
STRIP_METRICS = tuple(TONE_METRICS)


def _figures(result: IdentityToneResult) -> dict[str, Any]:
    figs: dict[str, Any] = {}
    ids = identity_ids()
    if result.reproduced:
        figs["figure2_sentiment_as_run"] = F.sentiment_boxplot(
            result.frames["released_scores_as_run"], identities=ids,
            title="Figure 2 (as run): VADER compound sentiment by identity; solid = GPT-4, dashed = LLaMA "
                  "(n = 30 prompts per box)")
        figs["figure2_sentiment_described"] = F.sentiment_boxplot(
            result.frames["released_scores_described"], identities=ids,
            title="Sentiment as described (vaderSentiment) by identity (n = 30 prompts per box)")
    sc = result.frames["scores_described"]
    n_excluded = int(sc["sentiment"].isna().sum())
    figs["fresh_metric_strips_described"] = F.metric_strips(
        sc, identities=ids, metrics=list(STRIP_METRICS), seed=result.params.seed, n_excluded=n_excluded,
        title="Fresh audit: per-reply metrics by identity (described mode)")
    for k, m in enumerate(result.params.fresh_models):
        figs[f"fresh_effect_heatmap_described_{k}"] = F.effect_heatmap(
            result.tables["fresh_pairs_described"], model=m, metrics=list(TONE_METRICS))
    return figs


#: The embedded model's reply length when nothing cuts it (the contract asks for 120-150 words): mean
#: completion tokens measured with benchmarks/bench_identity_length.py, 149 over 24 replies (see configs/identity_tone/default.yaml).
_LOCAL_NATURAL_TOKENS = 150
#: Generated tokens per second of the embedded model, replies decoded 4 at a time, prompt processing included,
#: on the 2-core AMD EPYC: 12.8 in the live default run of c4ac2ad (96 replies, 10,627 tokens, ~830 s),
#: 17.6 in benchmarks/bench_identity_length.py (12 replies, cap 400).
_LOCAL_TOKENS_PER_S = (12.8, 17.6)


def describe_run(params: Params, config_name: str = "") -> str:
    """A Markdown header generated from the parameters: what this run does and roughly how long it takes."""
    n_replies = params.n_prompts * 8
    lines = [f"**This run{f' ({md_text(config_name)})' if config_name else ''}**: "
             + ("reproduces the released seed-002 data when the workbook is found, then " if params.reproduce_released
                else "")
             + f"audits {len(params.fresh_models)} model(s) on {params.n_prompts} "
             f"{'cfbench' if params.prompt_set == 'cfbench' else 'released'} prompts × 8 identities "
             f"= {n_replies} replies per model, at most {params.completion_cap} new tokens each "
             f"(seed protocol: T = 0.2, top-p = 0.9, 300 tokens)"
             + (f"; local models decode with repeat penalty {params.repeat_penalty:g}" if params.repeat_penalty != 1.0
                else "")
             + (f"; placebo arm: {params.n_prompts} more replies per model (one identity per prompt stated in other "
                "words)" if params.placebo else "") + "."]
    for m in params.fresh_models:
        kind = m.split(":", 1)[0]
        if kind == "scripted":
            lines.append(f"- {md_code(m)}: a scripted test double (seconds; never a source of reported numbers).")
        elif kind == "local":
            tokens = n_replies * min(params.completion_cap, _LOCAL_NATURAL_TOKENS)
            lo, hi = (tokens / r / 60 for r in reversed(_LOCAL_TOKENS_PER_S))
            lines.append(f"- {md_code(m)}: about {lo:.0f}–{hi:.0f} min of generation on an idle 2-core CPU "
                         f"(cached replies replay in seconds).")
        else:
            lines.append(f"- {md_code(m)}: {n_replies} API calls (time and cost depend on the provider).")
    lines.append(f"- Paired tests over {params.n_prompts} prompts; bootstrap-t intervals widened to include the t interval, "
                 f"{params.n_resamples:,} resamples (seed {params.seed}; coverage in docs/statistics.md). A reply that stops at the {params.completion_cap}-token cap is "
                 f"detected (finish reason 'length', else tokens at the cap), counted in `fresh_truncation` and "
                 f"left out of every tone and length metric.")
    return md_safe("\n".join(lines))


def _span(n: pd.Series) -> str:
    """``10`` or ``8–10``: the sizes of a table's rows, once when they agree."""
    lo, hi = int(n.min()), int(n.max())
    return f"{lo}" if lo == hi else f"{lo}–{hi}"
