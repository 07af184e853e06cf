"""Warm vs cold re-run of a study-sized request set, with zero network calls on the warm run.

The request set is the contact-center plan (every table dimension, two QA
questions, coaching notes, fairness arm, robustness repeats) on ``--items``
shipped synthetic transcripts, sent through the OpenAI-compatible backend to a
loopback server that answers after ``--latency-ms`` (a fast API) with the
backend's default concurrency. The cold run fills a fresh cache; the warm run
repeats the identical call. The server's own request counter must not move
during the warm run (and a third run in ``replay`` mode, which fails on any
miss, must succeed).

Usage: ``python benchmarks/bench_cache.py [--items 6] [--latency-ms 100]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import ServerProcess, contact_center_plan, header

from cfbench.judges import ResponseCache, get_judge, run_requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--c", type=int, default=None, help="concurrency (default: the backend's, 16)")
    args = ap.parse_args()
    header("cache: warm vs cold re-run")
    with ServerProcess(latency_s=args.latency_ms / 1000) as srv, tempfile.TemporaryDirectory() as tmp:
        spec = f"openai:bench@{srv.base_url}"
        plan, transcripts, _ = contact_center_plan(spec, n_items=args.items)
        reqs = plan.requests[spec]
        judge = get_judge(spec)
        cache_path = Path(tmp) / "study.sqlite"
        print(f"study: {len(transcripts)} transcripts, {len(plan.rows)} judgment rows, {len(reqs)} distinct "
              f"requests; server latency {args.latency_ms:.0f} ms, concurrency {args.c or judge.max_concurrency}")

        n0 = srv.requests
        t0 = time.perf_counter()
        cold = run_requests(judge, reqs, cache=ResponseCache(cache_path), concurrency=args.c, desc="cold")
        t_cold = time.perf_counter() - t0
        n1 = srv.requests

        t0 = time.perf_counter()
        warm = run_requests(judge, reqs, cache=ResponseCache(cache_path), concurrency=args.c, desc="warm")
        t_warm = time.perf_counter() - t0
        n2 = srv.requests

        replay = run_requests(judge, reqs, cache=ResponseCache(cache_path), mode="replay", progress=False)
        n3 = srv.requests

        same = cold.judgments["text"].equals(warm.judgments["text"]) and \
            warm.judgments["text"].equals(replay.judgments["text"])
    print(f"cold: {t_cold:8.3f} s  server received {n1 - n0} requests (called {cold.stats['n_called']}, "
          f"failed {cold.stats['n_failed']})")
    print(f"warm: {t_warm:8.3f} s  server received {n2 - n1} requests (cached {warm.stats['n_cached']} of "
          f"{warm.stats['n_unique']})")
    print(f"replay mode: server received {n3 - n2} requests; replies identical across the three runs: {same}")
    print(f"COLD / WARM = {t_cold / t_warm:.0f}x   (target >= 100x: {'met' if t_cold / t_warm >= 100 else 'NOT met'}); "
          f"warm cost per request {t_warm / len(reqs) * 1e6:.0f} µs")
    if n2 != n1 or n3 != n2:
        raise SystemExit("the warm run reached the network")


if __name__ == "__main__":
    main()
