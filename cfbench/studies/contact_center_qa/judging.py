"""Step 4 of the contact-center study: the judgments. Call every distinct request once, parse every reply.

:func:`run_plan` is the entry (a plan of :mod:`.requests` in, judgments and judged rows out);
:func:`iter_judged` runs it transcript by transcript (what :func:`.study.run` walks). The judgments frame
keeps the raw text of every reply; parse failures stay rows with ``parse_ok=False`` and their
``parse_error``, never a verdict.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from cfbench.studies.contact_center_qa import coaching as _coaching
from cfbench.studies.contact_center_qa import qa as _qa
from cfbench.studies.contact_center_qa.items import iter_items, labels_frame
from cfbench.studies.contact_center_qa.prompts import asks_for_evidence, load_rubric, prompt_parts
from cfbench.studies.contact_center_qa.requests import plan_for

__all__ = ["run_plan", "iter_judged", "PARSED_COLUMNS", "ROW_EVIDENCE_COLUMNS"]

#: parsed fields joined onto every judgment (NaN where a task has no such field)
PARSED_COLUMNS = ("answer", "answer_yes", "confidence", "p_yes", "evidence", "synthesis", "score",
                  "analysis", "parse_ok", "parse_error", "parse_note") + _qa.EVIDENCE_COLUMNS
#: evidence checks carried onto the rows (NaN/None outside the answer / rationale / evidence contract)
ROW_EVIDENCE_COLUMNS = ["evidence_status", "n_quotes", "n_quotes_found", "evidence_found", "evidence_rule_violated"]


def run_plan(plan: Any, *, rubric: pd.DataFrame | None = None,
             labels: pd.DataFrame | None = None, cache: Any = None, progress: bool = True,
             mode: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict]]:
    """Call every distinct request of ``plan`` (a :class:`.requests.EvaluationPlan`) once per judge; parse the replies.

    Returns ``(judgments, rows, stats)``:

    ``judgments``  one row per distinct request and judge: the runner's
                   columns (raw ``text``, ``cache_hit``, ``ok``, tokens, ...),
                   the task, question, item, arm, repeat of its first use,
                   ``n_uses``, and the parsed fields (``answer``,
                   ``answer_yes``, ``confidence``, ``p_yes``, ``score``,
                   ``parse_ok``, ``parse_error``, ``parse_note``, ...)
    ``rows``       the plan's rows with the parsed values joined on, plus
                   ``category``/``type`` from the rubric and ``label``
    ``stats``      the runner's tallies per judge

    ``mode``: the runner's mode (``live``, ``replay``, ``plan``; None: ``$CFBENCH_MODE`` or live).
    """
    from cfbench.judges import run_requests

    rubric = rubric if rubric is not None else _qa.load_rubric()
    parts, stats = [], {}
    for judge, reqs in plan.requests.items():
        res = run_requests(judge, reqs, cache=cache, desc=f"contact-center {judge}", progress=progress, mode=mode)
        stats[judge] = res.stats
        j = res.judgments.copy()
        j["judge"] = judge
        parts.append(j)
    judgments = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    first = plan.rows.drop_duplicates(["judge", "request_id"]).set_index(["judge", "request_id"])
    uses = plan.rows.groupby(["judge", "request_id"]).size().rename("n_uses")
    meta = first[["arm", "task", "question_id", "item_id", "dimension", "condition", "variant_id",
                  "temperature"]].join(uses)
    judgments = judgments.merge(meta, left_on=["judge", "request_id"], right_index=True, how="left")
    qa_mask = (judgments["task"] == "qa").to_numpy()
    parsed = pd.DataFrame(index=judgments.index)
    if qa_mask.any():
        # replies in the answer / rationale / evidence contract are read against their own transcript
        asked = {(judge, r.request_id): prompt_parts(r.messages)
                 for judge, reqs in plan.requests.items() for r in reqs}
        parts_of = [asked.get((j, rid), ("", "", "", False))
                    for j, rid in zip(judgments["judge"], judgments["request_id"])]
        evidence = pd.Series([asks_for_evidence(p[1]) for p in parts_of], index=judgments.index)
        transcripts = pd.Series([p[0].strip("\n") for p in parts_of], index=judgments.index)
        parsed = _qa.parse_qa_frame(judgments.loc[qa_mask], transcripts=transcripts[qa_mask],
                                    evidence=evidence[qa_mask])
    if (~qa_mask).any():
        pc = _coaching.parse_coaching_frame(judgments.loc[~qa_mask])
        parsed = pd.concat([parsed, pc]) if len(parsed) else pc
    parsed = parsed.reindex(judgments.index)
    for col in PARSED_COLUMNS:
        judgments[col] = parsed[col] if col in parsed.columns else np.nan
    judgments["parse_ok"] = judgments["parse_ok"].fillna(False).astype(bool)

    value_cols = ["answer", "answer_yes", "confidence", "p_yes", "score", "parse_ok"] + ROW_EVIDENCE_COLUMNS
    rows = plan.rows.merge(judgments[["judge", "request_id", "cache_hit", "ok"] + value_cols],
                           on=["judge", "request_id"], how="left")
    cat = rubric.set_index("question_id")[["category", "type"]]
    rows = rows.join(cat, on="question_id")
    if labels is not None and len(labels):
        rows = rows.merge(labels[["item_id", "question_id", "label"]], on=["item_id", "question_id"], how="left")
    else:
        rows["label"] = None
    return judgments, rows, stats


def iter_judged(params: Any, *, transcripts: Iterable[Any] | None = None, cache: Any = None,
                rubric: pd.DataFrame | None = None, progress: bool = False,
                dimensions: Callable[[], Sequence[str]] | None = None, wave_size: int = 1,
                admit: Callable[[list], bool] | None = None, mode: str | None = None
                ) -> Iterator[tuple[Any, pd.DataFrame, Any, pd.DataFrame, pd.DataFrame, dict]]:
    """``(transcript, variants, plan, judgments, rows, stats)`` per selected transcript: the transcript's plan
    (coaching notes for the first ``coaching_items``, as a plan of all transcripts would have) answered by
    every judge. ``progress``: the runner's bar per transcript; ``mode``: the runner's mode (:func:`run_plan`).

    A review decisions file (``params.decisions_path``) is read once; each transcript's variants get the
    decisions on their own ids, and a decision on no variant of any transcript raises
    :class:`~cfbench.core.errors.InputError` after the last one (a review of another run is never applied
    silently, and never half).

    Transcripts are planned ``wave_size`` at a time, then judged one by one. ``dimensions`` (a sequential
    audit, :mod:`.sequential`): called before each transcript is planned, it names the dimensions that
    transcript is asked about (the fairness and coaching dimensions are narrowed to them too); None asks
    every transcript about ``params.dimensions``. ``admit`` (a budget): called with a wave's plans before any
    of them is judged; False ends the walk there, nothing of that wave sent."""
    import contextlib
    import tempfile
    from pathlib import Path

    rubric = rubric if rubric is not None else load_rubric()
    coached = dataclasses.replace(params, coaching_items=1)
    plain = dataclasses.replace(params, coaching_items=0)
    items = iter_items(params) if transcripts is None else iter(transcripts)
    decisions = _decisions(params)
    used: set = set()
    # a folder for the per-transcript review files only when there is a review: a walk abandoned by a killed
    # process leaves nothing behind otherwise (most runs have no review)
    with (tempfile.TemporaryDirectory(prefix="cfbench-decisions-") if decisions is not None
          else contextlib.nullcontext(None)) as tmp:
        for wave in _waves(enumerate(items), wave_size):
            planned = []
            for index, t in wave:
                p = coached if index < params.coaching_items else plain
                if decisions is not None:
                    mine = decisions[decisions["_item"] == t.id]
                    used.update(mine.index)
                    path = Path(tmp) / "decisions.csv"
                    mine.drop(columns=["_item"]).to_csv(path, index=False)  # an input read back as given
                    p = dataclasses.replace(p, decisions_path=str(path) if len(mine) else "")
                if dimensions is not None:
                    p = _narrowed(p, list(dimensions()))
                planned.append((t, *plan_for(p, [t], rubric=rubric, progress=False)))
            if admit is not None and not admit([plan for _, _, plan in planned]):
                return  # over the budget: the walk ends before this wave (later transcripts unseen)
            for t, variants, plan in planned:
                judgments, rows, stats = run_plan(plan, rubric=rubric, labels=labels_frame([t]), cache=cache,
                                                  progress=progress, mode=mode)
                yield t, variants, plan, judgments, rows, stats
    if decisions is not None and len(decisions.index.difference(list(used))):
        from cfbench.core.errors import InputError

        left = decisions.loc[decisions.index.difference(list(used))]
        raise InputError(f"not a variant of this run ({len(left)} unknown ids)", source=params.decisions_path,
                         record=left["variant_id"].iloc[0], field="variant_id")


def _waves(items: Iterable[Any], size: int) -> Iterator[list]:
    """``items`` in consecutive lists of ``size`` (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"wave_size must be at least 1, got {size}")
    wave: list = []
    for x in items:
        wave.append(x)
        if len(wave) == size:
            yield wave
            wave = []
    if wave:
        yield wave


def _narrowed(params: Any, dims: list[str]) -> Any:
    """``params`` asking about ``dims`` only: the fairness and coaching arms keep only their dimensions among
    them (an arm left with none is off; an empty list would mean "all")."""
    if not dims:
        raise ValueError("a transcript must be asked about at least one dimension")
    keep = set(dims)
    p = dataclasses.replace(params, dimensions=tuple(dims))
    for arm, field in (("fairness", "fairness_dimensions"), ("coaching", "coaching_dimensions")):
        chosen = getattr(params, field)
        if chosen:
            left = tuple(d for d in chosen if d in keep)
            p = dataclasses.replace(p, **({field: left} if left else {arm: False, field: ()}))
    return p


def _decisions(params: Any) -> pd.DataFrame | None:
    """The run's review decisions with the item each one is about (``_item``), or None."""
    path = getattr(params, "decisions_path", "") or ""
    if not path:
        return None
    from cfbench.perturb import read_decisions

    d = read_decisions(path)
    ids = [v[1:] if v[:1] == "'" and v[1:2] in ("=", "+", "-", "@", "\t", "\r") else v for v in d["variant_id"]]
    return d.assign(_item=[v.split("::")[0] for v in ids])
