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
  a failure too. A downloaded line that spells a credential is written to disk
  as an error line instead (:data:`WITHHELD`): the key never reaches a file. If
  the key was in the line's custom id, the line cannot be matched to a request:
  it is refused and counted (``n_refused``), the request has no result.

The ``openai`` SDK is the client (``pip install openai``); it is imported when a
step that talks to the server runs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..core.errors import InputError
from .base import GenerationConfig, Request, Response, _settings_json, encode_messages, key_from_parts
from .cache import ResponseCache
from ..core.secrets import credentials, echoed_credential, scrub
from .registry import canonical_spec, parse_spec
from .runner import UNTRUSTED_REPLY, reply_problem
from .server_info import public_url

__all__ = ["plan_batch", "submit_batch", "batch_status", "collect_batch", "cancel_batch", "retry_batch",
           "export_batch", "import_batch", "import_batch_counts", "import_outputs", "read_manifest",
           "read_requests_jsonl", "plan_dirs", "judge_slug", "check_environment", "is_permanent",
           "MAX_SHARD_REQUESTS", "MAX_SHARD_BYTES"]

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
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"not a cfbench batch manifest ({exc})", source=str(path)) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shards"), list) or "judge" not in manifest:
        raise InputError("not a cfbench batch manifest (no judge or shards)", source=str(path))
    for i, shard in enumerate(manifest["shards"]):
        name = shard.get("file") if isinstance(shard, dict) else None
        if not isinstance(name, str) or not _SHARD_NAME.match(name) or name.endswith(".part"):
            raise InputError("a shard's file must be a shard name in this folder (shard-NNNNN.jsonl)",
                             source=str(path), record=f"shards[{i}]", field="file")
    return manifest


def _save_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = out_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    os.replace(tmp, out_dir / MANIFEST)


def judge_slug(spec: str) -> str:
    """A folder name for a judge: ``openai:gpt-4o-mini`` -> ``openai-gpt-4o-mini``; a spec naming a
    server keeps its host and port, and a short hash keeps two specs that spell alike apart."""
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", spec).strip("-.")[:80] or "judge"
    if re.search(r"[^A-Za-z0-9._:-]", spec) or len(spec) > 80:
        slug += "-" + hashlib.sha256(spec.encode("utf-8")).hexdigest()[:8]
    return slug


def plan_dirs(path: str | os.PathLike[str]) -> list[Path]:
    """The plan folders ``path`` names: itself when it holds a manifest, else its sub-folders that do
    (``batch plan --out DIR`` writes one folder per judge under ``DIR``)."""
    root = Path(path)
    if (root / MANIFEST).exists():
        return [root]
    subs = sorted(p.parent for p in root.glob(f"*/{MANIFEST}")) if root.is_dir() else []
    if not subs:
        raise InputError("no batch manifest here or in its sub-folders; run `cfbench batch plan` first",
                         source=str(root / MANIFEST))
    return subs


def _openai_spec(judge_spec: str) -> tuple[str, str, str | None]:
    """(canonical spec, model, base URL or None) of an ``openai:`` judge."""
    backend, _ = parse_spec(judge_spec)
    if backend != "openai":
        raise InputError(f"Batch API jobs are for openai:* judges, got {judge_spec!r}", field="judge")
    spec = canonical_spec(judge_spec)
    model, _, url = spec.partition(":")[2].partition("@")
    return spec, model, (url or None)


def _endpoint_source(judge_spec: str, url: str | None) -> str | None:
    """Where the server URL in the keys came from: ``"spec"``, ``"OPENAI_BASE_URL"`` or None (OpenAI's)."""
    if url is None:
        return None
    return "spec" if "@" in judge_spec else "OPENAI_BASE_URL"


def check_environment(manifest: dict[str, Any], source: str | os.PathLike[str] = MANIFEST) -> None:
    """Refuse (one line) when the environment no longer gives the judge identity the plan's keys hold.

    A spec without ``@url`` takes its server from ``$OPENAI_BASE_URL``, and the server is part of every
    custom_id and cache key; the manifest records the spec as typed and where the URL came from, and
    collect, retry and import check that the same spec still means the same judge.
    """
    named = manifest.get("judge_named")
    if not named:
        return  # a plan from before the check: nothing recorded to compare
    now = canonical_spec(named)
    if now == manifest["judge"]:
        return
    if manifest.get("endpoint_source") == "OPENAI_BASE_URL":
        env = os.environ.get("OPENAI_BASE_URL")
        was = manifest.get("base_url")
        raise InputError(f"this plan's keys were made with OPENAI_BASE_URL={was} (judge {manifest['judge']}); it is "
                         f"now {'unset' if not env else env!r}, so replay would look up other keys: set it back, or "
                         f"plan with the server in the spec (openai:{manifest.get('model')}@{was})",
                         source=str(source), field="judge")
    raise InputError(f"this plan's judge {manifest['judge']} is now {now} (OPENAI_BASE_URL is set to "
                     f"{os.environ.get('OPENAI_BASE_URL')!r}); replay would look up other keys: unset it or name the "
                     f"server in the spec", source=str(source), field="judge")


# -- plan ------------------------------------------------------------------------------------------------

_SHARD_NAME = re.compile(r"^(?:retry-\d{2}-)?shard-\d{5}\.jsonl(?:\.part)?$")


class _ShardWriter:
    """Writes lines into ``shard-NNNNN.jsonl`` files under the limits, hashing as it goes.

    ``on_open(shards)`` runs before a shard file is created, so the manifest lists every file the
    plan makes before it exists (a crashed plan's files are still known as its own)."""

    def __init__(self, out_dir: Path, max_requests: int, max_bytes: int, *, prefix: str = "",
                 on_open: Any = None):
        self.out_dir, self.max_requests, self.max_bytes = out_dir, max_requests, max_bytes
        self.prefix, self.on_open = prefix, on_open
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
            name = f"{self.prefix}shard-{len(self.shards):05d}.jsonl"
            self.shards.append({"file": name, "status": None, "writing": True})
            if self.on_open is not None:
                self.on_open(self.shards)
            self._fh = open(self.out_dir / (name + ".part"), "wb", buffering=1 << 20)
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
        shard.pop("writing", None)
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


def _own_files(manifest: dict[str, Any]) -> list[str]:
    """Every file name a plan's manifest says cfbench wrote in its folder."""
    names = []
    for shard in manifest.get("shards") or ():
        name = shard.get("file")
        if isinstance(name, str) and _SHARD_NAME.match(name):
            names += [name, name + ".part"]
            stem = name.removesuffix(".jsonl")
            names += [f"{stem}.output.jsonl", f"{stem}.error.jsonl"] if shard.get("downloaded") else []
    return names


def _prepare_folder(out: Path, spec: str, source: Any, force: bool) -> None:
    """Refuse a folder holding another plan (unless ``force``) or shard files no manifest here lists;
    then remove the files the old plan here made, and only those."""
    old = read_manifest(out) if (out / MANIFEST).exists() else None
    if old is not None:
        if any(s.get("input_file_id") for s in old["shards"]):
            raise InputError("this folder holds a batch job that was already submitted; plan into a new folder",
                             source=str(out / MANIFEST))
        same = old.get("judge") == spec and (old.get("source") is None or source is None or old.get("source") == source)
        if not same and not force:
            what = f"judge {old.get('judge')}" + (f", {_describe(old['source'])}" if old.get("source") else "")
            raise InputError(f"this folder holds another plan ({what}); plan into another folder or pass --force "
                             f"to replace it", source=str(out / MANIFEST))
    own = set(_own_files(old)) if old is not None else set()
    for path in sorted(out.iterdir()):
        if _SHARD_NAME.match(path.name) and path.name not in own:
            raise InputError("a shard file no manifest here lists (not written by this plan); move it away or plan "
                             "into another folder", source=str(path))
    for name in sorted(own):
        (out / name).unlink(missing_ok=True)


def _describe(source: Any) -> str:
    if isinstance(source, dict):
        return ", ".join(f"{k} {v}" for k, v in source.items() if v not in (None, [], ""))
    return str(source)


def plan_batch(requests: Iterable[Request], judge_spec: str, out_dir: str | os.PathLike[str], *,
               cache: ResponseCache | None, max_requests: int = MAX_SHARD_REQUESTS,
               max_bytes: int = MAX_SHARD_BYTES, progress: bool = True, source: Any = None,
               force: bool = False, prices: dict[str, Any] | None = None, token_sample: int = 1) -> dict[str, Any]:
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
    source : JSON-able, optional
        What the requests are (a requests file, a study and config); recorded, and a folder holding
        the plan of another judge or another source is refused unless ``force``.
    prices : dict, optional
        A price table (:func:`cfbench.judges.pricing.load_prices`); default the shipped one.
    token_sample : int
        Count prompt tokens on one request in this many (1: all) and scale by characters.

    Returns
    -------
    dict
        The manifest: judge, counts (seen, cached, duplicate, planned), prompt tokens and an
        estimated cost, and one entry per shard with ``file``, ``count``, ``bytes`` and ``sha256``.

    Only files named in a manifest of this folder are ever removed: a folder with another plan is
    refused (``force`` replaces it), a ``shard-NNNNN.jsonl`` no manifest lists is refused always.

    Examples
    --------
    >>> plan_batch(my_study_requests(), "openai:gpt-4o-mini", "batch/", cache=ResponseCache())  # doctest: +SKIP
    """
    from tqdm import tqdm

    from .pricing import TokenCounter, estimate_cost, load_prices

    spec, model, url = _openai_spec(judge_spec)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("--out must be a folder, not a file", source=str(out))
    out.mkdir(parents=True, exist_ok=True)
    _prepare_folder(out, spec, source, force)
    manifest: dict[str, Any] = {
        "format": "cfbench-batch/2",
        "judge": spec,
        "judge_named": judge_spec,
        "model": model,
        "base_url": url,
        "endpoint_source": _endpoint_source(judge_spec, url),
        "endpoint": ENDPOINT,
        "source": source,
        "complete": False,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "shards": [],
    }

    def on_open(shards: list[dict[str, Any]]) -> None:
        manifest["shards"] = shards
        _save_manifest(out, manifest)

    _save_manifest(out, manifest)
    writer = _ShardWriter(out, max_requests, max_bytes, on_open=on_open)
    counter = TokenCounter(model, sample=token_sample)
    head = '{"custom_id":"'
    mid = f'","method":"POST","url":"{ENDPOINT}","body":{{"model":{json.dumps(model, ensure_ascii=False)},"messages":'
    seen = _SeenKeys(out / ".seen-keys.sqlite")
    bar = tqdm(desc=f"batch plan {spec}", unit="req", disable=not progress, mininterval=1.0)
    try:
        shards = _plan_chunks(requests, writer, seen, cache, spec, head, mid, bar, counter)
    finally:
        bar.close()
        seen.close()
    tokens = counter.summary()
    manifest.update(
        complete=True,
        n_seen=writer.n_seen,
        n_cached=writer.n_cached,
        n_duplicate=writer.n_dup,
        n_planned=sum(s["count"] for s in shards),
        limits={"max_requests": max_requests, "max_bytes": max_bytes},
        tokens=tokens,
        cost=estimate_cost(model, tokens["prompt_tokens"], tokens["max_output_tokens"],
                           prices if prices is not None else load_prices(), batch=True),
        shards=shards,
    )
    _save_manifest(out, manifest)
    return manifest


def _plan_chunks(requests: Iterable[Request], writer: _ShardWriter, seen: _SeenKeys, cache: ResponseCache | None,
                 spec: str, head: str, mid: str, bar: Any, counter: Any) -> list[dict[str, Any]]:
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
        cached = cache.has_many([e[1] for e in encoded], spec) if cache is not None else set()
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
            counter.add(r.messages, r.config.max_tokens, fp)
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


#: Words in a batch-creation error that mean "too much queued now, try later" (not a bad request).
_QUEUE_WORDS = ("queue", "limit", "rate", "too many", "capacity", "overloaded")


def _api_error(exc: Exception) -> tuple[int | None, str] | None:
    """(HTTP status, one-line message) of an openai SDK API error, else None (not the server's answer)."""
    status = getattr(exc, "status_code", None)
    if status is None and type(exc).__module__.split(".")[0] != "openai":
        return None
    body = getattr(exc, "body", None)
    msg = body.get("message") if isinstance(body, dict) else None
    return status, scrub(" ".join(str(msg or exc).split()))[:300]


#: HTTP statuses that mean "this server has no such endpoint" (not a refusal of this request)
_MISSING = (404, 405, 501)


def _endpoint(what: str, manifest: dict[str, Any], call: Any) -> Any:
    """``call()``, with a server that lacks the Batch API's ``what`` endpoint (``/v1/files``,
    ``/v1/batches``) reported in one line naming it, instead of the SDK's traceback."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - only "no such endpoint" is translated; the rest propagates
        err = _api_error(exc)
        if err is None or err[0] not in _MISSING:
            raise
        where = manifest.get("base_url") or "the OpenAI API"
        raise InputError(f"the server at {public_url(where) if manifest.get('base_url') else where} has no "
                         f"{what} endpoint (HTTP {err[0]}): the Batch API steps need both /v1/files and "
                         "/v1/batches; run these requests live instead (cfbench reproduce, or run_requests)",
                         field=what) from None


def submit_batch(out_dir: str | os.PathLike[str], *, client: Any = None, completion_window: str = "24h",
                 max_active: int | None = None, wait: bool = False, backoff_s: float = 30.0,
                 backoff_max_s: float = 900.0, sleep: Any = time.sleep, log: Any = None) -> dict[str, Any]:
    """Upload every shard not yet uploaded and create a batch for every shard without one.

    Each id goes into the manifest as soon as the server returns it, so an interrupted
    submit continues where it stopped and never uploads or creates twice.

    ``max_active`` caps the batches in progress at once: with ``wait`` the call polls (back-off from
    ``backoff_s`` doubling to ``backoff_max_s``) until a slot frees; without, it stops and a later
    ``submit`` goes on. A creation the server refuses for its queue (429, or a limit/queue message) is
    stored on the shard (``submit_error``) and backed off the same way; any other refusal is stored
    and raised as one line.
    """
    out = Path(out_dir)
    manifest = read_manifest(out)
    if max_active is not None and (not isinstance(max_active, int) or max_active < 1):
        raise InputError(f"--max-active must be a whole number >= 1, got {max_active!r}", field="max_active")
    if not any(s.get("batch_id") is None and not s.get("writing") for s in manifest["shards"]):
        return manifest  # nothing left to submit: no client, so no key is asked for
    if client is None:
        client = _client(manifest)
        # the SDK's own quick retries would hide a queue limit: creations are retried here, with back-off
        creator = client.with_options(max_retries=0).batches
    else:
        creator = client.batches
    say = log or (lambda msg: None)
    delay = backoff_s

    def active() -> int:
        return sum(1 for s in manifest["shards"] if s.get("batch_id") and s.get("status") not in _DONE)

    for shard in manifest["shards"]:
        if shard.get("batch_id") is not None or shard.get("writing"):
            continue
        path = out / shard["file"]
        while max_active is not None and active() >= max_active:
            if not wait:
                say(f"{active()} batches in progress (--max-active {max_active}); run submit again later")
                return manifest
            say(f"{active()} batches in progress (--max-active {max_active}); waiting {delay:g} s")
            sleep(delay)
            delay = min(delay * 2, backoff_max_s)
            manifest = batch_status(out, client=client)
            shard = next(s for s in manifest["shards"] if s["file"] == path.name)
        if shard.get("input_file_id") is None:
            _verify_shard(path, shard)
            with open(path, "rb") as fh:
                shard["input_file_id"] = _endpoint("/v1/files", manifest,
                                                   lambda: client.files.create(file=fh, purpose="batch")).id
            _save_manifest(out, manifest)
        if shard.get("creating"):  # a run stopped between creating this batch and saving its id
            found = _created_before(client, shard)
            if found is not None:
                say(f"{shard['file']}: found the batch an interrupted submit created ({found.id}); not creating another")
                shard.pop("creating", None)
                shard["batch_id"], shard["status"] = found.id, found.status
                _save_manifest(out, manifest)
                continue
        shard["creating"] = True  # kept through refusals and back-off retries; cleared with the id saved
        _save_manifest(out, manifest)
        while True:
            try:
                batch = _endpoint("/v1/batches", manifest, lambda: creator.create(
                    input_file_id=shard["input_file_id"], endpoint=manifest["endpoint"],
                    completion_window=completion_window, metadata={"cfbench_shard": shard["file"]}))
            except Exception as exc:  # noqa: BLE001 - only the server's refusals are handled here
                err = _api_error(exc)
                if err is None:
                    raise
                status, msg = err
                shard["submit_error"] = {"status": status, "message": msg,
                                         "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
                _save_manifest(out, manifest)
                queued = status == 429 or any(w in msg.lower() for w in _QUEUE_WORDS)
                if not queued:
                    raise InputError(f"the server refused the batch ({status}): {msg}", source=str(path)) from None
                if not wait:
                    say(f"{shard['file']}: queue limit ({status}: {msg}); run submit again later")
                    return manifest
                say(f"{shard['file']}: queue limit ({status}); waiting {delay:g} s")
                sleep(delay)
                delay = min(delay * 2, backoff_max_s)
                continue
            break
        shard.pop("submit_error", None)
        shard.pop("creating", None)
        shard["batch_id"], shard["status"] = batch.id, batch.status
        delay = backoff_s
        _save_manifest(out, manifest)
    return manifest


#: how many of the account's newest batches are searched for one an interrupted submit created
FIND_CREATED_LIMIT = 1000


def _created_before(client: Any, shard: dict[str, Any]) -> Any:
    """The batch on ``shard``'s uploaded file, among the account's newest, or None.

    ``submit`` marks a shard ``creating`` before asking for its batch and clears the mark with the id
    saved; a mark left behind means the run stopped in between, so the batch may exist. Its input file
    was uploaded for this shard alone, so the file id identifies it."""
    for i, batch in enumerate(client.batches.list(limit=100)):
        if i >= FIND_CREATED_LIMIT:
            break
        if getattr(batch, "input_file_id", None) == shard["input_file_id"]:
            return batch
    return None


def _verify_shard(path: Path, shard: dict[str, Any]) -> None:
    if not path.exists():
        raise InputError("a shard the manifest lists is missing; plan again", source=str(path))
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    if sha.hexdigest() != shard["sha256"]:
        raise InputError("shard changed since it was planned (sha256 differs); plan again", source=str(path))


def _server_text(value: Any) -> Any:
    """A string the server sent (a status, a file id, an error code) as the manifest keeps it: scrubbed of
    credentials like every other text cfbench stores (None stays None)."""
    return None if value is None else scrub(str(value))[:300]


def _batch_errors(batch: Any) -> list[dict[str, Any]]:
    """A batch's own errors (a batch rejected whole: validation, a queue or token limit)."""
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) if errors is not None else None
    if data is None and isinstance(errors, dict):
        data = errors.get("data")
    out = []
    for e in data or ():
        get = e.get if isinstance(e, dict) else (lambda k, _e=e: getattr(_e, k, None))
        out.append({"code": _server_text(get("code")), "message": scrub(str(get("message") or ""))[:300],
                    "line": get("line") if isinstance(get("line"), int) else _server_text(get("line"))})
    return out


def batch_status(out_dir: str | os.PathLike[str], *, client: Any = None) -> dict[str, Any]:
    """Poll every submitted, unfinished batch; record status, counts, result file ids and the
    batch's own errors (a batch rejected whole keeps them in ``errors``)."""
    out = Path(out_dir)
    manifest = read_manifest(out)
    for shard in manifest["shards"]:
        if shard.get("batch_id") is None or shard.get("status") in _DONE:
            continue
        client = client or _client(manifest)  # a plan with nothing in flight needs no client (nor key)
        batch = _endpoint("/v1/batches", manifest, lambda: client.batches.retrieve(shard["batch_id"]))
        shard["status"] = _server_text(batch.status)
        shard["output_file_id"] = _server_text(getattr(batch, "output_file_id", None))
        shard["error_file_id"] = _server_text(getattr(batch, "error_file_id", None))
        errors = _batch_errors(batch)
        if errors:
            shard["errors"] = errors
        counts = getattr(batch, "request_counts", None)
        if counts is not None:
            shard["request_counts"] = {"total": counts.total, "completed": counts.completed, "failed": counts.failed}
        _save_manifest(out, manifest)
    return manifest


def cancel_batch(out_dir: str | os.PathLike[str], *, client: Any = None) -> dict[str, Any]:
    """Cancel every submitted batch of the plan that has not finished; a later collect imports what
    a cancelled batch completed, and ``retry`` re-sends the rest."""
    out = Path(out_dir)
    manifest = batch_status(out, client=client)
    for shard in manifest["shards"]:
        if shard.get("batch_id") and shard.get("status") not in _DONE + ("cancelling",):
            client = client or _client(manifest)
            shard["status"] = _server_text(client.batches.cancel(shard["batch_id"]).status)
            _save_manifest(out, manifest)
    return manifest


def collect_batch(out_dir: str | os.PathLike[str], *, cache: ResponseCache, client: Any = None,
                  prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """Download and import the results of every finished, uncollected shard.

    Only lines whose ``custom_id`` is in the shard the batch was made from are imported (the
    shard, checked against its SHA-256 in the manifest, is the authority); others are refused and
    counted (``n_refused``). A custom_id answered twice alike counts once (``n_duplicate``); answered
    twice differently it is a conflict (``n_conflict``), recorded as a failure, never cached. Each
    collected shard gains ``n_ok``, ``n_failed`` and the ``usage`` of its replies; the manifest
    gains the ``usage`` and ``cost`` of everything collected.
    """
    from .pricing import estimate_cost, load_prices

    out = Path(out_dir)
    check_environment(read_manifest(out), out / MANIFEST)
    manifest = batch_status(out, client=client)
    spec = manifest["judge"]
    for shard in manifest["shards"]:
        if shard.get("collected") or shard.get("status") not in _DONE:
            continue
        client = client or _client(manifest)
        _verify_shard(out / shard["file"], shard)
        stem = shard["file"].removesuffix(".jsonl")
        paths = []
        for kind in ("output_file_id", "error_file_id"):
            file_id = shard.get(kind)
            if file_id:
                dest = out / f"{stem}.{kind.split('_')[0]}.jsonl"
                shard["downloaded"] = True
                _save_manifest(out, manifest)
                _download(client, file_id, dest)
                paths.append(dest)
        limits = _shard_limits(out / shard["file"])
        counts = _import_lines(cache, spec, paths, allowed=limits)
        why = f"batch {shard['batch_id']} ended {shard['status']}"
        if shard.get("errors"):
            why += ": " + "; ".join(f"{e.get('code')}: {e.get('message')}" for e in shard["errors"][:3])
        missing = [(k, f"no result for this request ({why})") for k in limits if k not in counts["answered"]]
        cache.record_failures(spec, missing)
        shard.update(collected=True, n_ok=counts["ok"], n_failed=counts["failed"] + len(missing),
                     n_missing=len(missing), n_refused=counts["refused"], n_duplicate=counts["duplicate"],
                     n_conflict=counts["conflict"], usage=counts["usage"])
        _save_manifest(out, manifest)
    _total_usage(manifest, prices if prices is not None else load_prices(), estimate_cost)
    _save_manifest(out, manifest)
    return manifest


def _total_usage(manifest: dict[str, Any], prices: dict[str, Any], estimate_cost: Any) -> None:
    ptok = sum((s.get("usage") or {}).get("prompt_tokens", 0) for s in manifest["shards"])
    ctok = sum((s.get("usage") or {}).get("completion_tokens", 0) for s in manifest["shards"])
    n = sum((s.get("usage") or {}).get("n_replies", 0) for s in manifest["shards"])
    manifest["usage"] = {"n_replies": n, "prompt_tokens": ptok, "completion_tokens": ctok}
    manifest["collected_cost"] = estimate_cost(manifest["model"], ptok, ctok, prices, batch=True)


#: the error code of an output line cfbench withheld at download because it spelled a credential
WITHHELD = "credential_echo"
#: the custom id a withheld line gets when its own is missing or spells a credential: no plan holds it, so the
#: import refuses the line and counts it (``n_refused``), as it does a line of another plan
WITHHELD_ID = "(withheld: custom_id missing or spelled a credential)"


def _download(client: Any, file_id: str, dest: Path) -> None:
    """The Batch output (or error) file ``file_id`` into ``dest``, line by line: a line that spells a credential
    (a server echoing the key) is written as :func:`_withheld`, so no key reaches the disk, not even for a
    moment."""
    creds = credentials()
    tmp = dest.with_suffix(".part")
    with client.files.with_streaming_response.content(file_id) as resp, open(tmp, "w", encoding="utf-8") as fh:
        for line in resp.iter_lines():
            fh.write(_withheld(line, creds) + "\n")
    os.replace(tmp, dest)


def _withheld(line: str, creds: dict[str, str]) -> str:
    """``line`` as it came, or, when it spells one of ``creds``, an error line for its custom id (code
    :data:`WITHHELD`) that the import records as a failure (:func:`is_permanent`: never re-sent)."""
    name = echoed_credential(line, creds=creds)
    if name is None:
        return line
    try:
        cid = json.loads(line).get("custom_id")
    except (ValueError, AttributeError):
        cid = None
    if not isinstance(cid, str) or echoed_credential(cid, creds=creds) is not None:
        cid = WITHHELD_ID  # (a line no request can be matched to: refused and counted, the rest imported)
    return json.dumps({"custom_id": cid, "response": None, "error": {
        "code": WITHHELD, "message": f"reply echoed a credential (${name}); withheld at download, not cached"}})


def _shard_limits(path: Path) -> dict[str, int]:
    """custom_id -> the max tokens it asked for (to spot replies far beyond it)."""
    limits: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            item = json.loads(line)
            body = item["body"]
            limits[item["custom_id"]] = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
    return limits


# -- retry ------------------------------------------------------------------------------------------------

_PERMANENT_STATUS = re.compile(r"status (4(?!08|09|29)\d\d)\b")
_TRANSIENT_WORDS = ("rate", "server", "timeout", "timed out", "overload", "internal", "unavailable", "capacity",
                    "no result", "expired", "cancel", "queue", "limit")


def is_permanent(reason: str) -> bool:
    """Whether a recorded failure would fail again if re-sent: a 4xx line (not 408, 409, 429), an
    error line whose code names a bad request, a content filter, or a reply refused as untrustworthy
    (it echoed a credential, ran far beyond ``max_tokens``, or cannot be stored:
    :func:`~cfbench.judges.runner.reply_problem`; a deterministic model would answer so again, and the live
    runner does not retry such a reply either). Missing results, 5xx, expired, cancelled and
    queue-limited batches are transient."""
    text = reason.lower()
    if text.startswith("conflict"):
        return False
    if text.startswith(("reply ", f"batch error: {WITHHELD} ")) and any(w in text for w in UNTRUSTED_REPLY):
        return True
    if _PERMANENT_STATUS.search(text) or "content filter" in text:
        return True
    if text.startswith("batch error"):
        return not any(w in text for w in _TRANSIENT_WORDS)
    return False


def retry_batch(out_dir: str | os.PathLike[str], *, cache: ResponseCache, client: Any = None,
                include_permanent: bool = False, submit: bool = True, **submit_kw: Any) -> dict[str, Any]:
    """Re-send the failed and missing requests of a plan, from its manifest, without re-planning.

    Collects whatever has finished, then copies the lines of every collected shard whose request has
    no reply in the cache into new shards ``retry-NN-shard-NNNNN.jsonl`` (the lines as planned,
    byte for byte), lists the permanent failures (see :func:`is_permanent`) in
    ``retry-NN.permanent.tsv`` instead of re-sending them unless ``include_permanent``, and submits
    the new shards. Returns ``{"round", "n_resent", "n_permanent", "shards", "permanent_file"}``.
    """
    out = Path(out_dir)
    manifest = collect_batch(out, cache=cache, client=client)
    spec = manifest["judge"]
    rounds = [int(s["retry_round"]) for s in manifest["shards"] if s.get("retry_round")]
    round_no = max(rounds, default=0) + 1
    prefix = f"retry-{round_no:02d}-"
    limits = manifest.get("limits") or {}
    writer = _ShardWriter(out, limits.get("max_requests", MAX_SHARD_REQUESTS),
                          limits.get("max_bytes", MAX_SHARD_BYTES), prefix=prefix)
    # with include_permanent, shards retried before are read again: their permanent failures were left out
    todo = [s for s in manifest["shards"] if s.get("collected") and (include_permanent or not s.get("retried_in"))]
    in_flight: set[str] = set()  # requests of shards not collected yet (sent, or still to run) are never sent twice
    for s in manifest["shards"]:
        if not s.get("collected") and not s.get("writing"):
            in_flight.update(_shard_limits(out / s["file"]))
    permanent: list[tuple[str, str]] = []
    n_resent = 0
    sent: set[str] = set()

    def on_open(shards: list[dict[str, Any]]) -> None:
        shards[-1]["retry_round"] = round_no
        manifest["shards"].append(shards[-1])  # the same dict: closing the shard fills in its counts
        _save_manifest(out, manifest)

    writer.on_open = on_open
    for shard in todo:
        path = out / shard["file"]
        _verify_shard(path, shard)
        with open(path, "rb") as fh:
            lines = fh.readlines()
        keys = [json.loads(line)["custom_id"] for line in lines]
        have = cache.has_many(keys, spec)
        open_keys = [k for k in keys if k not in have]
        reasons = cache.failures_many(open_keys, spec)
        for key, line in zip(keys, lines):
            if key in have or key in in_flight or key in sent:
                continue
            sent.add(key)
            reason = reasons.get(key, "no result recorded")
            if is_permanent(reason) and not include_permanent:
                permanent.append((key, reason))
                continue
            writer.write(line, key)
            n_resent += 1
        shard["retried_in"] = round_no
    new_shards = writer.close()
    perm_file = None
    if permanent:
        perm_file = out / f"retry-{round_no:02d}.permanent.tsv"
        with open(perm_file, "w", encoding="utf-8") as fh:
            fh.write("custom_id\treason\n")
            for key, reason in permanent:
                fh.write(f"{key}\t{' '.join(reason.split())}\n")
    manifest.setdefault("retries", []).append({"round": round_no, "n_resent": n_resent, "n_permanent": len(permanent),
                                               "shards": [s["file"] for s in new_shards],
                                               "permanent_file": perm_file.name if perm_file else None})
    _save_manifest(out, manifest)
    if submit and new_shards:
        submit_batch(out, client=client, **submit_kw)
    return manifest["retries"][-1]


# -- import (also for a Batch output file downloaded by hand, or written by vLLM's run-batch) ---------

def _error_text(err: Any) -> tuple[str, str]:
    """(code, message) of a line's ``error``: OpenAI's ``{code, message}``, vLLM's ``{"error": {...}}``
    or a plain string."""
    if isinstance(err, dict) and isinstance(err.get("error"), dict):
        err = err["error"]
    if isinstance(err, dict):
        return str(err.get("code") or err.get("type") or ""), str(err.get("message") or "")
    return "", str(err)


def _line_outcome(item: dict[str, Any]) -> tuple[Response | None, str | None]:
    """A Batch output line as (reply, None) or (None, failure reason)."""
    resp = item.get("response") or {}
    status = resp.get("status_code", 200)
    if item.get("error"):
        code, msg = _error_text(item["error"])
        if status != 200 and resp:
            return None, f"batch line status {status}: {code} {msg}".strip()
        return None, f"batch error: {code} {msg}".strip()
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


def _outcomes(paths: list[Path], limits: dict[str, int],
              creds: Any) -> Iterator[tuple[Path, int, str, Response | None, str | None]]:
    """(file, line number, custom_id, reply or None, failure reason or None) of every line."""
    for path in paths:
        for lineno, item in _output_items(path):
            try:
                key = item["custom_id"]
                if not isinstance(key, str):
                    raise TypeError("custom_id is not a string")
                response, reason = _line_outcome(item)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
                raise InputError(f"not a Batch-API output line ({type(exc).__name__}: {exc})",
                                 source=str(path), record=f"line {lineno}") from None
            if response is not None:
                reason = reply_problem(response, limits.get(key) or 1_000_000, creds=creds)
                if reason is not None:
                    response = None
            yield path, lineno, key, response, (scrub(reason) if reason is not None else None)


def _import_lines(cache: ResponseCache, judge: str, paths: list[Path], *, allowed: Any = None,
                  flush_every: int = 5_000) -> dict[str, Any]:
    """Import Batch output files for ``judge``, accepting only custom_ids in ``allowed`` (a dict or
    set; None: the keys the cache knows for ``judge``, see :meth:`ResponseCache.known_keys`).

    One pass reads every line's outcome (the reply JSON or the failure reason), keeping one per
    custom_id: a second line alike is a duplicate (counted once), a second line that differs makes the
    id a conflict (recorded as a failure, never cached). A Batch output file holds at most 50,000
    lines (one shard's), so the outcomes of one import fit in memory (~300 bytes each). Then the
    accepted, unconflicted ids are stored. Returns counts (``ok``, ``failed`` (conflicts included),
    ``refused``, ``duplicate``, ``conflict``), the ``answered`` ids and the ``usage`` of the stored replies.
    """
    creds = credentials()
    limits = allowed if isinstance(allowed, dict) else {}
    seen: dict[str, tuple[str | None, str | None, int, int, str]] = {}  # key -> (reply JSON, reason, ptok, ctok, where)
    conflicts: dict[str, list[str]] = {}
    n_lines = 0
    dup_keys: list[str] = []
    for path, lineno, key, response, reason in _outcomes(paths, limits, creds):
        n_lines += 1
        blob = response.to_json() if response is not None else None
        first = seen.get(key)
        if first is None:
            seen[key] = (blob, reason, int(response.prompt_tokens or 0) if response is not None else 0,
                         int(response.completion_tokens or 0) if response is not None else 0,
                         f"{path.name} line {lineno}")
        elif (first[0], first[1]) != (blob, reason):
            conflicts.setdefault(key, [first[4]]).append(f"{path.name} line {lineno}")
        else:
            dup_keys.append(key)
    if allowed is None:
        allowed = cache.known_keys(judge, list(seen))
    refused = [k for k in seen if k not in allowed]
    n_conflict = sum(1 for k in conflicts if k in allowed)
    counts: dict[str, Any] = {"lines": n_lines, "ok": 0, "failed": n_conflict, "refused": 0,
                              "duplicate": sum(1 for k in dup_keys if k in allowed and k not in conflicts),
                              "conflict": n_conflict, "refused_ids": refused[:3], "answered": set(),
                              "usage": {"n_replies": 0, "prompt_tokens": 0, "completion_tokens": 0}}
    refused_set = set(refused)
    good: list[tuple[str, str, str, float | None]] = []
    failed: list[tuple[str, str]] = []

    def flush() -> None:
        if good:
            cache.put_many(good)
            good.clear()
        if failed:
            cache.record_failures(judge, failed)
            failed.clear()

    usage, done = counts["usage"], counts["answered"]
    for key, (blob, reason, ptok, ctok, _where) in seen.items():
        if key in refused_set:
            continue
        done.add(key)
        if key in conflicts:
            where = conflicts[key]
            failed.append((key, f"conflict: {len(where)} different results for this custom_id "
                                f"({', '.join(where[:4])}); not cached"))
        elif blob is not None:
            good.append((key, judge, blob, None))
            counts["ok"] += 1
            usage["n_replies"] += 1
            usage["prompt_tokens"] += ptok
            usage["completion_tokens"] += ctok
        else:
            failed.append((key, reason))
            counts["failed"] += 1
        if len(good) + len(failed) >= flush_every:
            flush()
    flush()
    # every line of a refused id is refused: its first line, its duplicates and its differing lines
    counts["refused"] = len(refused_set) + sum(1 for k in dup_keys if k in refused_set) + \
        sum(len(v) - 1 for k, v in conflicts.items() if k in refused_set)
    return counts


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


def _refuse_foreign(path: Path, counts: dict[str, Any], what: str) -> None:
    if counts["lines"] and counts["refused"] == counts["lines"]:
        raise InputError(f"none of its {counts['lines']:,} custom_ids belong to {what}: another plan's output? "
                         f"nothing imported", source=str(path))


def import_batch(cache: ResponseCache, judge: str, path: str | os.PathLike[str]) -> tuple[int, int]:
    """Store a Batch output file's successful lines as replies; record the others as failures.

    Only custom_ids the cache knows for ``judge`` (planned with ``mode="plan"``, exported, answered
    or failed before) are accepted; a file none of whose ids it knows is refused with one line.
    Returns ``(imported, failed)``; :func:`import_batch_counts` gives every count.
    """
    counts = import_batch_counts(cache, judge, path)
    return counts["ok"], counts["failed"]


def import_batch_counts(cache: ResponseCache, judge: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`import_batch` with all counts (``ok``, ``failed``, ``refused``, ``duplicate``, ``conflict``)."""
    spec = canonical_spec(judge)
    path = Path(path)
    counts = _import_lines(cache, spec, [path])
    _refuse_foreign(path, counts, f"the requests this cache holds for {spec}")
    return counts


def import_outputs(out_dir: str | os.PathLike[str], paths: Iterable[str | os.PathLike[str]], *,
                   cache: ResponseCache, shard: str | None = None,
                   prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """Import output files made outside the Batch API (vLLM's ``run-batch``, any file-in/file-out
    runner) for a plan's shards: ``shard-00003.jsonl`` -> an output named ``shard-00003.<anything>.jsonl``
    (or name the shard with ``shard``). The shard, checked against the manifest, is the authority
    on custom_ids, exactly as in :func:`collect_batch`; the shard is marked collected."""
    from .pricing import estimate_cost, load_prices

    out = Path(out_dir)
    manifest = read_manifest(out)
    check_environment(manifest, out / MANIFEST)
    by_file = {s["file"]: s for s in manifest["shards"]}
    spec = manifest["judge"]
    for p in map(Path, paths):
        if not p.is_file():
            raise InputError("no such output file", source=str(p))
        name = shard or next((f for f in by_file if p.name.startswith(f.removesuffix(".jsonl") + ".")), None)
        if name not in by_file:
            raise InputError(f"which shard is this the output of? name it {{shard}}.output.jsonl or pass --shard "
                             f"(shards: {', '.join(list(by_file)[:3])}{', …' if len(by_file) > 3 else ''})",
                             source=str(p))
        entry = by_file[name]
        _verify_shard(out / name, entry)
        limits = _shard_limits(out / name)
        counts = _import_lines(cache, spec, [p], allowed=limits)
        _refuse_foreign(p, counts, f"shard {name} of the plan in {out}")
        missing = [(k, f"no result for this request in {p.name}") for k in limits if k not in counts["answered"]]
        cache.record_failures(spec, missing)
        entry.update(collected=True, status=entry.get("status") or "imported", imported_from=p.name,
                     n_ok=counts["ok"], n_failed=counts["failed"] + len(missing), n_missing=len(missing),
                     n_refused=counts["refused"], n_duplicate=counts["duplicate"], n_conflict=counts["conflict"],
                     usage=counts["usage"])
        _save_manifest(out, manifest)
    _total_usage(manifest, prices if prices is not None else load_prices(), estimate_cost)
    _save_manifest(out, manifest)
    return manifest


def export_batch(cache: ResponseCache, judge: str, out: str | os.PathLike[str], *, force: bool = False) -> int:
    """Write the cache's pending requests for ``judge`` as one Batch input file (custom_id = key).

    An existing ``out`` is refused (cfbench overwrites no file it did not make) unless ``force``.
    For more than 50,000 requests use :func:`plan_batch`, which shards.
    """
    from cfbench.core.errors import InputError

    spec, model, _ = _openai_spec(judge)
    n = 0
    if os.path.lexists(out) and not force:
        raise InputError("exists; not overwritten (cfbench replaces only what it made: pass --force to replace it, "
                         "or choose another --out)", source=str(out))
    with open(out, "w", encoding="utf-8") as fh:
        for key, _, payload in cache.pending(spec):
            cfg = GenerationConfig(**{**payload["config"], "stop": tuple(payload["config"]["stop"])})
            body = {"model": model, "messages": payload["messages"], **cfg.chat_params()}
            line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    return n
