"""Paper scale through an OpenAI Batch API: plan, submit, poll, collect, then replay.

The lifecycle, one folder per batch job (``DIR``)::

    plan_batch(requests, "openai:gpt-4o-mini", DIR, cache=cache)   # shards + manifest.json
    submit_batch(DIR)        # upload each shard, create one batch per shard (ids go into the manifest)
    batch_status(DIR)        # poll; records status, output and error file ids
    collect_batch(DIR, cache=cache)   # download results, store replies, record failures

then ``cfbench reproduce … --replay`` computes every table from the cache.

* :func:`plan_batch` streams: requests are read from any iterable (a study's
  generator), keyed, checked against the cache in chunks, de-duplicated by a
  63-bit fingerprint of the key (kept in a scratch SQLite file, so memory stays flat), and written straight into JSONL shards of at
  most 50,000 lines and 200 MB (the provider's limits). Each line is
  ``{"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions",
  "body": <exactly what the openai backend would send>}``. The manifest lists
  per shard its line count, bytes and SHA-256.
* Every step saves the manifest atomically after each shard, so each step can
  be re-run after an interruption and continues where it stopped; nothing is
  uploaded, created or imported twice.
* :func:`collect_batch` streams each output file into the cache in
  transactions. An error line, a non-200 line, a reply with null content (a
  content filter), a reply echoing a credential or one far beyond
  ``max_tokens`` is recorded as a failure with its reason (replay shows it as a
  failed row); it is never cached as a reply. A request with no result line is
  a failure too.

The ``openai`` SDK is the client (``pip install openai``); it is imported when a
step that talks to the server runs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..core.errors import InputError
from .base import GenerationConfig, Request, Response, _settings_json, encode_messages, key_from_parts
from .cache import ResponseCache
from ..core.secrets import credentials, scrub
from .registry import canonical_spec, parse_spec
from .runner import reply_problem

__all__ = ["plan_batch", "submit_batch", "batch_status", "collect_batch", "export_batch", "import_batch",
           "read_manifest", "read_requests_jsonl", "MAX_SHARD_REQUESTS", "MAX_SHARD_BYTES"]

#: The Batch API's limits per input file.
MAX_SHARD_REQUESTS = 50_000
MAX_SHARD_BYTES = 200 * 1024 * 1024
ENDPOINT = "/v1/chat/completions"
MANIFEST = "manifest.json"
_CHUNK = 2_000  # requests keyed and looked up in the cache at once
_DONE = ("completed", "failed", "expired", "cancelled")


# -- manifest ------------------------------------------------------------------------------------------

def read_manifest(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(out_dir) / MANIFEST
    if not path.exists():
        raise InputError("no batch manifest here; run `cfbench batch plan` first", source=str(path))
    return json.loads(path.read_text(encoding="utf-8"))


def _save_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = out_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    os.replace(tmp, out_dir / MANIFEST)


def _openai_spec(judge_spec: str) -> tuple[str, str, str | None]:
    """(canonical spec, model, base URL or None) of an ``openai:`` judge."""
    backend, _ = parse_spec(judge_spec)
    if backend != "openai":
        raise InputError(f"Batch API jobs are for openai:* judges, got {judge_spec!r}", field="judge")
    spec = canonical_spec(judge_spec)
    model, _, url = spec.partition(":")[2].partition("@")
    return spec, model, (url or None)


# -- plan ------------------------------------------------------------------------------------------------

class _ShardWriter:
    """Writes lines into ``shard-NNNNN.jsonl`` files under the limits, hashing as it goes."""

    def __init__(self, out_dir: Path, max_requests: int, max_bytes: int):
        self.out_dir, self.max_requests, self.max_bytes = out_dir, max_requests, max_bytes
        self.shards: list[dict[str, Any]] = []
        self.n_seen = self.n_cached = self.n_dup = 0
        self._fh = None
        self._count = self._bytes = 0
        self._sha = hashlib.sha256()

    def write(self, line: bytes, request_id: str) -> None:
        if len(line) > self.max_bytes:
            raise InputError(f"one Batch-API line is {len(line):,} bytes, over the {self.max_bytes:,}-byte shard limit",
                             record=request_id, field="messages")
        if self._fh is None or self._count >= self.max_requests or self._bytes + len(line) > self.max_bytes:
            self._close()
            name = f"shard-{len(self.shards):05d}.jsonl"
            self._fh = open(self.out_dir / (name + ".part"), "wb", buffering=1 << 20)
            self.shards.append({"file": name})
        self._fh.write(line)
        self._sha.update(line)
        self._count += 1
        self._bytes += len(line)

    def _close(self) -> None:
        if self._fh is None:
            return
        self._fh.close()
        shard = self.shards[-1]
        os.replace(self.out_dir / (shard["file"] + ".part"), self.out_dir / shard["file"])
        shard.update(count=self._count, bytes=self._bytes, sha256=self._sha.hexdigest(), input_file_id=None,
                     batch_id=None, status=None, output_file_id=None, error_file_id=None, collected=False)
        self._fh, self._count, self._bytes, self._sha = None, 0, 0, hashlib.sha256()

    def close(self) -> list[dict[str, Any]]:
        self._close()
        return self.shards


class _SeenKeys:
    """Exact de-duplication of 63-bit key fingerprints in a scratch SQLite file, so memory stays
    flat however many requests stream past (a Python set would grow ~70 bytes per request)."""

    def __init__(self, path: Path):
        import sqlite3

        self.path = path
        path.unlink(missing_ok=True)
        self._con = sqlite3.connect(path, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=OFF")
        self._con.execute("PRAGMA synchronous=OFF")
        self._con.execute("PRAGMA cache_size=-16000")  # 16 MB page cache at most
        self._con.execute("CREATE TABLE seen (fp INTEGER PRIMARY KEY)")

    def new(self, fingerprints: list[int]) -> set[int]:
        """The fingerprints never seen before (each counted once), now remembered."""
        fresh = set(fingerprints)
        known: set[int] = set()
        items = list(fresh)
        for start in range(0, len(items), 900):
            chunk = items[start:start + 900]
            marks = ",".join("?" * len(chunk))
            known.update(fp for (fp,) in self._con.execute(f"SELECT fp FROM seen WHERE fp IN ({marks})", chunk))
        fresh -= known
        self._con.execute("BEGIN")
        self._con.executemany("INSERT INTO seen (fp) VALUES (?)", ((fp,) for fp in fresh))
        self._con.execute("COMMIT")
        return fresh

    def close(self) -> None:
        self._con.close()
        self.path.unlink(missing_ok=True)


def _chunks(items: Iterable[Request], size: int) -> Iterator[list[Request]]:
    chunk: list[Request] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def plan_batch(requests: Iterable[Request], judge_spec: str, out_dir: str | os.PathLike[str], *,
               cache: ResponseCache | None, max_requests: int = MAX_SHARD_REQUESTS,
               max_bytes: int = MAX_SHARD_BYTES, progress: bool = True) -> dict[str, Any]:
    """Stream ``requests`` into Batch-API JSONL shards under ``out_dir`` and write its manifest.

    Parameters
    ----------
    requests : iterable of Request
        Consumed once, in chunks; never held in memory as a whole.
    judge_spec : str
        An ``openai:<model>[@base_url]`` spec; custom ids are the cache keys for it.
    cache : ResponseCache or None
        Requests with a cached reply are skipped (counted as ``n_cached``).
    max_requests, max_bytes : int
        Shard limits (default: the Batch API's 50,000 lines and 200 MB).

    Returns
    -------
    dict
        The manifest: judge, counts (seen, cached, duplicate, planned) and one entry per shard
        with ``file``, ``count``, ``bytes`` and ``sha256``.

    Examples
    --------
    >>> plan_batch(my_study_requests(), "openai:gpt-4o-mini", "batch/", cache=ResponseCache())  # doctest: +SKIP
    """
    from tqdm import tqdm

    spec, model, url = _openai_spec(judge_spec)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if (out / MANIFEST).exists() and any(s.get("input_file_id") for s in read_manifest(out)["shards"]):
        raise InputError("this folder holds a batch job that was already submitted; plan into a new folder",
                         source=str(out / MANIFEST))
    for old in out.glob("shard-*.jsonl*"):
        old.unlink()
    writer = _ShardWriter(out, max_requests, max_bytes)
    head = '{"custom_id":"'
    mid = f'","method":"POST","url":"{ENDPOINT}","body":{{"model":{json.dumps(model, ensure_ascii=False)},"messages":'
    seen = _SeenKeys(out / ".seen-keys.sqlite")
    bar = tqdm(desc=f"batch plan {spec}", unit="req", disable=not progress, mininterval=1.0)
    try:
        shards = _plan_chunks(requests, writer, seen, cache, spec, head, mid, bar)
    finally:
        bar.close()
        seen.close()
    n_seen, n_cached, n_dup = writer.n_seen, writer.n_cached, writer.n_dup
    manifest = {
        "format": "cfbench-batch/1",
        "judge": spec,
        "model": model,
        "base_url": url,
        "endpoint": ENDPOINT,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "n_seen": n_seen,
        "n_cached": n_cached,
        "n_duplicate": n_dup,
        "n_planned": sum(s["count"] for s in shards),
        "limits": {"max_requests": max_requests, "max_bytes": max_bytes},
        "shards": shards,
    }
    _save_manifest(out, manifest)
    return manifest


def _plan_chunks(requests: Iterable[Request], writer: _ShardWriter, seen: _SeenKeys, cache: ResponseCache | None,
                 spec: str, head: str, mid: str, bar: Any) -> list[dict[str, Any]]:
    """Key, filter (cached, duplicate) and write requests chunk by chunk; returns the shards."""
    for chunk in _chunks(requests, _CHUNK):
        encoded = []
        for r in chunk:
            if not isinstance(r, Request):
                raise InputError(f"expected a cfbench Request, got {type(r).__name__}",
                                 record=writer.n_seen + len(encoded))
            settings_json, params_json = _settings_json("openai", r.config)
            key_msgs, body_msgs = encode_messages(r.messages)
            key = key_from_parts(spec, settings_json, key_msgs, r.repeat)
            encoded.append((r, key, body_msgs, params_json))
        writer.n_seen += len(chunk)
        cached = cache.has_many([e[1] for e in encoded]) if cache is not None else set()
        fresh = seen.new([int(e[1][:16], 16) >> 1 for e in encoded if e[1] not in cached])
        for r, key, body_msgs, params_json in encoded:
            if key in cached:
                writer.n_cached += 1
                continue
            fp = int(key[:16], 16) >> 1  # 63 bits: a signed SQLite INTEGER
            if fp not in fresh:
                writer.n_dup += 1
                continue
            fresh.discard(fp)  # a second copy within this chunk is a duplicate too
            writer.write(f"{head}{key}{mid}{body_msgs},{params_json}}}}}\n".encode("utf-8"), r.request_id)
        bar.update(len(chunk))
    return writer.close()


def read_requests_jsonl(path: str | os.PathLike[str]) -> Iterator[Request]:
    """Requests from a JSONL file, one ``{"request_id", "messages", "config"?, "repeat"?}`` per line.

    Streams; a bad line is an :class:`InputError` naming the line and the field.
    """
    fields = set(GenerationConfig.__dataclass_fields__)
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON ({exc.msg})", source=str(path), record=f"line {lineno}") from None
            if not isinstance(item, dict):
                raise InputError("each line must be a JSON object", source=str(path), record=f"line {lineno}")
            rid = item.get("request_id", f"line {lineno}")
            config = item.get("config") or {}
            if not isinstance(config, dict) or set(config) - fields:
                raise InputError(f"config must be an object with fields from {sorted(fields)}",
                                 source=str(path), record=rid, field="config")
            if "stop" in config:
                config = {**config, "stop": tuple(config["stop"])}
            try:
                yield Request(str(rid), tuple(item.get("messages") or ()), GenerationConfig(**config),
                              int(item.get("repeat", 0)))
            except (TypeError, ValueError) as exc:
                raise InputError(str(exc), source=str(path), record=rid) from None


# -- submit / status / collect ---------------------------------------------------------------------------

def _client(manifest: dict[str, Any]) -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError("the Batch API steps need the openai SDK: pip install 'cfbench[api]'") from exc
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        if not manifest.get("base_url"):
            raise InputError("set the environment variable OPENAI_API_KEY (keys are never parameters)")
        key = "not-needed"  # a self-hosted server named by URL
    return openai.OpenAI(api_key=key, base_url=manifest.get("base_url") or None, max_retries=3)


def submit_batch(out_dir: str | os.PathLike[str], *, client: Any = None,
                 completion_window: str = "24h") -> dict[str, Any]:
    """Upload every shard not yet uploaded and create a batch for every shard without one.

    Each id goes into the manifest as soon as the server returns it, so an interrupted
    submit continues where it stopped and never uploads or creates twice.
    """
    out = Path(out_dir)
    manifest = read_manifest(out)
    client = client or _client(manifest)
    for shard in manifest["shards"]:
        path = out / shard["file"]
        if shard.get("input_file_id") is None:
            _verify_shard(path, shard)
            with open(path, "rb") as fh:
                shard["input_file_id"] = client.files.create(file=fh, purpose="batch").id
            _save_manifest(out, manifest)
        if shard.get("batch_id") is None:
            batch = client.batches.create(input_file_id=shard["input_file_id"], endpoint=manifest["endpoint"],
                                          completion_window=completion_window,
                                          metadata={"cfbench_shard": shard["file"]})
            shard["batch_id"], shard["status"] = batch.id, batch.status
            _save_manifest(out, manifest)
    return manifest


def _verify_shard(path: Path, shard: dict[str, Any]) -> None:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    if sha.hexdigest() != shard["sha256"]:
        raise InputError("shard changed since it was planned (sha256 differs); plan again", source=str(path))


def batch_status(out_dir: str | os.PathLike[str], *, client: Any = None) -> dict[str, Any]:
    """Poll every submitted, unfinished batch; record status, counts and result file ids."""
    out = Path(out_dir)
    manifest = read_manifest(out)
    client = client or _client(manifest)
    for shard in manifest["shards"]:
        if shard.get("batch_id") is None or shard.get("status") in _DONE:
            continue
        batch = client.batches.retrieve(shard["batch_id"])
        shard["status"] = batch.status
        shard["output_file_id"] = getattr(batch, "output_file_id", None)
        shard["error_file_id"] = getattr(batch, "error_file_id", None)
        counts = getattr(batch, "request_counts", None)
        if counts is not None:
            shard["request_counts"] = {"total": counts.total, "completed": counts.completed, "failed": counts.failed}
        _save_manifest(out, manifest)
    return manifest


def collect_batch(out_dir: str | os.PathLike[str], *, cache: ResponseCache, client: Any = None) -> dict[str, Any]:
    """Download and import the results of every finished, uncollected shard.

    Returns the manifest; each collected shard gains ``n_ok`` and ``n_failed``.
    """
    out = Path(out_dir)
    manifest = batch_status(out, client=client)
    client = client or _client(manifest)
    spec = manifest["judge"]
    for shard in manifest["shards"]:
        if shard.get("collected") or shard.get("status") not in _DONE:
            continue
        stem = shard["file"].removesuffix(".jsonl")
        paths = []
        for kind in ("output_file_id", "error_file_id"):
            file_id = shard.get(kind)
            if file_id:
                dest = out / f"{stem}.{kind.split('_')[0]}.jsonl"
                _download(client, file_id, dest)
                paths.append(dest)
        limits = _shard_limits(out / shard["file"])
        n_ok = n_bad = 0
        answered: set[str] = set()
        for path in paths:
            ok, bad = _import_lines(cache, spec, path, limits=limits, answered=answered)
            n_ok, n_bad = n_ok + ok, n_bad + bad
        missing = [(k, f"no result for this request in batch {shard['batch_id']} (status {shard['status']})")
                   for k in limits if k not in answered]
        cache.record_failures(spec, missing)
        shard.update(collected=True, n_ok=n_ok, n_failed=n_bad + len(missing))
        _save_manifest(out, manifest)
    return manifest


def _download(client: Any, file_id: str, dest: Path) -> None:
    tmp = dest.with_suffix(".part")
    with client.files.with_streaming_response.content(file_id) as resp:
        resp.stream_to_file(tmp)
    os.replace(tmp, dest)


def _shard_limits(path: Path) -> dict[str, int]:
    """custom_id -> the max tokens it asked for (to spot replies far beyond it)."""
    limits: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            item = json.loads(line)
            body = item["body"]
            limits[item["custom_id"]] = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
    return limits


# -- import (also for a Batch output file downloaded by hand) --------------------------------------------

def _line_outcome(item: dict[str, Any]) -> tuple[Response | None, str | None]:
    """A Batch output line as (reply, None) or (None, failure reason)."""
    if item.get("error"):
        err = item["error"]
        return None, f"batch error: {err.get('code') if isinstance(err, dict) else ''} " \
                     f"{err.get('message') if isinstance(err, dict) else err}".strip()
    resp = item.get("response") or {}
    status = resp.get("status_code", 200)
    body = resp.get("body") or {}
    if status != 200:
        msg = body.get("error", {}).get("message") if isinstance(body.get("error"), dict) else body
        return None, f"batch line status {status}: {msg}"
    choice = body["choices"][0]
    content = choice["message"].get("content")
    if content is None:
        return None, f"null content (finish_reason={choice.get('finish_reason')}; a content filter?)"
    if not isinstance(content, str):
        return None, f"message content is {type(content).__name__}, not text"
    top = None
    lp = choice.get("logprobs") or {}
    if lp.get("content"):
        top = {alt["token"]: float(alt["logprob"]) for alt in lp["content"][0].get("top_logprobs") or ()}
    usage = body.get("usage") or {}
    return Response(text=content, top_logprobs=top, prompt_tokens=usage.get("prompt_tokens"),
                    completion_tokens=usage.get("completion_tokens"), finish_reason=choice.get("finish_reason")), None


def _import_lines(cache: ResponseCache, judge: str, path: Path, *, limits: dict[str, int] | None = None,
                  answered: set[str] | None = None, flush_every: int = 5_000) -> tuple[int, int]:
    ok = bad = 0
    creds = credentials()
    good: list[tuple[str, str, str, float | None]] = []
    failed: list[tuple[str, str]] = []

    def flush() -> None:
        if good:
            cache.put_many(good)
            good.clear()
        if failed:
            cache.record_failures(judge, failed)
            failed.clear()

    limits = limits or {}
    for lineno, item in _output_items(path):
        try:
            key = item["custom_id"]
            response, reason = _line_outcome(item)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise InputError(f"not a Batch-API output line ({type(exc).__name__}: {exc})",
                             source=str(path), record=f"line {lineno}") from None
        if answered is not None:
            answered.add(key)
        if response is not None:
            reason = reply_problem(response, limits.get(key) or 1_000_000, creds=creds)
        if reason is None:
            good.append((key, judge, response.to_json(), None))
            ok += 1
        else:
            failed.append((key, scrub(reason)))
            bad += 1
        if len(good) + len(failed) >= flush_every:
            flush()
    flush()
    return ok, bad


def _output_items(path: Path, block: int = 2_000) -> Iterator[tuple[int, Any]]:
    """``(line number, decoded JSON)`` of each non-blank line of a Batch output file.

    Lines are decoded ``block`` at a time in one ``json.loads``: the lines joined by a ``0``
    sentinel into one JSON array, accepted only when it decodes to object, 0, object, 0, ...,
    one object per line. Any other block (a damaged line, a line that is not one object) is
    decoded line by line, so the error names its line.
    """
    with open(path, encoding="utf-8") as fh:
        numbers: list[int] = []
        lines: list[str] = []
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                numbers.append(lineno)
                lines.append(line)
                if len(lines) == block:
                    yield from _decode_block(path, numbers, lines)
                    numbers, lines = [], []
        if lines:
            yield from _decode_block(path, numbers, lines)


def _decode_block(path: Path, numbers: list[int], lines: list[str]) -> Iterable[tuple[int, Any]]:
    try:
        decoded = json.loads("[" + ",0,".join(lines) + "]")
    except ValueError:
        decoded = []
    items = decoded[::2]
    if (len(decoded) != 2 * len(lines) - 1 or not all(type(x) is dict for x in items)
            or not all(type(z) is int and z == 0 for z in decoded[1::2])):
        items = []
        for lineno, line in zip(numbers, lines):
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise InputError(f"not a Batch-API output line ({type(exc).__name__}: {exc})",
                                 source=str(path), record=f"line {lineno}") from None
    return zip(numbers, items)


def import_batch(cache: ResponseCache, judge: str, path: str | os.PathLike[str]) -> tuple[int, int]:
    """Store a Batch output file's successful lines as replies; record the others as failures.

    Returns ``(imported, failed)``. A null content (content filter), an error line, a non-200
    line, a reply echoing a credential is a failure with its reason, never a cached reply.
    """
    return _import_lines(cache, canonical_spec(judge), Path(path))


def export_batch(cache: ResponseCache, judge: str, out: str | os.PathLike[str]) -> int:
    """Write the cache's pending requests for ``judge`` as one Batch input file (custom_id = key).

    For more than 50,000 requests use :func:`plan_batch`, which shards.
    """
    spec, model, _ = _openai_spec(judge)
    n = 0
    with open(out, "w", encoding="utf-8") as fh:
        for key, _, payload in cache.pending(spec):
            cfg = GenerationConfig(**{**payload["config"], "stop": tuple(payload["config"]["stop"])})
            body = {"model": model, "messages": payload["messages"], **cfg.chat_params()}
            line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    return n
