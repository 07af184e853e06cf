"""The study-free half of a sequential audit sent through the Batch API: one job per judge per wave, resumable.

A study's ``run_batch`` walks its waves as its live sequential audit does; before each wave is judged (from the
cache, in replay mode) it hands this module the wave's requests per judge. :func:`send_wave` puts what the cache
lacks into the cache through :mod:`cfbench.judges.batch` (plan once, submit once, poll, collect), then settles
the lines that came back failed (:func:`settle_failures`): a transient failure is re-sent in a follow-up job of
the same wave, a permanent one is named and counted in the wave's entry and judged as a failed row, and one
that keeps failing stops the run in one line (the same call resumes there).

The run folder holds :data:`MANIFEST` (JSON, rewritten atomically after every step): the run's parameters, and per
wave what it asked about (``items``, ``dimensions``: whatever the study names its units and cells), each judge's
batch folder and batch ids and how far the wave got (:data:`STEPS`: ``planned`` -> ``submitted`` -> ``collected``
-> ``judged``), and the cells' table after the last judged wave. A resumed run walks the same waves again (the
walk is seeded): a wave already answered is read back from the cache, the wave in flight continues from its batch
folder (never planned or uploaded twice), and a wave asking about other units or cells than the manifest says
(changed parameters or data) stops the run with one line. After each step a ``crash`` callback is called with the
step's name (a no-op in use; tests make it kill the process there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from cfbench.core.errors import InputError
from cfbench.core.files import shorten

__all__ = ["MANIFEST", "FORMAT", "STEPS", "check_params", "read_waves", "save_waves", "advance", "open_run", "wave_entry", "send_wave",
           "settle_failures", "resent_requests", "mark_judged", "close_run", "RESENDS"]

#: the sequential Batch run's manifest, in the run folder
MANIFEST = "sequential_batch.json"
#: the manifest's ``format`` (a file of that name without it is not ours, and is never written over)
FORMAT = "cfbench-sequential-batch/1"
_DONE = ("completed", "failed", "expired", "cancelled")
#: how far a wave got, in order (a resumed run replaying a wave never moves it back)
STEPS = ("new", "planned", "submitted", "collected", "judged")
#: how many times a wave's transiently failed lines are re-sent before the run stops (the runner's retries)
RESENDS = 2

Crash = Callable[[str], None]


def _no_crash(step: str) -> None:
    """After each step of a wave (a no-op)."""


def check_params(params: Any, *, judges_field: str = "judges") -> None:
    """A sequential Batch run needs ``params.sequential`` true and every judge in ``params.<judges_field>`` (a
    list of judge specs, or one spec) an ``openai:`` one (the Batch API is OpenAI's); else one
    :class:`InputError` naming the field."""
    from cfbench.judges.registry import parse_spec

    if not params.sequential:
        raise InputError("the Batch-API sequential audit needs sequential: true", source="parameters",
                         field="sequential")
    judges = getattr(params, judges_field)
    for judge in [judges] if isinstance(judges, str) else judges:
        if parse_spec(judge)[0] != "openai":
            raise InputError(f"Batch-API jobs are for openai:* judges, got {judge!r}", source="parameters",
                             field=judges_field)


def advance(entry: dict[str, Any], status: str) -> None:
    """Move a wave's entry forward to ``status`` (never back)."""
    if STEPS.index(status) > STEPS.index(entry["status"]):
        entry["status"] = status


def read_waves(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a sequential Batch run folder (an empty one when the folder has none yet)."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "waves": [], "complete": False}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # (UnicodeDecodeError is one)
        raise InputError(f"not a cfbench sequential batch manifest ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())}); use another folder", source=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not a cfbench sequential batch manifest (no format {FORMAT!r}); use another folder",
                         source=str(path), field="format")
    if not isinstance(data.get("waves"), list):
        raise InputError("not a sequential batch manifest (no waves list)", source=str(path), field="waves")
    return data


def save_waves(folder: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (a temporary file renamed over it)."""
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def open_run(folder: Path, params: Mapping[str, Any]) -> dict[str, Any]:
    """The folder's manifest, made or resumed for a run of ``params`` (a JSON-able mapping). Refused in one line,
    before anything in the folder is written: a folder holding a run of other parameters (naming the field), a
    :data:`MANIFEST` cfbench did not write, or other files but no manifest (a folder that is not a run's)."""
    manifest = read_waves(folder)
    if not (folder / MANIFEST).exists() and folder.is_dir():
        others = sorted(p.name for p in folder.iterdir() if p.name != MANIFEST + ".tmp")
        if others:
            raise InputError(f"missing, yet the folder holds other files ({shorten(others)}): not a sequential "
                             "batch run's folder; use a new or empty one", source=str(folder / MANIFEST))
    folder.mkdir(parents=True, exist_ok=True)
    mine = json.loads(json.dumps(dict(params), default=str))
    if manifest.get("params") not in (None, mine):
        raise InputError("this folder holds a sequential batch run of other parameters; use another folder",
                         source=str(folder / MANIFEST), field="params")
    manifest.update(params=mine, complete=False)
    save_waves(folder, manifest)
    return manifest


def wave_entry(folder: Path, manifest: dict[str, Any], k: int, items: Sequence[str], dims: Sequence[str],
               judges: Sequence[str]) -> dict[str, Any]:
    """The manifest's entry of wave ``k`` (1-based): made when new; when resumed, checked to ask about the same
    ``items`` and ``dims`` as before."""
    from cfbench.judges.batch import judge_slug

    items, dims = [str(i) for i in items], [str(d) for d in dims]
    if k <= len(manifest["waves"]):
        entry = manifest["waves"][k - 1]
        if entry["items"] != items or entry["dimensions"] != dims:
            raise InputError(f"wave {k} of this run asked about {entry['items']} on {entry['dimensions']}, "
                             f"now {items} on {dims}: the parameters or data changed; use another folder",
                             source=str(folder / MANIFEST), record=f"wave {k}", field="items")
        return entry
    entry = {"wave": k, "items": items, "dimensions": dims, "status": "new",
             "dirs": {j: f"batches/wave-{k:04d}/{judge_slug(j)}" for j in judges}}
    manifest["waves"].append(entry)
    return entry


def send_wave(folder: Path, manifest: dict[str, Any], entry: dict[str, Any], requests: Mapping[str, list], *,
              store: Any, client: Any, poll_s: float, sleep: Callable[[float], None], say: Callable[[str], None],
              crash: Crash = _no_crash, resends: int = RESENDS) -> dict[str, list]:
    """One wave's requests (judge -> requests) into the cache ``store`` through the Batch API: per judge, what
    the cache lacks is planned (once), submitted (once), polled until done and collected; then its failed lines
    are settled (:func:`settle_failures`: transient ones re-sent up to ``resends`` times, permanent ones named and
    counted in the wave's entry). Returns the wave's re-sent requests (:func:`resent_requests`), for the walk to
    count what they cost."""
    from cfbench.judges.batch import collect_batch, plan_batch, submit_batch
    from cfbench.judges.batch import read_manifest as read_batch

    for judge, reqs in requests.items():
        d = folder / entry["dirs"][judge]
        planned = (d / "manifest.json").exists() and read_batch(d).get("complete")
        if not planned:
            if entry["status"] not in ("new", "planned"):
                raise InputError("the wave's batch plan is missing though the manifest says it was submitted",
                                 source=str(d), field="status")
            plan_batch(iter(reqs), judge, d, cache=store, progress=False, force=True,
                       source={"sequential_wave": entry["wave"], "items": entry["items"]})
            advance(entry, "planned")
            save_waves(folder, manifest)
            crash("planned")
        submitted = submit_batch(d, client=client)
        entry.setdefault("batch_ids", {})[judge] = [sh.get("batch_id") for sh in submitted["shards"]]
        advance(entry, "submitted")
        save_waves(folder, manifest)
        crash("submitted")
        _wait(d, entry, judge, client=client, poll_s=poll_s, sleep=sleep, say=say)
        collect_batch(d, cache=store, client=client)
        if entry["status"] != "judged":  # (a wave the audit already folded in is replayed as it was judged)
            settle_failures(folder, manifest, entry, judge, reqs, store=store, client=client, poll_s=poll_s,
                            sleep=sleep, say=say, crash=crash, resends=resends)
    resent = resent_requests(folder, entry, requests)
    if resent:  # (the count settle_failures kept, made whole after a crash between a re-send and its record)
        entry["resent"] = {judge: len(reqs) for judge, reqs in resent.items()}
    advance(entry, "collected")
    save_waves(folder, manifest)
    crash("collected")
    return resent


def resent_requests(folder: Path, entry: dict[str, Any], requests: Mapping[str, list]) -> dict[str, list]:
    """Judge -> the requests of ``requests`` the wave re-sent (:func:`settle_failures`), once per re-send, read
    from the wave's batch folders: the lines of every follow-up job that was submitted (a shard of a retry round
    with a batch id). The batch folder is written before a job goes out, so the list is the same whether the
    re-sends went out in this call or in an earlier one that crashed or stopped, even one that crashed before
    the wave's entry recorded them, or a run made before the entry kept their ids."""
    from cfbench.judges.batch import _shard_limits, read_manifest as read_batch

    out: dict[str, list] = {}
    for judge, rel in entry["dirs"].items():
        d = folder / rel
        if judge not in requests or not (d / "manifest.json").exists():
            continue
        plan = read_batch(d)
        by_key = {r.cache_key(plan["judge"]): r for r in requests[judge]}
        ids = [k for s in plan["shards"] if s.get("retry_round") and s.get("batch_id")
               for k in _shard_limits(d / s["file"])]
        if ids:
            out[judge] = [by_key[k] for k in ids if k in by_key]
    return out


def _wait(d: Path, entry: dict[str, Any], judge: str, *, client: Any, poll_s: float,
          sleep: Callable[[float], None], say: Callable[[str], None]) -> None:
    """Poll the batch folder ``d``'s submitted jobs until every one has ended."""
    from cfbench.judges.batch import batch_status

    while any(s.get("batch_id") and s.get("status") not in _DONE for s in batch_status(d, client=client)["shards"]):
        say(f"wave {entry['wave']}: {judge}'s batch in progress; next poll in {poll_s:g} s")
        sleep(poll_s)


def _failures(d: Path, reqs: Sequence[Any], store: Any) -> list[dict[str, str]]:
    """The requests of batch folder ``d``'s plan that the cache has no reply for: request id, custom id (the
    cache key) and the failure the cache recorded, in the plan's order."""
    from cfbench.judges.batch import _shard_limits, read_manifest as read_batch

    plan = read_batch(d)
    spec = plan["judge"]
    keys = [k for s in plan["shards"] if not s.get("writing") for k in _shard_limits(d / s["file"])]
    keys = list(dict.fromkeys(keys))
    open_keys = [k for k in keys if k not in store.has_many(keys, spec)]
    if not open_keys:
        return []
    reasons = store.failures_many(open_keys, spec)
    ids = {r.cache_key(spec): r.request_id for r in reqs}
    return [{"request_id": ids.get(k, ""), "custom_id": k,
             "reason": " ".join(reasons.get(k, "no result recorded").split())} for k in open_keys]


def settle_failures(folder: Path, manifest: dict[str, Any], entry: dict[str, Any], judge: str, reqs: Sequence[Any],
                    *, store: Any, client: Any, poll_s: float, sleep: Callable[[float], None],
                    say: Callable[[str], None], crash: Crash = _no_crash, resends: int = RESENDS) -> None:
    """After a wave's job for ``judge`` is collected: the lines that failed transiently (a 5xx, a line the job
    never answered: :func:`~cfbench.judges.batch.is_permanent` false) are re-sent as a follow-up job of the
    same batch folder (:func:`~cfbench.judges.batch.retry_batch`), up to ``resends`` times; a permanent failure
    (a refused request, a content filter, a reply that echoed a credential) is not re-sent. Each re-send is
    counted in the wave's entry (``resent``: per judge; :func:`resent_requests` reads the re-sent lines back from
    the batch folder, which holds them before they are sent). What still fails permanently is recorded in the
    wave's entry (``failed``: per judge the count and the first few request ids, custom ids and reasons) and
    said in one line per judge: the wave is judged without it, as the runner's failures are. A transient
    failure left after the re-sends stops the run with one :class:`InputError` naming the wave, the request
    and the error (the same call resumes here and re-sends it again)."""
    from cfbench.judges.batch import collect_batch, is_permanent, retry_batch
    from cfbench.judges.batch import read_manifest as read_batch

    d = folder / entry["dirs"][judge]
    failed = _failures(d, reqs, store)
    for _ in range(resends):
        transient = [f for f in failed if not is_permanent(f["reason"])]
        if not transient:
            break
        first = transient[0]
        say(f"wave {entry['wave']}: {judge}: {len(transient)} request(s) failed in a way worth another try "
            f"(first: {first['request_id']}: {first['reason']}); re-sending them")
        retry_batch(d, cache=store, client=client)
        crash("resubmitted")
        resent = entry.setdefault("resent", {})
        resent[judge] = resent.get(judge, 0) + len(transient)
        entry["batch_ids"][judge] = [sh.get("batch_id") for sh in read_batch(d)["shards"]]
        save_waves(folder, manifest)
        crash("resent")
        _wait(d, entry, judge, client=client, poll_s=poll_s, sleep=sleep, say=say)
        collect_batch(d, cache=store, client=client)
        failed = _failures(d, reqs, store)
    transient = [f for f in failed if not is_permanent(f["reason"])]
    if transient:
        first = transient[0]
        raise InputError(f"{len(transient)} request(s) still failed after {resends} re-send(s), first "
                         f"{first['request_id'] or first['custom_id']}: {first['reason']}; run the "
                         "same command again to resume here and re-send them", source=str(d),
                         record=f"wave {entry['wave']}", field="custom_id")
    if failed:
        entry.setdefault("failed", {})[judge] = {"n": len(failed), "first": failed[:5]}
        save_waves(folder, manifest)
        first = failed[0]
        say(f"wave {entry['wave']}: {judge}: {len(failed)} request(s) failed for good, judged as failed (first: "
            f"{first['request_id']}: {first['reason']})")


def mark_judged(folder: Path, manifest: dict[str, Any], n_waves: int, table: Callable[[], Any], *,
                crash: Crash = _no_crash) -> None:
    """The first ``n_waves`` waves are judged (the audit has folded them into its cells): record it, with the
    cells' table as it stands (``table()``: a DataFrame)."""
    changed = False
    for entry in manifest["waves"][:n_waves]:
        if entry["status"] != "judged":
            advance(entry, "judged")
            changed = True
    if changed:
        manifest["cells"] = table().to_dict(orient="records")
        save_waves(folder, manifest)
        crash("judged")


def close_run(folder: Path, manifest: dict[str, Any], n_waves: int, cells: Any, stopped_by: str = "") -> None:
    """The audit ended after ``n_waves`` waves: mark them judged and the run complete, with the final cells' table
    (``cells``: a DataFrame) and why it stopped."""
    for entry in manifest["waves"][:n_waves]:
        advance(entry, "judged")
    manifest.update(complete=True, cells=cells.to_dict(orient="records"), stopped_by=stopped_by)
    save_waves(folder, manifest)
