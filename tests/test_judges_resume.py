"""A run killed with SIGKILL and restarted finishes with the same results,
with no duplicate and no lost judgment."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

CHILD = r'''
import hashlib, json, sys, time
from cfbench.judges import GenerationConfig, Request, run_requests
from cfbench.judges.scripted import register_script

def slow(req):
    time.sleep(0.05)
    digest = hashlib.sha256(req.messages[-1]["content"].encode()).hexdigest()[:12]
    return f"verdict-{digest}-r{req.repeat}"

register_script("slow-hash", slow)
reqs = [Request(f"item{i}", ({"role": "user", "content": f"transcript {i % 25}"},), GenerationConfig(), repeat=i // 25)
        for i in range(60)]
res = run_requests("scripted:slow-hash", reqs, cache=sys.argv[1], concurrency=1, progress=False)
json.dump(res.judgments[["request_id", "text", "ok"]].to_dict(orient="records"), open(sys.argv[2], "w"))
'''


def run_child(script: Path, cache: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen([sys.executable, str(script), str(cache), str(out)], env=env)


def rows_in(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(cache, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_kill_9_then_resume_gives_identical_results(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)

    # reference: one uninterrupted run
    ref_cache, ref_out = tmp_path / "ref.sqlite", tmp_path / "ref.json"
    assert run_child(script, ref_cache, ref_out).wait(120) == 0

    # interrupted run: SIGKILL once some replies are stored
    cache, out = tmp_path / "c.sqlite", tmp_path / "out.json"
    proc = run_child(script, cache, out)
    deadline = time.time() + 60
    while rows_in(cache) < 10 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "child finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    stored_at_kill = rows_in(cache)
    assert 10 <= stored_at_kill < 60 and not out.exists()

    # restart: completes, reads back what was stored, calls only the rest
    assert run_child(script, cache, out).wait(120) == 0
    assert json.loads(out.read_text()) == json.loads(ref_out.read_text())
    with sqlite3.connect(cache) as con:
        n, distinct = con.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM responses").fetchone()
    assert n == distinct == 60
