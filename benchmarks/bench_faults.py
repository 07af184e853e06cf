"""Throughput under a faulty server (issue 26): a server failing 20 % of calls against a healthy one.

A loopback OpenAI-compatible server (``FakeOpenAIServer``, in a child process so its event loop
does not share the client's GIL) answers after ``--latency-ms`` (100). In the faulty run each
call, drawn with a seeded generator, fails with probability ``--fault-rate`` (0.20), split evenly
between: a 500; a hang of ``--hang-s`` (125) s; a 200 whose JSON is cut in half; a 429 with
``Retry-After: 1``. The client is the real ``openai:`` backend under ``run_requests`` with its
defaults (adaptive concurrency from 16 up to 256, at most 3 attempts, a cache file), on
``--n`` (2,000) distinct requests per run.

Printed: calls completed per second in each run, the RATIO faulty / healthy (target >= 0.5),
failures (a call fails only when all 3 attempts hit a fault: ~0.8 % expected), the concurrency
limit's path, and how many failure reasons were already in the cache while the run was going
(they are written within a second of happening).

The ratio includes the run's tail: a request whose attempts fault in turn waits out up to ~1 + 2 s
of backoff and cuts of 1 / 2 / 4 s, so a short run pays ~10 s that a long one spreads thin. On the
2-core box with other jobs running, n = 10,000 gave 0.47 and n = 20,000 gave 0.70 (healthy
~600 calls/s, client-CPU-bound at 256 in flight); the collapse the issue measured (1-6 calls/s
against ~35) was the limit halving on every 429 and hung calls holding slots for 120 s.

Usage: ``python benchmarks/bench_faults.py [--n 20000] [--latency-ms 100] [--fault-rate 0.2]``
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import threading
import time
from pathlib import Path

from _common import header

from cfbench.judges import GenerationConfig, Request, ResponseCache, get_judge, run_requests

FAULTS = ("500", "hang", "truncated", "429")


def _serve(conn, latency_s: float, fault_rate: float, hang_s: float, seed: int, lifetime_s: float) -> None:
    import asyncio
    import json
    import random

    from aiohttp import web

    from cfbench.judges.fakeserver import FakeOpenAIServer

    rng = random.Random(seed)
    counts = {k: 0 for k in FAULTS + ("ok",)}

    class Faulty(FakeOpenAIServer):
        async def _reply(self, action, body, key):
            kind = rng.choice(FAULTS) if rng.random() < fault_rate else "ok"
            counts[kind] += 1
            if kind == "500":
                return web.json_response({"error": {"message": "internal error"}}, status=500)
            if kind == "429":
                return web.json_response({"error": {"message": "rate limited"}}, status=429,
                                         headers={"Retry-After": "1"})
            if kind == "hang":
                await asyncio.sleep(hang_s)
            if kind == "truncated":
                _, data = self._completion("ok", body, key)
                raw = json.dumps(data)
                return web.Response(text=raw[: len(raw) // 2], content_type="application/json")
            return await super()._reply("ok", body, key)

    srv = Faulty(latency_s=latency_s, lifetime_s=lifetime_s).start()
    conn.send(srv.port)
    deadline = time.monotonic() + lifetime_s
    while time.monotonic() < deadline:
        if conn.poll(0.2):
            cmd = conn.recv()
            if cmd == "counts":
                conn.send(dict(counts))
            elif cmd == "stop":
                break
    os._exit(0)  # hung handlers would hold a graceful shutdown for hang_s


class Server:
    def __init__(self, **kw):
        self.kw = kw

    def __enter__(self) -> "Server":
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, kwargs={"conn": child, **self.kw}, daemon=True)
        self.proc.start()
        self.port = self.conn.recv()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        return self

    def counts(self) -> dict:
        self.conn.send("counts")
        return self.conn.recv()

    def __exit__(self, *exc) -> None:
        try:
            self.conn.send("stop")
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


def requests(n: int, tag: str) -> list[Request]:
    cfg = GenerationConfig(max_tokens=2)
    return [Request(f"{tag}-{i}", ({"role": "user", "content": f"{tag} question {i}: Yes or No?"},), cfg)
            for i in range(n)]


def one_run(n: int, latency_s: float, fault_rate: float, hang_s: float, seed: int, tag: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp, Server(latency_s=latency_s, fault_rate=fault_rate, hang_s=hang_s,
                                                      seed=seed, lifetime_s=3600) as srv:
        cache_path = Path(tmp) / "cache.sqlite"
        judge = get_judge(f"openai:bench@{srv.base_url}")
        seen_during: list[int] = []
        stop = threading.Event()

        def watch() -> None:  # failure reasons present in the cache while the run is going
            while not stop.wait(1.0):
                try:
                    con = ResponseCache(cache_path)._conn()
                    seen_during.append(con.execute("SELECT COUNT(*) FROM failures").fetchone()[0])
                except Exception:  # noqa: BLE001 - the file may not exist yet
                    pass

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        t0 = time.perf_counter()
        res = run_requests(judge, requests(n, tag), cache=cache_path, desc=tag, progress=False)
        wall = time.perf_counter() - t0
        stop.set()
        watcher.join()
        counts = srv.counts()
    ok = int(res.judgments["ok"].sum())
    hist = res.stats.get("concurrency_history", [])
    return {"wall_s": wall, "ok": ok, "failed": n - ok, "rate": ok / wall, "history": hist,
            "server": counts, "failures_seen_during_run": max(seen_during, default=0),
            "reasons": res.judgments["error"].dropna().str.slice(0, 60).value_counts().head(3).to_dict()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--fault-rate", type=float, default=0.20)
    ap.add_argument("--hang-s", type=float, default=125.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    header("throughput under faults")
    lat = args.latency_ms / 1000
    healthy = one_run(args.n, lat, 0.0, args.hang_s, args.seed, "healthy")
    faulty = one_run(args.n, lat, args.fault_rate, args.hang_s, args.seed, "faulty")
    for name, r in (("healthy", healthy), ("faulty", faulty)):
        h = r["history"]
        print(f"{name:>8}: {r['ok']:,} of {args.n:,} completed in {r['wall_s']:.1f} s = {r['rate']:.1f} calls/s; "
              f"{r['failed']} failed; limit {h[0] if h else '-'} -> max {max(h) if h else '-'} -> "
              f"last {h[-1] if h else '-'} ({len(h)} changes)")
        print(f"          server answered {r['server']}")
        if r["failed"]:
            print(f"          failure reasons seen in the cache during the run: {r['failures_seen_during_run']}; "
                  f"top reasons {r['reasons']}")
    ratio = faulty["rate"] / healthy["rate"]
    print(f"RATIO faulty / healthy throughput = {ratio:.2f}   (target >= 0.5: {'met' if ratio >= 0.5 else 'NOT met'}; "
          f"fault rate {args.fault_rate:.0%}, latency {args.latency_ms:g} ms, hang {args.hang_s:g} s)")


if __name__ == "__main__":
    main()
