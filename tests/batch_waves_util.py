"""What the sequential Batch-API tests of the three studies share: the OpenAI key of the fake server's clients,
what the fake server received in its batch input files, and a child process that runs a study's ``run_batch``
and kills itself with SIGKILL after a chosen step of a wave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def openai_env(monkeypatch: Any, key: str) -> None:
    """The SDK's client reads ``key`` and no base URL from the environment (each judge spec names its server)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", key)


def received(server: Any, describe: Callable[[str], dict], columns: Sequence[str]) -> pd.DataFrame:
    """One row per line of every batch input file ``server`` got: its custom id (the cache key), the
    ``columns`` that ``describe(custom_id)`` returns, and the batch's id."""
    rows = []
    for batch in server.batches.values():
        for line in server.files[batch["input_file_id"]].decode("utf-8").splitlines():
            cid = json.loads(line)["custom_id"]
            rows.append({"custom_id": cid, **describe(cid), "batch": batch["id"]})
    return pd.DataFrame(rows, columns=["custom_id", *columns, "batch"])


_CHILD = """
import importlib, json, os, signal, sys
from cfbench.judges.cache import ResponseCache
module, params_module, folder, config, step, nth = sys.argv[1:7]
B = importlib.import_module(module)
Params = importlib.import_module(params_module).Params
seen = []
def crash(at):
    if at == step:
        seen.append(at)
        if len(seen) == int(nth):
            os.kill(os.getpid(), signal.SIGKILL)
B._crash_point = crash
B.run_batch(Params.from_config(json.loads(config)), folder + "/run", cache=ResponseCache(folder + "/cache.sqlite"),
            poll_s=0, progress=False)
"""


def run_killed(batch_module: str, params_module: str, folder: Path, config: dict, step: str, nth: int, key: str
               ) -> None:
    """Run ``batch_module.run_batch`` on ``Params.from_config(config)`` (``Params`` of ``params_module``) in a
    child process, its run in ``folder``/run and its cache ``folder``/cache.sqlite, killed with SIGKILL the
    ``nth`` time it passes ``step``; fails unless it was killed there."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENAI_API_KEY=key)
    child = subprocess.run([sys.executable, "-c", _CHILD, batch_module, params_module, str(folder),
                            json.dumps(config), step, str(nth)], env=env, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]  # killed there, not finished


def cli_argv(study: str, config: dict, folder: Path) -> list:
    """``cfbench batch sequential`` on ``config`` (written as YAML into ``folder``), its run and cache there."""
    import yaml

    path = folder / "seq.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return ["batch", "sequential", "--study", study, "-f", str(path), "--out", str(folder / "run"),
            "--cache", str(folder / "cache.sqlite"), "--poll", "0", "--quiet"]
