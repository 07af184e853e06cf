"""The cells of a sequential audit: one confidence sequence per gate, decided as soon as it can be.

A study that audits sequentially judges its items in waves. After each wave it hands this module each cell's
new per-item values (a flip share minus a noise share, a matched-pair gap: any statistic in a declared range
``[lo, hi]``) and whether the judge is shown to respond; :class:`SequentialCells` adds them to the cell's
betting confidence sequence (:class:`cfbench.stats.sequential.BettingCS`), decides what it can and keeps
the history the figure draws. The study then stops asking about the decided cells. Nothing here knows a
study: a cell is a tuple of labels named by ``key_names``.

Verdicts (the vocabulary of :mod:`cfbench.stats.verdicts`):

``pass``          the sequence lies below the maximum (two-sided: inside ``(-max, max)``) **and** the judge's
                  responsiveness is shown; a sequence that clears without it stays ``inconclusive`` and the
                  cell keeps being asked (responsiveness is checked first, so a judge that reads nothing
                  never passes);
``fail``          the sequence lies above the maximum (two-sided: wholly beyond one side), for any judge;
``inconclusive``  neither, when the budget ran out or the run stopped.

Multiplicity: each of the audit's cells runs at ``alpha / cells`` (Bonferroni,
:func:`cfbench.stats.sequential.alpha_per_cell`), so the chance of any wrong pass or fail across the audit's
cells stays <= ``alpha`` whatever their dependence, at every look (each sequence holds at every n at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.files import shorten
from cfbench.stats.sequential import BettingCS, alpha_per_cell
from cfbench.stats.verdicts import items_to_decide, scaled_bounds, two_sided_verdict, verdict

__all__ = ["SequentialCells", "CELL_COLUMNS", "WAVE_COLUMNS", "CS_METHOD", "check_sequential_params",
           "add_wave_tallies"]

#: the columns of :meth:`SequentialCells.table` after the key columns
CELL_COLUMNS = ["items_used", "requests_used", "verdict", "cs_low", "cs_high", "stopped_at_wave",
                "stopped_at_item", "reason", "forecast_items", "forecast_requests"]
#: the columns of :meth:`SequentialCells.waves_table` after the key columns
WAVE_COLUMNS = ["wave", "items", "cs_low", "cs_high", "verdict", "maximum", "two_sided", "level", "ci_method"]
CS_METHOD = "betting confidence sequence (Waudby-Smith & Ramdas), Bonferroni over cells"


def check_sequential_params(p: Any, *, priced: bool = False) -> None:
    """The sequential fields of a study's Params: ``max_items`` >= 0, ``wave_size`` >= 1, ``max_requests`` a
    whole number >= 0 and (``priced``) ``max_cost_usd`` a finite number >= 0; a budget set without
    ``sequential`` is refused, not ignored. Raises :class:`InputError` naming the field."""
    def fail(name: str, why: str) -> None:
        raise InputError(why, source="parameters", field=name)

    for name, low in (("max_items", 0), ("wave_size", 1), ("max_requests", 0)):
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            fail(name, f"must be a whole number >= {low}, got {shorten(v)}")
    names = ["max_requests"]
    if priced:
        cost = p.max_cost_usd
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0:
            fail("max_cost_usd", f"must be a number, 0 (no limit) or more, got {shorten(cost)}")
        names.append("max_cost_usd")
    for name in names + ["max_items"]:
        if getattr(p, name) and not p.sequential:
            fail(name, "is a budget of the sequential audit: set sequential: true, or leave it 0")


_SUMMED = ("n_requests", "n_unique", "n_cached", "n_called", "n_failed", "prompt_tokens", "prompt_tokens_evaluated",
           "completion_tokens", "wall_s", "n_not_sent", "n_retried")


def add_wave_tallies(total: dict, wave: dict) -> None:
    """Add one wave's judge-run tallies (a runner's ``stats`` dict) to ``total``: the counts summed over waves,
    the failure kinds merged, the other entries (judge, mode, ...) from the last wave, ``waves`` counted."""
    for k, v in wave.items():
        if k in _SUMMED and isinstance(v, (int, float)):
            total[k] = total.get(k, 0) + v
        elif k == "failures_by_kind":
            for kind, n in v.items():
                total.setdefault(k, {})[kind] = total.get(k, {}).get(kind, 0) + n
        elif k not in ("non_completion_rate", "cost_usd"):
            total[k] = v
    total["non_completion_rate"] = total.get("n_failed", 0) / total["n_unique"] if total.get("n_unique") else 0.0
    total["waves"] = total.get("waves", 0) + 1


@dataclass
class _Cell:
    key: tuple
    cs: BettingCS
    verdict: str = "inconclusive"
    stopped_at_wave: Any = None
    stopped_at_item: Any = None
    reason: str = "no item yet"
    requests: int = 0

    @property
    def decided(self) -> bool:
        return self.verdict in ("pass", "fail")


@dataclass
class SequentialCells:
    """Every cell's sequence in one audit. ``keys``: the cells (tuples, in report order), named by
    ``key_names``; values lie in ``[lo, hi]`` (``ranges``: a mapping cell -> (lo, hi) for cells whose values
    have another declared range); a cell passes below its maximum (``two_sided``: inside ``(-maximum, maximum)``);
    ``maximum`` is one number or a mapping cell -> number. :meth:`update` is one wave; :meth:`undecided` the
    cells still asked."""

    keys: Sequence[tuple]
    key_names: Sequence[str]
    maximum: Any
    lo: float = -1.0
    hi: float = 1.0
    two_sided: bool = False
    alpha: float = 0.05
    ranges: Any = None
    wave: int = 0
    history: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.keys = [tuple(k) for k in self.keys]
        if len(set(self.keys)) != len(self.keys) or any(len(k) != len(self.key_names) for k in self.keys):
            raise ValueError("cells must be distinct tuples of len(key_names) labels")
        self.cell_alpha = alpha_per_cell(self.alpha, len(self.keys))
        ranges = {tuple(k): (float(a), float(b)) for k, (a, b) in (self.ranges or {}).items()}
        unknown = [k for k in ranges if k not in self.keys]
        if unknown:
            raise ValueError(f"a range for {unknown[0]!r}, which is not a cell")
        self.cells = {}
        for k in self.keys:
            lo, hi = ranges.get(k, (self.lo, self.hi))
            self.cells[k] = _Cell(k, BettingCS(alpha=self.cell_alpha, lo=lo, hi=hi))
        if isinstance(self.maximum, Mapping):
            self.maximum = {tuple(k): float(v) for k, v in self.maximum.items()}
            missing = [k for k in self.keys if k not in self.maximum]
            if missing:
                raise ValueError(f"no maximum for cell {missing[0]!r}")

    def maximum_of(self, key: tuple) -> float:
        return self.maximum[tuple(key)] if isinstance(self.maximum, Mapping) else float(self.maximum)

    def undecided(self) -> list[tuple]:
        return [k for k in self.keys if not self.cells[k].decided]

    @property
    def done(self) -> bool:
        return not self.undecided()

    def count_requests(self, key: tuple, n: int) -> None:
        """Record ``n`` requests sent for cell ``key``'s own variants (shared requests are not counted)."""
        self.cells[tuple(key)].requests += int(n)

    def update(self, values: Mapping[tuple, Sequence[float]], responsive: Mapping[tuple, tuple[bool, str]]) -> None:
        """One wave: ``values`` maps a cell to its new items' values (judging order); ``responsive`` maps a
        cell to (shown, why) - a cell missing from it is not shown. A decided cell takes nothing more; an
        undecided cell with items is decided again (responsiveness may have been shown since)."""
        self.wave += 1
        for key in self.keys:
            cell = self.cells[key]
            if cell.decided:
                continue
            vals = list(values.get(key, ()))
            if vals:
                cell.cs.update(vals)
            if not cell.cs.n:
                continue
            self._decide(cell, responsive.get(key, (False, "responsiveness not checked")))
            if vals:
                lo, hi = cell.cs.bounds()
                self.history.append({**dict(zip(self.key_names, key)), "wave": self.wave, "items": int(cell.cs.n),
                                     "cs_low": lo, "cs_high": hi, "verdict": cell.verdict,
                                     "maximum": self.maximum_of(key),
                                     "two_sided": self.two_sided, "level": 1 - self.cell_alpha,
                                     "ci_method": CS_METHOD})

    def _decide(self, cell: _Cell, responsive: tuple[bool, str]) -> None:
        lo, hi = cell.cs.bounds()
        mx = self.maximum_of(cell.key)
        rule = two_sided_verdict if self.two_sided else verdict
        v = rule(lo, hi, mx)
        ok, why = responsive
        where = f"sequence [{lo:.3f}, {hi:.3f}] inside ({-mx:g}, {mx:g})" if self.two_sided else \
            f"upper bound {hi:.3f} below {mx:g}"
        if v == "pass" and not ok:
            cell.reason = f"{where}, but responsiveness not shown ({why}); cannot pass"
        elif v == "pass":
            cell.verdict, cell.stopped_at_wave, cell.stopped_at_item = v, self.wave, int(cell.cs.n)
            cell.reason = f"{where} after {cell.cs.n} items"
        elif v == "fail":
            cell.verdict, cell.stopped_at_wave, cell.stopped_at_item = v, self.wave, int(cell.cs.n)
            side = f"lower bound {lo:.3f} above {mx:g}" if lo > mx else f"upper bound {hi:.3f} below {-mx:g}"
            cell.reason = f"{side} after {cell.cs.n} items"
        else:
            cell.reason = f"sequence [{lo:.3f}, {hi:.3f}] contains the maximum {mx:g}" + \
                (" or its negative" if self.two_sided else "")

    def forecast(self, key: tuple) -> float:
        """Total items at which the cell would decide if its mean stayed and its half-width shrank as
        1/sqrt(n) (NaN when decided, with fewer than 2 items, or not decidable). It ignores the sequence's
        slowly growing log factor, so it is optimistic."""
        cell = self.cells[tuple(key)]
        if cell.decided or cell.cs.n < 2:
            return math.nan
        lo, hi = cell.cs.bounds()
        need = items_to_decide(cell.cs.mean, self.maximum_of(key), scaled_bounds(cell.cs.mean, lo, hi, cell.cs.n),
                               n_from=cell.cs.n + 1, two_sided=self.two_sided)
        return float(need) if need is not None else math.nan

    def table(self, *, stopped_by: str = "") -> pd.DataFrame:
        """One row per cell in ``keys`` order: the key columns then :data:`CELL_COLUMNS`."""
        rows = []
        for key in self.keys:
            cell = self.cells[key]
            lo, hi = cell.cs.bounds() if cell.cs.n else (math.nan, math.nan)
            reason = cell.reason if cell.decided or not stopped_by else f"{cell.reason}; stopped, {stopped_by}"
            rows.append({**dict(zip(self.key_names, key)), "items_used": int(cell.cs.n),
                         "requests_used": int(cell.requests), "verdict": cell.verdict, "cs_low": lo, "cs_high": hi,
                         "stopped_at_wave": math.nan if cell.stopped_at_wave is None else cell.stopped_at_wave,
                         "stopped_at_item": math.nan if cell.stopped_at_item is None else cell.stopped_at_item,
                         "reason": reason, "forecast_items": self.forecast(key),
                         "forecast_requests": (self.forecast(key) - cell.cs.n) * cell.requests / cell.cs.n
                         if cell.cs.n and cell.requests else math.nan})
        return pd.DataFrame(rows, columns=list(self.key_names) + CELL_COLUMNS)

    def waves_table(self) -> pd.DataFrame:
        """Each cell's bounds after every wave that gave it items (what the figure draws)."""
        return pd.DataFrame(self.history, columns=list(self.key_names) + WAVE_COLUMNS)
