"""The judge-bias sequential audit through the Batch API: each wave is one batch job per judge.

:func:`run_batch` runs the wave loop of ``run(Params(sequential=True, ...))`` (:func:`.sequential.judge_in_waves`):
the next wave's items -> their requests for the (judge, cue) cells still undecided -> the budgets (a dollar budget
at the Batch-API price) -> **what the cache lacks sent as one Batch-API job per judge** (plan, submit, poll,
collect into the cache: :mod:`cfbench.judges.batch_waves`) -> the wave judged from the cache (replay mode:
nothing is sent outside the batch) -> every cell's sequence updated and decided. A decided cue's requests are not
in any later wave's job.

Resuming: the run folder holds :data:`~cfbench.judges.batch_waves.MANIFEST` (per wave its items, the cells it
still asked about, each judge's batch folder and ids, how far it got, and the cells' table after the last judged
wave). Calling :func:`run_batch` again on the folder after a crash at any step walks the same items again: waves
already answered are judged from the cache (nothing sent), the wave in flight goes on from its batch folder
(never planned, uploaded or sent twice), later waves as before. A folder holding another run's parameters, or a
wave asking about other items or cells than the manifest says, is refused in one line.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable

from cfbench.core.errors import InputError
from cfbench.judges import batch_waves as W
from cfbench.judges.batch_waves import MANIFEST, read_waves

__all__ = ["run_batch", "MANIFEST", "read_waves", "cell_name"]


def _crash_point(step: str) -> None:
    """After each step of a wave (a no-op; tests make it kill the process there)."""


def _crash(step: str) -> None:
    _crash_point(step)  # through the module attribute, so a test replacing ``_crash_point`` is heard


def cell_name(key: tuple) -> str:
    """How the manifest names a (judge, task, cue) cell: ``judge task:cue``."""
    judge, task, cue = key
    return f"{judge} {task}:{cue}"


def _check(params: Any) -> None:
    from .study import Params

    if not isinstance(params, Params):
        raise InputError(f"expected judge_bias Params, got {type(params).__name__}", source="judge_bias.run_batch")
    W.check_params(params)


def run_batch(params: Any, out: Any, *, client: Any = None, cache: Any = None, poll_s: float = 30.0,
              sleep: Callable[[float], None] = time.sleep, config_name: str = "", progress: bool = False,
              log: Callable[[str], None] | None = None) -> Any:
    """Run the sequential audit of ``params`` (a :class:`.study.Params` with ``sequential`` true and every judge
    ``openai:``) with each wave sent as one Batch-API job per judge; resumable in ``out`` (see the module note).
    Returns the :class:`.study.JudgeBiasResult`, its files written to ``out`` as :func:`.study.run` writes them.

    ``client``: an OpenAI-compatible client (the SDK's, from the environment, when None); ``cache``: the response
    cache the replies go into (a :class:`~cfbench.judges.cache.ResponseCache` or a path; the default cache when
    None: it must outlive a crash); ``poll_s``: seconds between status polls of a wave's jobs; ``log``: where the
    polling lines go."""
    from cfbench.judges.cache import ResponseCache, default_cache_path

    from .study import run

    _check(params)
    folder = Path(getattr(out, "dir", out))
    store = cache if isinstance(cache, ResponseCache) else ResponseCache(cache or default_cache_path())
    manifest = W.open_run(folder, dataclasses.asdict(params))
    say = log or (lambda msg: None)

    def wave(reqs: dict, items: list, cells: Any) -> dict:
        W.mark_judged(folder, manifest, cells.wave, cells.table, crash=_crash)
        entry = W.wave_entry(folder, manifest, cells.wave + 1, items, [cell_name(k) for k in cells.undecided()],
                             params.judges)
        return W.send_wave(folder, manifest, entry, reqs, store=store, client=client, poll_s=poll_s, sleep=sleep,
                           say=say, crash=_crash)

    result = run(params, out, config_name=config_name or None, progress=progress, cache=store, mode="replay",
                 wave=wave)
    seq = result.summary["sequential"]
    W.close_run(folder, manifest, seq["waves"], result.tables["sequential_cells"], seq.get("stopped_by", ""))
    return result
