"""The contact-center sequential audit through the Batch API: each wave is one batch job per judge.

:func:`run_batch` runs the same wave loop as ``run(Params(sequential=True, ...))`` (:mod:`.sequential`): plan
the next wave of transcripts for the cells still undecided -> check it against the budgets -> **send what the
cache lacks as a Batch-API job** (:mod:`cfbench.judges.batch`: plan, submit, poll, collect into the cache)
-> judge the wave from the cache (replay mode: nothing is sent outside the batch) -> update every cell's
sequence -> decide. Decided cells' dimensions are left out of the next wave's plan.

Resuming. The run folder holds :data:`MANIFEST` (JSON, rewritten atomically after every step): per wave its
transcripts, the dimensions it asked about, each judge's batch folder and batch ids, how far the wave got (``planned``
-> ``submitted`` -> ``collected`` -> ``judged``), and the cells' table after the last judged wave. Each batch
folder keeps its own manifest with the shard files and batch ids (:func:`~cfbench.judges.batch.plan_batch`).
Calling :func:`run_batch` again on the folder after a crash at any step walks the same transcripts again
(the walk is seeded): the waves already answered are judged from the cache (no request sent), their
sequences rebuilt exactly; the wave in flight continues from its batch folder (a planned job is submitted,
a submitted one polled and collected, never planned or uploaded twice); later waves go on as before. A wave
whose transcripts or dimensions differ from the manifest's (changed parameters) stops the run with one line.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from cfbench.core.errors import InputError
from cfbench.studies.contact_center_qa.params import Params

__all__ = ["run_batch", "MANIFEST", "read_waves"]

#: the sequential Batch run's manifest, in the run folder
MANIFEST = "sequential_batch.json"
_DONE = ("completed", "failed", "expired", "cancelled")
#: how far a wave got, in order (a resumed run replaying a wave never moves it back)
_STEPS = ("new", "planned", "submitted", "collected", "judged")


def _advance(entry: dict[str, Any], status: str) -> None:
    if _STEPS.index(status) > _STEPS.index(entry["status"]):
        entry["status"] = status


def _crash_point(step: str) -> None:
    """After each step of a wave (a no-op; tests make it kill the process there)."""


def read_waves(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a sequential Batch run folder (an empty one when the folder has none yet)."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return {"format": "cfbench-sequential-batch/1", "waves": [], "complete": False}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"not a sequential batch manifest ({exc})", source=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("waves"), list):
        raise InputError("not a sequential batch manifest (no waves list)", source=str(path), field="waves")
    return data


def _save(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def run_batch(params: Params, out: Any, *, client: Any = None, cache: Any = None, poll_s: float = 30.0,
              sleep: Callable[[float], None] = time.sleep, config_name: str = "", progress: bool = False,
              log: Callable[[str], None] | None = None) -> Any:
    """Run the sequential audit of ``params`` (``sequential`` must be true; every judge ``openai:``) with each
    wave sent as a Batch-API job; resumable in ``out`` (see the module docstring). Returns the study's
    :class:`~.study.ContactCenterResult`, its files written to ``out`` as :func:`.study.run` writes them.

    ``client``: an OpenAI-compatible client (the SDK's, from the environment, when None); ``cache``: the
    response cache the replies go into (a :class:`~cfbench.judges.cache.ResponseCache`; the default cache
    when None: it must outlive a crash); ``poll_s``: seconds between status polls of a wave's jobs."""
    from cfbench.judges.cache import ResponseCache, default_cache_path
    from cfbench.judges.registry import parse_spec
    from cfbench.studies.contact_center_qa.study import run

    if not params.sequential:
        raise InputError("the Batch-API sequential audit needs sequential: true", source="parameters",
                         field="sequential")
    for judge in params.judges:
        if parse_spec(judge)[0] != "openai":
            raise InputError(f"Batch-API jobs are for openai:* judges, got {judge!r}", source="parameters",
                             field="judges")
    folder = Path(getattr(out, "dir", out))
    folder.mkdir(parents=True, exist_ok=True)
    store = cache if isinstance(cache, ResponseCache) else ResponseCache(cache or default_cache_path())
    manifest = read_waves(folder)
    mine = params.to_mapping()
    if manifest.get("params") not in (None, mine):
        raise InputError("this folder holds a sequential batch run of other parameters; use another folder",
                         source=str(folder / MANIFEST), field="params")
    manifest.update(params=mine, complete=False)
    _save(folder, manifest)
    say = log or (lambda msg: None)

    def wave(plans: list, seq: Any) -> None:
        _send_wave(folder, manifest, plans, seq, store=store, client=client, poll_s=poll_s, sleep=sleep, say=say)

    result = run(params, out, config_name=config_name, progress=progress, cache=store, mode="replay", wave=wave)
    for entry in manifest["waves"][:result.summary["sequential"]["waves"]]:
        _advance(entry, "judged")
    manifest.update(complete=True, cells=result.tables["sequential_cells"].to_dict(orient="records"),
                    stopped_by=result.summary["sequential"].get("stopped_by", ""))
    _save(folder, manifest)
    return result


def _wave_entry(folder: Path, manifest: dict[str, Any], plans: list, seq: Any) -> dict[str, Any]:
    """The manifest's entry of the wave about to be judged (made when new; checked against the plans when the
    run is resumed: the same transcripts, the same dimensions)."""
    from cfbench.judges.batch import judge_slug

    k = seq.wave + 1
    items = [str(i) for p in plans for i in dict.fromkeys(p.rows["item_id"].astype(str))]
    dims = sorted({str(d) for p in plans for d in p.rows["dimension"] if str(d) in set(seq.dimensions)})
    if k <= len(manifest["waves"]):
        entry = manifest["waves"][k - 1]
        if entry["items"] != items or entry["dimensions"] != dims:
            raise InputError(f"wave {k} of this run asked about transcripts {entry['items']} on {entry['dimensions']}, "
                             f"now {items} on {dims}: the parameters or data changed; use another folder",
                             source=str(folder / MANIFEST), record=f"wave {k}", field="items")
        return entry
    entry = {"wave": k, "items": items, "dimensions": dims, "status": "new",
             "dirs": {j: f"batches/wave-{k:04d}/{judge_slug(j)}" for j in seq.judges}}
    manifest["waves"].append(entry)
    return entry


def _send_wave(folder: Path, manifest: dict[str, Any], plans: list, seq: Any, *, store: Any, client: Any,
               poll_s: float, sleep: Callable[[float], None], say: Callable[[str], None]) -> None:
    """One wave's requests into the cache through the Batch API: per judge, what the cache lacks is planned
    (once), submitted (once), polled until done and collected; then the wave is marked judged once the walk
    has its rows (at the next wave, or at the end)."""
    from cfbench.judges.batch import batch_status, collect_batch, plan_batch, submit_batch
    from cfbench.judges.batch import read_manifest as read_batch

    _mark_judged(folder, manifest, seq)
    entry = _wave_entry(folder, manifest, plans, seq)
    for judge in seq.judges:
        reqs = [r for p in plans for r in p.requests.get(judge, [])]
        d = folder / entry["dirs"][judge]
        planned = (d / "manifest.json").exists() and read_batch(d).get("complete")
        if not planned:
            if entry["status"] not in ("new", "planned"):
                raise InputError("the wave's batch plan is missing though the manifest says it was submitted",
                                 source=str(d), field="status")
            plan_batch(iter(reqs), judge, d, cache=store, progress=False, force=True,
                       source={"sequential_wave": entry["wave"], "items": entry["items"]})
            _advance(entry, "planned")
            _save(folder, manifest)
            _crash_point("planned")
        submitted = submit_batch(d, client=client)
        entry.setdefault("batch_ids", {})[judge] = [sh.get("batch_id") for sh in submitted["shards"]]
        _advance(entry, "submitted")
        _save(folder, manifest)
        _crash_point("submitted")
        while any(s.get("batch_id") and s.get("status") not in _DONE for s in batch_status(d, client=client)["shards"]):
            say(f"wave {entry['wave']}: {judge}'s batch in progress; next poll in {poll_s:g} s")
            sleep(poll_s)
        collect_batch(d, cache=store, client=client)
    _advance(entry, "collected")
    _save(folder, manifest)
    _crash_point("collected")


def _mark_judged(folder: Path, manifest: dict[str, Any], seq: Any) -> None:
    """Waves the audit has closed are judged: record it, with the cells' table as it stands."""
    changed = False
    for entry in manifest["waves"][:seq.wave]:
        if entry["status"] != "judged":
            _advance(entry, "judged")
            changed = True
    if changed:
        manifest["cells"] = seq.table().to_dict(orient="records")
        _save(folder, manifest)
        _crash_point("judged")
