"""Runner efficiency against a fixed-latency loopback server, and per-call overhead.

1. Throughput: ``--n`` distinct requests (default 5,000) at concurrency ``--c``
   (64) against an OpenAI-compatible server on 127.0.0.1 that answers after
   ``--latency-ms`` (100) ms. A perfect client finishes in n * L / C seconds, so
   efficiency = achieved requests/s ÷ (C / L). Target >= 0.90. The client is the
   real ``openai:`` backend (aiohttp transport) under the cfbench runner; a bare
   aiohttp client with no cfbench runs the same load as the reference. The
   server's own request counter must equal n (nothing merged, nothing lost, no
   retries). The throughput part runs ``--repeats`` (3) pairs, cfbench then the bare client, and
   prints each run and the medians: on a shared machine the load moves from one run to the next.
2. Overhead per call in microseconds, all on the scripted judge (no network,
   the script itself costs a few µs): a bare ``judge.complete`` loop, then
   ``run_requests`` without cache, with a cold cache (every reply written to
   SQLite) and with a warm cache (every reply read back). Plus the same
   requests through the ``openai:`` backend against the server at L = 0, which
   adds the HTTP round trip and JSON encoding/decoding.

3. Queue scaling: per-call µs of one ``run_requests`` call on the scripted judge, no cache, at
   1,000 / 2,000 / 4,000 / 16,000 / 100,000 queued requests (``--queue-sizes``), and the ratios
   16k / 2k and 100k / 2k (target <= 1.5: the cost per call is flat in the queue), with the
   target <= 150 µs per call; each the median of ``--queue-repeats`` (3) runs (one above 16k). Beside it the same
   on a judge that answers on the event loop (no thread hop): the runner's own cost.

4. Transport: client CPU per call (``time.process_time``; the server runs in a
   child process) of the ``openai:`` backend's aiohttp transport under the runner
   versus the official ``openai`` SDK's ``AsyncOpenAI`` client making the same
   calls bare (no runner, no cache) at the same concurrency. This decides whether
   high-concurrency chat keeps its own transport (the SDK is used for the Batch API).

Usage: ``python benchmarks/bench_runner.py [--n 5000] [--c 64] [--latency-ms 100] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from _common import ServerProcess, header

from cfbench.judges import GenerationConfig, Judge, Request, Response, ResponseCache, get_judge, run_requests


def make_requests(n: int, tag: str) -> list[Request]:
    cfg = GenerationConfig(max_tokens=2)
    return [Request(f"{tag}-{i}", ({"role": "user", "content": f"{tag} request {i}: answer Yes or No."},), cfg)
            for i in range(n)]


async def _raw_aiohttp(base_url: str, n: int, c: int) -> float:
    """Reference client: bare aiohttp POSTs, JSON decode, bounded by a semaphore.
    No cfbench: what this machine's Python can do at all."""
    import aiohttp

    sem = asyncio.Semaphore(c)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:
        async def one(i: int) -> str:
            body = {"model": "raw", "max_tokens": 2,
                    "messages": [{"role": "user", "content": f"raw request {i}: answer Yes or No."}]}
            async with sem:
                async with session.post(base_url + "/chat/completions", json=body) as resp:
                    return (await resp.json())["choices"][0]["message"]["content"]

        t0 = time.perf_counter()
        texts = await asyncio.gather(*(one(i) for i in range(n)))
        wall = time.perf_counter() - t0
    assert len(texts) == n
    return wall


def throughput(n: int, c: int, latency_s: float, repeats: int = 3) -> dict:
    """``repeats`` pairs of runs, cfbench then the bare client, on one server: on a shared machine
    the load moves between runs, so each pair's ratio and the medians are what to compare."""
    with ServerProcess(latency_s=latency_s) as srv:
        judge = get_judge(f"openai:bench@{srv.base_url}", max_concurrency=c)
        # warm-up outside the timed run (imports, first connection)
        run_requests(judge, make_requests(c, "warm"), cache=False, concurrency=c, progress=False)
        walls, raw_walls, received, raw_received, failed = [], [], [], [], []
        for rep in range(repeats):
            before = srv.requests
            reqs = make_requests(n, f"tput{rep}")
            t0 = time.perf_counter()
            res = run_requests(judge, reqs, cache=False, concurrency=c, desc=f"{n} calls, C={c}")
            walls.append(time.perf_counter() - t0)
            received.append(srv.requests - before)
            failed.append(int((~res.judgments["ok"]).sum()))
            before = srv.requests
            raw_walls.append(asyncio.run(_raw_aiohttp(srv.base_url, n, c)))
            raw_received.append(srv.requests - before)
    ideal = c / latency_s
    wall, raw_wall = statistics.median(walls), statistics.median(raw_walls)
    return {"n": n, "c": c, "latency_s": latency_s, "wall_s": wall, "ideal_wall_s": n * latency_s / c,
            "achieved_rps": n / wall, "ideal_rps": ideal, "efficiency": n / wall / ideal,
            "efficiencies": [n / w / ideal for w in walls], "raw_efficiencies": [n / w / ideal for w in raw_walls],
            "pair_ratios": [r / w for w, r in zip(walls, raw_walls)],
            "server_requests": received, "n_failed": failed,
            "raw_wall_s": raw_wall, "raw_efficiency": n / raw_wall / ideal, "raw_server_requests": raw_received}


def overhead(n: int) -> dict:
    judge = get_judge("scripted:yes")
    run_requests(judge, make_requests(500, "owarm"), cache=False, progress=False)  # thread pool, imports
    reqs = make_requests(n, "ovh")
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    for r in reqs:
        judge.complete(r)
    out["bare_complete_loop"] = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for r in reqs:
        r.cache_key(judge.spec)
    out["cache_key_only"] = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    run_requests(judge, reqs, cache=False, progress=False)
    out["run_requests_no_cache"] = (time.perf_counter() - t0) / n * 1e6
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "bench.sqlite")
        t0 = time.perf_counter()
        cold = run_requests(judge, reqs, cache=cache, progress=False)
        out["run_requests_cold_cache"] = (time.perf_counter() - t0) / n * 1e6
        t0 = time.perf_counter()
        warm = run_requests(judge, reqs, cache=cache, progress=False)
        out["run_requests_warm_cache"] = (time.perf_counter() - t0) / n * 1e6
        assert cold.stats["n_called"] == n and warm.stats["n_called"] == 0 and warm.stats["n_cached"] == n
        cache.close()
    with ServerProcess(latency_s=0.0) as srv:
        http = get_judge(f"openai:bench@{srv.base_url}", max_concurrency=8)
        http_reqs = make_requests(min(n, 2000), "http")
        run_requests(http, make_requests(16, "hwarm"), cache=False, progress=False)
        t0 = time.perf_counter()
        run_requests(http, http_reqs, cache=False, progress=False)
        out["openai_http_L0_no_cache"] = (time.perf_counter() - t0) / len(http_reqs) * 1e6
    return out


class _AsyncEcho(Judge):
    """A judge that answers on the event loop (no thread hop, no network): what is left of a call
    is the runner's own cost."""

    spec = "bench:async-echo"
    max_concurrency = 8

    async def acomplete(self, request: Request) -> Response:
        await asyncio.sleep(0)
        return Response(text="Yes", prompt_tokens=1, completion_tokens=1)

    def complete(self, request: Request) -> Response:  # pragma: no cover - acomplete is used
        return Response(text="Yes")


def queue_scaling(sizes: list[int], repeats: int = 3) -> dict[int, tuple[float, float, float]]:
    """(wall µs, process CPU µs, process CPU µs on an async judge) per call of one uncached
    ``run_requests`` over ``n`` queued requests, each the median of ``repeats`` runs (one run above
    16,000 requests: a run that long averages itself, and keeps the benchmark short). The scripted
    judge runs each call in a thread (``asyncio.to_thread``), whose GIL hand-offs vary from run to
    run on a loaded machine; the async judge shows the runner's own cost. CPU time is printed
    beside wall time because on a shared machine the wall time also counts the other processes'
    turns on the cores."""
    judge, echo = get_judge("scripted:yes"), _AsyncEcho()
    run_requests(judge, make_requests(500, "qwarm"), cache=False, progress=False)
    out = {}
    for n in sizes:
        walls, cpus, echo_cpus = [], [], []
        for rep in range(repeats if n <= 16000 else 1):
            reqs = make_requests(n, f"q{n}-{rep}")
            c0, t0 = time.process_time(), time.perf_counter()
            res = run_requests(judge, reqs, cache=False, progress=False)
            walls.append((time.perf_counter() - t0) / n * 1e6)
            cpus.append((time.process_time() - c0) / n * 1e6)
            assert res.stats["n_called"] == n and res.judgments.ok.all()
            c0 = time.process_time()
            res = run_requests(echo, reqs, cache=False, progress=False)
            echo_cpus.append((time.process_time() - c0) / n * 1e6)
            assert res.stats["n_called"] == n and res.judgments.ok.all()
        out[n] = (statistics.median(walls), statistics.median(cpus), statistics.median(echo_cpus))
    return out


def transport_cpu(n: int, c: int = 16) -> dict[str, float] | None:
    """Client CPU µs per call: cfbench's aiohttp transport (with the runner) vs the openai SDK (bare)."""
    try:
        import openai
    except ImportError:
        return None
    reqs = make_requests(n, "tr")
    out: dict[str, float] = {}
    with ServerProcess(latency_s=0.0) as srv:
        http = get_judge(f"openai:bench@{srv.base_url}", max_concurrency=c)
        run_requests(http, make_requests(32, "trwarm"), cache=False, progress=False, concurrency=c)
        c0 = time.process_time()
        res = run_requests(http, reqs, cache=False, progress=False, concurrency=c)
        out["aiohttp_runner"] = (time.process_time() - c0) / n * 1e6
        assert res.judgments.ok.all()

        async def sdk() -> None:
            client = openai.AsyncOpenAI(api_key="not-needed", base_url=srv.base_url, max_retries=0)
            sem = asyncio.Semaphore(c)

            async def one(r: Request) -> str:
                async with sem:
                    reply = await client.chat.completions.create(model="bench", messages=list(r.messages),
                                                                 **r.config.chat_params())
                    return reply.choices[0].message.content

            await asyncio.gather(*(one(r) for r in make_requests(32, "sdkwarm")))
            c0 = time.process_time()
            texts = await asyncio.gather(*(one(r) for r in reqs))
            out["openai_sdk_bare"] = (time.process_time() - c0) / n * 1e6
            assert all(texts)
            await client.close()

        asyncio.run(sdk())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--c", type=int, default=64)
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--overhead-n", type=int, default=5000)
    ap.add_argument("--transport-n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3, help="pairs of throughput runs (cfbench, bare client)")
    ap.add_argument("--queue-sizes", default="1000,2000,4000,16000,100000")
    ap.add_argument("--queue-repeats", type=int, default=3, help="runs per queue size (median printed)")
    args = ap.parse_args()
    header("runner efficiency")
    t = throughput(args.n, args.c, args.latency_ms / 1000, args.repeats)
    print(f"throughput: {t['n']} requests, C={t['c']}, L={t['latency_s'] * 1000:.0f} ms, "
          f"openai: backend (aiohttp) under the cfbench runner; {len(t['pair_ratios'])} pairs of runs "
          f"(cfbench, then a bare aiohttp client without cfbench, same server), medians")
    print(f"  wall {t['wall_s']:.2f} s vs ideal n*L/C {t['ideal_wall_s']:.2f} s")
    print(f"  achieved {t['achieved_rps']:.1f} req/s vs C/L {t['ideal_rps']:.1f} req/s")
    print(f"  per run: cfbench {' '.join(f'{e:.3f}' for e in t['efficiencies'])}, "
          f"bare {' '.join(f'{e:.3f}' for e in t['raw_efficiencies'])} of C/L; "
          f"cfbench / bare per pair {' '.join(f'{r:.3f}' for r in t['pair_ratios'])}")
    print(f"  EFFICIENCY achieved/(C/L) = {t['efficiency']:.3f}   (target >= 0.90: "
          f"{'met' if t['efficiency'] >= 0.90 else 'NOT met'})")
    for i, (got, nf) in enumerate(zip(t["server_requests"], t["n_failed"]), 1):
        print(f"  run {i}: server counted {got} requests for {t['n']} sent; {nf} failed")
    print(f"  reference, bare aiohttp client (no cfbench), same server: wall {t['raw_wall_s']:.2f} s, "
          f"efficiency {t['raw_efficiency']:.3f} (server counted {t['raw_server_requests']})")
    rel = statistics.median(t["pair_ratios"])
    print(f"  RATIO cfbench / bare client, median of the pairs = {rel:.3f}   (target >= 0.97: "
          f"{'met' if rel >= 0.97 else 'NOT met'})")
    o = overhead(args.overhead_n)
    base = o["bare_complete_loop"]
    print(f"per-call cost, µs (n={args.overhead_n}, scripted judge; ratios vs the bare complete() loop):")
    for name, us in o.items():
        print(f"  {name:<28} {us:9.1f} µs   x{us / base:6.1f}   overhead {us - base:8.1f} µs")
    sizes = [int(x) for x in args.queue_sizes.split(",")]
    q = queue_scaling(sizes, args.queue_repeats)
    print(f"queue scaling, one run_requests call, no cache, median of {args.queue_repeats} runs "
          f"up to 16k, one above (target <= 150 µs per call):")
    for n, (us, cpu, ecpu) in q.items():
        print(f"  {n:>7,} requests   scripted judge: wall {us:7.1f} µs per call (RATIO to target {us / 150:.2f}), "
              f"process CPU {cpu:7.1f} µs (RATIO {cpu / 150:.2f});   async judge: process CPU {ecpu:6.1f} µs")
    if 2000 in q:
        for big in sorted(n for n in q if n > 2000 and n in (16000, max(q))):
            for i, what in ((0, "wall"), (1, "CPU"), (2, "CPU, async judge")):
                r = q[big][i] / q[2000][i]
                print(f"  RATIO {big // 1000}k / 2k per call ({what}) = {r:.2f}   (target <= 1.5: "
                      f"{'met' if r <= 1.5 else 'NOT met'})")
    for i, what in ((1, "scripted"), (2, "async")):
        cpu = [v[i] for v in q.values()]
        print(f"  RATIO largest / smallest CPU per call over all sizes ({what} judge) = {max(cpu) / min(cpu):.2f}")
    tr = transport_cpu(args.transport_n)
    if tr is None:
        print("transport: the openai SDK is not installed; comparison skipped")
    else:
        print(f"transport, client CPU per call (n={args.transport_n}, C=16, L=0): aiohttp under the runner "
              f"{tr['aiohttp_runner']:.0f} µs, openai SDK bare {tr['openai_sdk_bare']:.0f} µs  "
              f"RATIO sdk/aiohttp = {tr['openai_sdk_bare'] / tr['aiohttp_runner']:.2f}")


if __name__ == "__main__":
    main()
