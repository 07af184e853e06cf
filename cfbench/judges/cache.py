"""Persistent response cache in SQLite.

Three tables, all keyed by :func:`cfbench.judges.base.request_key` (a SHA-256 of
everything sent):

``responses``
    one row per successful reply: the key, the judge spec, the reply as JSON
    (text, first-token logprobs, token counts, finish reason) and its latency.
    No prompt is stored: a few hundred bytes beyond the reply text per entry.
    Every reply is committed as soon as it arrives, so a run killed at any point
    (``kill -9``) loses at most the calls in flight. Rows are only inserted.
``pending``
    requests a plan-only or failed run could not answer yet, zlib-compressed,
    so ``cfbench cache export`` can write them as a Batch-API file. A row is
    deleted the moment its reply arrives: answered prompts are never kept.
``failures``
    the last failure of a key that has no reply (an error, a content-filter
    null from a batch): replay shows it as a failed row with its reason instead
    of a cache miss; a live run retries it. Never read as a reply.

WAL mode and a busy timeout make the file safe for several processes at once;
a write that still finds the file locked raises :class:`CacheLockedError`, which
the runner retries and, failing that, records as the call's failure.

``ResponseCache(path, read_only=True)`` opens the file without writing to it (an archived
run to replay, a read-only mount; ``cache stats``). A cache that cannot be opened for
writing is opened read-only on its own, with one warning line: cached replies are
served, new ones are not stored. A file that is not a SQLite database, or is damaged,
raises :class:`CacheError`, one line naming the file.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..core.errors import InputError
from ..core.paths import cache_dir
from .base import Request, Response

__all__ = ["ResponseCache", "CacheLockedError", "CacheError", "default_cache_dir", "default_cache_path"]


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
CREATE TABLE IF NOT EXISTS pending (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    request BLOB NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    reason TEXT NOT NULL,
    created REAL NOT NULL
);
"""

_CHUNK = 900  # keys per batched look-up (well under SQLite's bound-parameter limit)
_PAGE_CACHE_KIB = 65536  # per connection, an upper bound: pages are cached as they are read
_NOWAIT_S = 0.05  # busy timeout of the connection used by writers that retry on their own


class CacheLockedError(RuntimeError):
    """Another process held the cache's write lock longer than the busy timeout."""


class CacheError(InputError):
    """A cache file that cannot be used: not a SQLite database, damaged, or not writable when a
    write is required. The message is one line naming the file."""


def _is_lock_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _is_readonly_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "unable to open database file" in text or "readonly database" in text or "read-only" in text


def _reported(method):  # noqa: ANN001, ANN202 - decorator
    """SQLite errors of a cache method become one line naming the file (a lock stays CacheLockedError)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):  # noqa: ANN001, ANN202
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    return wrapper


def request_payload(request: Request) -> bytes:
    """A request as the compressed JSON ``pending`` keeps (what a Batch-API export needs)."""
    payload = {"messages": list(request.messages), "config": request.config.as_dict(), "repeat": request.repeat,
               "request_id": request.request_id}
    return zlib.compress(json.dumps(payload, ensure_ascii=False).encode("utf-8"), 6)


class ResponseCache:
    """A SQLite-backed map from cache key to :class:`Response` (see the module docstring).

    Parameters
    ----------
    path : path, optional
        The SQLite file; default ``$CFBENCH_CACHE_DIR/responses.sqlite``.
    busy_timeout_s : float
        How long one write waits for another process's lock before :class:`CacheLockedError`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, busy_timeout_s: float = 10.0,
                 read_only: bool = False):
        self.path = Path(path) if path is not None else default_cache_path()
        self.busy_timeout_s = busy_timeout_s
        self.read_only = read_only
        self._local = threading.local()
        self._warned = False
        if read_only:
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = self._conn()
            self._write(lambda: con.executescript(_SCHEMA))
            self._migrate(con)
        except (sqlite3.Error, OSError) as exc:
            self.close()
            if not (self.path.is_file() and (isinstance(exc, OSError) or _is_readonly_error(exc))):
                raise self._error(exc) from None
            self.read_only = True  # a read-only mount or file: serve what it holds, store nothing
            self._open_read_only()
            self._warn("cannot be written here; cached replies are read from it, new replies are not stored")

    def _open_read_only(self) -> None:
        if not self.path.is_file():
            raise CacheError("no cache file here (a read-only cache must exist)", source=str(self.path))
        try:
            self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()
        except sqlite3.Error as exc:
            self.close()
            if not _is_readonly_error(exc):
                raise self._error(exc) from None
            self._immutable = True  # no -shm can be made beside it (a read-only folder): read it as it is
            try:
                self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()
            except sqlite3.Error as exc2:
                self.close()
                raise self._error(exc2) from None

    def _error(self, exc: BaseException) -> Exception:
        """One line naming the file for an SQLite or OS error of this cache."""
        if isinstance(exc, sqlite3.Error) and _is_lock_error(exc):
            return CacheLockedError(f"cache {self.path} is locked by another process: {exc}")
        text = " ".join(str(exc).split())
        if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text
                                                       or "no such table" in text):
            hint = ("is not a usable cfbench response cache (" + text + "); move it away or delete it, "
                    "and cfbench starts a new one")
        elif isinstance(exc, sqlite3.Error) and _is_readonly_error(exc):
            hint = f"cannot be opened ({text}); check the file and its folder's permissions"
        else:
            hint = f"cache error: {type(exc).__name__}: {text}"
        return CacheError(hint, source=str(self.path))

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            print(f"[cfbench] warning: response cache {self.path} {message}", file=sys.stderr, flush=True)

    def _refuse_write(self, what: str) -> None:
        raise CacheError(f"is opened read-only; {what} needs a writable cache (set CFBENCH_CACHE_DIR to a "
                         "writable folder)", source=str(self.path))

    # one connection per thread; sqlite3 connections must not cross threads. A second one with
    # a short busy timeout serves writers that wait asynchronously themselves (the runner).
    def _conn(self, *, nowait: bool = False) -> sqlite3.Connection:
        attr = "con_nowait" if nowait else "con"
        con = getattr(self._local, attr, None)
        if con is None and self.read_only:
            from urllib.parse import quote

            mode = "immutable=1" if getattr(self, "_immutable", False) else "mode=ro"
            con = sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?{mode}", uri=True,
                                  timeout=self.busy_timeout_s, isolation_level=None)
            con.execute(f"PRAGMA cache_size=-{_PAGE_CACHE_KIB}")
            setattr(self._local, attr, con)
        if con is None:
            con = sqlite3.connect(self.path, timeout=_NOWAIT_S if nowait else self.busy_timeout_s,
                                  isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            # up to 64 MiB of pages kept in memory (default 2 MiB): batched replay look-ups of a
            # paper-scale cache stop re-reading the same index pages from the OS
            con.execute(f"PRAGMA cache_size=-{_PAGE_CACHE_KIB}")
            setattr(self._local, attr, con)
        return con

    def _write(self, fn, waited: float | None = None):  # noqa: ANN001, ANN202 - small internal helper
        try:
            return fn()
        except sqlite3.Error as exc:
            if _is_lock_error(exc):
                raise CacheLockedError(f"cache {self.path} is locked by another process "
                                       f"(waited {self.busy_timeout_s if waited is None else waited:g} s): "
                                       f"{exc}") from None
            raise self._error(exc) from None

    def _migrate(self, con: sqlite3.Connection) -> None:
        """Caches written before ``pending`` kept every prompt in ``requests``: keep only the
        unanswered ones (compressed) and drop the table."""
        if con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='requests'").fetchone() is None:
            return
        rows = con.execute("SELECT q.key, q.judge, q.request, q.created FROM requests q "
                           "LEFT JOIN responses r ON q.key = r.key WHERE r.key IS NULL").fetchall()

        def move() -> None:
            con.execute("BEGIN IMMEDIATE")
            con.executemany("INSERT OR IGNORE INTO pending (key, judge, request, created) VALUES (?, ?, ?, ?)",
                            [(k, j, zlib.compress(blob.encode("utf-8"), 6), c) for k, j, blob, c in rows])
            con.execute("DROP TABLE requests")
            con.execute("COMMIT")

        self._write(move)

    # -- replies -------------------------------------------------------------------------------
    @_reported
    def get(self, key: str, judge: str | None = None) -> tuple[Response, float | None] | None:
        """The cached reply of ``key`` (and, when given, stored for ``judge``), or None."""
        sql, args = "SELECT response, latency_s FROM responses WHERE key = ?", (key,)
        if judge is not None:
            sql, args = sql + " AND judge = ?", (key, judge)
        row = self._conn().execute(sql, args).fetchone()
        if row is None:
            return None
        return Response.from_json(row[0]), row[1]

    def get_many(self, keys: Iterable[str], judge: str | None = None) -> dict[str, tuple[Response, float | None]]:
        """Cached replies of ``keys`` (batched look-ups; missing keys are absent)."""
        return {k: (Response.from_json(blob), lat) for k, (blob, lat) in self.get_raw_many(keys, judge).items()}

    def get_raw_many(self, keys: Iterable[str], judge: str | None = None) -> dict[str, tuple[str, float | None]]:
        """Like :meth:`get_many`, with each reply still as its stored JSON text."""
        return {key: (blob, lat) for key, blob, lat in self.get_rows(keys, judge)}

    @_reported
    def get_rows(self, keys: Iterable[str], judge: str | None = None) -> list[tuple[str, str, float | None]]:
        """``(key, reply JSON, latency_s)`` of the cached ``keys``, in no particular order, each key
        once (batched ``IN`` look-ups of up to 900 keys; missing keys are absent).

        With ``judge``, a row matches only when it was stored for that judge as well: the key
        already hashes the judge, and the stored judge must agree, so a reply written under a
        key some other judge computes is never returned for it."""
        keys = list(dict.fromkeys(keys))
        rows: list[tuple[str, str, float | None]] = []
        con = self._conn()
        full = None
        tail = "" if judge is None else " AND judge = ?"
        extra = [] if judge is None else [judge]
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            if len(chunk) == _CHUNK:
                full = full or (f"SELECT key, response, latency_s FROM responses "
                                f"WHERE key IN ({','.join('?' * _CHUNK)}){tail}")
                sql = full
            else:
                sql = (f"SELECT key, response, latency_s FROM responses "
                       f"WHERE key IN ({','.join('?' * len(chunk))}){tail}")
            rows += con.execute(sql, chunk + extra).fetchall()
        return rows

    def has_many(self, keys: Sequence[str], judge: str | None = None) -> set[str]:
        """The subset of ``keys`` that has a cached reply (for ``judge``, when given; no reply is decoded)."""
        return set(self._keys_in("responses", keys, judge))

    @_reported
    def _keys_in(self, table: str, keys: Sequence[str], judge: str | None) -> list[str]:
        out: list[str] = []
        con = self._conn()
        tail = "" if judge is None else " AND judge = ?"
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start:start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            args = chunk if judge is None else chunk + [judge]
            out.extend(k for (k,) in con.execute(f"SELECT key FROM {table} WHERE key IN ({marks}){tail}", args))
        return out

    def known_keys(self, judge: str, keys: Sequence[str]) -> set[str]:
        """The ``keys`` this cache has seen for ``judge``: answered, pending (planned, exported)
        or failed. What ``cfbench cache import`` accepts a Batch output line for."""
        found: set[str] = set()
        for table in ("responses", "pending", "failures"):
            found.update(self._keys_in(table, [k for k in keys if k not in found], judge))
        return found

    def put(self, key: str, judge: str, response: Response, latency_s: float | None = None, *,
            wait: bool = True) -> None:
        """Store a successful reply (the first stored reply for a key wins) and forget the key's
        pending request and failure. Raises :class:`CacheLockedError` on lock contention, after
        ``busy_timeout_s`` or, with ``wait=False``, almost at once (for callers that retry)."""
        self.put_many([(key, judge, response.to_json(), latency_s)], wait=wait)

    def put_many(self, rows: Iterable[tuple[str, str, str, float | None]], *, wait: bool = True) -> int:
        """Store ``(key, judge, response_json, latency_s)`` rows in one transaction; returns how many were new."""
        if self.read_only:
            self._warn("is read-only; new replies and unanswered requests are not stored in it")
            return 0
        con = self._conn(nowait=not wait)
        now = time.time()
        rows = [(k, j, blob, lat, now) for k, j, blob, lat in rows]
        keys = [(r[0],) for r in rows]

        def write() -> int:
            con.execute("BEGIN IMMEDIATE")
            try:
                before = con.total_changes
                con.executemany("INSERT OR IGNORE INTO responses (key, judge, response, latency_s, created) "
                                "VALUES (?, ?, ?, ?, ?)", rows)
                added = con.total_changes - before
                con.executemany("DELETE FROM pending WHERE key = ?", keys)
                con.executemany("DELETE FROM failures WHERE key = ?", keys)
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            return added

        return self._write(write, waited=None if wait else _NOWAIT_S)

    # -- failures ------------------------------------------------------------------------------
    def record_failures(self, judge: str, failures: Iterable[tuple[str, str]]) -> None:
        """Remember ``(key, reason)`` for keys without a reply (replay shows them as failed rows)."""
        if self.read_only:
            return
        con = self._conn()
        now = time.time()
        rows = [(k, judge, reason, now) for k, reason in failures]
        if not rows:
            return

        def write() -> None:
            con.execute("BEGIN IMMEDIATE")
            con.executemany("INSERT OR REPLACE INTO failures (key, judge, reason, created) "
                            "SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM responses WHERE key = ?)",
                            [(*r, r[0]) for r in rows])
            con.execute("COMMIT")

        self._write(write)

    @_reported
    def failures_many(self, keys: Sequence[str], judge: str | None = None) -> dict[str, str]:
        """Recorded failure reasons of ``keys`` (only keys without a reply have one; for ``judge``
        only, when given)."""
        out: dict[str, str] = {}
        con = self._conn()
        tail = "" if judge is None else " AND judge = ?"
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start:start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            args = chunk if judge is None else chunk + [judge]
            out.update(con.execute(f"SELECT key, reason FROM failures WHERE key IN ({marks}){tail}", args).fetchall())
        return out

    # -- pending requests (Batch-API export) ---------------------------------------------------
    def remember_requests(self, judge: str, requests: Iterable[Request], *, keys: Iterable[str] | None = None) -> int:
        """Record unanswered requests (for Batch-API export). Returns how many were new."""
        if self.read_only:
            self._warn("is read-only; new replies and unanswered requests are not stored in it")
            return 0
        con = self._conn()
        requests = list(requests)
        keys = list(keys) if keys is not None else [r.cache_key(judge) for r in requests]
        now = time.time()
        rows = [(k, judge, request_payload(r), now) for k, r in zip(keys, requests)]

        def write() -> int:
            before = con.total_changes
            con.execute("BEGIN IMMEDIATE")
            con.executemany("INSERT OR IGNORE INTO pending (key, judge, request, created) VALUES (?, ?, ?, ?)", rows)
            con.execute("COMMIT")
            return con.total_changes - before

        return self._write(write)

    def pending(self, judge: str | None = None) -> Iterator[tuple[str, str, dict]]:
        """Remembered requests without a cached reply: (key, judge, request payload)."""
        sql = ("SELECT q.key, q.judge, q.request FROM pending q LEFT JOIN responses r ON q.key = r.key "
               "WHERE r.key IS NULL")
        args: tuple = ()
        if judge is not None:
            sql += " AND q.judge = ?"
            args = (judge,)
        for key, j, blob in self._conn().execute(sql + " ORDER BY q.created, q.rowid", args):
            yield key, j, json.loads(zlib.decompress(blob))

    # -- housekeeping --------------------------------------------------------------------------
    @_reported
    def stats(self) -> dict[str, object]:
        con = self._conn()
        by_judge = dict(con.execute("SELECT judge, COUNT(*) FROM responses GROUP BY judge").fetchall())
        n_resp = int(sum(by_judge.values()))
        reply_bytes = con.execute("SELECT COALESCE(SUM(LENGTH(CAST(response AS BLOB))), 0) FROM responses").fetchone()[0]
        pending = con.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(request)), 0) FROM pending").fetchone()
        n_fail = con.execute("SELECT COUNT(*) FROM failures").fetchone()[0]
        size = self._size()
        return {
            "path": str(self.path),
            "responses": n_resp,
            "by_judge": by_judge,
            "pending_requests": int(pending[0]),
            "pending_bytes": int(pending[1]),
            "failures": int(n_fail),
            "reply_json_bytes": int(reply_bytes),
            "size_bytes": size,
            "bytes_per_response": round(size / n_resp, 1) if n_resp else None,
        }

    def _size(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def vacuum(self, *, drop_pending: bool = False, drop_failures: bool = False) -> dict[str, int]:
        """Compact the file: forget answered pending rows (and, if asked, all pending requests or
        recorded failures), checkpoint the WAL and rebuild the file. Returns sizes before/after."""
        if self.read_only:
            self._refuse_write("vacuum")
        con = self._conn()
        before = self._size()

        def clean() -> tuple[int, int]:
            con.execute("BEGIN IMMEDIATE")
            c0 = con.total_changes
            con.execute("DELETE FROM pending WHERE key IN (SELECT key FROM responses)")
            if drop_pending:
                con.execute("DELETE FROM pending")
            n_pending = con.total_changes - c0
            c1 = con.total_changes
            con.execute("DELETE FROM failures WHERE key IN (SELECT key FROM responses)")
            if drop_failures:
                con.execute("DELETE FROM failures")
            n_fail = con.total_changes - c1
            con.execute("COMMIT")
            return n_pending, n_fail

        n_pending, n_fail = self._write(clean)
        self._write(lambda: con.execute("VACUUM"))
        self._write(lambda: con.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        return {"size_before": before, "size_after": self._size(), "pending_removed": n_pending,
                "failures_removed": n_fail}

    @_reported
    def find_secret_leaks(self, extra_env: tuple[str, ...] = ()) -> list[str]:
        """Where this cache holds a credential from the environment (any form, or a 12+ character
        piece): ``"<table>:<key>"`` per row, pending prompts decompressed. Empty when clean."""
        from ..core.secrets import credentials, echoed_credential

        creds = credentials(extra_env)
        if not creds:
            return []
        con = self._conn()
        hits = []
        for table, sql, decode in (
            ("responses", "SELECT key, judge || response FROM responses", str),
            ("pending", "SELECT key, request FROM pending", lambda b: zlib.decompress(b).decode("utf-8")),
            ("failures", "SELECT key, judge || reason FROM failures", str),
        ):
            for key, blob in con.execute(sql):
                if echoed_credential(decode(blob), creds=creds):
                    hits.append(f"{table}:{key}")
        return hits

    @_reported
    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        for attr in ("con", "con_nowait"):
            con = getattr(self._local, attr, None)
            if con is not None:
                con.close()
                setattr(self._local, attr, None)


def remove_leaking_rows(cache: ResponseCache, extra_env: tuple[str, ...] = ()) -> list[str]:
    """Delete every row :meth:`ResponseCache.find_secret_leaks` names (``"<table>:<key>"``) and
    return those names: a credential found after a run must not stay in the cache. Rows of
    other tables and keys are left alone."""
    hits = cache.find_secret_leaks(extra_env)
    if hits and cache.read_only:
        cache._refuse_write(f"removing {len(hits)} row(s) that hold a credential")
    if hits:
        con = cache._conn()

        def delete() -> None:
            con.execute("BEGIN IMMEDIATE")
            for hit in hits:
                table, _, key = hit.partition(":")
                con.execute(f"DELETE FROM {table} WHERE key = ?", (key,))  # table from a fixed set of three
            con.execute("COMMIT")

        cache._write(delete)
    return hits
