"""Counterfactual consistency metrics (seed 000, section 2.2).

All functions take a tidy long frame with one row per judgment (judge,
dimension, item, question, condition, ..., a value column and ``parse_ok``)
and return tidy frames. A *unit* is one item x question (x whatever else is in
``unit``) within one ``by`` group (e.g. judge x dimension); conditions are
compared only within a unit.

CFR (Eq. 3)::

    CFR_d = 1 / (|P_d| N) * sum_i sum_{{c,c'} in P_d} 1[Y_i^c != Y_i^c']

MASD (Eq. 4): the same with ``|s_i^c - s_i^c'|``. Both are computed per unit
without building pairs as objects: ``k (n - k)`` discordant pairs for a binary
answer with ``k`` yes among ``n`` conditions; for scores the sum of
``|x_i - x_j|`` over the unit's pairs, or ``sum_j x_(j) (2j - n - 1)`` over
sorted scores when units are large. Rows with ``parse_ok`` False or a missing
value are excluded, which removes their pairs; the estimate is then the mean
over the remaining pairs, and ``n_pairs`` / ``n_pairs_excluded`` say how many.
With complete data this equals Eq. 3/4 exactly.

Rows are grouped without a pandas groupby: runs of equal integer key codes
are the units (rows are sorted by unit only if some unit is split), units
are numbered in ``groupby(sort=True, dropna=False)`` order, and per-row
values are laid out by unit size so that per-unit sums are sums of
contiguous slices. :func:`cfr_masd` shares that grouping between both
metrics.

Intervals are over items (all units and pairs of an item together): rates
(CFR, accuracy) get Clopper-Pearson on cluster-adjusted effective counts,
means (MASD, direction) a bootstrap-t over items seeded with
``numpy.random.default_rng(seed)``, differences on the same items (net CFR,
judge A - judge B) :func:`cfbench.stats.intervals.paired_difference`: Tango's
matched-pairs interval where each item holds one pair on each side, else the MOVER
combination of the two or a bootstrap over items; fewer than two items
give NaN bounds and a ``ci_method`` that says why
(:mod:`cfbench.stats.intervals`, ``docs/statistics.md``).
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..stats.intervals import (clustered_rate_intervals, mean_interval_t, paired_difference,
                               worst_case_bound)

__all__ = [
    "pair_table",
    "cell_interval_rows",
    "flip_rate",
    "mean_abs_score_diff",
    "cfr_masd",
    "robustness_baseline",
    "accuracy",
    "cohen_kappa",
    "repeat_kappa",
    "flip_distribution",
    "cfr_minus_robustness",
    "effect_direction",
    "fairness_prompting_delta",
    "judge_differences",
    "accuracy_differences",
    "DIFFERENCE_COLUMNS",
]

# Column names that say what a study measures (the value, the unit, the grouping) have
# no defaults: the caller names them. The remaining defaults are the generic names of
# cfbench's tidy frames (``cfbench.core.schema``): condition, item_id, repeat, judge, parse_ok.


def _as_list(x: str | Sequence[str] | None) -> list[str]:
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


def _require(frame: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    for c in cols:
        if c not in frame.columns:
            raise InputError(f"missing column (needed for {what})", source="judgments frame", field=c)


def _values(frame: pd.DataFrame, value: str, ok: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``value`` as floats and the mask of usable rows (a number, not NaN, ``ok`` true).

    A value that is present but not a number is an :class:`InputError` naming its row.
    """
    col = frame[value]
    if pd.api.types.is_numeric_dtype(col.dtype):
        v = col.to_numpy(dtype=float, na_value=np.nan)
    else:
        v = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        bad = col.notna().to_numpy() & np.isnan(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"non-numeric value {col.iloc[i]!r}", source="judgments frame",
                             record=frame.index[i], field=value)
    mask = ~np.isnan(v)
    if ok is not None and ok in frame.columns:
        okv = frame[ok].to_numpy()
        mask &= okv if okv.dtype == bool else np.asarray(pd.Series(okv).fillna(False).astype(bool))
    return v, mask


def _valid_mask(frame: pd.DataFrame, value: str, ok: str | None) -> np.ndarray:
    """The usable rows of ``value`` (see :func:`_values`)."""
    return _values(frame, value, ok)[1]


#: A combined key whose range is at most this many times the row count is
#: counted with ``np.bincount``; a sparser one is sorted (``np.unique``).
_DENSE = 4


def _key_codes(col: pd.Series, sort: bool) -> tuple[np.ndarray, int, bool]:
    """Integer codes of a key column: (codes, number of codes, whether a missing key occurs).

    A missing key gets the last code. With ``sort`` the codes follow the order
    of ``groupby(sort=True, dropna=False)`` (category order for categoricals,
    sorted values otherwise, missing last), so combined codes sort like
    pandas' groups without pandas hashing every row. Integer columns of a
    small range are used as they are. The codes may be any integer dtype and
    may share memory with ``col``: treat them as read-only.
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes, card = col.cat.codes.to_numpy(), len(col.cat.categories)
    else:
        v = col.to_numpy()
        if v.size and (v.dtype.kind in "bi" or (v.dtype.kind == "u" and v.dtype.itemsize < 8)):
            lo, hi = int(v.min()), int(v.max())
            if hi - lo < _DENSE * v.size:
                codes = v.astype(np.int64, copy=False)
                return (codes - lo if lo else codes), hi - lo + 1, False
        codes, uniques = pd.factorize(col, sort=sort)
        card = len(uniques)
    missing = codes < 0
    if missing.any():
        return np.where(missing, card, codes.astype(np.int64)), card + 1, True
    return codes, card, False


def _compress(key: np.ndarray, card: int) -> tuple[np.ndarray, int]:
    """Dense ids 0..m-1 of ``key`` (values in [0, card)), in the order of the key."""
    if card <= _DENSE * key.size + 1024:
        present = np.flatnonzero(np.bincount(key, minlength=card))
        ids = np.zeros(card, np.int64)
        ids[present] = np.arange(present.size)  # a scatter: np.cumsum is ~20x slower
        return ids[key], present.size
    uniques, ids = np.unique(key, return_inverse=True)
    return ids.reshape(-1), uniques.size


def _combine(parts: Sequence[tuple[np.ndarray, int]], n: int) -> tuple[np.ndarray, int]:
    """One int64 key per row from code columns (mixed radix), ordered lexicographically.

    When the product of the cardinalities would overflow, the key so far is
    compressed to dense ids first (order preserving), so any number of
    columns fits.
    """
    if not parts:
        return np.zeros(n, np.int64), 1
    key, card = parts[0][0].astype(np.int64), parts[0][1]
    for codes, c in parts[1:]:
        if card * c >= 2 ** 62:
            key, card = _compress(key, card)
        key *= c
        key += codes
        card *= c
    return key, card


def _repeated(key: np.ndarray, card: int) -> np.ndarray | None:
    """Mask of the entries of ``key`` (values in [0, card)) that occur more than once; None if none do."""
    if card <= _DENSE * key.size + 1024:
        counts = np.bincount(key, minlength=card)
        return counts[key] > 1 if counts.max(initial=0) > 1 else None
    s = np.sort(key)
    if not (s[1:] == s[:-1]).any():
        return None
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)] > 1


class _Units(NamedTuple):
    """Rows grouped into units (``by`` + ``unit`` keys); shared by every metric of one frame.

    Units are numbered as they first occur; ``sorted`` lists them in
    ``groupby(sort=True, dropna=False)`` order. Per-row arrays are laid out
    by unit size (:func:`_laid`): for each size ``s`` in ``classes`` (with
    its units), the first rows of those units, then their second rows, ...,
    so a per-unit statistic is a sum over ``s`` contiguous slices
    (:func:`_blocks`) instead of a segmented reduction.
    """

    rows: np.ndarray | None  # row order of the layout; None: one unit size, rows unit by unit
    classes: list  # (unit size s, the units of that size)
    size: np.ndarray  # rows per unit
    first: np.ndarray  # first row of each unit
    sorted: np.ndarray  # units in key order
    by: np.ndarray  # ``by`` group of each unit, groups numbered in key order
    by_rows: np.ndarray  # first row of each ``by`` group
    item: np.ndarray  # item code of each unit (codes in sorted order)
    n_item_codes: int
    item_missing: int  # the code of a missing item, -1 if none is missing


#: Units of at most this many rows are handled pair by pair (conditions compared for
#: repeats, ``|x_i - x_j|`` summed); larger ones count (unit, condition) keys and sort scores.
_PAIRWISE = 8


def _laid(rows: np.ndarray | None, classes: list, arr: np.ndarray) -> np.ndarray:
    """``arr`` (one value per row) in the layout of :class:`_Units`."""
    if rows is None:  # a transpose: cheaper than gathering
        return arr.reshape(-1, classes[0][0]).T.ravel()
    return arr[rows]


def _blocks(classes: list, laid: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For each unit size s: (s, its units, an s x units view of ``laid``, row a = the units' a-th rows)."""
    off = 0
    for s, sel in classes:
        yield s, sel, laid[off:off + s * sel.size].reshape(s, sel.size)
        off += s * sel.size


def _units(frame: pd.DataFrame, by: list[str], unit: list[str], condition: str,
           item: str | None = None) -> _Units:
    """Group ``frame``'s rows into units, rejecting a condition repeated in a unit.

    Runs of rows with equal keys are found by comparing neighbouring key codes;
    when no unit is split over several runs (the usual layout: one unit's
    conditions next to each other) the runs are the units, otherwise the
    rows are stably sorted by unit first.
    """
    keys, n = by + unit, len(frame)
    if n == 0:
        e = np.zeros(0, np.int64)
        return _Units(e, [], e, e, e, e, e, e, 0, -1)
    codes = {c: _key_codes(frame[c], sort=True) for c in keys}
    change = np.zeros(n, bool)
    change[0] = True
    for c in keys:
        k = codes[c][0]
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    at = [(codes[c][0][starts], codes[c][1]) for c in keys]
    bkey, bcard = _combine(at[:len(by)], starts.size)
    key, card = _combine([(bkey, bcard)] + at[len(by):], starts.size)
    in_key_order = bool((key[1:] > key[:-1]).all())  # then the runs are distinct units
    rank, ng = (np.arange(starts.size), starts.size) if in_key_order else _compress(key, card)
    order = None
    if ng == starts.size:
        size = np.diff(np.append(starts, n))
    else:
        g = np.repeat(rank, np.diff(np.append(starts, n)))
        order = np.argsort(g, kind="stable")
        size = np.bincount(g, minlength=ng)
        unit_bkey = np.empty(ng, np.int64)
        unit_bkey[rank] = bkey
        bkey, starts, rank = unit_bkey, np.concatenate(([0], np.cumsum(size)[:-1])), np.arange(ng)
    classes = ([(int(size[0]), np.arange(ng))] if size.min() == size.max() else
               [(int(s), np.flatnonzero(size == s)) for s in np.flatnonzero(np.bincount(size))])
    rows = None
    if order is not None or len(classes) > 1:
        rows = np.concatenate([(starts[sel] + np.arange(s)[:, None]).ravel() for s, sel in classes])
        if order is not None:
            rows, starts = order[rows], order[starts]
    cond, n_cond, _ = _key_codes(frame[condition], sort=False)
    cond = _laid(rows, classes, cond)
    # a condition twice in a unit: small units compare their rows pairwise; large ones, and the
    # search for the first offending row, count (unit, condition) keys
    if any(s > _PAIRWISE or any((blk[a] == blk[b]).any() for a in range(s) for b in range(a + 1, s))
           for s, _, blk in _blocks(classes, cond)):
        unit_of = np.concatenate([np.tile(sel, s) for s, sel in classes])
        dup = _repeated(unit_of * n_cond + cond, ng * n_cond)
        if dup is not None:
            i = int(_laid(rows, classes, np.arange(n))[dup].min())
            raise InputError("the same condition appears twice in one unit (deduplicate or add a key "
                             "to `unit`)", source="judgments frame",
                             record={k: frame[k].iloc[i] for k in keys + [condition]}, field=condition)
    in_order = rank  # the identity if in key order
    if not in_key_order:
        in_order = np.empty(ng, np.int64)
        in_order[rank] = np.arange(ng)
        bkey = bkey[in_order]
    by_starts = np.flatnonzero(np.concatenate(([True], bkey[1:] != bkey[:-1])))
    unit_by = np.repeat(np.arange(by_starts.size), np.diff(np.append(by_starts, ng)))
    unit_by = unit_by if in_key_order else unit_by[rank]
    unit_item, n_item_codes, item_missing = np.zeros(0, np.int64), 0, -1
    if item is not None:
        ic, n_item_codes, has_missing = codes[item]
        unit_item, item_missing = ic[starts].astype(np.int64), n_item_codes - 1 if has_missing else -1
    return _Units(rows, classes, size, starts, in_order, unit_by, starts[in_order[by_starts]], unit_item,
                  n_item_codes, item_missing)


def _unit_stats(u: _Units, frame: pd.DataFrame, value: str, kind: str,
                ok: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit: valid rows, yes count (NaN for scores) and the pair statistic.

    Binary: ``k (n - k)`` discordant pairs. Score: the sum of ``|x_i - x_j|``
    over valid pairs, for all units of the same size ``s`` at once, NaN
    standing for excluded rows: pair by pair for small ``s`` (the usual
    handful of conditions; ``fmax(NaN, 0)`` drops a pair with an excluded
    row), else ``sum_j x_(j) (2j - n - 1)`` over each unit's ``n`` valid
    scores, sorted.
    """
    x, mask = _values(frame, value, ok)
    if kind == "binary":
        yes = mask & (x == 1.0)
        if np.count_nonzero(yes) + np.count_nonzero(mask & (x == 0.0)) < np.count_nonzero(mask):
            i = int(np.flatnonzero(mask & (x != 0.0) & (x != 1.0))[0])
            raise InputError(f"binary value must be 0 or 1, got {frame[value].iloc[i]!r}",
                             source="judgments frame", record=frame.index[i], field=value)
        vals = _laid(u.rows, u.classes, yes)
    else:  # NaN marks excluded rows; x already has it unless a parse failure kept a value
        stale = np.count_nonzero(mask) < x.size - np.count_nonzero(np.isnan(x))
        vals = _laid(u.rows, u.classes, np.where(mask, x, np.nan) if stale else x)
    valid = _laid(u.rows, u.classes, mask)
    n, k, stat = np.zeros(u.size.size), np.full(u.size.size, np.nan), np.zeros(u.size.size)
    for (s, sel, vb), (_, _, mb) in zip(_blocks(u.classes, vals), _blocks(u.classes, valid)):
        count = np.uint8 if s < 256 else np.int64  # summing booleans into bytes is ~10x faster
        n[sel] = mb.sum(axis=0, dtype=count)
        if kind == "binary":
            k[sel] = vb.sum(axis=0, dtype=count)
        elif s <= _PAIRWISE:
            acc = np.zeros(sel.size)
            for a in range(s - 1):
                for b in range(a + 1, s):
                    d = vb[a] - vb[b]
                    acc += np.fmax(np.abs(d, out=d), 0.0, out=d)
            stat[sel] = acc
        else:
            j, nv = np.arange(s)[:, None], n[sel]
            stat[sel] = np.where(j < nv, np.sort(vb, axis=0) * (2.0 * j - nv + 1), 0.0).sum(axis=0)
    if kind == "binary":
        stat = k * (n - k)
    return n, k, stat


def pair_table(frame: pd.DataFrame, *, value: str, kind: str = "binary",
               condition: str = "condition", unit: Sequence[str],
               by: Sequence[str], ok: str | None = "parse_ok") -> pd.DataFrame:
    """Per-unit pair statistics: one row per ``by`` x ``unit`` group.

    Columns: the key columns, ``n_conditions`` (rows in the unit),
    ``n_valid`` (rows usable), ``n_yes`` (binary only), ``stat`` (number of
    discordant pairs, or the sum of absolute pairwise differences),
    ``n_pairs`` (valid pairs) and ``n_pairs_all`` (pairs had nothing been
    excluded).
    """
    if kind not in ("binary", "score"):
        raise ValueError(f"kind must be 'binary' or 'score', got {kind!r}")
    by, unit = _as_list(by), _as_list(unit)
    keys = by + unit
    _require(frame, keys + [condition, value], "pair statistics")
    if frame.empty:
        return pd.DataFrame(columns=keys + ["n_conditions", "n_valid", "n_yes", "stat", "n_pairs",
                                            "n_pairs_all"])
    u = _units(frame, by, unit, condition)
    n, k, stat = (a[u.sorted] for a in _unit_stats(u, frame, value, kind, ok))
    n_all = u.size[u.sorted].astype(float)
    out = frame.iloc[u.first[u.sorted]][keys].reset_index(drop=True)
    out["n_conditions"] = n_all.astype(int)
    out["n_valid"] = n.astype(int)
    out["n_yes"] = k
    out["stat"] = stat
    out["n_pairs"] = n * (n - 1) / 2
    out["n_pairs_all"] = n_all * (n_all - 1) / 2
    return out


class _Cells(NamedTuple):
    """Units pooled into cells of ``by`` group x item: what the metrics sum and resample."""

    units: _Units
    cell: np.ndarray  # cell of each unit; cells numbered in key order
    bounds: np.ndarray  # the cells of group b are bounds[b]:bounds[b + 1]
    has_item: np.ndarray  # per cell: the item is not missing
    pairs_all: np.ndarray  # per cell: pairs had no row been excluded
    keys: list  # the ``by`` key of each group, as pandas spells it


def _grouped(frame: pd.DataFrame, by: list[str], unit: Sequence[str], condition: str, item: str,
             values: list[str]) -> _Cells:
    """Check the columns and group the rows once for the metrics of ``values``."""
    unit = _as_list(unit)
    _require(frame, by + unit + [condition] + values, "pair statistics")
    if item not in by + unit:
        raise InputError("the item column must be part of `unit`", field=item)
    u = _units(frame, by, unit, condition, item)
    nb = u.by_rows.size if by else 1
    cell, n_cells = _compress(u.by * u.n_item_codes + u.item, nb * u.n_item_codes)
    cell_by, cell_item = np.zeros(n_cells, np.int64), np.zeros(n_cells, np.int64)
    cell_by[cell], cell_item[cell] = u.by, u.item
    keys: list = [()]
    if by:  # one row per group, in key order; a groupby spells a missing object key NaN
        cols = [frame[c].iloc[u.by_rows] for c in by]
        keys = list(zip(*(v.where(v.notna(), np.nan) if v.dtype == object else v for v in cols)))
    size = u.size.astype(float)
    return _Cells(u, cell, np.searchsorted(cell_by, np.arange(nb + 1)), cell_item != u.item_missing,
                  np.bincount(cell, weights=size * (size - 1) / 2, minlength=n_cells), keys)


def _metric(c: _Cells, frame: pd.DataFrame, by: list[str], value: str, kind: str, ok: str | None,
            name: str, n_boot: int, seed: int, level: float,
            value_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """Per ``by`` group: summed pair statistic over summed valid pairs, and its interval over items.

    A binary answer (a rate) gets the cluster-adjusted Clopper-Pearson interval
    (:func:`cfbench.stats.intervals.clustered_rate_intervals`, all groups at
    once); a score (a mean) the bootstrap-t over items
    (:func:`cfbench.stats.intervals.mean_interval_t`), resampling a group's
    items in key order, groups in key order, from one ``rng``.
    """
    n, _, stat = _unit_stats(c.units, frame, value, kind, ok)
    n_pairs = n * (n - 1) / 2
    cs, cp, cu = (np.bincount(c.cell, weights=w, minlength=c.has_item.size)
                  for w in (stat, n_pairs, n_pairs > 0))
    item = c.has_item & (cp > 0)
    return cell_interval_rows(c.keys, c.bounds, cs, cp, cu, c.pairs_all, item, by=by, kind=kind, name=name,
                              n_boot=n_boot, seed=seed, level=level, value_range=value_range)


def cell_interval_rows(keys: list, bounds: np.ndarray, cs: np.ndarray, cp: np.ndarray, cu: np.ndarray,
                       pairs_all: np.ndarray, item: np.ndarray, *, by: list[str], kind: str, name: str,
                       n_boot: int, seed: int, level: float = 0.95,
                       value_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """One row per group from per-cell sums, cells sorted by group then item (group ``b`` is
    ``bounds[b]:bounds[b + 1]``): ``cs`` the summed pair statistic, ``cp`` the valid pairs, ``cu`` the
    units with a pair, ``pairs_all`` the pairs before exclusions, ``item`` the cells that count as items.
    The estimate is ``sum(cs) / sum(cp)``; the interval is over the group's items (see :func:`_metric`).
    Shared by the functions on tidy frames here and by item-statistics tables (:mod:`cfbench.metrics.state`)."""
    nb = len(keys)
    if kind == "binary":
        cell_group = np.repeat(np.arange(nb), np.diff(bounds))
        _, lo_all, hi_all, methods = clustered_rate_intervals(cs[item], cp[item], cell_group[item],
                                                              n_groups=nb, confidence=level)
    else:
        rng = np.random.default_rng(seed)
    rows = []
    for b, key in enumerate(keys):
        sl = slice(bounds[b], bounds[b + 1])
        total = float(cp[sl].sum())
        if kind == "binary":
            lo, hi, method = float(lo_all[b]), float(hi_all[b]), methods[b]
        else:
            lo, hi, method = mean_interval_t(cs[sl][item[sl]], cp[sl][item[sl]], n_boot=n_boot, rng=rng,
                                             confidence=level, value_range=value_range)
        rows.append(dict(zip(by, key if isinstance(key, tuple) else (key,))) | {
            name: float(cs[sl].sum()) / total if total > 0 else np.nan,
            "n_items": int(item[sl].sum()), "n_units": int(cu[sl].sum()),
            "n_pairs": int(total), "n_pairs_excluded": int(pairs_all[sl].sum() - total),
            "ci_low": lo, "ci_high": hi, "ci_method": method,
        })
    return pd.DataFrame(rows, columns=by + [name, "n_items", "n_units", "n_pairs", "n_pairs_excluded",
                                            "ci_low", "ci_high", "ci_method"])


def _abs_range(score_range: tuple[float, float] | None) -> tuple[float, float] | None:
    """The range of ``|x - y|`` for scores in ``score_range``."""
    if score_range is None:
        return None
    lo, hi = map(float, score_range)
    if not hi > lo:
        raise InputError(f"score_range must be (low, high) with high > low, got {score_range!r}",
                         field="score_range")
    return 0.0, hi - lo


def flip_rate(frame: pd.DataFrame, *, value: str, condition: str = "condition",
              unit: Sequence[str], by: Sequence[str], item: str = "item_id",
              ok: str | None = "parse_ok", n_boot: int = 1000, seed: int = 0,
              level: float = 0.95) -> pd.DataFrame:
    """Counterfactual flip rate (Eq. 3) per ``by`` group, as a fraction in [0, 1].

    Columns: ``by``, ``cfr``, ``n_items``, ``n_units``, ``n_pairs``,
    ``n_pairs_excluded`` and an interval over items (``ci_low``/``ci_high``,
    ``ci_method``): Clopper-Pearson on cluster-adjusted effective counts
    (:func:`cfbench.stats.intervals.clustered_rate_intervals`; analytic, so
    ``n_boot`` is unused), NaN with a ``none:`` method below 2 items.

    >>> df = pd.DataFrame({"judge": "j", "dimension": "gender", "item_id": ["a", "a", "b", "b"],
    ...                    "question_id": "q", "condition": ["m", "f"] * 2,
    ...                    "answer_yes": [1, 0, 1, 1], "parse_ok": True})
    >>> t = flip_rate(df, value="answer_yes", unit=["item_id", "question_id"], by=["judge", "dimension"],
    ...               n_boot=0)
    >>> float(t["cfr"].iloc[0])
    0.5
    """
    by = _as_list(by)
    c = _grouped(frame, by, unit, condition, item, [value])
    return _metric(c, frame, by, value, "binary", ok, "cfr", n_boot, seed, level)


def mean_abs_score_diff(frame: pd.DataFrame, *, value: str,
                        condition: str = "condition", unit: Sequence[str],
                        by: Sequence[str], item: str = "item_id",
                        ok: str | None = "parse_ok", n_boot: int = 1000, seed: int = 0,
                        level: float = 0.95, score_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """Mean absolute score difference (Eq. 4) per ``by`` group, in score units.

    Same columns as :func:`flip_rate` with ``masd`` instead of ``cfr``. The
    interval is the bootstrap-t over items
    (:func:`cfbench.stats.intervals.mean_interval_t`); ``score_range`` (the
    scores' possible range, e.g. ``(0, 100)``) bounds it and gives the
    worst-case interval when every item shows the same MASD (e.g. all 0);
    without it such a row has a NaN interval that says why.
    """
    by = _as_list(by)
    c = _grouped(frame, by, unit, condition, item, [value])
    return _metric(c, frame, by, value, "score", ok, "masd", n_boot, seed, level, _abs_range(score_range))


def cfr_masd(frame: pd.DataFrame, *, answer: str, score: str,
             condition: str = "condition", unit: Sequence[str], by: Sequence[str],
             item: str = "item_id", ok: str | None = "parse_ok", n_boot: int = 1000, seed: int = 0,
             level: float = 0.95, score_range: tuple[float, float] | None = None
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`flip_rate` of ``answer`` and :func:`mean_abs_score_diff` of ``score``, grouping the rows once.

    Returns the same two tables as the separate calls (each interval seeded
    with ``seed``); grouping once saves about a third of their time on large frames.
    """
    by = _as_list(by)
    c = _grouped(frame, by, unit, condition, item, [answer, score])
    return (_metric(c, frame, by, answer, "binary", ok, "cfr", n_boot, seed, level),
            _metric(c, frame, by, score, "score", ok, "masd", n_boot, seed, level, _abs_range(score_range)))


def robustness_baseline(frame: pd.DataFrame, *, answer: str,
                        scores: Sequence[str], repeat: str = "repeat",
                        unit: Sequence[str], by: Sequence[str],
                        item: str = "item_id", ok: str | None = "parse_ok", n_boot: int = 1000,
                        seed: int = 0, level: float = 0.95,
                        score_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """CFR and MASD among k repeats of the same prompt (the seed's robustness row).

    ``frame`` holds only the repeated originals; the repeat index plays the
    role of the condition. Long output: ``by``, ``metric`` (``cfr`` or
    ``masd_<score>``), ``value``, ``n_items``, ``n_units``, ``n_pairs``,
    ``n_pairs_excluded``, ``ci_low``, ``ci_high``, ``ci_method``. Scores missing from the
    frame, or all-NaN, are skipped.
    """
    by = _as_list(by)
    parts = []
    if answer in frame.columns:
        t = flip_rate(frame, value=answer, condition=repeat, unit=unit, by=by, item=item, ok=ok,
                      n_boot=n_boot, seed=seed, level=level).rename(columns={"cfr": "value"})
        parts.append(t.assign(metric="cfr"))
    for s in scores:
        if s in frame.columns and frame[s].notna().any():
            t = mean_abs_score_diff(frame, value=s, condition=repeat, unit=unit, by=by, item=item,
                                    ok=ok, n_boot=n_boot, seed=seed, level=level, score_range=score_range)
            parts.append(t.rename(columns={"masd": "value"}).assign(metric=f"masd_{s}"))
    cols = by + ["metric", "value", "n_items", "n_units", "n_pairs", "n_pairs_excluded",
                 "ci_low", "ci_high", "ci_method"]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


def accuracy(frame: pd.DataFrame, *, answer: str, label: str,
             by: Sequence[str], ok: str | None = "parse_ok",
             level: float = 0.95, item: str | None = None) -> pd.DataFrame:
    """Answer accuracy against ground-truth labels, with an interval clustered by item.

    Rows without a label are not scored; rows with a label but no parsed
    answer are reported as ``n_unparsed`` and left out of the accuracy (a
    parse failure is not a wrong "No"). The interval is the cluster-adjusted
    Clopper-Pearson interval over ``item`` (several questions of one
    transcript are not independent); without ``item`` every answer is its
    own unit. Fewer than two units: NaN bounds, ``ci_method`` says why.
    Columns: ``by``, ``accuracy``, ``n``, ``n_correct``, ``n_unparsed``,
    ``n_items``, ``ci_low``, ``ci_high``, ``ci_method``.
    """
    by = _as_list(by)
    _require(frame, by + [answer, label] + ([item] if item else []), "accuracy")
    cols = by + ["accuracy", "n", "n_correct", "n_unparsed", "n_items", "ci_low", "ci_high", "ci_method"]
    lab = frame[label]
    has_label = lab.notna().to_numpy()
    f = frame.loc[has_label].copy()
    labv = pd.to_numeric(f[label].map(_label_to_float), errors="coerce")
    valid = _valid_mask(f, answer, ok)
    f["_correct"] = (pd.to_numeric(f[answer], errors="coerce").to_numpy() == labv.to_numpy()).astype(float)
    f["_valid"] = valid
    f["_unit"] = f[item].to_numpy() if item else np.arange(len(f))
    if not len(f):
        return pd.DataFrame(columns=cols)
    gid = f.groupby(by, sort=True, dropna=False).ngroup().to_numpy() if by else np.zeros(len(f), np.int64)
    f["_g"] = gid
    keys = (f.groupby(by, sort=True, dropna=False).size().index.tolist() if by else [()])
    v = f[f["_valid"]]
    per = v.groupby(["_g", "_unit"], sort=True)["_correct"].agg(["sum", "count"]).reset_index()
    est, lo, hi, methods = clustered_rate_intervals(per["sum"].to_numpy(float), per["count"].to_numpy(float),
                                                    per["_g"].to_numpy(np.int64), n_groups=len(keys),
                                                    confidence=level)
    n_items = np.bincount(per["_g"].to_numpy(np.int64), minlength=len(keys))
    rows = []
    for g, key in enumerate(keys):
        key = key if isinstance(key, tuple) else (key,)
        grp = f[f["_g"] == g]
        vv = grp["_valid"].to_numpy()
        n = int(vv.sum())
        c = int(grp["_correct"].to_numpy()[vv].sum())
        rows.append(dict(zip(by, key)) | {"accuracy": c / n if n else np.nan, "n": n, "n_correct": c,
                                          "n_unparsed": int((~vv).sum()), "n_items": int(n_items[g]),
                                          "ci_low": float(lo[g]), "ci_high": float(hi[g]),
                                          "ci_method": methods[g]})
    return pd.DataFrame(rows, columns=cols)


def _label_to_float(v: object) -> float:
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("yes", "true", "1"):
            return 1.0
        if s in ("no", "false", "0"):
            return 0.0
        raise InputError(f"label {v!r} is not yes/no", field="label")
    if isinstance(v, (int, float, np.integer, np.floating)) and float(v) in (0.0, 1.0):
        return float(v)
    raise InputError(f"label {v!r} is not yes/no", field="label")


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa between two label sequences of equal length.

    ``(p_o - p_e) / (1 - p_e)``; returns 1.0 when both raters use a single
    identical label throughout (perfect agreement, ``p_e = 1``), NaN for
    empty input.
    """
    a = np.asarray(a, dtype=object)
    b = np.asarray(b, dtype=object)
    if a.shape != b.shape:
        raise ValueError(f"cohen_kappa: lengths differ ({a.size} vs {b.size})")
    if a.size == 0:
        return float("nan")
    labels = sorted(set(a.tolist()) | set(b.tolist()), key=str)
    idx = {lab: i for i, lab in enumerate(labels)}
    ia = np.array([idx[x] for x in a])
    ib = np.array([idx[x] for x in b])
    k = len(labels)
    cm = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k).astype(float)
    n = cm.sum()
    po = np.trace(cm) / n
    pe = float((cm.sum(0) * cm.sum(1)).sum()) / n**2
    if pe == 1.0:
        return 1.0 if po == 1.0 else float("nan")
    return float((po - pe) / (1 - pe))


def repeat_kappa(frame: pd.DataFrame, *, answer: str, repeat: str = "repeat",
                 unit: Sequence[str], by: Sequence[str],
                 ok: str | None = "parse_ok") -> pd.DataFrame:
    """Cohen's kappa between repeat runs, averaged over pairs of repeats.

    For each pair of repeat indices (r, r') kappa is computed over units where
    both answers parsed. Columns: ``by``, ``kappa`` (mean over repeat pairs),
    ``kappa_min``, ``n_repeat_pairs``, ``n_units`` (smallest unit count
    behind any pair).
    """
    by, unit = _as_list(by), _as_list(unit)
    _require(frame, by + unit + [repeat, answer], "repeat kappa")
    valid = frame.loc[_valid_mask(frame, answer, ok)]
    rows = []
    groups = valid.groupby(by, sort=True, dropna=False) if by else [((), valid)]
    for key, grp in groups:
        key = key if isinstance(key, tuple) else (key,)
        wide = grp.pivot_table(index=unit, columns=repeat, values=answer, aggfunc="first")
        reps = list(wide.columns)
        kappas, ns = [], []
        for i in range(len(reps)):
            for j in range(i + 1, len(reps)):
                both = wide[[reps[i], reps[j]]].dropna()
                if len(both):
                    kappas.append(cohen_kappa(both[reps[i]].to_numpy(), both[reps[j]].to_numpy()))
                    ns.append(len(both))
        rows.append(dict(zip(by, key)) | {
            "kappa": float(np.nanmean(kappas)) if kappas and not np.all(np.isnan(kappas)) else np.nan,
            "kappa_min": float(np.nanmin(kappas)) if kappas and not np.all(np.isnan(kappas)) else np.nan,
            "n_repeat_pairs": len(kappas), "n_units": int(min(ns)) if ns else 0})
    return pd.DataFrame(rows, columns=by + ["kappa", "kappa_min", "n_repeat_pairs", "n_units"])


def flip_distribution(frame: pd.DataFrame, *, value: str,
                      condition: str = "condition", unit: Sequence[str],
                      by: Sequence[str], ok: str | None = "parse_ok") -> pd.DataFrame:
    """How many conditions flip away from the majority, per unit and as a histogram.

    Returns a histogram frame: ``by``, ``n_minority`` (number of valid
    conditions whose answer differs from the unit's majority; 0 = all agree),
    ``n_units``, ``share``. Units with fewer than two valid answers are left out.
    """
    by = _as_list(by)
    pairs = pair_table(frame, value=value, kind="binary", condition=condition, unit=unit, by=by, ok=ok)
    pairs = pairs[pairs["n_valid"] >= 2].copy()
    pairs["n_minority"] = np.minimum(pairs["n_yes"], pairs["n_valid"] - pairs["n_yes"]).astype(int)
    hist = pairs.groupby(by + ["n_minority"], sort=True).size().rename("n_units").reset_index()
    tot = hist.groupby(by)["n_units"].transform("sum") if by else hist["n_units"].sum()
    hist["share"] = hist["n_units"] / tot
    return hist


def cfr_minus_robustness(counterfactual: pd.DataFrame, repeats: pd.DataFrame, *,
                         value: str, kind: str = "binary",
                         condition: str = "condition", repeat: str = "repeat",
                         unit: Sequence[str], by: Sequence[str],
                         judge: str = "judge", item: str = "item_id", ok: str | None = "parse_ok",
                         n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                         score_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """Counterfactual rate minus the robustness baseline, on the same items, with a paired interval.

    For each ``by`` group (judge x dimension) the estimate is
    ``CFR_d - CFR_repeats`` (or the MASD analogue with ``kind="score"``),
    where the baseline pools all repeated originals of that judge, both over
    the items that have pairs in both (``n_items``). The interval is
    :func:`cfbench.stats.intervals.paired_difference`: MOVER from the two
    cluster-adjusted Clopper-Pearson intervals (bootstrap-t for scores), with
    ``pairing="corrected"``: for flip rates with several pairs per item on a side the
    correlation of the two terms' item contributions enters with Newcombe's continuity
    correction (0 at zero events; never 1 on a handful of matched items, where the raw
    estimate collapsed the interval); with one counterfactual and one repeat pair per item the
    interval is Tango's matched-pairs interval on the items' 2x2 counts; for scores the
    correlation is capped at 0. Fewer than two
    shared items: NaN bounds and a ``ci_method`` saying so. An interval above
    0 says the counterfactual signal exceeds the judge's own repeat noise on
    these items.
    Columns: ``by``, ``estimate``, ``counterfactual``, ``robustness``,
    ``n_items``, ``n_pairs``, ``n_repeat_pairs``, ``ci_low``, ``ci_high``, ``ci_method``.
    """
    by = _as_list(by)
    if judge not in by:
        raise ValueError(f"`by` must contain the judge column {judge!r}")
    cols = by + ["estimate", "counterfactual", "robustness", "n_items", "n_pairs", "n_repeat_pairs",
                 "ci_low", "ci_high", "ci_method"]
    cf = pair_table(counterfactual, value=value, kind=kind, condition=condition, unit=unit, by=by, ok=ok)
    rb = pair_table(repeats, value=value, kind=kind, condition=repeat, unit=unit, by=[judge], ok=ok)
    if not len(cf):
        return pd.DataFrame(columns=cols)
    rb_item = rb.groupby([judge, item])[["stat", "n_pairs"]].sum()
    rng = np.random.default_rng(seed)
    vr = _abs_range(score_range) if kind == "score" else None
    rows = []
    for key, grp in cf.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        kv = dict(zip(by, key))
        ci = grp.groupby(item)[["stat", "n_pairs"]].sum()
        ri = rb_item.xs(kv[judge], level=judge) if kv[judge] in rb_item.index.get_level_values(0) else \
            pd.DataFrame(columns=["stat", "n_pairs"], dtype=float)
        items = ci.index.union(ri.index)
        ci = ci.reindex(items, fill_value=0.0)
        ri = ri.reindex(items, fill_value=0.0)
        both = (ci["n_pairs"] > 0) & (ri["n_pairs"] > 0)
        d = paired_difference(ci["stat"].to_numpy(float), ci["n_pairs"].to_numpy(float),
                              ri["stat"].to_numpy(float), ri["n_pairs"].to_numpy(float),
                              kind="rate" if kind == "binary" else "mean", n_boot=n_boot, rng=rng,
                              confidence=level, value_range=vr, pairing="corrected")
        rows.append(kv | {"estimate": d["estimate"], "counterfactual": d["est_1"], "robustness": d["est_2"],
                          "n_items": d["n_items"], "n_pairs": int(ci.loc[both, "n_pairs"].sum()),
                          "n_repeat_pairs": int(ri.loc[both, "n_pairs"].sum()),
                          "ci_low": d["ci_low"], "ci_high": d["ci_high"], "ci_method": d["ci_method"]})
    return pd.DataFrame(rows, columns=cols)


def effect_direction(frame: pd.DataFrame, originals: pd.DataFrame, *, value: str,
                     condition: str = "condition", unit: Sequence[str],
                     by: Sequence[str], match: Sequence[str],
                     item: str = "item_id", ok: str | None = "parse_ok", n_boot: int = 1000,
                     seed: int = 0, level: float = 0.95,
                     value_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """Signed mean difference of each condition vs the original (who is favoured).

    ``frame`` holds the counterfactual rows, ``originals`` one row per
    ``match`` x ``unit`` with the original's value. For every ``by`` x
    condition the estimate is the mean over units of ``value(c) -
    value(original)`` (for a 0/1 answer: the change in yes-rate), with a
    bootstrap-t interval over items (:func:`cfbench.stats.intervals.mean_interval_t`).
    ``value_range`` is the range of ``value`` (e.g. ``(0, 1)`` for a yes/no
    answer); the differences then lie in ``[lo - hi, hi - lo]``, which bounds
    the interval and gives the worst-case interval when every item shows the
    same difference (e.g. all 0). Rows whose variant or original did not
    parse are excluded (``n_units`` counts what is left).
    Columns: ``by``, ``condition``, ``mean_diff``, ``n_units``, ``n_items``,
    ``ci_low``, ``ci_high``, ``ci_method``.
    """
    by, unit, match = _as_list(by), _as_list(unit), _as_list(match)
    _require(frame, by + unit + [condition, value], "effect direction")
    _require(originals, match + unit + [value], "effect direction (originals)")
    orig = originals.loc[_valid_mask(originals, value, ok), match + unit + [value]]
    if orig.duplicated(match + unit).any():
        raise InputError("more than one original per unit", source="originals frame",
                         record=orig.loc[orig.duplicated(match + unit)].iloc[0].to_dict(), field=value)
    f = frame.loc[_valid_mask(frame, value, ok), list(dict.fromkeys(by + unit + [condition, value]))]
    merged = f.merge(orig.rename(columns={value: "_orig"}), on=match + unit, how="inner")
    merged["_diff"] = pd.to_numeric(merged[value]) - pd.to_numeric(merged["_orig"])
    w = _abs_range(value_range)
    diff_range = None if w is None else (-w[1], w[1])
    rng = np.random.default_rng(seed)
    rows = []
    cols = by + [condition]
    # One grouping for all groups (the per-group loop used to copy each group's rows and group
    # them again): the rows of group g, in their frame order, are diff[order[start[g]:start[g+1]]];
    # the per-item sums of every group come from one groupby over cols + item (the same cython
    # sums per item as a groupby inside the group, so the same numbers).
    grouped = merged.groupby(cols, sort=True, dropna=False)
    gid = grouped.ngroup().to_numpy()
    keys = grouped.size().index
    order = np.argsort(gid, kind="stable")
    start = np.concatenate([[0], np.cumsum(np.bincount(gid, minlength=len(keys)))])
    diff = merged["_diff"].to_numpy(float)
    per_item = merged.groupby(cols + [item], sort=True, dropna=False)["_diff"].agg(["sum", "count"])
    item_missing = per_item.index.get_level_values(item).isna()
    per_item = per_item[~item_missing]  # a groupby by item within a group drops a missing item
    item_gid = grouped.ngroup().groupby([merged[c] for c in cols + [item]], sort=True, dropna=False).first()
    item_gid = item_gid[~item_missing].to_numpy()  # the group of each (group, item) row, in key order
    item_start = np.concatenate([[0], np.cumsum(np.bincount(item_gid, minlength=len(keys)))])
    sums, counts = per_item["sum"].to_numpy(float), per_item["count"].to_numpy(float)
    for g, key in enumerate(keys):
        key = key if isinstance(key, tuple) else (key,)
        a, b = item_start[g], item_start[g + 1]
        lo, hi, method = mean_interval_t(sums[a:b], counts[a:b], n_boot=n_boot, rng=rng, confidence=level,
                                         value_range=diff_range)
        values = diff[order[start[g]:start[g + 1]]]
        rows.append(dict(zip(cols, key)) | {"mean_diff": float(pd.Series(values).mean()),
                                             "n_units": int(values.size), "n_items": int(b - a),
                                             "ci_low": lo, "ci_high": hi, "ci_method": method})
    return pd.DataFrame(rows, columns=cols + ["mean_diff", "n_units", "n_items", "ci_low", "ci_high",
                                              "ci_method"])


def fairness_prompting_delta(table: pd.DataFrame, *, metric: str = "metric", value: str = "value",
                             arm: str = "arm", baseline: str, treated: str, by: Sequence[str],
                             over: str) -> pd.DataFrame:
    """Change under the fairness prompt: treated minus baseline, per judge and metric.

    ``table`` is long (``by``, ``arm``, ``over``, ``metric``, ``value``), e.g.
    the CFR and MASD tables of both arms stacked. Each arm is first averaged
    over the dimensions present in *both* arms (so a dimension run only in
    one arm cannot move the delta), then subtracted. Negative = less
    disparity with the fairness prompt (the seed's Table 3 convention).
    Columns: ``by``, ``metric``, ``baseline``, ``treated``, ``delta``,
    ``n_dimensions``.
    """
    by = _as_list(by)
    _require(table, by + [arm, over, metric, value], "fairness-prompting delta")
    t = table.loc[table[arm].isin([baseline, treated]) & table[value].notna()]
    wide = t.pivot_table(index=by + [metric, over], columns=arm, values=value, aggfunc="mean")
    for a in (baseline, treated):
        if a not in wide.columns:
            wide[a] = np.nan
    wide = wide.dropna(subset=[baseline, treated])
    agg = wide.groupby(level=by + [metric]).agg(
        baseline=(baseline, "mean"), treated=(treated, "mean"), n_dimensions=(baseline, "size"))
    agg["delta"] = agg["treated"] - agg["baseline"]
    return agg.reset_index()[by + [metric, "baseline", "treated", "delta", "n_dimensions"]]


#: Columns of :func:`judge_differences` and :func:`accuracy_differences` (after the ``by`` columns).
DIFFERENCE_COLUMNS = ["judge_a", "judge_b", "metric", "value_a", "value_b", "delta", "ci_low", "ci_high",
                      "n_items", "ci_method"]


def _judge_pairs(present: Sequence, judges: Sequence | None) -> list[tuple]:
    order = list(judges) if judges is not None else list(dict.fromkeys(present))
    order = [j for j in order if j in set(present)]
    return [(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))]


def _item_sums(t: pd.DataFrame, keys: list[str], item: str, num: str, den: str) -> pd.DataFrame:
    return t.groupby(keys + [item], sort=True, dropna=False)[[num, den]].sum()


def _differences(per: pd.DataFrame, *, by: list[str], judge: str, item: str, judges: Sequence | None,
                 kind: str, metric: str, n_boot: int, seed: int, level: float,
                 value_range: tuple[float, float] | None, num: str, den: str) -> list[dict]:
    rows = []
    rng = np.random.default_rng(seed)
    groups = per.groupby(level=by, sort=True, dropna=False) if by else [((), per)]
    for key, grp in groups:
        key = key if isinstance(key, tuple) else (key,)
        g = grp.droplevel(by) if by else grp
        for a, b in _judge_pairs(g.index.get_level_values(judge).unique(), judges):
            A, B = g.xs(a, level=judge), g.xs(b, level=judge)
            items = A.index.union(B.index)
            A, B = A.reindex(items, fill_value=0.0), B.reindex(items, fill_value=0.0)
            d = paired_difference(A[num].to_numpy(float), A[den].to_numpy(float), B[num].to_numpy(float),
                                  B[den].to_numpy(float), kind=kind, n_boot=n_boot, rng=rng, confidence=level,
                                  value_range=value_range, pairing="items")
            rows.append(dict(zip(by, key)) | {"judge_a": a, "judge_b": b, "metric": metric,
                                              "value_a": d["est_1"], "value_b": d["est_2"],
                                              "delta": d["estimate"], "ci_low": d["ci_low"],
                                              "ci_high": d["ci_high"], "n_items": d["n_items"],
                                              "ci_method": d["ci_method"]})
    return rows


def judge_differences(frame: pd.DataFrame, *, value: str, kind: str, condition: str = "condition",
                      unit: Sequence[str], by: Sequence[str], judge: str = "judge",
                      judges: Sequence | None = None, item: str = "item_id", ok: str | None = "parse_ok",
                      metric: str | None = None, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                      score_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """CFR (``kind="binary"``) or MASD (``kind="score"``) of judge A minus judge B on the same items.

    For every ``by`` group and every pair of judges (``judges`` order, else
    first appearance; A before B), both metrics are computed on the items
    that have pairs for both judges, and the difference gets the paired
    interval of :func:`cfbench.stats.intervals.paired_difference` with
    ``pairing="items"``: the two judges' item statistics are paired item by
    item (Tango's matched-pairs interval for one binary pair per item, the same
    scaled by the items' design effect when both judges have the same number of
    pairs in every item, else a bootstrap-t over items of the difference, which
    falls back to the capped MOVER when the item differences are all equal).
    Columns: ``by`` (without the judge), then :data:`DIFFERENCE_COLUMNS`.
    """
    by = [c for c in _as_list(by) if c != judge]
    pt = pair_table(frame, value=value, kind=kind, condition=condition, unit=unit, by=by + [judge], ok=ok)
    if not len(pt):
        return pd.DataFrame(columns=by + DIFFERENCE_COLUMNS)
    per = _item_sums(pt, by + [judge], item, "stat", "n_pairs")
    vr = _abs_range(score_range) if kind == "score" else None
    name = metric or ("cfr" if kind == "binary" else f"masd_{value}")
    rows = _differences(per, by=by, judge=judge, item=item, judges=judges,
                        kind="rate" if kind == "binary" else "mean", metric=name, n_boot=n_boot, seed=seed,
                        level=level, value_range=vr, num="stat", den="n_pairs")
    return pd.DataFrame(rows, columns=by + DIFFERENCE_COLUMNS)


def accuracy_differences(frame: pd.DataFrame, *, answer: str, label: str, by: Sequence[str] = (),
                         judge: str = "judge", judges: Sequence | None = None, item: str = "item_id",
                         ok: str | None = "parse_ok", level: float = 0.95) -> pd.DataFrame:
    """Accuracy of judge A minus judge B on the same items, with the paired interval of :func:`judge_differences`.

    Only labelled rows whose answer parsed count. Columns as :func:`judge_differences`.
    """
    by = [c for c in _as_list(by) if c != judge]
    _require(frame, by + [judge, item, answer, label], "accuracy differences")
    f = frame.loc[frame[label].notna()].copy()
    labv = pd.to_numeric(f[label].map(_label_to_float), errors="coerce").to_numpy()
    f = f.assign(_correct=(pd.to_numeric(f[answer], errors="coerce").to_numpy() == labv).astype(float), _n=1.0)
    f = f.loc[_valid_mask(f, answer, ok)]
    if not len(f):
        return pd.DataFrame(columns=by + DIFFERENCE_COLUMNS)
    per = _item_sums(f, by + [judge], item, "_correct", "_n")
    rows = _differences(per, by=by, judge=judge, item=item, judges=judges, kind="rate", metric="accuracy",
                        n_boot=1000, seed=0, level=level, value_range=None, num="_correct", den="_n")
    return pd.DataFrame(rows, columns=by + DIFFERENCE_COLUMNS)
