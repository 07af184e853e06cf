"""Request deduplication in the contact-center plan: requests issued vs the naive count.

The naive way judges every (arm, task, question, dimension, condition, repeat)
cell separately: the original transcript once under every dimension whose
compared set contains it, and repeat 0 of the robustness baseline on top of
the original. cfbench plans one request per distinct prompt (same cache key).
The plan is built for every table dimension on the shipped synthetic
transcripts, then its requests are sent to a loopback OpenAI-compatible server
whose own counter proves how many calls went out.

Usage: ``python benchmarks/bench_dedup.py [--items 24] [--c 64]``
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import ServerProcess, contact_center_plan, header

from cfbench.judges import ResponseCache, get_judge, run_requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=None, help="transcripts (default: all shipped)")
    ap.add_argument("--c", type=int, default=64, help="concurrency of the proof run")
    args = ap.parse_args()
    header("dedup: contact-center plan")
    with ServerProcess(latency_s=0.0) as srv:
        spec = f"openai:bench@{srv.base_url}"
        plan, transcripts, variants = contact_center_plan(spec, n_items=args.items)
        rows = plan.rows
        judged = variants[variants["applicable"].astype(bool)]
        print(f"{len(transcripts)} transcripts, {variants['dimension'].nunique()} dimensions, "
              f"{len(variants)} variant rows ({len(judged)} applicable; {len(plan.skipped)} not judged, "
              "listed with reasons)")
        # naive = one call per planned judgment cell; decompose it by task to show where it comes from
        by_task = rows.groupby(["arm", "task"]).agg(naive=("row_id", "size"), issued=("key", "nunique"))
        by_dim = rows.groupby("dimension").agg(naive=("row_id", "size"), issued=("key", "nunique"))
        naive = len(rows)
        planned = plan.n_requests
        print("per arm x task (naive = variant cells x questions, issued = distinct prompts):")
        print(by_task.assign(saved=lambda d: 1 - d.issued / d.naive).to_string(float_format="%.3f"))
        print("per dimension (a distinct prompt can serve several dimensions, so these do not add up):")
        print(by_dim.to_string())
        with tempfile.TemporaryDirectory() as tmp:
            judge = get_judge(spec, max_concurrency=args.c)
            before = srv.requests
            res = run_requests(judge, plan.requests[spec], cache=ResponseCache(Path(tmp) / "c.sqlite"),
                               concurrency=args.c, desc="dedup proof run")
            sent = srv.requests - before
        print(f"naive calls (variants x tasks x arms x repeats): {naive}")
        print(f"requests planned (distinct prompts):              {planned}")
        print(f"requests the server received:                     {sent}  "
              f"(run stats: n_requests={res.stats['n_requests']}, n_called={res.stats['n_called']}, "
              f"failed={res.stats['n_failed']})")
        print(f"ISSUED / NAIVE = {sent / naive:.3f}   (saved {1 - sent / naive:.1%} of calls)")


if __name__ == "__main__":
    main()
