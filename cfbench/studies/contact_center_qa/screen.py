"""The real-dialogue arm's margin screen: which STAR dialogues the judge is sure of.

With ``real_margin`` > 0 the arm does not put every dialogue to the variants. Each candidate's original is
judged once (the same request the arm would send first, so the arm reads it back from the cache), and a
dialogue goes on to the variants and the repeat only when every judge's P(Yes) on it, for every question,
lies at least ``real_margin`` from 0.5, where the compact contract's answer turns from No to Yes.
Candidates are taken in the balanced order of :func:`.study.real_dialogues` until ``real_items`` dialogues
are kept, or :data:`SCREEN_FACTOR` times that many have been judged.

What the screen changes is the question the STAR gate answers: "does the judge keep the verdicts it is
sure of, on real dialogues?" rather than "on real dialogues at large". The selection reads the original
reply only - never a variant - so the kept dialogues are a fair sample of that subpopulation and the gate's
interval keeps its meaning there. Every screened dialogue stays in the record (table ``star_screen``), and
the arm's accuracy - the responsiveness check the gate reads - is taken over all of them, not over the
kept ones, so a judge that is sure of everything and right about nothing is not helped by the screen.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import pandas as pd

__all__ = ["screen_dialogues", "SCREEN_COLUMNS", "SCREEN_FACTOR"]

#: at most this many times ``real_items`` candidates are judged before the screen stops short
SCREEN_FACTOR = 3

#: one row per screened dialogue x judge x question: ``margin`` = |P(Yes) - 0.5| of its original, ``threshold`` the
#: run's ``real_margin``, ``kept`` whether the dialogue went on to the variants, ``why`` not (empty when kept)
SCREEN_COLUMNS = ["item_id", "label", "judge", "question_id", "answer", "p_yes", "margin", "threshold", "kept",
                  "why"]


def _originals_only(plan: Any) -> Any:
    """``plan`` cut to each question's original, asked once (repeat 0 of the baseline arm's QA task)."""
    r = plan.rows
    keep = r[(r["task"] == "qa") & (r["arm"] == "baseline") & (r["dimension"] == "original")
             & (r["repeat"] == 0)]
    ids = set(keep["request_id"])
    requests = {j: [q for q in reqs if q.request_id in ids] for j, reqs in plan.requests.items()}
    return dataclasses.replace(plan, rows=keep.reset_index(drop=True), requests=requests,
                               skipped=plan.skipped.iloc[0:0])


def _verdict(rows: pd.DataFrame, judges: Sequence[str], questions: Sequence[str], margin: float,
             item: str) -> tuple[list[dict], bool]:
    """One screen row per judge x question of one dialogue, and whether the dialogue is kept (every row sure)."""
    out = []
    for judge in judges:
        for q in questions:
            sub = rows[(rows["judge"] == judge) & (rows["question_id"] == q)]
            r = sub.iloc[0] if len(sub) else None
            p = float(r["p_yes"]) if r is not None and pd.notna(r["p_yes"]) else math.nan
            if r is None or not bool(r["parse_ok"]):
                why = "reply not read"
            elif not math.isfinite(p):
                why = "no P(Yes) in the reply"
            elif abs(p - 0.5) < margin:
                why = f"P(Yes) within {margin:g} of 0.5"
            else:
                why = ""
            out.append({"item_id": item, "label": r["label"] if r is not None else None, "judge": judge,
                        "question_id": q, "answer": r["answer"] if r is not None else None, "p_yes": p,
                        "margin": abs(p - 0.5) if math.isfinite(p) else math.nan, "threshold": margin, "kept": False,
                        "why": why})
    kept = all(not o["why"] for o in out)
    for o in out:
        o["kept"] = kept
    return out, kept


def screen_dialogues(params: Any, candidates: Sequence[Any], *, margin: float, want: int, cache: Any = None,
                     mode: str | None = None, progress: bool = True, rubric: pd.DataFrame | None = None
                     ) -> tuple[list[Any], pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Judge the originals of ``candidates`` in order until ``want`` are kept (see the module docstring).

    ``params``: the arm's parameters (its judges, questions, contract and generation settings).
    Returns ``(kept, screen, rows, judgments)``: the kept transcripts in order, the ``star_screen`` table
    (:data:`SCREEN_COLUMNS`, one row per screened dialogue x judge x question), and the judged rows and
    judgments of every screened original (what the arm's accuracy is computed from)."""
    from cfbench.studies.contact_center_qa.items import labels_frame
    from cfbench.studies.contact_center_qa.judging import run_plan
    from cfbench.studies.contact_center_qa.prompts import load_rubric
    from cfbench.studies.contact_center_qa.requests import plan_for

    rubric = rubric if rubric is not None else load_rubric()
    # an original's request does not depend on how its variants are made: plan with the rule perturbers only,
    # so no LLM rewrite, check or review runs for a dialogue the screen may leave out (the arm makes them later)
    rules = dataclasses.replace(params, identify_judge="", rewrite_judge="", validate_judge="", decisions_path="",
                                placebo=False)
    kept: list[Any] = []
    table: list[dict] = []
    rows_all, judgments_all = [], []
    bar = None
    if progress:
        from tqdm import tqdm  # one line that updates, as the study's own bar

        bar = tqdm(total=want, desc="STAR screen (kept)", mininterval=10, delay=1)
    try:
        for t in candidates:
            if len(kept) >= want:
                break
            _, plan = plan_for(rules, [t], rubric=rubric, progress=False)
            judgments, rows, _ = run_plan(_originals_only(plan), rubric=rubric, labels=labels_frame([t]),
                                          cache=cache, progress=False, mode=mode)
            lines, ok = _verdict(rows, list(params.judges), list(params.questions), margin, t.id)
            table.extend(lines)
            rows_all.append(rows)
            judgments_all.append(judgments)
            if ok:
                kept.append(t)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.refresh()
            bar.close()
    rows = pd.concat(rows_all, ignore_index=True) if rows_all else pd.DataFrame()
    judgments = pd.concat(judgments_all, ignore_index=True) if judgments_all else pd.DataFrame()
    return kept, pd.DataFrame(table, columns=SCREEN_COLUMNS), rows, judgments
