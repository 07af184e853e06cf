"""A sequential audit of ShopFlow's two gap gates: judge pairs in waves, stop asking about a decided stratum.

With ``Params.sequential`` on, the judged part walks the matched pairs in file order in waves of
``wave_size`` pairs (at most ``max_items`` pairs, 0: all; at most ``max_requests`` requests, 0: no limit; at
most ``max_cost_usd`` dollars by the price table, 0: no limit).
The two cells are the release gate's interval checks: the TPR gap on the ready pairs and the FPR gap on the
needs-review pairs, each "|gap| at most its contract maximum". A pair's statistic is its **matched-pair
gap**

    d_i = selected(pair i, first variant) - selected(pair i, second variant),  in {-1, 0, 1},

whose mean over the stratum's pairs is the gap the fixed-n interval check reads (``stratum_difference``).
The betting confidence sequence runs on the declared range [-1, 1] (mapped to [0, 1] as (d + 1) / 2 inside
:class:`cfbench.stats.sequential.BettingCS`, a monotone map, so bounds map back exactly); the gate is
two-sided. Both cells run at 5 % / 2 (Bonferroni, :class:`cfbench.stats.sequential_cells.SequentialCells`).
A pair with a variant that could not be scored gives no value (excluded, as in the fixed-n audit).

Responsiveness first: a cell passes only once the judge's scores are shown to separate ready from
needs-review requests (:func:`.gate.responsiveness_check` on every pair scored so far); a sequence that
clears without it stays ``inconclusive`` and its stratum keeps being asked. Since each pair belongs to one
stratum, a decided cell's pairs are simply not sent any more: later waves take the next pairs of the
undecided strata only. The run stops when both cells are decided, the pairs or ``max_items`` run out, or the
next wave would pass ``max_requests`` or ``max_cost_usd`` (a wave is sent whole or not at all; its price is
estimated before it is sent from its prompts' characters and each request's ``max_tokens``, an upper bound:
:func:`cfbench.judges.pricing.request_pricers`; ``local:`` and ``scripted:`` judges cost 0, a judge the price
table does not know is refused before the first request). The candidate prompt, when set, is judged on the
pairs the walk judged (it is not part of the sequential cells). Through the Batch API
(:func:`.batch_waves.run_batch`) each admitted wave goes to a ``wave`` callback before it is judged, and the
dollar budget is priced at the Batch-API price.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cfbench.judges.pricing import budget_pricers, over_budget, resent_usd
from cfbench.stats.sequential_cells import SequentialCells, add_wave_tallies
from cfbench.stats.sequential import looks_level

from . import readiness as R
from .gate import responsiveness_check
from .policy import POSITIVE, SELECTED, route_rows

__all__ = ["GAP_CELLS", "SequentialWalk", "judge_in_waves", "gap_items", "sequential_sentence"]

#: the two cells: (gap, contract field of its maximum, whether its pairs are the ready ones)
GAP_CELLS = (("tpr_gap", "max_tpr_gap", True), ("fpr_gap", "max_fpr_gap", False))


@dataclass
class SequentialWalk:
    """What :func:`judge_in_waves` returns: the judgments of every request sent, the pairs judged (rows of
    ``pairs``), the cells, and how the walk ended."""

    judgments: pd.DataFrame
    pairs: pd.DataFrame
    cells: SequentialCells
    n_walked: int = 0
    budget: int = 0
    requests_sent: int = 0
    requests_resent: int = 0
    spent_usd: float = 0.0
    stopped_by: str = ""
    stats: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {"n_walked": self.n_walked, "budget": self.budget, "waves": self.cells.wave,
                "n_cells": len(self.cells.keys), "alpha": self.cells.alpha, "alpha_per_cell": self.cells.cell_alpha,
                "requests_sent": self.requests_sent, "requests_resent": self.requests_resent,
                "spent_usd": self.spent_usd, "stopped_by": self.stopped_by}


def gap_items(rows: pd.DataFrame, parsed: pd.DataFrame, *, prompt: str, variants: list[str], threshold: float
              ) -> tuple[dict, pd.DataFrame]:
    """Per cell, the wave's pairs' gaps ``d`` in pair order, from the wave's pair ``rows`` and the parsed
    replies; and the routed rows of its complete pairs (for responsiveness). A pair with an unscored variant
    gives nothing."""
    ids = [R.request_id(p, v, prompt) for p, v in zip(rows["pair_id"], rows["variant"])]
    scored = rows.drop(columns=[c for c in ("score",) if c in rows.columns]).assign(request_id=ids)
    scored = scored.merge(parsed[["request_id", "score", "parse_ok"]], on="request_id", how="left")
    ok = scored.groupby("pair_id", sort=False)["parse_ok"].transform(lambda s: bool(s.fillna(False).all()))
    routed = route_rows(scored[ok.astype(bool)].drop(columns=["request_id", "parse_ok"]), threshold)
    wide = routed.pivot_table(index="pair_id", columns="variant", values=SELECTED, aggfunc="first", sort=False)
    ready = routed.groupby("pair_id", sort=False)[POSITIVE].first()
    order = [p for p in dict.fromkeys(routed["pair_id"])]
    out: dict = {}
    for gap, _, is_ready in GAP_CELLS:
        keep = [p for p in order if bool(ready[p]) == is_ready]
        out[(gap,)] = [float(wide.at[p, variants[0]]) - float(wide.at[p, variants[1]]) for p in keep]
    return out, routed


def _next_wave(order: list, ready: pd.Series, cells: SequentialCells, start: int, size: int, limit: int
               ) -> tuple[list, int]:
    """The next ``size`` pairs from position ``start`` whose stratum's cell is undecided (at most ``limit``
    pairs walked in all); returns them and the position after the last one looked at."""
    open_ready = {is_ready for gap, _, is_ready in GAP_CELLS if (gap,) in cells.undecided()}
    wave, k = [], start
    while k < len(order) and len(wave) < size and k < limit:
        if bool(ready[order[k]]) in open_ready:
            wave.append(order[k])
        k += 1
    return wave, k


def judge_in_waves(params: Any, pairs: pd.DataFrame, contract: Any, *, progress: bool, cache: Any = None,
                   mode: str | None = None, wave: Any = None) -> SequentialWalk:
    """Judge ``pairs`` (all variants' rows, file order) in waves under ``params.prompt`` until both gap cells
    are decided or a budget is spent (see the module note). ``cache`` and ``mode`` go to the judge runner (None:
    its defaults). ``wave`` (the Batch-API path, :func:`.batch_waves.run_batch`): called as ``wave(requests,
    pair_ids, cells)`` with each admitted wave's requests, its pairs and the cells as they stand, before the wave
    is judged; with it a dollar budget is priced at the Batch-API price, and the requests ``wave`` returns (judge
    -> the ones it re-sent) are spent too, before the next wave's budget check."""
    from cfbench.judges import run_requests

    vs = list(params.variants)
    cells = SequentialCells(keys=[(g,) for g, _, _ in GAP_CELLS], key_names=["gap"], two_sided=True,
                            maximum={(g,): float(getattr(contract, f)) for g, f, _ in GAP_CELLS})
    order = list(dict.fromkeys(pairs["pair_id"]))
    ready = pairs.groupby("pair_id", sort=False)[POSITIVE].first()
    limit = params.max_items or len(order)
    pricers = budget_pricers([params.judge], max_cost_usd=params.max_cost_usd, batch=wave is not None)
    price = pricers.get(params.judge)
    walk = SequentialWalk(pd.DataFrame(), pairs.iloc[0:0], cells, budget=min(limit, len(order)))
    level = looks_level(max(1, -(-walk.budget // params.wave_size)))  # responsiveness is looked at after every wave
    judged, frames, routed_all, pos = [], [], [], 0
    while not cells.done:
        these, nxt = _next_wave(order, ready, cells, pos, params.wave_size, limit)
        if not these:
            break
        rows = pairs[pairs["pair_id"].isin(these)]
        reqs = R.build_requests(rows, prompt=params.prompt)
        usd = price(reqs) if price is not None else None
        walk.stopped_by = over_budget(len(reqs), usd or 0.0, sent=walk.requests_sent, spent_usd=walk.spent_usd,
                                      max_requests=params.max_requests, max_cost_usd=params.max_cost_usd)
        if walk.stopped_by:
            break
        pos = nxt
        walk.requests_sent += len(reqs)
        walk.spent_usd += usd or 0.0
        if wave is not None:  # the Batch path: its re-sent lines are paid for too
            resent = wave(reqs, these, cells) or {}
            walk.requests_resent += sum(len(r) for r in resent.values())
            walk.spent_usd += resent_usd(resent, pricers)
        run_ = run_requests(params.judge, reqs, cache=cache, mode=mode,
                            desc=f"readiness {params.prompt} wave {cells.wave + 1}", progress=progress)
        for gap, _, is_ready in GAP_CELLS:
            cells.count_requests((gap,), int(rows[POSITIVE].astype(bool).eq(is_ready).sum()))
        frames.append(run_.judgments)
        judged += these
        values, routed = gap_items(rows, R.parse_readiness(run_.judgments), prompt=params.prompt, variants=vs,
                                   threshold=params.judged_threshold)
        routed_all.append(routed)
        resp = responsiveness_check(pd.concat(routed_all, ignore_index=True), params.judged_threshold,
                                    level=level)
        shown = (bool(resp["responsive"]), str(resp["why"]))
        cells.update(values, {k: shown for k in cells.keys})
        add_wave_tallies(walk.stats, run_.stats)
    walk.n_walked = len(judged)
    walk.judgments = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    walk.pairs = pairs[pairs["pair_id"].isin(judged)].reset_index(drop=True)
    return walk


def sequential_sentence(table: pd.DataFrame | None, summary: dict) -> str:
    """One findings paragraph from the cells table: which gap cells stopped early, at which pair and why, how
    the walk ended, and the error rate the audit holds across its cells
    (:func:`cfbench.report.sequential_paragraph`)."""
    from cfbench.report import sequential_paragraph

    if table is None or not len(table):
        return ""
    return sequential_paragraph(
        table, n_walked=summary["n_walked"], budget=summary["budget"], stopped_by=summary.get("stopped_by", ""),
        unit="pair", cells="gap cells, each a confidence sequence of the matched-pair gap", name=lambda r: r.gap,
        stopped_note="and no more of its stratum's pairs sent", all_decided="both cells decided",
        left=lambda rows: "; ".join(f"{r.gap} inconclusive after {int(r.items_used)} pairs ({r.reason})"
                                    for r in rows.itertuples(index=False)),
        tail="The fixed-n tables below are computed on the pairs the walk judged.")
