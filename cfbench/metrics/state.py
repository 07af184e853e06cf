"""Per-item statistics as mergeable state: one implementation of a study's tables, whatever the run's size.

Shaped like a torchmetrics / torcheval metric. A study writes two plain functions,

``reduce(*frames) -> ItemStatistics``
    the *update* step: the sufficient statistics of some whole items' judged rows (per table cell and item:
    sums, counts, 2 x 2 tables ...), as named small frames plus a few flags;
``compute(stats: ItemStatistics, **options) -> dict[str, DataFrame]``
    the *functional form*: every table from the statistics (estimates and intervals).

and :class:`ItemState` holds the statistics of many items between the two:

>>> state = ItemState(reduce, compute)                         # doctest: +SKIP
>>> state.update(rows_1, judgments_1).update(rows_2, judgments_2)  # any chunks of rows  # doctest: +SKIP
>>> other = ItemState(reduce, compute).update(rows_3, judgments_3)  # e.g. a shard judged elsewhere  # doctest: +SKIP
>>> tables = state.merge(other).compute(n_boot=1000, seed=0)  # doctest: +SKIP

API (every method returns quickly and may be called any number of times, e.g. after each wave of a
sequential audit):

``update(*frames, complete=False)``
    add rows. Statistics are per item and an item's pair statistics need all of its rows, so rows wait
    (pending) until the state *seals* them: at once with ``complete=True`` (the caller says the frames
    hold every row of their items, as a run does after each transcript), else at the next
    :meth:`~ItemState.compute`. Rows of an item already sealed raise ``ValueError`` (they could not be
    counted correctly). Frames are positional (the study's reducer says what each is); every frame must
    have the item column (``item`` argument, default ``item_id``) or be ``None``.
``merge(other)``
    fold another state's statistics (and pending rows) into this one; the two must not both hold rows
    of one item unless both are still pending. Merging is associative and commutative for the tables:
    ``compute`` groups and sorts by item, so the order of updates and merges changes no number.
``compute(**options)``
    seal the pending rows, then ``compute(stats, **options)``; the statistics stay (compute again after
    more updates).
``stats``
    the :class:`ItemStatistics` (named frames, flags); ``items`` the sealed items, in the order they were sealed.

:class:`ItemStatistics` keeps each named statistic as a list of small frames, compacts them (text as
categories, a binary-counter merge so a statistic holds O(log n) frames) and, given ``spill`` (a
folder), moves the compacted chunks to disk until the tables are made, so memory stays flat in the
number of items while a run streams.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import pandas as pd

__all__ = ["ItemStatistics", "ItemState"]


def _is_text(col: pd.Series) -> bool:
    """Text (object or pandas string dtype), which the compaction stores as categories."""
    return not isinstance(col.dtype, pd.CategoricalDtype) and (col.dtype == object or pd.api.types.is_string_dtype(col))


def _concat_plain(parts: list) -> pd.DataFrame:
    """The frames one after the other, categories back to their plain values."""
    plain = [p.astype({c: object for c in p.columns if isinstance(p[c].dtype, pd.CategoricalDtype)}) for p in parts]
    return pd.concat(plain, ignore_index=True) if len(plain) > 1 else plain[0]


def _categorized(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as categories."""
    return frame.astype({c: "category" for c in frame.columns if _is_text(frame[c])})


def release_memory() -> None:
    """Hand freed heap pages back to the OS (glibc ``malloc_trim``; elsewhere nothing). Without it many small
    frames leave freed but mapped memory behind and the resident size creeps up."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


@dataclasses.dataclass
class ItemStatistics:
    """Named statistic frames (appended, concatenated on read) and flags (global facts, first value kept).

    Given ``spill`` (a folder), :meth:`compact` appends the compacted chunks there, one file per
    statistic, instead of keeping them, and the first :meth:`frame` after that reads them back one
    statistic at a time. The files are pickles of the chunks (every dtype, category and NaN comes back as
    it was written), made and read by this object only."""

    parts: dict = dataclasses.field(default_factory=dict)
    flags: dict = dataclasses.field(default_factory=dict)
    compacted: dict = dataclasses.field(default_factory=dict)  # per statistic: leading parts already compacted
    spill: Any = None  # folder for the compacted chunks (None: kept in memory)
    spilled: dict = dataclasses.field(default_factory=dict)  # statistic -> [its file, chunks written]

    def add(self, name: str, frame: pd.DataFrame) -> None:
        """Append ``frame`` to statistic ``name`` (an empty frame adds nothing). Text columns are stored as plain
        objects, the dtype they come back with once compacted, so :meth:`frame` returns the same dtypes whether
        or not a compaction ran (a pandas ``str`` column would otherwise come back ``str`` uncompacted and
        ``object`` compacted, and tables made from the two would differ in dtype)."""
        if len(frame):
            text = {c: object for c in frame.columns if _is_text(frame[c]) and frame[c].dtype != object}
            self.parts.setdefault(name, []).append(frame.astype(text) if text else frame)

    def flag(self, key: Any, value: Any = True) -> None:
        self.flags.setdefault(key, value)

    def frame(self, name: str) -> pd.DataFrame:
        """The statistic's rows, text as plain values (a category would add empty groups to a groupby)."""
        self._read_back()
        parts = self.parts.get(name, [])
        if not parts:
            return pd.DataFrame()
        if len(parts) > 1:  # keep the concatenation: the next read (the next compute) is one frame
            self.parts[name] = parts = [_categorized(_concat_plain(parts))]
            self.compacted[name] = 1
        return _concat_plain(parts)

    def names(self) -> list[str]:
        return sorted(set(self.parts) | set(self.spilled))

    def compact(self) -> None:
        """The frames added since the last call as one frame per statistic, text as categories. With
        ``spill`` each chunk is appended to its statistic's file; otherwise the compacted chunks merge like a
        binary counter (a chunk joins the one before it while that one is less than twice its size), so a
        statistic holds O(log n) frames. Row order is kept."""
        if self.spill is not None:
            import pickle

            for name, parts in self.parts.items():
                if not parts:
                    continue
                entry = self.spilled.setdefault(name, [Path(self.spill) / f"item-stats-{len(self.spilled):03d}.pkl", 0])
                with open(entry[0], "ab") as fh:
                    pickle.dump(_categorized(_concat_plain(parts)), fh, protocol=pickle.HIGHEST_PROTOCOL)
                entry[1] += 1
            self.parts = {}
            release_memory()
            return
        for name, parts in self.parts.items():
            done = self.compacted.get(name, 0)
            tail = parts[done:]
            if not tail:
                continue
            kept = parts[:done] + [_categorized(_concat_plain(tail))]
            while len(kept) > 1 and len(kept[-2]) < 2 * len(kept[-1]):
                kept[-2:] = [_categorized(_concat_plain(kept[-2:]))]
            self.parts[name] = kept
            self.compacted[name] = len(kept)
        release_memory()

    def _read_back(self) -> None:
        """The spilled chunks back in memory (order kept), one categorized frame per statistic; each file is
        removed once read."""
        if not self.spilled:
            return
        import pickle

        while self.spilled:
            name, (path, n) = next(iter(self.spilled.items()))
            with open(path, "rb") as fh:
                frames = [pickle.load(fh) for _ in range(n)]  # noqa: S301 - this object's own file
            frames += self.parts.get(name, [])
            self.parts[name] = [_categorized(_concat_plain(frames))]
            self.compacted[name] = 1
            del frames
            path.unlink()
            del self.spilled[name]
        release_memory()

    def merge(self, other: "ItemStatistics") -> None:
        """Append ``other``'s statistics (read back from its spill folder first) and its flags."""
        other._read_back()
        for k, v in other.parts.items():
            self.parts.setdefault(k, []).extend(v)
        for k, v in other.flags.items():
            self.flags.setdefault(k, v)


class ItemState:
    """Mergeable per-item state: ``update(*frames)`` / ``merge(other)`` / ``compute(**options)`` (module docstring).

    ``reduce`` turns whole items' frames into :class:`ItemStatistics`; ``compute`` makes the tables from
    them. ``spill``: a folder for compacted statistics (flat memory while streaming); ``compact_every``:
    compact after this many sealed updates."""

    def __init__(self, reduce: Callable[..., ItemStatistics], compute: Callable[..., Any], *,
                 item: str = "item_id", spill: Any = None, compact_every: int = 10):
        self.reduce, self._compute, self.item = reduce, compute, item
        self.stats = ItemStatistics(spill=spill)
        self.items: dict = {}  # sealed item -> None (an ordered set)
        self.compact_every = int(compact_every)
        self._pending: list[tuple] = []
        self._pending_items: set = set()
        self._n_sealed = 0

    def _items_of(self, frames: tuple) -> set:
        out: set = set()
        for k, f in enumerate(frames):
            if f is None:
                continue
            if self.item not in f.columns:
                raise ValueError(f"frame {k} of update() has no {self.item!r} column (columns: {list(f.columns)})")
            out.update(f[self.item].dropna().unique().tolist())
        return out

    def _refuse_sealed(self, items: set, where: str) -> None:
        again = sorted(map(str, items & self.items.keys()))
        if again:
            raise ValueError(f"{where}: rows of item(s) {', '.join(again[:5])} arrived after the item's statistics "
                             "were made (send every row of an item before it is sealed by complete=True or compute())")

    def update(self, *frames: "pd.DataFrame | None", complete: bool = False) -> "ItemState":
        """Add rows (see the module docstring); ``complete=True`` seals them now. Returns ``self``."""
        items = self._items_of(frames)
        self._refuse_sealed(items, "update()")
        self._pending.append(frames)
        self._pending_items |= items
        if complete:
            self._seal()
        return self

    def _seal(self) -> None:
        if not self._pending:
            return
        width = max(len(f) for f in self._pending)
        cols = []
        for k in range(width):
            got = [f[k] for f in self._pending if len(f) > k and f[k] is not None]
            cols.append(None if not got else got[0] if len(got) == 1 else pd.concat(got, ignore_index=True))
        self.stats.merge(self.reduce(*cols))
        self.items.update(dict.fromkeys(sorted(self._pending_items, key=str)))
        self._pending, self._pending_items = [], set()
        self._n_sealed += 1
        if self.compact_every and self._n_sealed % self.compact_every == 0:
            self.stats.compact()

    def merge(self, other: "ItemState") -> "ItemState":
        """Fold ``other`` into this state (``other`` is left as it was, apart from its spilled files being read
        back). Returns ``self``."""
        self._refuse_sealed(set(other.items) | other._pending_items, "merge()")
        again = sorted(map(str, set(other.items) & self._pending_items))
        if again:
            raise ValueError(f"merge(): item(s) {', '.join(again[:5])} are sealed in the other state and still have "
                             "rows pending in this one")
        self.stats.merge(other.stats)
        self.items.update(other.items)
        self._pending += other._pending
        self._pending_items |= other._pending_items
        return self

    def compute(self, **options: Any) -> Any:
        """Seal what is pending, then the study's ``compute(stats, **options)``."""
        self._seal()
        return self._compute(self.stats, **options)
