"""Contact-center ``run()`` on the paper config from the smallest run up: peak RSS at a few numbers of transcripts.

The paper config's requests for the largest N are answered by the study's scripted judge and written into a
response cache (``bench_stream_replay.fill``; nothing is sent anywhere, the judges keep their paper names).
Then for each N a fresh child process runs ``study.run(params, out)`` with ``n_items=N`` and
``CFBENCH_MODE=replay`` (a cache miss raises) and reports its peak RSS (``resource.getrusage``,
``ru_maxrss``) and wall time. ``--code DIR`` runs another checkout's cfbench in the children (e.g. the commit
before a change), against the same cache.

Printed: RSS per N, the ratio of the largest to the smallest N (target <= 1.3) and the largest against
1.5 GB. Wall times on a shared machine measure the neighbours too (load printed).

Usage: ``python benchmarks/bench_cc_memory.py --sizes 8 32 [--cache DIR] [--no-fill] [--code DIR]``
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

RSS_TARGET_MB = 1536.0
RATIO_TARGET = 1.3


def _child(n: int, cache_dir: str, out: str) -> None:
    sys.path.insert(0, os.environ["BENCH_CODE"])  # before the checkout _common put first
    os.environ["CFBENCH_CACHE_DIR"] = cache_dir
    os.environ["CFBENCH_MODE"] = "replay"
    import yaml

    from cfbench.studies.contact_center_qa import Params
    from cfbench.studies.contact_center_qa.study import run

    m = yaml.safe_load((REPO / "configs" / "contact_center_qa" / "paper.yaml").read_text())
    m["n_items"] = n
    params = Params.from_config(m)
    t0 = time.time()
    res = run(params, out, progress=False, say_warnings=False)
    wall = time.time() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    import cfbench

    print(json.dumps({"n_items": n, "rss_mb": round(rss_mb, 1), "wall_s": round(wall, 1),
                      "n_requests": res.summary["n_requests"], "n_rows": res.summary["n_rows"],
                      "load": os.getloadavg()[0], "cfbench": str(Path(cfbench.__file__).parent)}))


def run_in_child(n: int, cache_dir: Path, out: Path, code: Path) -> dict:
    env = dict(os.environ, BENCH_CODE=str(code))
    p = subprocess.run([sys.executable, __file__, "--child", str(n), str(cache_dir), str(out)], env=env,
                       capture_output=True, text=True, check=False, cwd=str(code))
    if p.returncode:
        raise SystemExit(f"run of {n} transcripts failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--cache", type=Path, default=None, help="cache folder to fill or reuse (default: temporary)")
    ap.add_argument("--no-fill", action="store_true", help="the cache is already filled for the largest size")
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose cfbench the children run")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(int(a.child[0]), a.child[1], a.child[2])
        return
    sizes = sorted(a.sizes)
    with tempfile.TemporaryDirectory(prefix="bench-cc-memory-") as tmp:
        cache_dir = a.cache or Path(tmp) / "cache"
        cache_dir.mkdir(parents=True, exist_ok=True)
        print(f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; cache {cache_dir}; code {a.code}")
        if not a.no_fill:
            from bench_stream_replay import fill

            f = fill(sizes[-1], cache_dir)
            print(f"fill: {f['rows_added']:,} cache rows for {f['n_items']} transcripts in {f['seconds']} s")
        res = []
        for n in sizes:
            r = run_in_child(n, cache_dir, Path(tmp) / f"out-{n}", a.code)
            res.append(r)
            print(f"run {n:>4} transcripts: peak RSS {r['rss_mb']:7.1f} MB, {r['n_requests']:,} judgments, "
                  f"{r['n_rows']:,} rows, {r['wall_s']} s wall at load {r['load']:.2f} ({r['cfbench']})")
        if len(res) >= 2:
            ratio = res[-1]["rss_mb"] / res[0]["rss_mb"]
            print(f"ratio {res[-1]['n_items']} / {res[0]['n_items']} transcripts: {ratio:.2f} (target <= "
                  f"{RATIO_TARGET}: {'met' if ratio <= RATIO_TARGET else 'NOT met'}); largest "
                  f"{res[-1]['rss_mb']:.0f} MB ({'met' if res[-1]['rss_mb'] <= RSS_TARGET_MB else 'NOT met'} "
                  f"<= 1.5 GB)")


if __name__ == "__main__":
    main()
