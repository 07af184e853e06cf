"""The judged rows of a contact-center run written as they stream: :class:`ParquetRows`.

:func:`.study.run` walks the selected transcripts one at a time (:func:`.judging.iter_judged`), updates
the item-statistics state of :func:`.tables.new_state` with each transcript's rows and appends the rows,
judgments and the explorer's copy of the variants to Parquet files here, so memory stays flat in the number
of transcripts. The files are there for anyone who wants the judged rows (pandas, DuckDB or pyarrow read
them directly) and for the run's lazily read ``frames["rows"]`` / ``frames["judgments"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ParquetRows", "VariantsParquet"]


# -- Parquet ------------------------------------------------------------------------------------------
#: columns whose min/max the Parquet row groups keep (filters on them skip row groups); the footer holds
#: every row group's statistics until the file is closed, so not every column gets them
_STATS_COLUMNS = ("judge", "task", "arm", "dimension", "item_id", "question_id")


def _all_bool(col: pd.Series) -> bool:
    vals = col.dropna()
    return bool(len(vals)) and all(isinstance(v, (bool, np.bool_)) for v in vals)


class _HeldRowGroups:
    """Arrow tables held back until they reach ``group_bytes`` and then written as one row group (the
    writer keeps every row group's metadata until it closes, so few large groups keep it small);
    ``n_rows`` counts the rows already in the file, :meth:`close` writes the rest."""

    GROUP_BYTES = 16 * 2**20

    def __init__(self, path: str | Path, *, group_bytes: int | None = None):
        self.path, self.writer, self.n_rows = Path(path), None, 0
        self.group_bytes = self.GROUP_BYTES if group_bytes is None else int(group_bytes)
        self._held: list = []
        self._held_bytes = 0

    def _hold(self, table: Any) -> None:
        self._held.append(table)
        self._held_bytes += table.nbytes
        if self._held_bytes >= self.group_bytes:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._held:
            return
        table = pa.concat_tables(self._held) if len(self._held) > 1 else self._held[0]
        self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.n_rows += table.num_rows
        self._held, self._held_bytes = [], 0

    def close(self) -> None:
        if self.writer is not None:
            self._flush()
            self.writer.close()
            self.writer = None


class ParquetRows(_HeldRowGroups):
    """Appends frames of the same columns to one Parquet file.

    Numbers become float64 (an integer column with a gap in one transcript stays one type), booleans
    stay booleans (an object column of True / False / None too, as nullable booleans), everything else is
    text (None stays null). A frame with a column the first frame
    did not have raises (nothing is dropped).

    Frames are held back until they reach ``group_bytes`` (Arrow bytes) and then written as one row
    group. The writer keeps every row group's metadata in memory until the file is closed: one row group
    per paper transcript made the writer grow by about 0.06 MB per transcript (12 MB per 200, measured
    with pyarrow 26), which is most of what grew in a streamed replay. At 16 MiB a row group holds 4–7
    paper transcripts. ``n_rows`` counts the rows already in the file; :meth:`close` writes the rest."""

    def __init__(self, path: str | Path, *, group_bytes: int | None = None):
        super().__init__(path, group_bytes=group_bytes)
        self.schema = None

    @staticmethod
    def _normal(frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for c in frame.columns:
            s = frame[c]
            if pd.api.types.is_bool_dtype(s):
                out[c] = s
            elif pd.api.types.is_numeric_dtype(s):
                out[c] = s.astype("float64")
            elif _all_bool(s):  # True / False / None in an object column (the evidence flags): booleans
                out[c] = s.astype("boolean")
            else:
                out[c] = s.map(lambda v: None if v is None or (isinstance(v, float) and v != v) else str(v),
                               na_action=None).astype(object)
        return pd.DataFrame(out, index=frame.index)

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        f = self._normal(frame)
        if self.writer is None:
            fields = [pa.field(c, pa.bool_() if pd.api.types.is_bool_dtype(f[c]) else
                               pa.float64() if pd.api.types.is_numeric_dtype(f[c]) else pa.string())
                      for c in f.columns]
            self.schema = pa.schema(fields)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            stats = [c for c in _STATS_COLUMNS if c in self.schema.names]
            self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd", write_statistics=stats)
        extra = [c for c in f.columns if c not in self.schema.names]
        if extra:
            raise ValueError(f"{self.path.name}: columns {extra} appeared after the first row group")
        f = f.reindex(columns=self.schema.names)
        for c in self.schema.names:  # a bool column with a gap comes back as object: keep the schema's type
            if self.schema.field(c).type == pa.bool_() and not pd.api.types.is_bool_dtype(f[c]):
                f[c] = f[c].astype("boolean")
        self._hold(pa.Table.from_pandas(f, schema=self.schema, preserve_index=False))


class VariantsParquet(_HeldRowGroups):
    """Appends the explorer's copy of each transcript's variants (``variant_id``, ``item_id``, ``dimension``,
    ``condition``, ``turns`` as speaker/text records, ``header`` as text) to ``variants.parquet``, the file
    :func:`cfbench.view.write_inputs` would otherwise write from a frame of every variant."""

    @staticmethod
    def _schema() -> Any:
        import pyarrow as pa

        turn = pa.struct([("speaker", pa.string()), ("text", pa.string())])
        return pa.schema([("variant_id", pa.string()), ("item_id", pa.string()), ("dimension", pa.string()),
                          ("condition", pa.string()), ("turns", pa.list_(turn)), ("header", pa.string())])

    def write(self, variants: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not len(variants):
            return
        header = variants["header"] if "header" in variants.columns else pd.Series([None] * len(variants))
        cols = {c: [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in variants[c]]
                for c in ("variant_id", "item_id", "dimension", "condition")}
        cols["turns"] = [[{"speaker": str(t.get("speaker")), "text": str(t.get("text"))} for t in list(ts)]
                         if ts is not None and not isinstance(ts, float) else None for ts in variants["turns"]]
        cols["header"] = [("\n".join(f"{k}: {v}" for k, v in h.items()) if isinstance(h, dict)
                           else (h if isinstance(h, str) else None)) for h in header]
        table = pa.Table.from_pydict(cols, schema=self._schema())
        if self.writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.path, self._schema(), compression="zstd")
        self._hold(table)
