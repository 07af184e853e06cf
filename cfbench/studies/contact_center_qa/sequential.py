"""A sequential audit of the net CFR gate: judge transcripts in waves, stop asking about decided dimensions.

With ``Params.sequential`` on, :func:`.study.run` walks the transcripts in waves of ``wave_size`` (at most
``max_items``, 0: ``n_items``). After each wave every cell (judge x dimension, baseline arm) adds its new
items to a betting confidence sequence (:class:`cfbench.stats.sequential.BettingCS`) of the **per-item net
flip statistic**

    d_i = (flipped pairs / pairs of item i under the dimension's conditions)
          - (flipped repeat pairs / repeat pairs of item i),

the item's counterfactual flip share minus its repeat flip share (repeats at the evaluation temperature,
the ``robustness`` baseline the fixed-n gate uses). ``d_i`` lies in [-1, 1]; the sequence is run on that
declared range (internally mapped to [0, 1] as (d + 1) / 2, a monotone map, so bounds map back exactly).
Only items with both a counterfactual and a repeat pair count, as in the fixed-n gate. The quantity is
the *item-averaged* net flip rate (every transcript weighs the same), where the fixed-n gate pools pairs;
with the same number of pairs per item they coincide.

Each cell runs at ``alpha / cells`` (Bonferroni, :func:`cfbench.stats.sequential.alpha_per_cell`) with
``alpha = 0.05`` and cells = judges x dimensions, so the chance of any wrong pass or fail across the audit
stays <= 5 % whatever the dependence between cells, with a look after every wave (the sequence holds at
every n at once). A cell reads:

``pass``          the sequence's upper bound lies below ``gate_max_net_cfr`` **and** the judge's
                  responsiveness (:func:`.gates.responsiveness_table` on the accuracy by question and
                  label so far, each look at 5 % / the walk's most waves, Bonferroni over the looks) is
                  shown; a bound below the maximum without it stays ``inconclusive`` and keeps going;
``fail``          the lower bound lies above the maximum (kept for any judge);
``inconclusive``  neither, when the budget ran out or the run stopped.

A dimension gets no more requests once every judge's cell on it is decided (the plan of later transcripts
covers the undecided dimensions only; :func:`.judging.iter_judged` takes the list per transcript). The run
stops when every cell is decided, ``max_items`` transcripts were judged, or the next wave would pass a
budget (:meth:`SequentialAudit.admit`: ``max_requests`` distinct requests, ``max_cost_usd`` dollars priced
by :mod:`cfbench.judges.pricing`; a wave is planned whole, counted, and sent only if it fits). Table
``sequential_cells`` (:data:`SEQUENTIAL_COLUMNS`) says per cell the items and requests used, the verdict,
the bounds, the wave and item it stopped at, why, and for an undecided cell a forecast of the items and
requests to a decision; table ``sequential_waves`` (:data:`WAVE_COLUMNS`) keeps every cell's bounds after
every wave it took items in (what the figure draws).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from cfbench.judges.pricing import over_budget, refuse_unpriced, request_pricers, resent_usd
from cfbench.metrics.state import ItemStatistics
from cfbench.stats.sequential import BettingCS, alpha_per_cell, gate_verdict, looks_level
from cfbench.stats.verdicts import items_to_decide, scaled_bounds
from cfbench.studies.contact_center_qa.gates import responsiveness_table
from cfbench.studies.contact_center_qa.tables import accuracy_table, gate_item_stats

__all__ = ["SequentialAudit", "SEQUENTIAL_COLUMNS", "WAVE_COLUMNS", "CS_METHOD", "AUDIT_ALPHA", "BASELINE",
           "judge_prices", "wave_cost", "cell_requests", "net_flip_items", "walk_params", "sequential_sentence"]

SEQUENTIAL_COLUMNS = ["judge", "dimension", "items_used", "requests_used", "verdict", "cs_low", "cs_high",
                      "stopped_at_wave", "stopped_at_item", "reason", "forecast_items", "forecast_requests"]
#: table ``sequential_waves``: a cell's sequence after each wave that gave it items
WAVE_COLUMNS = ["judge", "dimension", "wave", "items", "cs_low", "cs_high", "verdict", "max_net", "level",
                "ci_method"]
#: how ``sequential_waves`` names its bounds (what the figure's caption reads)
CS_METHOD = "betting confidence sequence (Waudby-Smith & Ramdas), Bonferroni over cells"
#: the audit's error rate across all its cells (split evenly over the cells: Bonferroni)
AUDIT_ALPHA = 0.05
#: the repeat baseline the net statistic subtracts (repeats at the evaluation temperature)
BASELINE = "robustness"


def walk_params(params: Any) -> Any:
    """``params`` with ``n_items`` set to the sequential budget (``max_items``, 0: ``n_items``): what the walk
    selects transcripts with. Unchanged when the run is not sequential."""
    import dataclasses

    if not getattr(params, "sequential", False) or not params.max_items:
        return params
    return dataclasses.replace(params, n_items=params.max_items)


def net_flip_items(stats: ItemStatistics, *, baseline: str = BASELINE) -> pd.DataFrame:
    """Per judge x dimension x item (baseline arm): ``d`` = counterfactual flip share minus repeat flip share,
    for items with both kinds of pair; columns ``judge, dimension, item_id, d``."""
    cols = ["judge", "dimension", "item_id", "d"]
    cf, rb = stats.frame("cfr"), stats.frame(f"rob/{baseline}/qa/cfr")
    if not len(cf) or not len(rb):
        return pd.DataFrame(columns=cols)
    cf = cf[cf["arm"] == "baseline"].groupby(["judge", "dimension", "item_id"], sort=False)[["stat", "n_pairs"]].sum()
    rb = rb.groupby(["judge", "item_id"], sort=False)[["stat", "n_pairs"]].sum()
    cf, rb = cf[cf["n_pairs"] > 0].reset_index(), rb[rb["n_pairs"] > 0].reset_index()
    m = cf.merge(rb, on=["judge", "item_id"], suffixes=("_cf", "_rb"))
    m["d"] = m["stat_cf"] / m["n_pairs_cf"] - m["stat_rb"] / m["n_pairs_rb"]
    return m[cols]


@dataclass
class _Cell:
    judge: str
    dimension: str
    cs: BettingCS
    verdict: str = "inconclusive"
    stopped_at_wave: Any = None
    stopped_at_item: Any = None
    reason: str = "no item with both a counterfactual and a repeat pair yet"
    requests: int = 0  # distinct requests planned for this cell's own variants (originals and repeats are shared)

    @property
    def decided(self) -> bool:
        return self.verdict in ("pass", "fail")


@dataclass
class SequentialAudit:
    """The per-cell sequences of one run. Feed it transcripts' rows with :meth:`add` (it closes a wave every
    ``wave_size`` transcripts and returns True once every cell is decided); :meth:`decide` is the step on
    ready-made item values (what the simulations in the tests drive); :meth:`table` is ``sequential_cells``.

    Budgets (0: none): :meth:`admit` is shown each wave's plans before anything of it is sent and refuses
    the wave that would take the requests past ``max_requests`` or the cost past ``max_cost_usd``
    (``prices``: judge spec -> USD per request's tokens, :func:`judge_prices`).

    Responsiveness is re-checked after every wave, a fixed-n interval looked at again and again: with
    ``max_looks`` (the most waves the walk can have) each look is at ``5 % / max_looks``, so a judge that reads
    nothing is called responsive at any wave with a chance of at most 2.5 %. ``questions``: the run's, each
    checked (:func:`.gates.responsiveness_table`)."""

    judges: Sequence[str]
    dimensions: Sequence[str]
    max_net: float
    wave_size: int = 1
    alpha: float = AUDIT_ALPHA
    max_requests: int = 0
    max_cost_usd: float = 0.0
    prices: Mapping[str, Any] = field(default_factory=dict)
    max_looks: int = 1
    questions: Sequence[str] = ()
    cells: dict = field(default_factory=dict)
    wave: int = 0
    n_transcripts: int = 0
    spent_requests: int = 0
    resent_requests: int = 0
    spent_usd: float = 0.0
    stopped_by: str = ""
    history: list = field(default_factory=list)
    _acc: ItemStatistics = field(default_factory=ItemStatistics)
    _pending: list = field(default_factory=list)
    _asked: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.wave_size < 1:
            raise ValueError(f"wave_size must be at least 1, got {self.wave_size}")
        self.cell_alpha = alpha_per_cell(self.alpha, len(self.judges) * len(self.dimensions))
        self.responsive_level = looks_level(self.max_looks)  # a fixed-n check, looked at after every wave
        if self.max_cost_usd:
            refuse_unpriced(self.judges, self.prices)

    def admit(self, plans: Sequence[Any]) -> bool:
        """Whether the wave of ``plans`` (one :class:`.requests.EvaluationPlan` per transcript) fits the budget.
        If it does, its requests and cost are counted as spent (and each cell's own requests); if not, the
        audit records why it stopped and nothing of the wave is counted."""
        n = sum(p.n_requests for p in plans)
        usd = sum(wave_cost(p, self.prices) for p in plans) if self.max_cost_usd else 0.0
        self.stopped_by = over_budget(n, usd, sent=self.spent_requests, spent_usd=self.spent_usd,
                                      max_requests=self.max_requests, max_cost_usd=self.max_cost_usd)
        if self.stopped_by:
            return False
        self.spent_requests += n
        self.spent_usd += usd
        for p in plans:
            for (judge, dim), k in cell_requests(p.rows).items():
                if dim in self.dimensions and judge in self.judges:
                    self._cell(judge, dim).requests += k
            for dim in set(p.rows["dimension"]) & set(self.dimensions):
                self._asked[dim] = self._asked.get(dim, 0) + 1
        return True

    def resent(self, requests: Mapping[str, Sequence[Any]]) -> None:
        """The admitted wave's requests the Batch path re-sent (judge -> requests, once per re-send): their
        cost is spent as the wave's was (:func:`cfbench.judges.pricing.resent_usd`), so the next wave's
        :meth:`admit` sees it; counted apart from the distinct requests of ``max_requests``."""
        self.resent_requests += sum(len(r) for r in requests.values())
        if self.max_cost_usd:
            self.spent_usd += resent_usd(requests, self.prices)

    def _cell(self, judge: str, dimension: str) -> _Cell:
        key = (judge, dimension)
        if key not in self.cells:
            self.cells[key] = _Cell(judge, dimension, BettingCS(alpha=self.cell_alpha, lo=-1.0, hi=1.0))
        return self.cells[key]

    def undecided_dimensions(self) -> list[str]:
        """The dimensions a later transcript is still asked about: those with fewer decided cells than judges
        (a judge with no item on a dimension yet has no decided cell on it)."""
        decided: dict[str, int] = {}
        for c in self.cells.values():
            decided[c.dimension] = decided.get(c.dimension, 0) + int(c.decided)
        return [d for d in self.dimensions if decided.get(d, 0) < len(self.judges)]

    @property
    def done(self) -> bool:
        return not self.undecided_dimensions()

    def add(self, rows: pd.DataFrame) -> bool:
        """One judged transcript's rows; a wave closes after ``wave_size`` of them. Returns :attr:`done`."""
        self._pending.append(gate_item_stats(rows))
        self.n_transcripts += 1
        if len(self._pending) >= self.wave_size:
            self.close_wave()
        return self.done

    def close_wave(self) -> None:
        """Update every undecided cell with the pending transcripts' items (in judging order) and decide."""
        if not self._pending:
            return
        wave = ItemStatistics()
        for s in self._pending:
            wave.merge(s)
            self._acc.add("accuracy_by_label", s.frame("accuracy_by_label"))
        self._pending = []
        nets = net_flip_items(wave)
        values = {key: g["d"].tolist() for key, g in nets.groupby(["judge", "dimension"], sort=False)}
        resp = responsiveness_table(accuracy_table(self._acc.frame("accuracy_by_label"), level=self.responsive_level),
                                    questions=self.questions)
        responsive = {r.judge: (bool(r.responsive), str(r.why)) for r in resp.itertuples(index=False)}
        self.decide(values, responsive)

    def decide(self, values: Mapping[tuple, Sequence[float]], responsive: Mapping[str, tuple]) -> None:
        """One wave: ``values`` maps (judge, dimension) to its new items' ``d`` (in [-1, 1], judging order);
        ``responsive`` maps a judge to (shown, why). Decided cells take nothing more."""
        self.wave += 1
        fed = set()
        for (judge, dim), vals in values.items():
            cell = self._cell(judge, dim)
            if not cell.decided and len(vals):
                cell.cs.update(vals)
                fed.add((judge, dim))
        for key, cell in self.cells.items():
            if key in fed:
                self._decide_cell(cell, responsive)
                lo, hi = cell.cs.bounds()
                self.history.append({"judge": cell.judge, "dimension": cell.dimension, "wave": self.wave,
                                     "items": int(cell.cs.n), "cs_low": lo, "cs_high": hi, "verdict": cell.verdict,
                                     "max_net": self.max_net, "level": 1 - self.cell_alpha,
                                     "ci_method": CS_METHOD})
            elif not cell.decided and cell.cs.n:
                self._decide_cell(cell, responsive)  # responsiveness may have been shown since

    def _decide_cell(self, cell: _Cell, responsive: Mapping[str, tuple]) -> None:
        """One undecided cell's verdict from its sequence and its judge's responsiveness."""
        lo, hi = cell.cs.bounds()
        v = gate_verdict(lo, hi, self.max_net)
        ok, why = responsive.get(cell.judge, (False, "no labelled originals to check the judge responds"))
        if v == "pass" and not ok:
            cell.reason = (f"upper bound {hi:.3f} below the maximum, but responsiveness not shown ({why}); "
                           "cannot pass")
        elif v in ("pass", "fail"):
            side = f"upper bound {hi:.3f} below" if v == "pass" else f"lower bound {lo:.3f} above"
            cell.verdict, cell.stopped_at_wave, cell.stopped_at_item = v, self.wave, int(cell.cs.n)
            cell.reason = f"{side} the maximum {self.max_net:g} after {cell.cs.n} items"
        else:
            cell.reason = f"interval [{lo:.3f}, {hi:.3f}] contains the maximum {self.max_net:g}"

    def summary(self, *, budget: int) -> dict:
        """What the findings sentence reads: transcripts judged, the budget, waves, cells and their level,
        requests and dollars spent against their budgets, and why the walk stopped."""
        return {"n_walked": self.n_transcripts, "budget": int(budget), "waves": self.wave,
                "n_cells": len(self.judges) * len(self.dimensions), "alpha": self.alpha,
                "alpha_per_cell": self.cell_alpha, "wave_size": self.wave_size,
                "requests_sent": self.spent_requests, "requests_resent": self.resent_requests,
                "max_requests": self.max_requests,
                "cost_usd": self.spent_usd if self.max_cost_usd else None, "max_cost_usd": self.max_cost_usd,
                "stopped_by": self.stopped_by}

    def table(self) -> pd.DataFrame:
        """``sequential_cells``: one row per cell, judges then dimensions in the audit's order."""
        rows = []
        order = {d: k for k, d in enumerate(self.dimensions)}
        for cell in sorted(self.cells.values(), key=lambda c: (str(c.judge), order.get(c.dimension, 1e9))):
            lo, hi = cell.cs.bounds() if cell.cs.n else (math.nan, math.nan)
            reason = cell.reason if cell.decided or not self.stopped_by else \
                f"{cell.reason}; stopped, {self.stopped_by}"
            forecast = _forecast(cell, self.max_net)
            per_item = cell.requests / self.n_cell_transcripts(cell) if self.n_cell_transcripts(cell) else math.nan
            rows.append({"judge": cell.judge, "dimension": cell.dimension, "items_used": int(cell.cs.n),
                         "requests_used": int(cell.requests), "verdict": cell.verdict, "cs_low": lo, "cs_high": hi,
                         "stopped_at_wave": cell.stopped_at_wave if cell.stopped_at_wave is not None else math.nan,
                         "stopped_at_item": cell.stopped_at_item if cell.stopped_at_item is not None else math.nan,
                         "reason": reason, "forecast_items": forecast,
                         "forecast_requests": (forecast - cell.cs.n) * per_item if np.isfinite(forecast) else math.nan})
        return pd.DataFrame(rows, columns=SEQUENTIAL_COLUMNS)

    def n_cell_transcripts(self, cell: _Cell) -> int:
        """Transcripts whose plan asked about the cell's dimension (what its requests were spent on)."""
        return self._asked.get(cell.dimension, 0)

    def waves_table(self) -> pd.DataFrame:
        """``sequential_waves``: each cell's bounds after every wave that gave it items (in wave order)."""
        return pd.DataFrame(self.history, columns=WAVE_COLUMNS)


def _forecast(cell: _Cell, maximum: float) -> float:
    """Total items at which the sequence would decide if its mean stayed and its half-width on the side it
    leans to shrank as 1/sqrt(n) (NaN when decided, empty, or the mean sits at the maximum). It ignores the
    sequence's slowly growing log factor, so it is optimistic."""
    if cell.decided or cell.cs.n < 2:
        return math.nan
    lo, hi = cell.cs.bounds()
    need = items_to_decide(cell.cs.mean, maximum, scaled_bounds(cell.cs.mean, lo, hi, cell.cs.n),
                           n_from=cell.cs.n + 1)
    return float(need) if need is not None else math.nan


def cell_requests(rows: pd.DataFrame) -> dict:
    """(judge, dimension) -> distinct requests a plan's ``rows`` make for that dimension's own variants
    (a request also used by another dimension's rows - the shared original - is not counted)."""
    if not len(rows):
        return {}
    r = rows.drop_duplicates(["judge", "dimension", "request_id"])
    shared = r.groupby(["judge", "request_id"])["dimension"].transform("size") > 1
    return {k: int(v) for k, v in r[~shared].groupby(["judge", "dimension"], sort=False).size().items()}


#: judge spec -> a function pricing a list of requests in USD, or None when unpriced (shared with the other
#: studies' dollar budgets)
judge_prices = request_pricers


def wave_cost(plan: Any, prices: Mapping[str, Any]) -> float:
    """USD of one transcript's plan: every judge's requests priced by ``prices`` (:func:`judge_prices`)."""
    return float(sum(prices[judge](reqs) for judge, reqs in plan.requests.items() if reqs))


def sequential_sentence(table: pd.DataFrame | None, *, n_walked: int, budget: int, n_cells: int,
                        stopped_by: str = "", alpha: float = 0.05) -> str:
    """One findings paragraph read from ``sequential_cells``: which cells stopped early, at which item and
    why (decided pass / fail), whether the walk ran out of transcripts or stopped at a request / dollar budget
    (``stopped_by``), and the error rate the audit holds across its ``n_cells`` cells
    (:func:`cfbench.report.sequential_paragraph`)."""
    from cfbench.core.text import md_code
    from cfbench.report import sequential_paragraph

    return sequential_paragraph(
        table, n_walked=n_walked, budget=budget, stopped_by=stopped_by, unit="transcript",
        cells="cells, each a confidence sequence", name=lambda r: f"{md_code(r.judge)} x {md_code(r.dimension)}",
        stopped_note="decided, and no longer asked about once all its judges were", alpha=alpha, n_cells=n_cells)
