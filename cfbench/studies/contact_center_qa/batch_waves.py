"""The contact-center sequential audit through the Batch API: each wave is one batch job per judge.

:func:`run_batch` runs the same wave loop as ``run(Params(sequential=True, ...))`` (:mod:`.sequential`): plan
the next wave of transcripts for the cells still undecided -> check it against the budgets -> **send what the
cache lacks as a Batch-API job** (:mod:`cfbench.judges.batch`: plan, submit, poll, collect into the cache)
-> judge the wave from the cache (replay mode: nothing is sent outside the batch) -> update every cell's
sequence -> decide. Decided cells' dimensions are left out of the next wave's plan.

The study-free steps (the manifest, one wave's plan -> submit -> poll -> collect per judge) are
:mod:`cfbench.judges.batch_waves`'s; this module gives them the study's waves.

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

import time
from pathlib import Path
from typing import Any, Callable

from cfbench.judges import batch_waves as W
from cfbench.judges.batch_waves import MANIFEST, read_waves
from cfbench.studies.contact_center_qa.params import Params

__all__ = ["run_batch", "MANIFEST", "read_waves"]


def _crash_point(step: str) -> None:
    """After each step of a wave (a no-op; tests make it kill the process there)."""


def _crash(step: str) -> None:
    _crash_point(step)  # through the module attribute, so a test replacing ``_crash_point`` is heard


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
    from cfbench.studies.contact_center_qa.study import run

    W.check_params(params)
    folder = Path(getattr(out, "dir", out))
    store = cache if isinstance(cache, ResponseCache) else ResponseCache(cache or default_cache_path())
    manifest = W.open_run(folder, params.to_mapping())
    say = log or (lambda msg: None)

    def wave(plans: list, seq: Any) -> dict:
        W.mark_judged(folder, manifest, seq.wave, seq.table, crash=_crash)
        entry = _wave_entry(folder, manifest, plans, seq)
        reqs = {j: [r for p in plans for r in p.requests.get(j, [])] for j in seq.judges}
        return W.send_wave(folder, manifest, entry, reqs, store=store, client=client, poll_s=poll_s, sleep=sleep,
                           say=say, crash=_crash)

    result = run(params, out, config_name=config_name, progress=progress, cache=store, mode="replay", wave=wave)
    seq = result.summary["sequential"]
    W.close_run(folder, manifest, seq["waves"], result.tables["sequential_cells"], seq.get("stopped_by", ""))
    return result


def _wave_entry(folder: Path, manifest: dict[str, Any], plans: list, seq: Any) -> dict[str, Any]:
    """The manifest's entry of the wave about to be judged: its transcripts and the dimensions it asks about."""
    items = [str(i) for p in plans for i in dict.fromkeys(p.rows["item_id"].astype(str))]
    dims = sorted({str(d) for p in plans for d in p.rows["dimension"] if str(d) in set(seq.dimensions)})
    return W.wave_entry(folder, manifest, seq.wave + 1, items, dims, seq.judges)
