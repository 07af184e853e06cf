"""One verdict vocabulary for every gate: pass, fail, inconclusive, uninformative.

A gate asks whether a quantity (a net flip rate, a gap) stays under a maximum. It has three
outcomes plus one for a judge that was never shown to look at its input:

``pass``           the interval's upper bound lies strictly below the maximum (shown under it);
``fail``           the interval's lower bound lies strictly above the maximum (shown over it);
``inconclusive``   neither: the data rule out neither side ("not shown under" is not "shown over");
``uninformative (<why>)``  the judge was not shown to respond to what should move it (a responsiveness
                   check, :func:`responsiveness`), so invariance says nothing about fairness: a row
                   that would pass, or is inconclusive, reads ``uninformative``. A ``fail`` is kept: a
                   judge shown to flip more than the maximum is unfair whether or not it reads the
                   labels, so an unresponsive judge can still be shown unfair, never shown fair.

Equivalence gates (``|gap| <= limit``, :func:`two_sided_verdicts`) pass when the whole interval lies
inside ``(-limit, +limit)`` and fail when it lies wholly beyond one side.

Beside each verdict a *forecast*: for an inconclusive row, the items at which the interval would
decide on the side the estimate leans to, if the estimate stayed where it is and the interval's
half-width on that side shrank as ``1/sqrt(n)`` (:func:`items_to_decide`, :func:`scaled_bounds`).
It rests on the observed estimate and the observed spread (so on the observed flips and repeat
noise), never on zero events. An estimate sitting at the maximum cannot be decided by more items.

The seed's point rule (estimate at most the maximum) is kept as the named column ``point_rule``;
it rules nothing out.

>>> verdict(0.01, 0.08, 0.10)
'pass'
>>> verdict(0.12, 0.30, 0.10)
'fail'
>>> verdict(0.01, 0.08, 0.10, responsive=False, why="accuracy not shown above chance")
'uninformative (accuracy not shown above chance)'
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = ["PASS", "FAIL", "INCONCLUSIVE", "UNINFORMATIVE", "KINDS", "KIND_COLOURS", "verdict", "verdict_kind",
           "two_sided_verdict", "point_rule", "items_to_decide", "scaled_bounds", "forecast_row",
           "balanced_accuracy", "responsiveness", "VERDICT_COLUMNS", "NOT_DECIDABLE", "FORECAST_SCALED",
           "MAX_FORECAST_ITEMS", "MEANINGS", "kind_counts"]

PASS, FAIL, INCONCLUSIVE, UNINFORMATIVE = "pass", "fail", "inconclusive", "uninformative"
#: the four kinds, in legend order
KINDS = (PASS, FAIL, INCONCLUSIVE, UNINFORMATIVE)
#: figure colours: pass green, fail red, inconclusive neutral (tan), uninformative grey
KIND_COLOURS = {PASS: "#55a868", FAIL: "#c44e52", INCONCLUSIVE: "#ccb974", UNINFORMATIVE: "#9a9a9a"}
#: the columns :func:`forecast_row` adds to a gate row (with ``verdict``, ``verdict_kind``, ``point_rule``)
VERDICT_COLUMNS = ["verdict", "verdict_kind", "point_rule", "responsive", "responsiveness", "items_needed",
                   "forecast", "forecast_assumes"]
NOT_DECIDABLE = "not decidable by more items at the observed rate"
FORECAST_SCALED = ("the estimate stays at its observed value and the interval's half-width on the side it "
                   "leans to shrinks as 1/sqrt(n) (observed spread, flips and repeat noise included)")
#: what each verdict means, in words for findings and legends
MEANINGS = {PASS: "the interval's upper bound lies below the maximum, for a judge shown to respond: shown to stay "
                  "under it",
            FAIL: "the interval's lower bound lies above the maximum: shown to exceed it",
            INCONCLUSIVE: "the interval contains the maximum: neither shown; the forecast says how many items "
                          "might decide",
            UNINFORMATIVE: "the judge was not shown to respond to what should move it (its responsiveness check), "
                           "so staying unmoved is no evidence of fairness and no pass is given"}
#: forecasts beyond this many items read as not decidable
MAX_FORECAST_ITEMS = 1_000_000


def _finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and np.isfinite(float(x))


def _bounds(ci_low: Any, ci_high: Any) -> tuple[float, float]:
    """``(low, high)`` as floats; ``(-inf, inf)`` - no interval - when either is missing or NaN."""
    try:
        lo, hi = float(ci_low), float(ci_high)
    except (TypeError, ValueError):
        return -math.inf, math.inf
    if math.isnan(lo) or math.isnan(hi):
        return -math.inf, math.inf
    return lo, hi


def verdict(ci_low: float, ci_high: float, maximum: float, *, responsive: bool = True, why: str = "") -> str:
    """The verdict of a one-sided gate "at most ``maximum``" from its interval (see the module note).

    A row without an interval - either bound NaN: half an interval is a broken one - is ``inconclusive`` (or
    ``uninformative`` for an unresponsive judge); an infinite bound is a bound."""
    lo, hi = _bounds(ci_low, ci_high)
    if lo > maximum:
        return FAIL
    base = PASS if hi < maximum else INCONCLUSIVE
    if not responsive:
        return f"{UNINFORMATIVE} ({why or 'judge not shown to respond'})"
    return base


def two_sided_verdict(ci_low: float, ci_high: float, limit: float, *, responsive: bool = True,
                      why: str = "") -> str:
    """The verdict of an equivalence gate ``|gap| <= limit``: pass inside ``(-limit, limit)``, fail wholly
    beyond one side, inconclusive otherwise (unresponsive: never pass, see the module note). Either bound NaN:
    no interval."""
    lo, hi = _bounds(ci_low, ci_high)
    if lo > limit or hi < -limit:
        return FAIL
    if not responsive:
        return f"{UNINFORMATIVE} ({why or 'judge not shown to respond'})"
    return PASS if (lo > -limit and hi < limit) else INCONCLUSIVE


def verdict_kind(v: str) -> str:
    """``uninformative (why)`` -> ``uninformative``; the other verdicts unchanged."""
    return UNINFORMATIVE if str(v).startswith(UNINFORMATIVE) else str(v)


def kind_counts(verdicts) -> dict[str, int]:
    """How many verdicts of each kind (:data:`KINDS` order, zeros included)."""
    kinds = [verdict_kind(v) for v in verdicts]
    return {k: kinds.count(k) for k in KINDS}


def point_rule(estimate: float, maximum: float, *, two_sided: bool = False) -> str:
    """The seed's point rule, as ``pass``/``fail`` on the estimate alone (NaN: ``fail``)."""
    if not _finite(estimate):
        return FAIL
    e = abs(float(estimate)) if two_sided else float(estimate)
    return PASS if e <= maximum else FAIL


def scaled_bounds(estimate: float, ci_low: float, ci_high: float, n_items: int
                  ) -> Callable[[int], tuple[float, float]]:
    """``bound_at(n)``: the observed interval moved to ``n`` items, each half-width times ``sqrt(n_items / n)``
    around the observed estimate (what :func:`items_to_decide` assumes by default)."""
    e, lo, hi, n0 = float(estimate), float(ci_low), float(ci_high), float(n_items)

    def bound_at(n: int) -> tuple[float, float]:
        s = math.sqrt(n0 / float(n))
        return e - (e - lo) * s, e + (hi - e) * s

    return bound_at


def items_to_decide(estimate: float, maximum: float, bound_at: Callable[[int], tuple[float, float]], *,
                    n_from: int = 2, two_sided: bool = False, limit: int = MAX_FORECAST_ITEMS) -> int | None:
    """Fewest items ``n >= n_from`` at which ``bound_at(n)`` decides the gate on the side the estimate leans
    to: the upper bound below ``maximum`` when the estimate is under it, the lower bound above it when over
    (two-sided: both bounds inside ``(-maximum, maximum)``, or one beyond). ``None`` when the estimate sits
    at the maximum or no ``n`` up to ``limit`` decides. ``bound_at`` must tighten as ``n`` grows."""
    if not _finite(estimate):
        return None
    e = float(estimate)

    def decided(n: int) -> bool:
        lo, hi = bound_at(n)
        if two_sided:
            if abs(e) < maximum:
                return lo > -maximum and hi < maximum
            return (lo > maximum) if e > 0 else (hi < -maximum)
        return hi < maximum if e < maximum else lo > maximum

    if (abs(e) if two_sided else e) == maximum:
        return None
    n = max(int(n_from), 2)
    if decided(n):
        return n
    hi_n = n
    while not decided(hi_n):
        if hi_n >= limit:
            return None
        hi_n = min(hi_n * 2, limit)
    lo_n = max(hi_n // 2, n)
    while hi_n - lo_n > 1:
        mid = (lo_n + hi_n) // 2
        lo_n, hi_n = (lo_n, mid) if decided(mid) else (mid, hi_n)
    return hi_n


def forecast_row(estimate: float, ci_low: float, ci_high: float, n_items: int, maximum: float, *,
                 responsive: bool = True, why: str = "", detail: str = "", two_sided: bool = False) -> dict:
    """The verdict columns of one gate row (:data:`VERDICT_COLUMNS`).

    ``items_needed`` is filled for inconclusive rows only (NaN when decided or not decidable);
    ``forecast`` says ``decided``, ``about N items`` or :data:`NOT_DECIDABLE` (or why there is none);
    ``forecast_assumes`` what the number assumed. An unresponsive judge gets a forecast of the items at
    which the row could *fail* only; it can never pass. ``why`` goes inside ``uninformative (...)``;
    ``responsiveness`` gets ``detail`` (the checks with their numbers) or ``why``."""
    rule = two_sided_verdict if two_sided else verdict
    v = rule(ci_low, ci_high, maximum, responsive=responsive, why=why)
    kind = verdict_kind(v)
    out = {"verdict": v, "verdict_kind": kind, "point_rule": point_rule(estimate, maximum, two_sided=two_sided),
           "responsive": bool(responsive), "responsiveness": detail or why or ("shown" if responsive else "not shown"),
           "items_needed": math.nan, "forecast": "decided", "forecast_assumes": ""}
    if kind in (PASS, FAIL):
        return out
    if not (_finite(ci_low) and _finite(ci_high) and _finite(estimate)) or not int(n_items) >= 1:
        return out | {"forecast": "no forecast: no interval at this n", "forecast_assumes": ""}
    e = float(estimate)
    leans_over = (abs(e) > maximum) if two_sided else (e > maximum)
    if not responsive and not leans_over:
        return out | {"forecast": "no forecast: a judge not shown to respond cannot pass",
                      "forecast_assumes": ""}
    need = items_to_decide(e, maximum, scaled_bounds(e, ci_low, ci_high, n_items), n_from=int(n_items) + 1,
                           two_sided=two_sided)
    if need is None:
        return out | {"forecast": NOT_DECIDABLE, "forecast_assumes": FORECAST_SCALED}
    side = "fail" if leans_over else "pass"
    return out | {"items_needed": float(need), "forecast": f"about {need} items to {side}",
                  "forecast_assumes": FORECAST_SCALED}


def balanced_accuracy(p1: float, lo1: float, hi1: float, p2: float, lo2: float, hi2: float
                      ) -> tuple[float, float, float]:
    """The mean of two accuracies on disjoint items (e.g. on Yes-labelled and on No-labelled items) with the
    MOVER interval of the two intervals: ``(estimate, low, high)``. A judge giving the same answer to every
    item has a balanced accuracy of exactly 0.5, whatever the share of each label; NaN when a class is
    missing."""
    vals = [p1, lo1, hi1, p2, lo2, hi2]
    if not all(_finite(v) for v in vals):
        return math.nan, math.nan, math.nan
    est = (p1 + p2) / 2
    lo = est - math.sqrt((p1 - lo1) ** 2 + (p2 - lo2) ** 2) / 2
    hi = est + math.sqrt((hi1 - p1) ** 2 + (hi2 - p2) ** 2) / 2
    return est, max(lo, 0.0), min(hi, 1.0)


def responsiveness(checks: list[tuple[str, float, float]]) -> tuple[bool, str]:
    """``(responsive, why)`` from named checks ``(what, lower_bound, chance)``: responsive when every lower
    bound lies strictly above its chance level (the level no unresponsive judge can beat in truth). ``why``
    names every check that is not met (its bound and chance), or the checks met."""
    if not checks:
        return False, "no responsiveness check could be computed (no labelled items)"
    bad = [f"{what}: lower bound {lo:.3f} not above chance {ch:.2f}" if _finite(lo)
           else f"{what}: no interval" for what, lo, ch in checks if not (_finite(lo) and lo > ch)]
    if bad:
        return False, "; ".join(bad)
    return True, "; ".join(f"{what} lower bound {lo:.3f} > {ch:.2f}" for what, lo, ch in checks)
