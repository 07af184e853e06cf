"""A sequential audit of the judge-bias cue gates: judge items in waves, stop sending a decided cue's requests.

With ``Params.sequential`` on, :func:`.study.run` walks the items in plan order in waves of ``wave_size`` items
(at most ``max_items``, 0: all; at most ``max_requests`` requests over all judges, 0: no limit; at most
``max_cost_usd`` dollars by the price table, 0: no limit). The cells are
judge x pairwise cue, the gate "the cue's net flip rate is at most ``gate_max_net_flip``". An item's statistic
is its **net flip share**

    d_i = (flips under the cue / pairs) - (the item's noise flip share),

the noise being the reworded prompt's flip share on the same item, or, when repeats are sent, the smaller of
that and the repeat flip share (the smaller noise decides a pass, as in the fixed-n gate; a fail then says the
cue flips the judge more than each item's smaller noise by more than the maximum on average). ``d_i`` lies in
[-1, 1]; the betting confidence sequence runs on that declared range (mapped to [0, 1] as (d + 1) / 2 inside
:class:`cfbench.stats.sequential.BettingCS`, so bounds map back exactly). Items count as in the fixed-n gate:
with a cue pair, a noise pair (and a repeat pair when repeats are sent).

With ``pointwise_cues``, each pointwise cue is a cell too (task ``pointwise``; the gate "the cue's net absolute
score shift is at most ``gate_max_score_shift`` points"): an item's statistic is |cued - baseline| on the 1-10
scale minus the item's noise shift (|reworded - baseline|, or the smaller of that and the mean |repeat -
baseline|), in [-9, 9], the sequence running on that range (:func:`pointwise_net_items`). The fixed-n pointwise
gate's floor of items is not needed: a confidence sequence holds its level at every look.

Each cell runs at 5 % / cells (Bonferroni over judges x tasks x cues,
:class:`cfbench.stats.sequential_cells.SequentialCells`).
Responsiveness first: a cell passes only once its judge is shown to look at the replies, on every item judged
so far: a pairwise cell by :func:`.metrics.responsiveness_of` (control-pair accuracy and position consistency
above 0.5), a pointwise cell by :func:`.metrics.pointwise_responsiveness` (the known-worse reply of the control
items scored lower, share of untied items above 0.5); a sequence that clears without it stays ``inconclusive`` and the cue keeps being asked. A decided
cell's cue requests are no longer sent to that judge (the baseline, reworded, repeat and pointwise requests are
shared references and are sent for every walked item; the ``position`` cue reads the baseline orders, so deciding
it saves nothing; likewise a decided pointwise cell's cued score requests). The run stops when every cell is decided, the items or ``max_items`` run out, or the next wave
would pass ``max_requests`` or ``max_cost_usd`` (a wave is sent whole or not at all; its cost is estimated from
its prompts' characters and each request's ``max_tokens``, an upper bound, before it is sent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from cfbench.judges.pricing import budget_pricers, over_budget, resent_usd
from cfbench.metrics.state import ItemStatistics
from cfbench.stats.sequential_cells import SequentialCells, add_wave_tallies
from cfbench.stats.sequential import looks_level

from . import metrics as M
from .tasks import parse_judgments

__all__ = ["SequentialWalk", "judge_in_waves", "net_items", "sequential_sentence"]


@dataclass
class SequentialWalk:
    """What :func:`judge_in_waves` returns: per judge the judgments and parsed answers of every request sent
    (``judge`` column), the items walked, the cells and how the walk ended."""

    judgments: pd.DataFrame
    parsed: pd.DataFrame
    cells: SequentialCells
    items: list = field(default_factory=list)
    budget: int = 0
    requests_sent: int = 0
    requests_resent: int = 0
    spent_usd: float = 0.0
    stopped_by: str = ""
    stats: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {"n_walked": len(self.items), "budget": self.budget, "waves": self.cells.wave,
                "n_cells": len(self.cells.keys), "alpha": self.cells.alpha, "alpha_per_cell": self.cells.cell_alpha,
                "requests_sent": self.requests_sent, "requests_resent": self.requests_resent,
                "spent_usd": self.spent_usd, "stopped_by": self.stopped_by}


def net_items(cues: pd.DataFrame) -> dict:
    """(judge, cue) -> the items' net flip shares ``d`` in item order, from the ``cues`` cells of
    :func:`.metrics.item_stats` (items with a cue pair and a noise pair, and a repeat pair where the judge was
    sent repeats)."""
    out: dict = {}
    if not len(cues):
        return out
    for (judge, cue), g in cues.groupby(["judge", "cue"], sort=False):
        has_rep = bool((g["rep_den"] > 0).any())
        g = g[(g["den"] > 0) & (g["noise_den"] > 0) & ((g["rep_den"] > 0) if has_rep else True)]
        noise = g["noise_flips"].to_numpy(float) / g["noise_den"].to_numpy(float)
        if has_rep:
            noise = np.minimum(noise, g["rep_flips"].to_numpy(float) / g["rep_den"].to_numpy(float))
        out[(judge, cue)] = list(g["flips"].to_numpy(float) / g["den"].to_numpy(float) - noise)
    return out


def pointwise_net_items(cells: pd.DataFrame, cues: Sequence[str]) -> dict:
    """(judge, "pointwise", cue) -> the items' net absolute score shifts in item order, from the ``pointwise``
    cells of :func:`.metrics.item_stats` (one parsed 1-10 score per item x condition):

        d_i = |cued - baseline| - (the item's noise shift),

    the noise being |reworded - baseline|, or, when repeats were sent, the smaller of that and the mean
    |repeat - baseline| (as for the pairwise cells). Items lacking the cue's, the baseline's or a noise score
    (a parse failure) are not counted. ``d_i`` lies in :data:`.metrics.SCORE_NET_RANGE`."""
    out: dict = {}
    if not len(cells):
        return out
    for judge, g in cells.groupby("judge", sort=False):
        order = list(dict.fromkeys(g["item_id"]))
        wide = (g.drop_duplicates(["item_id", "condition"])
                .pivot(index="item_id", columns="condition", values="score").reindex(order))
        if "baseline" not in wide.columns or "reworded" not in wide.columns:
            continue
        base = wide["baseline"].to_numpy(float)
        noise = np.abs(wide["reworded"].to_numpy(float) - base)
        reps = [c for c in M.repeat_conditions(g) if c in wide.columns]
        if reps:
            shifts = np.abs(wide[reps].to_numpy(float) - base[:, None])
            seen = np.isfinite(shifts).sum(axis=1)
            rep = np.where(seen > 0, np.nansum(shifts, axis=1) / np.maximum(seen, 1), np.nan)
            noise = np.where(np.isnan(rep), np.nan, np.fmin(noise, rep))
        for cue in cues:
            if cue not in wide.columns:
                continue
            d = np.abs(wide[cue].to_numpy(float) - base) - noise
            out[(judge, "pointwise", cue)] = [float(x) for x in d[np.isfinite(d)]]
    return out


def _responsive(acc: ItemStatistics, judge: str, task: str, params: Any, *, level: float = 0.95
                ) -> tuple[bool, str]:
    """The responsiveness of ``judge`` on ``task`` over the items judged so far: the pairwise checks for the
    pairwise cells, the pointwise control discrimination for the pointwise ones (as in the fixed-n tables),
    their intervals at ``level`` (:func:`cfbench.stats.sequential.looks_level`: the walk looks after every wave)."""
    if task == "pointwise":
        return M.pointwise_responsiveness(M.pointwise_control_table(M.judge_cells(acc, "pointwise_control", judge),
                                                                    level=level))
    position = M.position_table(M.judge_cells(acc, "position", judge), n_boot=params.n_boot, seed=params.seed,
                                level=level)
    return M.responsiveness_of(position, M.accuracy_table(M.judge_cells(acc, "accuracy", judge), level=level))


def _wave_requests(plan: Any, wave: list, cells: SequentialCells, judge: str) -> list:
    """The requests of the wave's items for ``judge``, without the (task, cue) whose cell for this judge is
    decided."""
    undecided = set(cells.undecided())
    decided = {(task, cue) for (j, task, cue) in cells.keys if j == judge and (j, task, cue) not in undecided}
    keep = {r["request_id"] for r in plan.cued if r["item_id"] in wave
            and (r["task"], r["condition"]) not in decided}
    return [r for r in plan.requests if r.request_id in keep]


def _pointwise_sent(plan: Any) -> bool:
    return any(r["task"] == "pointwise" for r in plan.cued)


def judge_in_waves(params: Any, plan: Any, items: pd.DataFrame, *, progress: bool, cache: Any = None,
                   mode: str | None = None, wave: Any = None) -> SequentialWalk:
    """Judge ``plan``'s items in waves for every judge until each (judge, cue) cell is decided or a budget is
    spent (see the module note). ``cache`` and ``mode`` go to the judge runner (None: its defaults). ``wave``
    (the Batch-API path, :func:`.batch_waves.run_batch`): called as ``wave(requests, items, cells)`` with each
    admitted wave's requests per judge, its item ids and the cells as they stand, before the wave is judged;
    with it a dollar budget is priced at the Batch-API price, and the requests ``wave`` returns (judge -> the
    ones it re-sent) are spent too, before the next wave's budget check."""
    from cfbench.judges import run_requests

    pointwise = list(params.pointwise_cues) if _pointwise_sent(plan) else []
    keys = [(j, "pairwise", c) for j in params.judges for c in params.cues] + \
        [(j, "pointwise", c) for j in params.judges for c in pointwise]
    cells = SequentialCells(keys=keys, key_names=["judge", "task", "cue"],
                            maximum={k: params.gate_max_net_flip if k[1] == "pairwise" else params.gate_max_score_shift
                                     for k in keys},
                            ranges={k: M.SCORE_NET_RANGE for k in keys if k[1] == "pointwise"})
    pricers = budget_pricers(params.judges, max_cost_usd=params.max_cost_usd, batch=wave is not None)
    order = [it.item_id for it in plan.items]
    limit = min(params.max_items or len(order), len(order))
    walk = SequentialWalk(pd.DataFrame(), pd.DataFrame(), cells, budget=limit)
    level = looks_level(max(1, -(-limit // params.wave_size)))  # responsiveness is looked at after every wave
    acc, judgments, parsed_all = ItemStatistics(), [], []
    for start in range(0, limit, params.wave_size):
        if cells.done:
            break
        these = order[start:min(start + params.wave_size, limit)]
        reqs = {j: _wave_requests(plan, these, cells, j) for j in params.judges}
        n = sum(len(r) for r in reqs.values())
        usd = sum(pricers[j](reqs[j]) for j in params.judges if reqs[j]) if pricers else 0.0
        walk.stopped_by = over_budget(n, usd, sent=walk.requests_sent, spent_usd=walk.spent_usd,
                                      max_requests=params.max_requests, max_cost_usd=params.max_cost_usd)
        if walk.stopped_by:
            break
        walk.requests_sent += n
        walk.spent_usd += usd
        if wave is not None:  # the Batch path: its re-sent lines are paid for too
            resent = wave(reqs, these, cells) or {}
            walk.requests_resent += sum(len(r) for r in resent.values())
            walk.spent_usd += resent_usd(resent, pricers)
        wave_parsed = []
        for judge in params.judges:
            ids = {q.request_id for q in reqs[judge]}
            for r in plan.cued:  # each cell's own requests (the shared references are nobody's)
                if r["request_id"] in ids and (judge, r["task"], r["condition"]) in cells.cells:
                    cells.count_requests((judge, r["task"], r["condition"]), 1)
            run_ = run_requests(judge, reqs[judge], cache=cache, mode=mode,
                                desc=f"judge bias {judge} wave {cells.wave + 1}", progress=progress)
            judgments.append(run_.judgments.assign(judge=judge))
            wave_parsed.append(parse_judgments(run_.judgments).assign(judge=judge))
            add_wave_tallies(walk.stats.setdefault(judge, {}), run_.stats)
        parsed = pd.concat(wave_parsed, ignore_index=True)
        parsed_all.append(parsed)
        s = M.item_stats(parsed, items[items["item_id"].isin(these)])
        acc.merge(s)
        shown = {jt: _responsive(acc, *jt, params, level=level) for jt in {k[:2] for k in keys}}  # (judge, task)
        values = {(j, "pairwise", c): v for (j, c), v in net_items(s.frame("cues")).items()}
        values.update(pointwise_net_items(s.frame("pointwise"), pointwise))
        cells.update(values, {k: shown[k[:2]] for k in keys})
        walk.items += these
    walk.judgments = pd.concat(judgments, ignore_index=True) if judgments else pd.DataFrame()
    walk.parsed = pd.concat(parsed_all, ignore_index=True) if parsed_all else pd.DataFrame()
    return walk


def sequential_sentence(table: pd.DataFrame | None, summary: dict) -> str:
    """One findings paragraph from the cells table: which (judge, cue) cells stopped early, at which item and
    why, how the walk ended, and the error rate the audit holds across its cells
    (:func:`cfbench.report.sequential_paragraph`)."""
    from cfbench.core.text import md_code
    from cfbench.report import sequential_paragraph

    if table is None or not len(table):
        return ""

    def name(r: Any) -> str:
        pointwise = getattr(r, "task", "pairwise") == "pointwise"
        return f"{md_code(r.judge)} x {md_code(r.cue)}" + (" (pointwise)" if pointwise else "")

    what = ("the net flip share (pairwise cues) or the net absolute 1-10 score shift (pointwise cues)"
            if "task" in table and (table["task"] == "pointwise").any() else "the net flip share")
    return sequential_paragraph(
        table, n_walked=summary["n_walked"], budget=summary["budget"], stopped_by=summary.get("stopped_by", ""),
        unit="item", cells=f"judge x cue cells, each a confidence sequence of {what}", name=name,
        stopped_note="and the cue no longer sent to that judge",
        left=lambda rows: f"{len(rows)} cell{'s' if len(rows) != 1 else ''} inconclusive (table `sequential_cells`)",
        tail="The fixed-n tables are computed on the items the walk judged, each cue on the items it was sent.")
