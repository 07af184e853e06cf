"""Paper-config replay, streamed: peak memory at several numbers of transcripts, from a filled cache.

1. ``fill``: the paper config's requests for the first N transcripts (``requests.iter_requests``, both
   judges' cache keys) answered by the study's scripted judge (a reply in each task's own output
   contract, so parsing and every table run as on real replies) and written straight into a response
   cache (``ResponseCache.put_many``), the way ``cfbench batch collect`` stores collected replies.
   Nothing is sent anywhere. The cache of the largest N serves every smaller N.
2. ``replay``: for each N, a fresh child process runs ``study.run`` (which always streams) on the paper config with
   ``n_items=N`` and ``CFBENCH_MODE=replay`` (a cache miss raises), writing the rows to Parquet, and
   reports its peak RSS (``ru_maxrss``) and wall time.

Printed: RSS per N, the ratio of the largest to the second largest N (target <= 1.2), and each RSS
against the 1.5 GB target. Wall times on a shared machine measure the neighbours too (load printed).

Usage: ``python benchmarks/bench_stream_replay.py --sizes 50 200 [1200] [--cache DIR] [--keep]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO

PAPER = REPO / "configs" / "contact_center_qa" / "paper.yaml"
RSS_TARGET_MB = 1536.0
RATIO_TARGET = 1.2


def paper_params(n: int):
    import yaml

    from cfbench.studies.contact_center_qa import Params

    m = yaml.safe_load(PAPER.read_text())
    m["n_items"] = n
    return Params.from_config(m)


def fill(n: int, cache_dir: Path, chunk: int = 20_000) -> dict:
    """Scripted replies for every request of the first ``n`` paper transcripts, for both judges."""
    from cfbench.judges import ResponseCache
    from cfbench.studies.contact_center_qa.scripted import scripted_judge
    from cfbench.studies.contact_center_qa.requests import iter_requests

    params = paper_params(n)
    cache = ResponseCache(cache_dir / "responses.sqlite")
    t0, rows, total = time.time(), [], 0
    for r in iter_requests(params):
        blob = scripted_judge(r).to_json()
        for spec in params.judges:
            rows.append((r.cache_key(spec), spec, blob, 0.0))
        if len(rows) >= chunk:
            total += cache.put_many(rows)
            rows = []
    total += cache.put_many(rows)
    return {"n_items": n, "rows_added": total, "seconds": round(time.time() - t0, 1)}


def _child(n: int, cache_dir: str, out: str) -> None:
    os.environ["CFBENCH_CACHE_DIR"] = cache_dir
    os.environ["CFBENCH_MODE"] = "replay"
    from cfbench.studies.contact_center_qa.study import run

    params = paper_params(n)
    t0 = time.time()
    res = run(params, out, progress=False, say_warnings=False)
    wall = time.time() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n_items": n, "rss_mb": round(rss_mb, 1), "wall_s": round(wall, 1),
                      "n_requests": res.summary["n_requests"], "n_rows": res.summary["n_rows"],
                      "cfr_rows": len(res.tables["cfr"]), "load": os.getloadavg()[0],
                      "rows_parquet_mb": round(Path(out, "rows.parquet").stat().st_size / 2**20, 1)}))


def replay_in_child(n: int, cache_dir: Path, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, __file__, "--child", str(n), str(cache_dir), str(out)], env=env,
                       capture_output=True, text=True, check=False)
    if p.returncode:
        raise SystemExit(f"replay of {n} transcripts failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--cache", type=Path, default=None, help="cache folder to fill or reuse (default: temporary)")
    ap.add_argument("--no-fill", action="store_true", help="the cache is already filled for the largest size")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(int(a.child[0]), a.child[1], a.child[2])
        return
    sizes = sorted(a.sizes)
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        cache_dir = a.cache or Path(tmp) / "cache"
        cache_dir.mkdir(parents=True, exist_ok=True)
        print(f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; cache {cache_dir}")
        if not a.no_fill:
            f = fill(sizes[-1], cache_dir)
            print(f"fill: {f['rows_added']:,} cache rows for {f['n_items']} transcripts x 2 judges in "
                  f"{f['seconds']} s (load {os.getloadavg()[0]:.2f})")
        res = []
        for n in sizes:
            r = replay_in_child(n, cache_dir, Path(tmp) / f"out-{n}")
            res.append(r)
            print(f"replay {n:>5} transcripts: peak RSS {r['rss_mb']:7.1f} MB ({r['rss_mb'] / RSS_TARGET_MB:.2f} of "
                  f"the 1.5 GB target), {r['n_requests']:,} judgments, {r['n_rows']:,} rows, "
                  f"rows.parquet {r['rows_parquet_mb']} MB, {r['wall_s']} s wall at load {r['load']:.2f}")
        if len(res) >= 2:
            a_, b_ = res[-2], res[-1]
            ratio = b_["rss_mb"] / a_["rss_mb"]
            print(f"RSS ratio {b_['n_items']} / {a_['n_items']} transcripts: {ratio:.2f} (target <= {RATIO_TARGET}, "
                  f"{'met' if ratio <= RATIO_TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
