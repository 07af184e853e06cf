"""The contact-center study as one call: ``run(Params(...)) -> ContactCenterResult``.

:class:`Params` mirrors the notebook's ``parameters`` cell field for field
(minus ``output_dir`` and ``config_name``). :func:`run` walks the selected
transcripts one at a time (variants, plan, judgments, item statistics, rows to
Parquet), computes every table from the item statistics, then the figures and,
given ``out``, writes them: one path, whatever the number of transcripts.
:func:`audit` is the short road for a researcher's own transcripts.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.core.text import md_code, md_safe
from cfbench.core.errors import InputError
from cfbench.perturb import DIMENSIONS
from cfbench.judges.failures import FAILURE_KINDS, KIND_COLUMNS, describe_kinds
from cfbench.judges.runner import uses_judge_settings
from cfbench.report import RunOutput, StudyResult
from cfbench.studies.contact_center_qa import explorer as _explorer
from cfbench.studies.contact_center_qa import figures as _figures
from cfbench.studies.contact_center_qa.items import iter_items, iter_selected, select_items, synthetic_settings
from cfbench.studies.contact_center_qa.judging import iter_judged
from cfbench.studies.contact_center_qa.params import Params, dims_of
from cfbench.studies.contact_center_qa.prompts import load_rubric
from cfbench.studies.contact_center_qa.requests import (PREVIEW_ITEMS, count_requests, estimate_cost, iter_requests)
from cfbench.studies.contact_center_qa.gates import gate_tables
from cfbench.studies.contact_center_qa.sequential import SequentialAudit, judge_prices, walk_params
from cfbench.studies.contact_center_qa.screen import SCREEN_FACTOR, screen_dialogues
from cfbench.studies.contact_center_qa.tables import new_state, study_tables

__all__ = ["Params", "ContactCenterResult", "run", "finish_tables", "audit", "drop_warnings", "WARNING_COLUMNS",
           "source_of", "real_dialogues", "REAL_TABLES", "VIEW_ITEMS"]

#: the explorer page of a run shows the pairs of its first this many transcripts (all of a smaller run, such as
#: each arm of the committed default, 36 synthetic calls and 36 STAR dialogues)
VIEW_ITEMS = 48

#: tables written first in this column order (the results contract)
_CFR_FIRST = ["judge", "dimension", "cfr", "n_items", "n_pairs", "ci_low", "ci_high"]
_MASD_FIRST = ["judge", "dimension", "score", "masd", "n_pairs"]


def _star_words(star: Mapping[str, Any]) -> str:
    """The header's clause on the real-dialogue arm (its margin screen, when there was one)."""
    sc = star.get("screen")
    if not sc:
        return (f"; the real-dialogue arm (`star_*` tables) on {len(star['items'])} STAR dialogues, half resolved "
                f"and half not by the customers' own answers, {star['n_requests']} more requests.")
    skipped = f" after the first {sc['skipped']} of the balanced order" if sc["skipped"] else ""
    return (f"; the real-dialogue arm (`star_*` tables) screened {sc['screened']} STAR dialogues{skipped} "
            f"(alternately resolved and not by the customers' own answers) and put to the variants the "
            f"{sc['kept']} whose original P(Yes) lay at least {sc['margin']:g} from 0.5, {star['n_requests']} "
            "more requests.")


@dataclass
class ContactCenterResult(StudyResult):
    """Every step of a contact-center run (see :func:`run`): the tables of all transcripts, the judged rows in
    the run's Parquet files (``frames["rows"]``, ``frames["judgments"]`` read them when first used), the
    per-row frames of the first transcripts; ``plan`` is their request plan."""

    plan: Any = None
    #: the folder holding the run's ``rows.parquet``, ``judgments.parquet`` and ``variants.parquet``
    run_dir: Any = None
    _keep: Any = field(default=None, repr=False)  # the temporary run folder of a run given no ``out``

    def save(self, out: "RunOutput | str | Path") -> RunOutput:
        """Write the tables (CSV), figures and summary; the judged rows, judgments and the explorer's variants
        (Parquet) are copied there when the run wrote them elsewhere."""
        import shutil

        out = super().save(out)
        for name in ("rows", "judgments", "variants"):
            src = Path(self.run_dir) / f"{name}.parquet" if self.run_dir is not None else None
            target = out.dir / f"{name}.parquet"
            if src is not None and src.is_file():
                if src.resolve() != target.resolve():
                    shutil.copyfile(src, target)
            elif name in ("rows", "judgments") and isinstance(self.frames.get(name), pd.DataFrame):
                out.table(name, self.frames[name], fmt="parquet")
        _explorer.save_star_frames(self.frames, out)  # star_rows / star_judgments / star_variants .parquet
        return out

    # -- invariants -------------------------------------------------------------------------------
    def invariants(self) -> dict[str, bool]:
        """The row-level checks made on every transcript's judgments and rows during the walk, and the tables'."""
        t, s = self.tables, self.summary
        checks = dict(s.get("row_checks", {}))
        loaded = {k: (dict.get(self.frames, k) if isinstance(self.frames, _RunFrames) else self.frames.get(k))
                  for k in ("judgments", "rows")}  # frames already in memory are checked again; none is read
        j, r = (f if isinstance(f, pd.DataFrame) else pd.DataFrame() for f in loaded.values())
        n = int(s.get("n_requests", -1)) if isinstance(loaded["judgments"], pd.DataFrame) else 0  # nothing to count
        for name, ok in _row_checks(n, j, r).items():
            checks[name] = bool(checks.get(name, True) and ok)
        checks |= {
            "CFR is a fraction": bool(t["cfr"]["cfr"].dropna().between(0, 1).all()),
            "CFR rows are counterfactual dimensions only": not (
                t["cfr"]["dimension"].isin(["original"]) | t["cfr"]["dimension"].astype(str)
                .str.startswith("robustness")).any(),
            "CFR dimensions were asked for": set(t["cfr"]["dimension"]) <= set(s.get("dimensions", [])),
            "every judged row written to Parquet": s.get("streamed", {}).get("n_rows_parquet") == s.get("n_rows"),
            "one judgment per request counted": int(t["parse_rates"]["n"].sum()) == int(s.get("n_requests", -1))
            if len(t["parse_rates"]) else int(s.get("n_requests", -1)) == 0,
        }
        return checks | _intervals_contain_estimates(t)

    # -- display helpers ---------------------------------------------------------------------------
    def header(self) -> str:
        """A Markdown line describing this run, generated from its parameters and plan (names escaped)."""
        return md_safe(self._header())

    def _header(self) -> str:
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
                f"x {len(s['dimensions'])} dimensions ({design}); judges {', '.join(map(md_code, s['judges']))}; "
                f"{p.repeats} repeats per original; {s['n_requests']} distinct requests "
                f"(estimated {est:.1f} min on the embedded local judge with a cold cache; took {s['wall_s']:.0f} s)."
                + (f" Tables rest on **{s['source']}** transcripts" if s.get("source") else "")
                + (_star_words(s["star"]) if s.get("star") else "."))

    def flipped_examples(self, k: int = 3) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
        """Up to ``k`` units whose Auto-QA answer differs between conditions: (answers, edits side by side).
        Looked for among the transcripts whose variants the result keeps (the first
        :data:`.requests.PREVIEW_ITEMS`); only their rows are read."""
        from cfbench.perturb import side_by_side
        from cfbench.studies.contact_center_qa.tables import flipped_units

        v = self.frames.get("variants")
        kept = list(dict.fromkeys(v["item_id"])) if isinstance(v, pd.DataFrame) and len(v) else []
        rows = self._first_rows("rows", kept)
        if not len(rows):
            return []
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

    def _first_rows(self, name: str, items: Sequence[str]) -> pd.DataFrame:
        """``rows`` or ``judgments`` of ``items`` only, read from the run's Parquet file with a filter."""
        loaded = dict.get(self.frames, name) if isinstance(self.frames, dict) else None
        if isinstance(loaded, pd.DataFrame):
            return loaded[loaded["item_id"].isin(list(items))]
        path = Path(self.run_dir) / f"{name}.parquet" if self.run_dir is not None else None
        if path is None or not path.is_file():
            f = self.frames.get(name)
            return f[f["item_id"].isin(list(items))] if isinstance(f, pd.DataFrame) and len(f) else pd.DataFrame()
        return pd.read_parquet(path, filters=[("item_id", "in", list(items))])

    def view(self, directory: "str | os.PathLike[str] | None" = None, *, height: int = 720) -> Any:
        """The run explorer page. A run of more than :data:`VIEW_ITEMS` transcripts gets the page of its first
        :data:`VIEW_ITEMS` (the page holds every pair it shows; the tables are the whole run's), built from a
        ``view_preview/`` folder of their rows; written as ``<directory>/view.html`` given ``directory``."""
        items = list(self.summary.get("items", []))
        if len(items) <= VIEW_ITEMS:
            return super().view(directory, height=height)
        from cfbench.view import ViewPage, write_view

        first = items[:VIEW_ITEMS]
        with tempfile.TemporaryDirectory(prefix="cfbench-view-") as tmp:
            d = Path(directory) / "view_preview" if directory is not None else Path(tmp)
            out = StudyResult.save(self, d)
            for name in ("rows", "judgments"):
                out.table(name, self._first_rows(name, first), fmt="parquet")
            src = Path(self.run_dir) / "variants.parquet" if self.run_dir is not None else None
            if src is not None and src.is_file():
                pd.read_parquet(src, filters=[("item_id", "in", first)]).to_parquet(d / "variants.parquet",
                                                                                     index=False)
            target = Path(directory) / "view.html" if directory is not None else d / "view.html"
            path = write_view(d, target, title=f"the first {len(first)} of {len(items)} transcripts "
                                               "(tables: all of them)")
            return ViewPage(path.read_text(encoding="utf-8"), path=path if directory is not None else None,
                            height=height)

    # -- findings -----------------------------------------------------------------------------------
    def findings(self) -> str:
        from cfbench.studies.contact_center_qa.findings import findings_markdown

        return md_safe(findings_markdown(self))  # no raw tag from a name, whatever it held


@uses_judge_settings
def run(params: Params, out: "RunOutput | str | Path | None" = None, *,
        transcripts: Sequence[Any] | None = None, config_name: str = "", progress: bool | str = True,
        say_warnings: bool = True, cache: Any = None, mode: str | None = None,
        wave: Any = None) -> ContactCenterResult:
    """Run the study: per transcript variants -> plan -> judgments -> item statistics; then tables ->
    figures (-> files when ``out`` is given).

    The transcripts are walked one at a time (:func:`.judging.iter_judged`): each one's judged rows update
    the item-statistics state (:func:`.tables.new_state`) and are appended to ``rows.parquet`` /
    ``judgments.parquet`` (with ``variants.parquet`` for the explorer) in ``out``, or in a temporary folder
    the result keeps when ``out`` is None. Every table is computed from the state, so memory stays flat in
    the number of transcripts. ``frames["rows"]`` and ``frames["judgments"]`` read those files when first
    used; the other per-row frames (``transcripts``, ``variants``, ``plan``) and ``result.plan`` cover
    the first :data:`.requests.PREVIEW_ITEMS` transcripts; ``skipped``, ``plan_summary`` and ``cost`` cover all.

    ``transcripts`` (loaded :class:`~cfbench.io.transcripts.Transcript` objects, or any iterable of them)
    replaces loading from ``params.transcripts_path``; all of them are audited.
    ``config_name`` is recorded in the summary (``config``). ``progress``: show one progress line (a string
    names it; the default name is the study's, with the transcripts' file for given ones). ``cache``: the
    response cache to use; ``mode``: the judge runner's mode (None: ``$CFBENCH_MODE`` or live). ``wave`` (a
    sequential run): called with each admitted wave's plans and the audit before the wave is judged
    (:func:`.sequential.run_batch` sends the wave through the Batch API there and judges it from the cache).
    """
    if transcripts is None and os.environ.get("CFBENCH_MODE") == "plan":
        preview = _plan_only_preview(params, out, config_name=config_name, progress=progress)
        if preview is not None:
            return preview
    t0 = time.time()
    dims = dims_of(params)
    rubric = load_rubric()
    run_out = RunOutput(out) if out is not None and not isinstance(out, RunOutput) else out
    keep = None if run_out is not None else tempfile.TemporaryDirectory(prefix="cfbench-cc-run-")
    folder = Path(keep.name) if keep is not None else run_out.dir
    walked = _walk(params, folder, transcripts, cache=cache, progress=progress, rubric=rubric, mode=mode, wave=wave)
    tables = finish_tables(walked.pop("tables"), params, walked["flags"], walked.pop("variants_compact"))
    source = ("star" if walked["items"] and walked["all_star"] else
              source_of(params, walked["first"][:1], given=transcripts is not None))
    real = (_real_arm(params, progress=progress, cache=cache, mode=mode) if params.real_items and transcripts is None
            else None)
    tables = _with_real_arm(tables, real, source)
    tables.update(gate_tables(tables, params))  # verdicts (gates.py): responsiveness before invariance
    if walked.get("sequential") is not None:  # sequential audit (issue 35)
        tables["sequential_cells"] = walked["sequential"].table()
        tables["sequential_waves"] = walked["sequential"].waves_table()
    frames = _RunFrames(walked["frames"], {"rows": folder / "rows.parquet", "judgments": folder / "judgments.parquet"})
    summary = {"config": config_name} | _summary(params, walked, tables, dims, rubric, t0)
    summary["source"] = source
    if walked.get("sequential") is not None:  # sequential audit (issue 35): for the findings sentence
        summary["sequential"] = walked["sequential"].summary(
            budget=walk_params(params).n_items if transcripts is None else params.max_items or len(walked["items"]))
    if real is not None and not isinstance(real, str):
        for name in ("transcripts", "variants", "judgments", "rows"):
            real.frames[name] = real.frames[name].assign(source="star")
        frames["star_transcripts"] = real.frames["transcripts"]
        frames["star_judgments"] = real.frames["judgments"]
        frames.update(_explorer.star_frames(real.frames))  # the arm's judged rows, for the run explorer
        summary["star"] = {k: real.summary[k] for k in ("items", "dimensions", "n_requests", "wall_s",
                                                        "accuracy_pct", "mean_cfr_pct", "label_source")}
        if "screen" in real.summary:  # a margin-screened arm (.screen)
            summary["star"]["screen"] = real.summary["screen"]
    result = ContactCenterResult(params=params, frames=frames, tables=tables, summary=summary, plan=walked["plan"])
    result.run_dir, result._keep = folder, keep
    labels = {d: DIMENSIONS[d].label for d in dims}
    result.figures = _figures.study_figures(tables, dimensions=dims, labels=labels, n_items=len(walked["items"]))
    _say_parse_failures(walked["parsed"], tables["parse_rates"])
    if say_warnings:
        for line in tables["warnings"]["message"]:
            print(f"warning: {line}")
    if run_out is not None:
        result.save(run_out)
    return result


def finish_tables(tables: dict[str, pd.DataFrame], params: Params, flags: Mapping[Any, Any],
                  variants: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The run's tables from :func:`.tables.tables_from_stats`' and the parameters: column and judge order,
    the variant rejections (Table 9), Table 2 and the warnings. ``flags``: the state's
    flags (which judges have P(Yes)); ``variants``: the run's variants (no text needed)."""
    from cfbench.perturb import rejection_table

    dims = dims_of(params)
    labels = {d: DIMENSIONS[d].label for d in dims}
    if len(variants) and "condition" in variants.columns:  # placebo arm (issue 33): not in Table 9 or the warnings
        variants = variants[variants["condition"].astype(str) != "placebo"]
    tables = _order_columns(tables)
    tables["variant_rejections"] = rejection_table(variants)
    tables["table2"] = _figures.table2(tables["cfr"], tables["masd"], tables["robustness"], tables["accuracy"],
                                       dimensions=dims, labels=labels).reset_index()
    tables = _in_judge_order(tables, list(params.judges))
    p_yes = pd.DataFrame([{"judge": k[1], "task": "qa", "parse_ok": True,
                           "p_yes": 1.0 if ("p_yes_any", k[1]) in flags else np.nan}
                          for k in flags if k[0] == "qa_parsed"], columns=["judge", "task", "parse_ok", "p_yes"])
    tables["warnings"] = drop_warnings(params, dims, variants, p_yes, tables)
    return tables


def _walk(params: Params, folder: Path, transcripts: Iterable[Any] | None, *, cache: Any, progress: bool | str,
          rubric: pd.DataFrame, mode: str | None = None, wave: Any = None) -> dict[str, Any]:
    """Every selected transcript once: judged, its rows into the item-statistics state and the Parquet files,
    a few counts kept; then the tables from the state. Returns what :func:`run` assembles the result from."""
    from cfbench.studies.contact_center_qa.streamed import ParquetRows, VariantsParquet

    spill = tempfile.TemporaryDirectory(prefix="cfbench-item-stats-")  # compacted statistics wait on disk
    state = new_state(spill=spill.name)
    writers = {"rows": ParquetRows(folder / "rows.parquet"), "judgments": ParquetRows(folder / "judgments.parquet")}
    variants_out = VariantsParquet(folder / "variants.parquet")
    for stale in ("rows.parquet", "judgments.parquet", "variants.parquet"):
        (folder / stale).unlink(missing_ok=True)  # a folder run into again: nothing of the last run is mixed in
    w = _Walked()
    # sequential audit (issue 35, .sequential): waves, decided dimensions dropped from later plans
    seq = _sequential_audit(params, transcripts, batch=wave is not None)
    walk = walk_params(params)
    bar = None
    if progress:
        from tqdm import tqdm  # a text bar: it renders in executed notebooks and terminals alike

        # at most one update per 10 s: an executed notebook keeps every update as an output line; not drawn in
        # its first second, so the loaders' warnings and llama.cpp's load line do not land glued to a "0/36"
        bar = tqdm(total=_bar_total(transcripts, walk), desc=_bar_label(params, transcripts, progress),
                   mininterval=10, delay=1)
    try:
        for t, variants, plan, judgments, rows, st in iter_judged(
                walk, transcripts=_budgeted(transcripts, walk), cache=cache, rubric=rubric,
                dimensions=seq.undecided_dimensions if seq is not None else None,
                wave_size=seq.wave_size if seq is not None else 1, admit=_admit(seq, wave), mode=mode):
            state.update(rows, judgments, variants, complete=True)
            w.add(t, variants, plan, judgments, rows, st)
            writers["rows"].write(rows)
            j = judgments
            if "top_logprobs" in j.columns:
                j = j.assign(top_logprobs=j["top_logprobs"].astype(str))
            writers["judgments"].write(j)
            variants_out.write(variants)
            if bar is not None:
                bar.update(1)
            if seq is not None and seq.add(rows):  # sequential: every cell decided, no more requests
                break
        if seq is not None:
            seq.close_wave()
        tables = state.compute(n_boot=params.n_boot, seed=params.seed)  # judge pairs in sorted order
        variants_compact = state.stats.frame("variants")
    finally:
        for wr in (*writers.values(), variants_out):
            wr.close()
        if bar is not None:
            bar.refresh()  # the final count is drawn even when the delay or the 10 s interval held every update
            bar.close()
        spill.cleanup()
    out = w.finish(params)
    out.update(tables=tables, flags=dict(state.stats.flags), variants_compact=variants_compact,
               n_rows_parquet=writers["rows"].n_rows, sequential=seq)
    return out


def _sequential_audit(params: Params, transcripts: Iterable[Any] | None, *,
                      batch: bool = False) -> "SequentialAudit | None":
    """The run's sequential audit (None unless ``params.sequential``); one cell per judge x dimension, with
    the run's request and dollar budgets (``batch``: priced at the Batch-API price)."""
    if not params.sequential:
        return None
    prices = judge_prices(params.judges, batch=batch) if params.max_cost_usd else {}
    return SequentialAudit(judges=list(params.judges), dimensions=dims_of(params), max_net=params.gate_max_net_cfr,
                           wave_size=params.wave_size, max_requests=params.max_requests,
                           max_cost_usd=float(params.max_cost_usd), prices=prices,
                           max_looks=max(1, -(-walk_params(params).n_items // params.wave_size)),
                           questions=tuple(params.questions))


def _admit(seq: "SequentialAudit | None", wave: Any = None) -> Any:
    """The walk's budget check before each wave (None without a budget); ``wave``, when given, is called with
    the admitted wave's plans next (the Batch path sends them there, and returns the requests it re-sent: they
    are counted as spent)."""
    if seq is None:
        return None

    def admit(plans: list) -> bool:
        if not seq.admit(plans):
            return False
        if wave is not None:
            seq.resent(wave(plans, seq) or {})
        return True
    return admit


def _bar_total(transcripts: Iterable[Any] | None, walk: Params) -> int | None:
    """How many transcripts the walk will judge, when that is known before it starts: the selected synthetic
    calls, or a list of given ones (a sequential audit may stop early; its total is its budget)."""
    if transcripts is None:
        return walk.n_items
    if not isinstance(transcripts, Sequence):
        return None
    return min(len(transcripts), walk.max_items) if walk.sequential and walk.max_items else len(transcripts)


def _bar_label(params: Params, transcripts: Iterable[Any] | None, progress: bool | str) -> str:
    """The progress bar's name: ``progress`` when it is one, else the study's, and for given transcripts the
    file or folder they came from."""
    if isinstance(progress, str):
        return progress
    if transcripts is None or not params.transcripts_path:
        return "contact-center"
    return f"contact-center ({Path(params.transcripts_path).name})"


def _budgeted(transcripts: Iterable[Any] | None, walk: Params) -> Iterable[Any] | None:
    """Given transcripts, at most the sequential budget of them (``walk`` is :func:`.sequential.walk_params`)."""
    if transcripts is None or not walk.sequential:
        return transcripts
    import itertools

    return itertools.islice(transcripts, walk.max_items or None)


def _is_count(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _add_stats(agg: dict, s: Mapping[str, Any]) -> None:
    """Fold one transcript's runner tallies into the run's: counts add up (a ``peak_*`` is the largest),
    counts by kind add up per kind (``failures_by_kind``, ``retries_by_kind``), lists follow one another
    (``concurrency_history``), and the rest (the judge's name, mode, cost note) is the first transcript's."""
    for k, v in s.items():
        if k == "non_completion_rate":
            continue
        if _is_count(v) and k.startswith("peak"):
            agg[k] = max(agg.get(k, v), v)  # the run's peak, not a sum of peaks
        elif _is_count(v):
            agg[k] = agg.get(k, 0) + v
        elif isinstance(v, dict) and all(_is_count(x) for x in v.values()) and isinstance(agg.get(k, {}), dict):
            have = dict(agg.get(k, {}))
            for kind, n in v.items():
                have[kind] = have.get(kind, 0) + n
            agg[k] = dict(sorted(have.items()))
        elif isinstance(v, list) and isinstance(agg.get(k, []), list):
            agg[k] = list(agg.get(k, [])) + list(v)
        else:
            agg.setdefault(k, v)


class _Walked:
    """What the walk keeps besides the item statistics: counts, the row-level checks, and the per-row frames
    of the first :data:`.requests.PREVIEW_ITEMS` transcripts."""

    def __init__(self) -> None:
        self.items: list = []
        self.first: list = []
        self.preview: dict[str, list] = {"variants": [], "plan": []}
        self.skipped: list = []
        self.plan_summary: list = []
        self.cost: list = []
        self.run_stats: dict = {}
        self.parsed: dict = {}  # judge -> [judgments, parsed]
        self.checks: dict = {}
        self.all_star = True
        self.n_requests = self.n_rows = 0
        self.settings: dict = {}

    def add(self, t: Any, variants: pd.DataFrame, plan: Any, judgments: pd.DataFrame, rows: pd.DataFrame,
            st: dict) -> None:
        self.items.append(t.id)
        self.all_star = self.all_star and dict(getattr(t, "meta", {}) or {}).get("source") == "star"
        if len(self.first) < PREVIEW_ITEMS:
            self.first.append(t)
            self.preview["variants"].append(variants)
            self.preview["plan"].append(plan)
        if not self.settings:
            self.settings = dict(plan.settings)
        self.skipped.append(plan.skipped)
        self.plan_summary.append(plan.summary())
        self.cost.append(estimate_cost(plan))
        for judge, s in st.items():
            _add_stats(self.run_stats.setdefault(judge, {}), s)
        if len(judgments):
            for judge, g in judgments.groupby("judge", sort=False):
                c = self.parsed.setdefault(judge, [0, 0])
                c[0], c[1] = c[0] + len(g), c[1] + int(g["parse_ok"].astype(bool).sum())
        for name, ok in _row_checks(plan.n_requests, judgments, rows).items():
            self.checks[name] = bool(self.checks.get(name, True) and ok)
        self.n_requests += len(judgments)
        self.n_rows += len(rows)

    def finish(self, params: Params) -> dict[str, Any]:
        for s in self.run_stats.values():
            s["non_completion_rate"] = (s.get("n_failed", 0) / s["n_unique"]) if s.get("n_unique") else 0.0
        plan = _joined_plan(self.preview["plan"], params)
        from cfbench.io.transcripts import transcripts_frame

        frames = {"transcripts": transcripts_frame(self.first),
                  "variants": _concat(self.preview["variants"]), "plan": plan.rows if plan is not None else None,
                  "plan_summary": _summed(self.plan_summary, ["judge", "arm", "task"]),
                  "cost": _summed(self.cost, ["judge"]), "skipped": _concat(self.skipped)}
        settings = dict(self.settings, n_items=len(self.items), coaching_items=sorted(
            i for i in self.items[:params.coaching_items]) if self.settings.get("coaching") else [])
        return {"items": self.items, "first": self.first, "all_star": self.all_star, "frames": frames,
                "plan": plan, "run_stats": self.run_stats, "parsed": self.parsed, "checks": self.checks,
                "n_requests": self.n_requests, "n_rows": self.n_rows, "settings": settings}


def _concat(parts: list) -> pd.DataFrame:
    parts = [p for p in parts if p is not None and len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _summed(parts: list, keys: list[str]) -> pd.DataFrame:
    """Per-transcript count frames added up per ``keys`` (the whole run's counts)."""
    f = _concat(parts)
    return f.groupby(keys, sort=True).sum(numeric_only=True).reset_index() if len(f) else f


def _joined_plan(plans: list, params: Params) -> Any:
    """The plans of the first transcripts as one :class:`.requests.EvaluationPlan` (row ids renumbered)."""
    from cfbench.studies.contact_center_qa.requests import EvaluationPlan

    if not plans:
        return None
    rows = _concat([p.rows for p in plans])
    if "row_id" in rows.columns:
        rows["row_id"] = np.arange(len(rows))
    requests: dict[str, list] = {}
    for p in plans:
        for judge, reqs in p.requests.items():
            requests.setdefault(judge, []).extend(reqs)
    settings = dict(plans[0].settings, n_items=len(plans))
    return EvaluationPlan(rows=rows, requests=requests, skipped=_concat([p.skipped for p in plans]),
                          settings=settings)


def _row_checks(n_requests: int, judgments: pd.DataFrame, rows: pd.DataFrame) -> dict[str, bool]:
    """The row-level invariants on judgments and rows of ``n_requests`` distinct requests (one transcript's
    during the walk, which ANDs them; the whole run's when its frames are in memory)."""
    out = {"one judgment per distinct request": len(judgments) == n_requests}
    if len(rows):
        orig = rows[(rows["dimension"] == "original") & (rows["arm"] == "baseline")]
        out["one original per unit"] = not orig.duplicated(["judge", "task", "question_id", "item_id"]).any()
    if len(judgments):
        j = judgments
        ok = j["parse_ok"].astype(bool)
        out |= {"no request judged twice": int(j.groupby("judge")["key"].nunique().sum()) == len(j),
                "a parsed reply has a value": bool((~ok | j["answer"].notna() | j["score"].notna()).all()),
                "a parse failure never becomes an answer": not j.loc[~ok, "answer"].notna().any(),
                "a parse failure never becomes a score": not j.loc[~ok, "score"].notna().any()}
    return out


class _RunFrames(dict):
    """A run's frames; ``rows`` and ``judgments`` are read from the run's Parquet files when first used."""

    def __init__(self, frames: Mapping[str, Any], lazy: Mapping[str, Path]):
        super().__init__(frames)
        self._lazy = {k: Path(v) for k, v in lazy.items() if k not in frames}

    def _load(self, key: Any) -> None:
        path = self._lazy.pop(key, None)
        if path is not None:
            super().__setitem__(key, pd.read_parquet(path) if path.is_file() else pd.DataFrame())

    def __getitem__(self, key: Any) -> Any:
        self._load(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._load(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._lazy or super().__contains__(key)

    def __iter__(self):
        return iter(list(super().keys()) + [k for k in self._lazy if not super().__contains__(k)])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def keys(self):  # type: ignore[override]
        return list(iter(self))

    def items(self):  # type: ignore[override]
        return [(k, self[k]) for k in list(iter(self))]

    def values(self):  # type: ignore[override]
        return [self[k] for k in list(iter(self))]


def _with_real_arm(tables: dict[str, pd.DataFrame], real: Any, source: str) -> dict[str, pd.DataFrame]:
    """The ``source`` column on every table, then the real-dialogue arm's tables (``star_*``) and warnings."""
    if isinstance(real, str):  # the arm was asked for but its dialogues are absent: say so, once
        tables["warnings"] = pd.concat([tables["warnings"], pd.DataFrame(
            [{"kind": "real_arm", "judge": "", "dimension": "", "reason": real, "message": real}])],
            ignore_index=True)
    tables = _with_source(tables, source)  # before the STAR tables join: theirs say "star"
    if real is not None and not isinstance(real, str):
        for name in REAL_TABLES:
            tables[f"star_{name}"] = real.tables[name]
        if "screen" in real.tables:  # the margin screen's record (.screen): one row per screened dialogue
            tables["star_screen"] = real.tables["screen"].assign(source="star")
        tables["warnings"] = pd.concat([tables["warnings"], real.tables["warnings"].assign(
            message=lambda w: "STAR arm: " + w["message"])], ignore_index=True)
    return tables


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


def _plan_cost_line(rows: Sequence[dict[str, Any]]) -> str:
    """The plan-only header's cost sentence: per judge, requests, estimated tokens, estimated USD (written
    "USD 1.23", never with "$": in the header's Markdown, two "$" are set as a formula in JupyterLab)."""
    parts = []
    for r in rows:
        usd = r["cost_usd_est"]
        cost = "not priced" if usd is None else ("USD 0 (no API)" if usd == 0 else f"≈ USD {usd:,.2f}")
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
REAL_TABLES = ("accuracy", "accuracy_by_label", "cfr", "masd", "robustness", "cfr_minus_robustness", "table2",
               "variant_rejections", "flips_by_margin")


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


def real_dialogues(path: str | Path, n: int, *, label: str = "issue_resolution", at_least: int | None = None
                   ) -> list[Any]:
    """The first ``n`` STAR dialogues with the customer's task-success answer, alternating resolved and
    not resolved (by that answer) as far as the corpus allows; raises InputError when fewer qualify
    (``at_least``: when fewer than that many qualify; the ones there are otherwise)."""
    import warnings as _warnings

    from cfbench.io.dialogues import load_dialogues

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", UserWarning)  # dialogues without a turn are left out
        ts = [t for t in load_dialogues(path) if dict(t.labels).get(label) in ("Yes", "No")]
    if at_least is not None and at_least < n:
        got: list[Any] = []
        try:
            got.extend(iter_selected(ts, n, require_agent_name=False, balance_label=label))
        except InputError:
            if len(got) < at_least:
                select_items(ts, at_least, require_agent_name=False, balance_label=label)  # raises: the shortfall
        return got
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


def _real_arm(params: Params, *, progress: bool | str, cache: Any = None,
              mode: str | None = None) -> "ContactCenterResult | str":
    """The real-dialogue arm: the same judges and design on ``real_items`` balanced STAR dialogues, on the
    dimensions that apply to them (the others are warning rows), accuracy against the customers' labels.
    Returns a one-line reason instead when the dialogues are absent."""
    import dataclasses

    path = _resolve_real_path(params.real_path)
    if path is None:
        return (f"real-dialogue arm skipped: no STAR dialogues at {params.real_path} (the project does not ship "
                "them); the tables rest on synthetic calls only")
    t0 = time.time()
    margin, skip = float(params.real_margin), int(params.real_skip)
    n_candidates = params.real_items * (SCREEN_FACTOR if margin > 0 else 1)
    chosen = real_dialogues(path, skip + n_candidates, at_least=skip + params.real_items)[skip:]
    sub = dataclasses.replace(params, real_items=0, real_margin=0.0, real_skip=0, transcripts_path=str(path),
                              n_items=len(chosen), require_agent_name=False, fairness=False, coaching=False,
                              paraphrases=0, sequential=False, max_requests=0,
                              max_cost_usd=0.0)  # the STAR arm is judged fixed-n (docs/sequential.md)
    screen = None
    if margin > 0:  # only the dialogues the judge is sure of go on to the variants (.screen)
        chosen, table, rows, judgments = screen_dialogues(sub, chosen, margin=margin, want=params.real_items,
                                                          cache=cache, mode=mode, progress=progress)
        screen = {"table": table, "tables": study_tables(rows, judgments, n_boot=params.n_boot, seed=params.seed,
                                                         judges=list(params.judges)),
                  "n_requests": len(judgments), "screened": int(table["item_id"].nunique())}
        if not chosen and (mode or os.environ.get("CFBENCH_MODE")) == "plan":
            return (f"real-dialogue arm: plan only, so the margin screen planned the originals of "
                    f"{screen['screened']} STAR dialogues ({screen['n_requests']} requests) and no variant: which "
                    "dialogues go on to the variants depends on those replies (real_margin)")
        if not chosen:
            return (f"real-dialogue arm: none of the {screen['screened']} STAR dialogues screened has every "
                    f"judge's P(Yes) at least {margin:g} from 0.5 (real_margin); no STAR gate")
        sub = dataclasses.replace(sub, n_items=len(chosen))
    result = run(sub, transcripts=chosen, progress="contact-center (STAR)" if progress else False,
                 say_warnings=False, cache=cache, mode=mode)
    result.summary["label_source"] = ("customers' own answers to the STAR questionnaire's task question "
                                      "(UserQuestionnaire), e.g. 'Did the assistant book your flight?'")
    if screen is not None:
        _screened_accuracy(result, screen, params)
        result.summary["wall_s"] = round(time.time() - t0, 1)  # the screen's time included
    return result


def _screened_accuracy(result: "ContactCenterResult", screen: dict, params: Params) -> None:
    """The arm after a margin screen: its accuracy tables (and so the responsiveness its gate reads) over
    every screened dialogue's original, ``star_screen`` and the screen's counts in the summary."""
    dims = dims_of(result.params)
    t = result.tables
    new = {name: screen["tables"][name] for name in ("accuracy", "accuracy_by_question", "accuracy_by_label")}
    new["table2"] = _figures.table2(t["cfr"], t["masd"], t["robustness"], new["accuracy"], dimensions=dims,
                                    labels={d: DIMENSIONS[d].label for d in dims}).reset_index()
    new = _in_judge_order(new, list(params.judges))  # as the arm's other tables
    t.update(_with_source(new, str(result.summary.get("source") or "star")))
    t["screen"] = screen["table"]
    result.summary["screen"] = {"margin": float(params.real_margin), "skipped": int(params.real_skip),
                                "screened": screen["screened"], "kept": len(result.summary["items"]),
                                "n_requests": screen["n_requests"]}
    acc = t["accuracy"]
    result.summary["accuracy_pct"] = (acc.set_index("judge")["accuracy"] * 100).round(2).to_dict() if len(acc) else {}
    # the kept dialogues' originals were sent by the screen and read back from the cache by the arm: once
    read_twice = len(result.summary["items"]) * len(params.judges) * len(params.questions)
    result.summary["n_requests"] += screen["n_requests"] - read_twice


#: Columns of the ``warnings`` table: what was asked for and yields nothing, and why.
WARNING_COLUMNS = ["kind", "judge", "dimension", "reason", "message"]


def drop_warnings(params: Params, dims: Sequence[str], variants: pd.DataFrame, rows: pd.DataFrame,
                  tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per requested thing that yields no number, with the reason (nothing disappears silently).

    ``kind`` "dimension": a requested dimension with no judged pair in the baseline CFR table (reason:
    the perturber's most frequent not-applicable reason, else the guards' rejection reason, else no
    pair of readable replies). ``kind`` "p_yes": a judge whose Auto-QA replies carry no first-token
    P(Yes) under the compact contract, so its P(Yes) MASD rows are empty. ``kind`` "robustness": ``repeats``
    below 2, so no repeat pair and no noise baseline for the net CFR gate.
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
            why = describe_kinds(tables["parse_rates"][list(KIND_COLUMNS)].sum()) if len(
                tables.get("parse_rates", ())) else ""
            reason = ("no pair of readable replies among its variants" +
                      (f" (replies not read in this run: {why})" if why else ""))
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
    if params.repeats < 2:  # one run per original: no repeat pair, so no noise baseline for the gate
        reason = f"repeats is {params.repeats}: each original runs once, so there is no repeat pair"
        out.append({"kind": "robustness", "judge": "", "dimension": "", "reason": reason,
                    "message": f"{reason}; the robustness rows, cfr_minus_robustness and the net CFR gate have "
                               "no interval (set repeats to 2 or more)"})
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


def _summary(params: Params, walked: Mapping[str, Any], tables: dict[str, pd.DataFrame], dims: list[str],
             rubric: pd.DataFrame, t0: float) -> dict:
    cfr, acc, rob = tables["cfr"], tables["accuracy"], tables["robustness"]
    base = cfr[cfr["arm"] == "baseline"]
    rob_same = rob[(rob["metric"] == "cfr") & (rob["baseline"] == "robustness")] if len(rob) else rob
    parsed = walked["parsed"]
    n_judged = sum(n for n, _ in parsed.values())
    return {
        "judges": list(params.judges), "items": walked["items"], "questions": list(params.questions),
        "qa_mode": params.qa_mode, "dimensions": dims, "n_rows": walked["n_rows"],
        "n_requests": walked["n_requests"],
        "parse_ok_rate": sum(k for _, k in parsed.values()) / n_judged if n_judged else float("nan"),
        "n_parsed": {j: k for j, (_, k) in sorted(parsed.items())},
        "n_not_read": {j: n - k for j, (n, k) in sorted(parsed.items())},
        "failures_by_kind": _failures_by_kind(tables["parse_rates"]),
        "run_stats": walked["run_stats"], "wall_s": round(time.time() - t0, 1),
        "mean_cfr_pct": (base.groupby("judge")["cfr"].mean() * 100).round(2).to_dict(),
        "robustness_cfr_pct": (rob_same.set_index("judge")["value"] * 100).round(2).to_dict() if len(rob_same) else {},
        "accuracy_pct": (acc.set_index("judge")["accuracy"] * 100).round(2).to_dict(),
        "fairness_prompting_delta": tables["fairness_prompting_delta"],
        "plan": walked["settings"], "rubric_version": rubric.attrs.get("version"),
        "params": params.to_mapping(),
        "warnings": [str(m) for m in tables["warnings"]["message"]] if "warnings" in tables else [],
        "row_checks": walked["checks"],
        "streamed": {"rows_parquet": "rows.parquet", "judgments_parquet": "judgments.parquet",
                     "n_rows_parquet": walked["n_rows_parquet"], "preview_items": len(walked["first"])},
    }


def _failures_by_kind(parse_rates: pd.DataFrame) -> dict[str, dict[str, int]]:
    """``{judge: {kind: n}}`` from ``parse_rates``' kind columns (all tasks), kinds with a count only."""
    out: dict[str, dict[str, int]] = {}
    if not len(parse_rates):
        return out
    sums = parse_rates.groupby("judge", sort=True)[list(KIND_COLUMNS)].sum()
    for judge, row in sums.iterrows():
        out[str(judge)] = {k: int(row[c]) for k, c in zip(FAILURE_KINDS, KIND_COLUMNS) if int(row[c])}
    return out


def _say_parse_failures(parsed: Mapping[str, Sequence[int]], parse_rates: pd.DataFrame) -> None:
    kinds = _failures_by_kind(parse_rates)
    for judge, (n, n_ok) in sorted(parsed.items()):
        if n_ok == 0:
            why = describe_kinds(kinds.get(judge, {}))
            print(f"{judge}: none of its {n} requests gave a reply that could be read as an answer in the output "
                  f"contract ({why or 'no reason recorded'}); no CFR, MASD or accuracy is reported for this judge.")


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
                    transcripts_path=str(transcripts) if isinstance(transcripts, (str, Path)) else "",
                    dimensions=tuple(dimensions), conditions_per_dimension=conditions_per_dimension,
                    questions=tuple(questions), qa_mode=qa_mode, repeats=repeats,
                    robustness_temperatures=(0.0,), fairness=False, coaching=False, n_boot=n_boot, seed=seed,
                    concurrency=concurrency, timeout_s=timeout_s)
    return run(params, out, transcripts=loaded, progress=progress)


def _intervals_contain_estimates(t: dict[str, pd.DataFrame]) -> dict[str, bool]:
    """``cfr`` and ``masd``: every interval formed contains its estimate."""
    checks = {}
    for name in ("cfr", "masd"):
        tab = t[name].dropna(subset=["ci_low", "ci_high"])
        checks[f"{name}: interval contains estimate"] = bool(
            ((tab["ci_low"] <= tab[name] + 1e-9) & (tab[name] <= tab["ci_high"] + 1e-9)).all())
    return checks
