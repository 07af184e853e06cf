"""The contact-center study as one call: ``run(Params(...)) -> ContactCenterResult``.

:class:`Params` mirrors the notebook's ``parameters`` cell field for field
(minus ``output_dir`` and ``config_name``). :func:`run` loads and selects the
transcripts, makes the counterfactual variants, plans and runs the judge
requests, computes every table and figure and, given ``out``, writes them.
:func:`audit` is the short road for a researcher's own transcripts.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.core.errors import InputError
from cfbench.judges.runner import uses_judge_settings
from cfbench.report import RunOutput, StudyResult
from cfbench.studies.contact_center_qa import figures as _figures
from cfbench.studies.contact_center_qa.items import (iter_items, labels_frame, load_items, select_items,
                                                     synthetic_settings)
from cfbench.studies.contact_center_qa.judging import run_plan
from cfbench.studies.contact_center_qa.params import Params, dims_of
from cfbench.studies.contact_center_qa.prompts import load_rubric
from cfbench.studies.contact_center_qa.requests import (PREVIEW_ITEMS, count_requests, estimate_cost, iter_requests,
                                                        plan_for)
from cfbench.studies.contact_center_qa.tables import judge_means, net_cfr_gate, study_tables

__all__ = ["Params", "ContactCenterResult", "StreamedContactCenterResult", "run", "run_streamed", "audit",
           "drop_warnings", "WARNING_COLUMNS", "source_of", "real_dialogues", "REAL_TABLES"]

#: tables written first in this column order (the results contract)
_CFR_FIRST = ["judge", "dimension", "cfr", "n_items", "n_pairs", "ci_low", "ci_high"]
_MASD_FIRST = ["judge", "dimension", "score", "masd", "n_pairs"]


@dataclass
class ContactCenterResult(StudyResult):
    """Every step of a contact-center run (see :func:`run`); ``plan`` is the run's request plan."""

    plan: Any = None

    def save(self, out: "RunOutput | str | Path") -> RunOutput:
        """Write the tables (CSV), figures, summary and the judged frames (``judgments``/``rows`` parquet)."""
        out = super().save(out)
        j = self.frames["judgments"]
        if "top_logprobs" in j.columns:
            j = j.drop(columns=["top_logprobs"]).assign(top_logprobs=j["top_logprobs"].astype(str))
        out.table("judgments", j, fmt="parquet")
        out.table("rows", self.frames["rows"], fmt="parquet")
        return out

    # -- invariants -------------------------------------------------------------------------------
    def invariants(self) -> dict[str, bool]:
        j, rows, t = self.frames["judgments"], self.frames["rows"], self.tables
        orig = rows[(rows["dimension"] == "original") & (rows["arm"] == "baseline")]
        checks = {
            "one judgment per distinct request": len(j) == int(self.summary.get("n_requests", -1)),
            "no request judged twice": int(j.groupby("judge")["key"].nunique().sum()) == len(j),
            "one original per unit": not orig.duplicated(["judge", "task", "question_id", "item_id"]).any(),
            "a parsed reply has a value": bool((~j["parse_ok"] | j["answer"].notna() | j["score"].notna()).all()),
            "a parse failure never becomes an answer": not j.loc[~j["parse_ok"], "answer"].notna().any(),
            "a parse failure never becomes a score": not j.loc[~j["parse_ok"], "score"].notna().any(),
            "CFR is a fraction": bool(t["cfr"]["cfr"].dropna().between(0, 1).all()),
            "CFR rows are counterfactual dimensions only": not (
                t["cfr"]["dimension"].isin(["original"]) | t["cfr"]["dimension"].astype(str)
                .str.startswith("robustness")).any(),
            "CFR dimensions were asked for": set(t["cfr"]["dimension"]) <= set(self.summary.get("dimensions", [])),
        }
        return checks | _intervals_contain_estimates(t)

    # -- display helpers ---------------------------------------------------------------------------
    def header(self) -> str:
        """A Markdown line describing this run, generated from its parameters and plan."""
        s, p = self.summary, self.params
        if s.get("plan_only"):
            f = s["plan_only"]
            return (f"**Plan only (no model called)**: {f['n_items']:,} transcripts x {len(s['questions'])} "
                    f"questions x {len(s['dimensions'])} dimensions; {f['n_requests_per_judge']:,} distinct "
                    f"requests per judge, {f['n_requests']:,} for the {len(s['judges'])} judges, counted by "
                    f"streaming in {f['count_s']:.0f} s. Too many to plan in memory: the cells below show the "
                    f"first {f['preview_items']} transcripts (every judgment missing). Send the whole design "
                    f"with `{f['batch_command']}`." + _plan_cost_line(f.get("cost_by_judge") or []))
        n, nq = len(s["items"]), len(s["questions"])
        cost = self.frames["cost"]
        est = float(cost["est_seconds"].sum()) / 60 if len(cost) else float("nan")
        k = p.conditions_per_dimension
        design = ("every compared condition" if not k else
                  "the original against 1 sampled condition per dimension" if k == 1 else
                  f"{k} sampled conditions per item and dimension")
        return (f"**This run**: {n} transcript{'s' if n != 1 else ''} x {nq} question{'s' if nq != 1 else ''} "
                f"x {len(s['dimensions'])} dimensions ({design}); judges {', '.join(s['judges'])}; "
                f"{p.repeats} repeats per original; {s['n_requests']} distinct requests "
                f"(estimated {est:.1f} min on the embedded local judge with a cold cache; took {s['wall_s']:.0f} s)."
                + (f" Tables rest on **{s['source']}** transcripts" if s.get("source") else "")
                + (f"; the real-dialogue arm (`star_*` tables) on {len(s['star']['items'])} STAR dialogues, "
                   f"half resolved and half not by the customers' own answers, {s['star']['n_requests']} more "
                   f"requests." if s.get("star") else "."))

    def flipped_examples(self, k: int = 3) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
        """Up to ``k`` units whose Auto-QA answer differs between conditions: (answers, edits side by side)."""
        from cfbench.perturb import side_by_side
        from cfbench.studies.contact_center_qa.tables import flipped_units

        rows = self.frames["rows"]
        out = []
        for f in flipped_units(rows).head(k).itertuples(index=False):
            sub = rows[(rows["task"] == "qa") & (rows["arm"] == "baseline") & (rows["judge"] == f.judge)
                       & (rows["dimension"] == f.dimension) & (rows["item_id"] == f.item_id)
                       & (rows["question_id"] == f.question_id)]
            answers = sub[["judge", "dimension", "condition", "question_id", "answer", "confidence"]]
            conds = {f.dimension: c for c in sub["condition"] if c != "original"}
            out.append((answers, side_by_side(self.frames["variants"], f.item_id, dimensions=[f.dimension],
                                              conditions=conds)))
        return out

    @property
    def warnings(self) -> list[str]:
        """One line per requested dimension or metric that yields nothing, with the reason."""
        w = self.tables.get("warnings")
        return [] if w is None else [str(m) for m in w["message"]]

    # -- findings -----------------------------------------------------------------------------------
    def findings(self) -> str:
        from cfbench.studies.contact_center_qa.findings import findings_markdown

        return findings_markdown(self)


@uses_judge_settings
def run(params: Params, out: "RunOutput | str | Path | None" = None, *,
        transcripts: Sequence[Any] | None = None, config_name: str = "", progress: bool = True,
        say_warnings: bool = True) -> ContactCenterResult:
    """Run the study: variants -> plan -> judgments -> tables -> figures (-> files when ``out`` is given).

    ``transcripts`` (loaded :class:`~cfbench.io.transcripts.Transcript` objects)
    replaces loading from ``params.transcripts_path``; all of them are audited.
    ``config_name`` is recorded in the summary (``config``).
    """
    from cfbench.io.transcripts import transcripts_frame
    from cfbench.perturb import DIMENSIONS, rejection_table

    if transcripts is None and os.environ.get("CFBENCH_MODE") == "plan":
        preview = _plan_only_preview(params, out, config_name=config_name, progress=progress)
        if preview is not None:
            return preview
    if transcripts is None and os.environ.get("CFBENCH_MODE") == "replay":
        streamed = _streamed_replay(params, out, config_name=config_name, progress=progress,
                                    say_warnings=say_warnings)
        if streamed is not None:
            return streamed
    t0 = time.time()
    dims = dims_of(params)
    rubric = load_rubric()
    chosen = list(transcripts) if transcripts is not None else load_items(params)
    items = [t.id for t in chosen]
    variants, plan = plan_for(params, chosen, rubric=rubric)
    judgments, rows, run_stats = run_plan(plan, rubric=rubric, labels=labels_frame(chosen),
                                          progress=progress)
    tables = study_tables(rows, n_boot=params.n_boot, seed=params.seed)
    tables = _order_columns(tables)
    labels = {d: DIMENSIONS[d].label for d in dims}
    tables["judge_means"] = judge_means(rows, n_boot=params.n_boot, seed=params.seed)
    tables["net_cfr_gate"] = net_cfr_gate(tables["cfr_minus_robustness"], max_net=params.gate_max_net_cfr)
    tables["variant_rejections"] = rejection_table(variants)
    tables["parse_rates"] = _parse_rates(judgments)
    tables["table2"] = _figures.table2(tables["cfr"], tables["masd"], tables["robustness"], tables["accuracy"],
                                       dimensions=dims, labels=labels).reset_index()
    tables = _in_judge_order(tables, list(params.judges))
    tables["warnings"] = drop_warnings(params, dims, variants, rows, tables)
    source = source_of(params, chosen, given=transcripts is not None)
    real = _real_arm(params, progress=progress) if params.real_items and transcripts is None else None
    if isinstance(real, str):  # the arm was asked for but its dialogues are absent: say so, once
        tables["warnings"] = pd.concat([tables["warnings"], pd.DataFrame(
            [{"kind": "real_arm", "judge": "", "dimension": "", "reason": real, "message": real}])],
            ignore_index=True)
    tables = _with_source(tables, source)
    if real is not None and not isinstance(real, str):
        for name in REAL_TABLES:
            tables[f"star_{name}"] = real.tables[name]
        tables["warnings"] = pd.concat([tables["warnings"], real.tables["warnings"].assign(
            message=lambda w: "STAR arm: " + w["message"])], ignore_index=True)
    if real is not None and not isinstance(real, str):
        for name in ("transcripts", "variants", "judgments", "rows"):
            real.frames[name] = real.frames[name].assign(source="star")
    frames = {"transcripts": transcripts_frame(chosen), "variants": variants, "plan": plan.rows,
              "plan_summary": plan.summary(), "cost": estimate_cost(plan), "skipped": plan.skipped,
              "judgments": judgments, "rows": rows}
    summary = {"config": config_name} | _summary(params, plan, judgments, tables, run_stats, items, dims,
                                                 rubric, t0)
    summary["source"] = source
    if real is not None and not isinstance(real, str):
        frames["star_transcripts"] = real.frames["transcripts"]
        frames["star_judgments"] = real.frames["judgments"]
        summary["star"] = {k: real.summary[k] for k in ("items", "dimensions", "n_requests", "wall_s",
                                                        "accuracy_pct", "mean_cfr_pct", "label_source")}
    result = ContactCenterResult(params=params, frames=frames, tables=tables, summary=summary, plan=plan)
    result.figures = _figures.study_figures(tables, dimensions=dims, labels=labels, n_items=len(items))
    _say_parse_failures(judgments)
    if say_warnings:
        for line in tables["warnings"]["message"]:
            print(f"warning: {line}")
    if out is not None:
        result.save(out)
    return result


#: In plan-only mode (``CFBENCH_MODE=plan``, ``cfbench reproduce --plan-only``) a design of more distinct
#: requests per judge than this is not planned in memory: its requests are counted by streaming
#: (:func:`.requests.count_requests`) and the run's cells are computed on its first few transcripts.
PLAN_ONLY_MAX_REQUESTS = 200_000
PLAN_ONLY_PREVIEW_ITEMS = PREVIEW_ITEMS


def _plan_only_preview(params: Params, out: "RunOutput | str | Path | None", *, config_name: str,
                       progress: bool) -> "ContactCenterResult | None":
    """The plan-only run of a design too large to plan in memory (None when it is small enough)."""
    import dataclasses
    import itertools

    first = list(itertools.islice(iter_items(params), PLAN_ONLY_PREVIEW_ITEMS))
    if not first:
        return None
    per_item = sum(1 for _ in iter_requests(params, transcripts=first[:1]))
    if per_item * params.n_items <= PLAN_ONLY_MAX_REQUESTS:
        return None
    t0 = time.time()
    counts = count_requests(params)  # streams every selected transcript; raises if too few qualify
    count_s = time.time() - t0
    result = run(dataclasses.replace(params, n_items=len(first)), transcripts=first, config_name=config_name,
                 progress=progress)
    result.params = params
    judges = list(params.judges)
    result.summary["params"] = params.to_mapping()
    result.summary["plan_only"] = {
        "n_items": params.n_items, "preview_items": len(first), "count_s": round(count_s, 1),
        "n_requests_per_judge": counts["n_requests_per_judge"], "n_requests": counts["n_requests"],
        "prompt_chars_per_judge": counts["prompt_chars_per_judge"], "by_task_arm": counts["by_task_arm"],
        "batch_command": (f"cfbench batch plan --study contact_center_qa -f configs/contact_center_qa/"
                          f"{config_name or 'CONFIG'}.yaml --judge {judges[0]} --out batch/"
                          f"{config_name or 'run'}"),
    }
    result.summary["plan_only"]["cost_by_judge"] = plan_cost_by_judge(judges, counts)
    result.frames["plan_cost_estimate"] = pd.DataFrame(result.summary["plan_only"]["cost_by_judge"])
    result.frames["plan_summary_full"] = pd.DataFrame(
        [{"judge": j, "task": k.split("/")[0], "arm": k.split("/")[1], "n_requests": v}
         for j in judges for k, v in counts["by_task_arm"].items()])
    if out is not None:
        result.save(out)
    return result


def _too_large(params: Params) -> "list[Any] | None":
    """The first transcripts of a design of more than :data:`PLAN_ONLY_MAX_REQUESTS` distinct requests per
    judge (estimated from the first transcript's requests x ``n_items``); None when it fits in memory."""
    import itertools

    first = list(itertools.islice(iter_items(params), PLAN_ONLY_PREVIEW_ITEMS))
    if not first:
        return None
    per_item = sum(1 for _ in iter_requests(params, transcripts=first[:1]))
    return first if per_item * params.n_items > PLAN_ONLY_MAX_REQUESTS else None


def _streamed_replay(params: Params, out: "RunOutput | str | Path | None", *, config_name: str,
                     progress: bool, say_warnings: bool) -> "ContactCenterResult | None":
    """A replay (``CFBENCH_MODE=replay``, ``cfbench reproduce --replay``) of a design too large to hold in
    memory: :func:`.streamed.run_streamed` (the whole design, transcript by transcript, tables from item
    statistics, judged rows in ``rows.parquet``), with the per-row frames of its first few transcripts
    for the notebook's display cells. None when the design fits in memory (the in-memory run)."""
    import dataclasses

    first = _too_large(params)
    if first is None:
        return None
    result = run_streamed(params, out, config_name=config_name, progress=progress, say_warnings=say_warnings)
    preview = run(dataclasses.replace(params, n_items=len(first), real_items=0), transcripts=first,
                  progress=False, say_warnings=False)
    for name in ("transcripts", "variants", "plan", "plan_summary", "cost", "skipped", "judgments", "rows"):
        result.frames[name] = preview.frames[name]
    result.plan = preview.plan
    result.summary["streamed"]["preview_items"] = len(first)
    if out is not None:
        RunOutput(out.dir if isinstance(out, RunOutput) else out).summary(result.summary)
    return result


def _plan_cost_line(rows: Sequence[dict[str, Any]]) -> str:
    """The plan-only header's cost sentence: per judge, requests, estimated tokens, estimated USD."""
    parts = []
    for r in rows:
        usd = r["cost_usd_est"]
        cost = "not priced" if usd is None else ("$0 (no API)" if usd == 0 else f"≈ ${usd:,.2f}")
        parts.append(f"{r['judge']}: {r['n_requests']:,} requests, ≈ {r['prompt_tokens_est']:,} prompt tokens "
                     f"(estimated from characters) + at most {r['max_output_tokens']:,} output tokens, {cost}")
    return (" Estimated per judge: " + "; ".join(parts) + ".") if parts else ""


def plan_cost_by_judge(judges: Sequence[str], counts: dict[str, Any]) -> list[dict[str, Any]]:
    """Requests, estimated tokens and estimated cost per judge of a streamed plan-only count.

    Prompt tokens are estimated from characters (:func:`cfbench.judges.pricing.estimate_from_chars`:
    characters / 4 plus the chat framing), output tokens are the ``max_tokens`` allowance (an upper
    bound); ``openai:`` judges are priced at the Batch API price of the shipped table (what the
    suggested ``cfbench batch plan`` would send), ``local:`` and ``scripted:`` cost 0 (no API),
    other backends are not priced (cost None, with the reason)."""
    from cfbench.judges.pricing import estimate_from_chars, load_prices

    prices = None
    rows = []
    n, chars = counts["n_requests_per_judge"], counts["prompt_chars_per_judge"]
    max_out = counts.get("max_output_tokens_per_judge", 0)
    for spec in judges:
        backend, _, rest = spec.partition(":")
        model = rest.partition("@")[0]
        if prices is None:
            prices = load_prices()
        est = estimate_from_chars(model, n, chars, max_out, prices, batch=True)
        row = {"judge": spec, "n_requests": n, "prompt_chars": chars,
               "prompt_tokens_est": est["prompt_tokens"], "max_output_tokens": max_out,
               "token_method": est["method"]}
        if backend == "openai":
            c = est["cost"]
            row.update(cost_usd_est=c["total_usd"],
                       cost_note=(f"Batch API price of {c['priced_as']} (as of {c.get('as_of')}), output at its "
                                  "max_tokens allowance" if c["total_usd"] is not None else c["note"]))
        elif backend in ("local", "scripted"):
            row.update(cost_usd_est=0.0, cost_note=f"0: {backend} judge, no API cost")
        else:
            row.update(cost_usd_est=None, cost_note=f"not priced: no price table for the {backend!r} backend")
        rows.append(row)
    return rows


#: Tables of the real-dialogue arm, kept as ``star_<name>`` beside the main run's.
REAL_TABLES = ("accuracy", "cfr", "masd", "robustness", "cfr_minus_robustness", "table2", "variant_rejections")


def source_of(params: Params, chosen: Sequence[Any], *, given: bool = False) -> str:
    """What the run's numbers rest on: ``synthetic`` (the shipped or generated calls), ``star`` (STAR
    dialogues, labels from the customers' questionnaire) or ``file`` (a researcher's own transcripts)."""
    metas = [dict(getattr(t, "meta", {}) or {}).get("source") for t in chosen]
    if metas and all(m == "star" for m in metas):
        return "star"
    if not given and (not params.transcripts_path or synthetic_settings(params.transcripts_path) is not None):
        return "synthetic"
    return "file"


def _with_source(tables: dict[str, Any], source: str) -> dict[str, Any]:
    """A ``source`` column on every table (first in Table 2, whose other columns are judges; last elsewhere)."""
    for name, tab in list(tables.items()):
        if not isinstance(tab, pd.DataFrame):
            continue
        tab = tab.copy()
        if name == "table2":
            tab.insert(0, "source", source)
        else:
            tab["source"] = source
        tables[name] = tab
    return tables


def real_dialogues(path: str | Path, n: int, *, label: str = "issue_resolution") -> list[Any]:
    """The first ``n`` STAR dialogues with the customer's task-success answer, alternating resolved and
    not resolved (by that answer) as far as the corpus allows; raises InputError when fewer qualify."""
    import warnings as _warnings

    from cfbench.io.dialogues import load_dialogues

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", UserWarning)  # dialogues without a turn are left out
        ts = [t for t in load_dialogues(path) if dict(t.labels).get(label) in ("Yes", "No")]
    return select_items(ts, n, require_agent_name=False, balance_label=label)


def _resolve_real_path(path: str) -> Path | None:
    p = Path(path).expanduser()
    if p.is_absolute():
        return p if p.exists() else None
    here = Path(__file__).resolve()
    for base in (Path.cwd(), *here.parents):  # the repo root and the folders above (a worktree sits deeper)
        if (base / p).exists():
            return base / p
    return None


def _real_arm(params: Params, *, progress: bool) -> "ContactCenterResult | str":
    """The real-dialogue arm: the same judges and design on ``real_items`` balanced STAR dialogues, on the
    dimensions that apply to them (the others are warning rows), accuracy against the customers' labels.
    Returns a one-line reason instead when the dialogues are absent."""
    import dataclasses

    path = _resolve_real_path(params.real_path)
    if path is None:
        return (f"real-dialogue arm skipped: no STAR dialogues at {params.real_path} (the project does not ship "
                "them); the tables rest on synthetic calls only")
    chosen = real_dialogues(path, params.real_items)
    sub = dataclasses.replace(params, real_items=0, transcripts_path=str(path), n_items=len(chosen),
                              require_agent_name=False, fairness=False, coaching=False, paraphrases=0)
    result = run(sub, transcripts=chosen, progress=progress, say_warnings=False)
    result.summary["label_source"] = ("customers' own answers to the STAR questionnaire's task question "
                                      "(UserQuestionnaire), e.g. 'Did the assistant book your flight?'")
    return result


#: Columns of the ``warnings`` table: what was asked for and yields nothing, and why.
WARNING_COLUMNS = ["kind", "judge", "dimension", "reason", "message"]


def drop_warnings(params: Params, dims: Sequence[str], variants: pd.DataFrame, rows: pd.DataFrame,
                  tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per requested thing that yields no number, with the reason (nothing disappears silently).

    ``kind`` "dimension": a requested dimension with no judged pair in the baseline CFR table (reason:
    the perturber's most frequent not-applicable reason, else the guards' rejection reason, else no
    pair of readable replies). ``kind`` "p_yes": a judge whose Auto-QA replies carry no first-token
    P(Yes) under the compact contract, so its P(Yes) MASD rows are empty.
    """
    out = []
    cfr = tables["cfr"]
    base = cfr[cfr["arm"] == "baseline"] if "arm" in cfr.columns else cfr
    v = variants[variants["dimension"] != "original"] if len(variants) else variants
    for dim in dims:
        judged = base[(base["dimension"] == dim) & (base["n_pairs"] > 0)]
        if len(judged):
            continue
        g = v[v["dimension"] == dim] if len(v) else v
        made = g[g["applicable"].astype(bool)] if len(g) else g
        if not len(g):
            reason = "the perturber made no variant"
        elif not len(made):
            reason = f"not applicable to any of the {g['item_id'].nunique()} transcripts: " + \
                g["reason"].astype(str).value_counts().index[0]
        elif not made["valid"].astype(bool).any():
            reason = f"every one of its {len(made)} variants was rejected: " + \
                made["rejection_reason"].astype(str).value_counts().index[0]
        else:
            reason = "no pair of readable replies (parse failures) among its variants"
        out.append({"kind": "dimension", "judge": "", "dimension": dim, "reason": reason,
                    "message": f"dimension {dim} was requested but yields no judged variant: {reason}"})
    if params.qa_mode == "compact" and len(rows):
        qa = rows[(rows["task"] == "qa") & rows["parse_ok"].astype(bool)]
        for judge in params.judges:
            sub = qa[qa["judge"].isin(_names_of(judge))]
            if len(sub) and sub["p_yes"].isna().all():
                reason = ("its backend gives no log-probs" if _supports_logprobs(judge) is False else
                          "no first-token Yes/No log-probs came back")
                out.append({"kind": "p_yes", "judge": judge, "dimension": "", "reason": reason,
                            "message": f"judge {judge} has no P(Yes): {reason}; its P(Yes) MASD rows are "
                                       "empty (NaN in Table 2), its confidence rows stand"})
    return pd.DataFrame(out, columns=WARNING_COLUMNS)


def _supports_logprobs(spec: str) -> "bool | None":
    from cfbench.judges.registry import supports_logprobs

    try:
        return supports_logprobs(spec)
    except Exception:  # an unknown spec was caught long before; never fail a finished run on this
        return None


def _names_of(spec: str) -> set[str]:
    """A judge spec as given and as results record it (its canonical spec)."""
    from cfbench.judges.registry import canonical_spec

    try:
        return {spec, canonical_spec(spec)}
    except Exception:  # an unknown spec was refused long before
        return {spec}


def _in_judge_order(tables: dict[str, pd.DataFrame], judges: list[str]) -> dict[str, pd.DataFrame]:
    """Judge columns (Table 2) and judge rows in the order the judges were given, not alphabetical."""
    rank = {name: k for k, j in enumerate(judges) for name in sorted(_names_of(j))}
    judges = sorted(rank, key=rank.get)
    for name, tab in list(tables.items()):
        if not isinstance(tab, pd.DataFrame):
            continue
        if name == "table2":
            first = [c for c in tab.columns if c not in rank]
            tables[name] = tab[first + [j for j in judges if j in tab.columns]]
        elif "judge" in tab.columns and len(tab):
            key = tab["judge"].map(lambda j: rank.get(j, len(rank)))
            tables[name] = tab.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)
    return tables


def _order_columns(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    cfr, masd = tables["cfr"], tables["masd"]
    tables["cfr"] = cfr[_CFR_FIRST + [c for c in cfr.columns if c not in _CFR_FIRST]]
    tables["masd"] = masd[_MASD_FIRST + [c for c in masd.columns if c not in _MASD_FIRST]]
    return tables


def _parse_rates(judgments: pd.DataFrame) -> pd.DataFrame:
    g = judgments.groupby(["judge", "task"])
    out = g.agg(n=("parse_ok", "size"), parse_ok=("parse_ok", "mean"), cache_hit=("cache_hit", "mean"))
    out["n_parse_failures"] = g["parse_ok"].apply(lambda s: int((~s.astype(bool)).sum()))
    return out.reset_index()


def _say_parse_failures(judgments: pd.DataFrame) -> None:
    for judge, grp in judgments.groupby("judge", sort=True):
        n_ok = int(grp["parse_ok"].sum())
        if n_ok == 0:
            print(f"{judge}: none of its {len(grp)} replies could be read as an answer in the output "
                  "contract; no CFR, MASD or accuracy is reported for this judge.")


def _summary(params: Params, plan: Any, judgments: pd.DataFrame, tables: dict[str, pd.DataFrame],
             run_stats: dict, items: list[str], dims: list[str], rubric: pd.DataFrame, t0: float) -> dict:
    cfr, acc, rob = tables["cfr"], tables["accuracy"], tables["robustness"]
    base = cfr[cfr["arm"] == "baseline"]
    rob_same = rob[(rob["metric"] == "cfr") & (rob["baseline"] == "robustness")] if len(rob) else rob
    n_parsed = judgments.groupby("judge")["parse_ok"].sum().astype(int)
    return {
        "judges": list(params.judges), "items": items, "questions": list(params.questions),
        "qa_mode": params.qa_mode, "dimensions": dims, "n_rows": len(plan.rows),
        "n_requests": int(plan.n_requests),
        "parse_ok_rate": float(judgments["parse_ok"].mean()) if len(judgments) else float("nan"),
        "n_parsed": n_parsed.to_dict(),
        "n_parse_failures": (judgments.groupby("judge").size() - n_parsed).astype(int).to_dict(),
        "run_stats": run_stats, "wall_s": round(time.time() - t0, 1),
        "mean_cfr_pct": (base.groupby("judge")["cfr"].mean() * 100).round(2).to_dict(),
        "robustness_cfr_pct": (rob_same.set_index("judge")["value"] * 100).round(2).to_dict() if len(rob_same) else {},
        "accuracy_pct": (acc.set_index("judge")["accuracy"] * 100).round(2).to_dict(),
        "fairness_prompting_delta": tables["fairness_prompting_delta"],
        "plan": plan.settings, "rubric_version": rubric.attrs.get("version"),
        "params": params.to_mapping(),
        "warnings": [str(m) for m in tables["warnings"]["message"]] if "warnings" in tables else [],
    }


def audit(transcripts: "Sequence[Any] | str | Path", *, judges: Sequence[str], questions: Sequence[str],
          dimensions: Sequence[str] = (), conditions_per_dimension: int = 0, repeats: int = 3,
          qa_mode: str = "compact", n_boot: int = 1000, seed: int = 0, n_items: int | None = None,
          out: "RunOutput | str | Path | None" = None, progress: bool = True, concurrency: int = 0,
          timeout_s: float = 0.0) -> ContactCenterResult:
    """CFR and MASD with item-bootstrap intervals for your transcripts and any judge specs.

    ``transcripts`` is a path (JSONL/CSV, see :func:`cfbench.io.transcripts.load_transcripts`)
    or loaded transcripts; every one is audited, or the first ``n_items`` (no other
    selection, no coaching, no fairness arm). Table 2's judge columns keep the order of
    ``judges``. A requested dimension that yields no judged variant, or a judge without
    P(Yes), prints one ``warning:`` line and is a row of ``result.tables["warnings"]``. Originals are a condition only where a dimension's compared
    set says so; the robustness repeats are their own rows, never part of CFR. ``concurrency`` fixes
    the judge calls in flight (0: adapt to the server's latency) and ``timeout_s`` how long a call
    may take from the moment it is sent (0: 600 s); see docs/servers.md.

    >>> from cfbench.studies.contact_center_qa import audit   # doctest: +SKIP
    >>> r = audit("my_calls.jsonl", judges=["openai:gpt-4o-mini"], questions=["issue_resolution"])  # doctest: +SKIP
    >>> r.tables["cfr"]                                      # doctest: +SKIP
    """
    from cfbench.io.dialogues import load_dialogues

    loaded = load_dialogues(transcripts) if isinstance(transcripts, (str, Path)) else list(transcripts)
    if not loaded:
        raise InputError("no transcripts to audit", source=str(transcripts), field="transcripts")
    if n_items is not None:
        if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 1:
            raise InputError(f"must be a positive whole number, got {n_items!r}", source="audit()", field="n_items")
        if n_items > len(loaded):
            raise InputError(f"asks for the first {n_items} transcripts but there are {len(loaded)}",
                             source=str(transcripts) if isinstance(transcripts, (str, Path)) else "audit()",
                             field="n_items")
        loaded = loaded[:n_items]
    params = Params(judges=tuple(judges), n_items=len(loaded), require_agent_name=False, balance_label="",
                    dimensions=tuple(dimensions), conditions_per_dimension=conditions_per_dimension,
                    questions=tuple(questions), qa_mode=qa_mode, repeats=repeats,
                    robustness_temperatures=(0.0,), fairness=False, coaching=False, n_boot=n_boot, seed=seed,
                    concurrency=concurrency, timeout_s=timeout_s)
    return run(params, out, transcripts=loaded, progress=progress)


@uses_judge_settings
def run_streamed(params: Any, out: Any = None, *, transcripts: Iterable[Any] | None = None,
                 config_name: str = "", progress: bool = True, cache: Any = None,
                 say_warnings: bool = True) -> Any:
    """:func:`run` for designs too large for memory: transcript by transcript, item statistics, tables
    (:mod:`.streamed`).

    The result has the tables of :data:`.streamed.STREAMED_TABLES`, the figures, a summary (``streamed`` says
    what was done and lists :data:`.streamed.NOT_STREAMED`) and no per-row frames: the judged rows and judgments
    are in ``<out>/rows.parquet`` and ``<out>/judgments.parquet`` (given ``out``; without it they are
    not kept). Memory stays flat in the number of transcripts apart from the item statistics.
    """
    from cfbench.perturb import DIMENSIONS, rejection_table
    from cfbench.studies.contact_center_qa import streamed as _streamed
    from cfbench.studies.contact_center_qa.streamed import (NOT_STREAMED, ItemStats, ParquetRows, item_stats,
                                                            iter_judged, tables_from_stats)

    t0 = time.time()
    dims = dims_of(params)
    run_out = RunOutput(out) if out is not None and not isinstance(out, RunOutput) else out
    writers = ({"rows": ParquetRows(run_out.path("rows.parquet")),
                "judgments": ParquetRows(run_out.path("judgments.parquet"))} if run_out is not None else {})
    # compacted item statistics wait on disk until the tables are made (memory flat in the transcripts)
    spill = tempfile.TemporaryDirectory(prefix="cfbench-item-stats-")
    stats = ItemStats(spill=spill.name)
    items, run_stats, n_requests, n_rows = [], {}, 0, 0
    firsts, all_star = [], True  # what source_of needs: are all transcripts STAR dialogues
    bar = None
    if progress:
        from tqdm import tqdm  # a text bar: it renders in executed notebooks and terminals alike

        # at most one update per 10 s: an executed notebook keeps every update as an output line
        bar = tqdm(total=params.n_items if transcripts is None else None, desc="contact-center (streamed)",
                   mininterval=10)
    try:
        for t, variants, judgments, rows, st in iter_judged(params, transcripts=transcripts, cache=cache):
            items.append(t.id)
            if not firsts:
                firsts.append(t)
            all_star = all_star and dict(getattr(t, "meta", {}) or {}).get("source") == "star"
            stats.merge(item_stats(rows, judgments, variants))
            if writers:
                j = judgments
                if "top_logprobs" in j.columns:
                    j = j.assign(top_logprobs=j["top_logprobs"].astype(str))
                writers["rows"].write(rows)
                writers["judgments"].write(j)
            for judge, s in st.items():
                agg = run_stats.setdefault(judge, {})
                for k, v in s.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "non_completion_rate":
                        agg[k] = agg.get(k, 0) + v
            if len(items) % _streamed.COMPACT_EVERY == 0:
                stats.compact()
            n_requests += len(judgments)
            n_rows += len(rows)
            if bar is not None:
                bar.update(1)
    except BaseException:
        spill.cleanup()
        raise
    finally:
        for w in writers.values():
            w.close()
        if bar is not None:
            bar.close()
    for s in run_stats.values():
        s["non_completion_rate"] = (s.get("n_failed", 0) / s["n_unique"]) if s.get("n_unique") else float("nan")
    try:
        tables = tables_from_stats(stats, n_boot=params.n_boot, seed=params.seed)
        variants = stats.frame("variants")
        flags = stats.flags
    finally:
        spill.cleanup()
    del stats  # the item statistics are not needed after the tables: free them before the figures
    tables = _order_columns(tables)
    labels = {d: DIMENSIONS[d].label for d in dims}
    tables["net_cfr_gate"] = net_cfr_gate(tables["cfr_minus_robustness"], max_net=params.gate_max_net_cfr)
    tables["variant_rejections"] = rejection_table(variants)
    tables["table2"] = _figures.table2(tables["cfr"], tables["masd"], tables["robustness"], tables["accuracy"],
                                       dimensions=dims, labels=labels).reset_index()
    tables = _in_judge_order(tables, list(params.judges))
    p_yes = pd.DataFrame([{"judge": k[1], "task": "qa", "parse_ok": True, "p_yes": 1.0 if v else np.nan}
                          for k, v in flags.items() if k[0] == "p_yes_any"],
                         columns=["judge", "task", "parse_ok", "p_yes"])
    warn = drop_warnings(params, dims, variants, p_yes, tables)
    if NOT_STREAMED:  # a table this path does not build is said, never silently missing
        note = ("streamed run: tables " + ", ".join(NOT_STREAMED) + " are not built by the streamed path (the "
                "judged rows are in rows.parquet)")
        warn = pd.concat([warn, pd.DataFrame([{"kind": "streamed", "judge": "", "dimension": "",
                                               "reason": "not streamed", "message": note}])], ignore_index=True)
    tables["warnings"] = warn
    source = "star" if items and all_star else source_of(params, firsts[:1], given=transcripts is not None)
    real = _real_arm(params, progress=progress) if params.real_items and transcripts is None else None
    if isinstance(real, str):  # asked for, dialogues absent: one warning row, as in run()
        tables["warnings"] = pd.concat([tables["warnings"], pd.DataFrame(
            [{"kind": "real_arm", "judge": "", "dimension": "", "reason": real, "message": real}])],
            ignore_index=True)
    tables = _with_source(tables, source)  # before the STAR tables join, as in run(): theirs say "star"
    if real is not None and not isinstance(real, str):  # a few STAR dialogues: run in memory
        for name in REAL_TABLES:
            tables[f"star_{name}"] = real.tables[name]
        tables["warnings"] = pd.concat([tables["warnings"], real.tables["warnings"].assign(
            message=lambda w: "STAR arm: " + w["message"])], ignore_index=True)
    cfr, acc = tables["cfr"], tables["accuracy"]
    pr = tables["parse_rates"]
    n_parsed = ((pr["n"] - pr["n_parse_failures"]).groupby(pr["judge"]).sum().astype(int).to_dict()
                if len(pr) else {})
    n_failed = pr.groupby("judge")["n_parse_failures"].sum().astype(int).to_dict() if len(pr) else {}
    base = cfr[cfr["arm"] == "baseline"]
    summary = {"config": config_name, "judges": list(params.judges), "items": items,
               "questions": list(params.questions), "qa_mode": params.qa_mode, "dimensions": dims,
               "n_rows": n_rows, "n_requests": n_requests, "run_stats": run_stats,
               "wall_s": round(time.time() - t0, 1),
               "mean_cfr_pct": (base.groupby("judge")["cfr"].mean() * 100).round(2).to_dict(),
               "accuracy_pct": (acc.set_index("judge")["accuracy"] * 100).round(2).to_dict(),
               "fairness_prompting_delta": tables["fairness_prompting_delta"], "params": params.to_mapping(),
               "n_parsed": n_parsed, "n_parse_failures": n_failed,
               "source": source, "warnings": [str(m) for m in tables["warnings"]["message"]],
               "streamed": {"not_built": list(NOT_STREAMED), "n_rows_parquet": writers["rows"].n_rows if writers else 0, "rows_parquet": "rows.parquet" if writers else None,
                            "judgments_parquet": "judgments.parquet" if writers else None}}
    if real is not None and not isinstance(real, str):
        summary["star"] = {k: real.summary[k] for k in ("items", "dimensions", "n_requests", "wall_s",
                                                        "accuracy_pct", "mean_cfr_pct", "label_source")}
    frames = {"variants_compact": variants}
    result = StreamedContactCenterResult(params=params, frames=frames, tables=tables, summary=summary, plan=None)
    result.figures = _figures.study_figures(tables, dimensions=dims, labels=labels, n_items=len(items))
    if say_warnings:
        for line in tables["warnings"]["message"]:
            print(f"warning: {line}")
    if run_out is not None:
        result.save(run_out)
    return result


class StreamedContactCenterResult(ContactCenterResult):
    """A streamed run: the tables of the whole design, no per-row frames (they are in Parquet), or
    the frames of the first few transcripts when :func:`.study.run` added them for display."""

    def save(self, out: Any) -> Any:
        """Tables, figures, summary; the judged rows were written to Parquet while streaming."""
        from cfbench.report import StudyResult

        return StudyResult.save(self, out)

    def view(self, directory: "str | os.PathLike[str] | None" = None, *, height: int = 720) -> Any:
        """The run explorer on the first transcripts only (the frames :func:`run` added for display).

        The page of the whole design would read all of ``rows.parquet`` into memory (about 40 MB per
        transcript measured at 70 paper transcripts), so it is built from a ``view_preview/`` folder holding
        the first transcripts' rows and judgments, and written as ``<directory>/view.html``."""
        import tempfile

        from cfbench.view import ViewPage, write_inputs, write_view

        n = self.summary.get("streamed", {}).get("preview_items")
        if not n or "rows" not in self.frames:
            raise InputError("a streamed run without the first transcripts' frames has no explorer page; its "
                             "judged rows are in rows.parquet (read them with pyarrow or DuckDB)",
                             source="StreamedContactCenterResult.view")
        with tempfile.TemporaryDirectory(prefix="cfbench-view-") as tmp:
            d = Path(directory) / "view_preview" if directory is not None else Path(tmp)
            preview = ContactCenterResult(params=self.params, frames=self.frames, tables=self.tables,
                                          summary=self.summary, plan=self.plan)
            preview.save(d)  # the first transcripts' rows.parquet / judgments.parquet, not the whole design's
            write_inputs(d, self.frames)
            target = Path(directory) / "view.html" if directory is not None else d / "view.html"
            path = write_view(d, target, title=f"streamed run: the first {n} of {len(self.summary['items'])} "
                                               "transcripts (tables: the whole design)")
            return ViewPage(path.read_text(encoding="utf-8"), path=path if directory is not None else None,
                            height=height)

    def invariants(self) -> dict[str, bool]:
        t, s = self.tables, self.summary
        checks = {
            "CFR is a fraction": bool(t["cfr"]["cfr"].dropna().between(0, 1).all()),
            "CFR rows are counterfactual dimensions only": not (
                t["cfr"]["dimension"].isin(["original"]) | t["cfr"]["dimension"].astype(str)
                .str.startswith("robustness")).any(),
            "CFR dimensions were asked for": set(t["cfr"]["dimension"]) <= set(s.get("dimensions", [])),
            "every judged row written to Parquet": (not s["streamed"].get("rows_parquet")
                                                    or s["streamed"]["n_rows_parquet"] == s["n_rows"]),
            "one judgment per request counted": int(t["parse_rates"]["n"].sum()) == int(s["n_requests"]),
        }
        return checks | _intervals_contain_estimates(t)

    def header(self) -> str:
        s = self.summary
        return (f"**Streamed run**: {len(s['items']):,} transcripts x {len(s['questions'])} questions x "
                f"{len(s['dimensions'])} dimensions; judges {', '.join(s['judges'])}; {s['n_requests']:,} "
                f"judgments, {s['n_rows']:,} judged rows (in `rows.parquet`), reduced transcript by transcript "
                f"to item statistics (took {s['wall_s']:.0f} s). Not built on this path: "
                f"{', '.join(s['streamed']['not_built'])}."
                + (f" Cells showing per-row frames show the first {s['streamed']['preview_items']} "
                   "transcripts only." if s["streamed"].get("preview_items") else ""))


def _intervals_contain_estimates(t: dict[str, pd.DataFrame]) -> dict[str, bool]:
    """``cfr`` and ``masd``: every interval formed contains its estimate."""
    checks = {}
    for name in ("cfr", "masd"):
        tab = t[name].dropna(subset=["ci_low", "ci_high"])
        checks[f"{name}: interval contains estimate"] = bool(
            ((tab["ci_low"] <= tab[name] + 1e-9) & (tab[name] <= tab["ci_high"] + 1e-9)).all())
    return checks
