"""Persistent response cache in SQLite.

One row per successful reply, keyed by :meth:`Request.cache_key` (judge spec,
messages, generation settings, repeat index). Errors are never stored. Every
reply is committed as soon as it arrives, so a run killed at any point
(``kill -9``) loses at most the calls in flight, and a restart reads back
everything that finished. WAL mode and a busy timeout make the file safe for
several processes at once; rows are only ever inserted, never updated.

Requests seen by a dry run are remembered in a second table so they can be
exported as an OpenAI Batch-API file and imported back as cache entries.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator

from ..core.paths import cache_dir
from .base import Request, Response

__all__ = ["ResponseCache", "default_cache_dir", "default_cache_path"]


def default_cache_dir() -> Path:
    """``$CFBENCH_CACHE_DIR`` or ``~/.cache/cfbench``."""
    base = cache_dir()
    base.mkdir(parents=True, exist_ok=True)
    return base


def default_cache_path() -> Path:
    return default_cache_dir() / "responses.sqlite"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    response TEXT NOT NULL,
    latency_s REAL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    request TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class ResponseCache:
    """A SQLite-backed map from cache key to :class:`Response`."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as con:
            con.executescript(_SCHEMA)

    # one connection per thread; sqlite3 connections must not cross threads
    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def get(self, key: str) -> tuple[Response, float | None] | None:
        row = self._conn().execute(
            "SELECT response, latency_s FROM responses WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return Response.from_json(row[0]), row[1]

    def get_many(self, keys: Iterable[str]) -> dict[str, tuple[Response, float | None]]:
        keys = list(dict.fromkeys(keys))
        out: dict[str, tuple[Response, float | None]] = {}
        con = self._conn()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob, lat in con.execute(
                f"SELECT key, response, latency_s FROM responses WHERE key IN ({marks})", chunk
            ):
                out[key] = (Response.from_json(blob), lat)
        return out

    def put(self, key: str, judge: str, response: Response, latency_s: float | None = None) -> None:
        """Store a successful reply. The first stored reply for a key wins."""
        self._conn().execute(
            "INSERT OR IGNORE INTO responses (key, judge, response, latency_s, created) VALUES (?, ?, ?, ?, ?)",
            (key, judge, response.to_json(), latency_s, time.time()),
        )

    def remember_requests(self, judge: str, requests: Iterable[Request]) -> int:
        """Record requests (for Batch-API export). Returns how many were new."""
        con = self._conn()
        rows = []
        for r in requests:
            payload = {"messages": list(r.messages), "config": r.config.as_dict(), "repeat": r.repeat,
                       "request_id": r.request_id}
            rows.append((r.cache_key(judge), judge, json.dumps(payload, ensure_ascii=False), time.time()))
        before = con.total_changes
        con.execute("BEGIN")
        con.executemany("INSERT OR IGNORE INTO requests (key, judge, request, created) VALUES (?, ?, ?, ?)", rows)
        con.execute("COMMIT")
        return con.total_changes - before

    def pending(self, judge: str | None = None) -> Iterator[tuple[str, str, dict]]:
        """Remembered requests without a cached reply: (key, judge, request payload)."""
        sql = ("SELECT q.key, q.judge, q.request FROM requests q LEFT JOIN responses r ON q.key = r.key "
               "WHERE r.key IS NULL")
        args: tuple = ()
        if judge is not None:
            sql += " AND q.judge = ?"
            args = (judge,)
        for key, j, blob in self._conn().execute(sql + " ORDER BY q.created", args):
            yield key, j, json.loads(blob)

    def stats(self) -> dict[str, object]:
        con = self._conn()
        by_judge = dict(con.execute("SELECT judge, COUNT(*) FROM responses GROUP BY judge").fetchall())
        pending = con.execute(
            "SELECT COUNT(*) FROM requests q LEFT JOIN responses r ON q.key = r.key WHERE r.key IS NULL"
        ).fetchone()[0]
        return {
            "path": str(self.path),
            "responses": int(sum(by_judge.values())),
            "by_judge": by_judge,
            "pending_requests": int(pending),
            "size_bytes": self.path.stat().st_size if self.path.exists() else 0,
        }

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
