"""Paper scale: batch plan rate and memory, shard sizes, collect/import rate, replay cost.

Requests are made lazily from real STAR dialogues (``/work/shared/data/star`` or
``--star DIR``): each dialogue rendered as a call transcript, asked several
audit questions under several variant tags, as the contact-center design does.
Each figure is printed with its target and the ratio to it. On a shared machine
wall time mostly measures the neighbours, so every rate is also given per CPU
second of this process (``cpu``): that is what an idle machine would see.

* ``batch plan`` requests/s at two sizes (target >= 10,000/s, aim 50,000/s), each size
  in a fresh child process, with its peak RSS; the memory ratio is RSS(large) / RSS(small)
  (flat memory: close to 1 although the large run plans 4x more requests);
* shard sizes against the Batch API's limits (50,000 lines, 200 MB);
* collect/import: Batch output lines stored into the cache per second (target >= 10,000/s);
* replay: µs per request of ``run_requests(mode="replay")`` on a warm cache (target <= 20 µs),
  everything included (keys, batched look-ups, the judgments frame);
* analysis: seconds per million judgment rows of every contact-center table
  (``study_tables``: CFR / MASD per dimension and arm, robustness, accuracy, kappa, flip
  distribution, CFR minus robustness, direction, fairness-prompting delta, 1,000 item
  resamples) on a seeded synthetic frame with the study's schema, at two sizes, each in a
  fresh child process reading the frame from parquet; target <= 30 s per million rows (a
  7.4 M-row paper-scale analysis in under 4 min) and peak RSS above the loaded frame at most
  ``ANALYSIS_RSS_FACTOR`` times the frame's size.

Usage: ``python benchmarks/bench_paper_scale.py [--small 50000] [--large 200000] [--replay 100000]
[--analysis 250000 1000000]``
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

import pandas as pd
from _common import REPO, contact_center_plan, header

STAR = Path("/work/shared/data/star/dialogues")
#: Analysis memory target: the tables may use at most this many times the rows frame's own size on
#: top of it (the frame must fit; the analysis may not multiply it): 7.4 M rows ~ 3 GB of frame.
ANALYSIS_RSS_FACTOR = 2.0

QUESTIONS = [
    "Did the agent resolve the customer's issue? Answer Yes or No.",
    "Did the agent avoid work the customer asked for? Answer Yes or No.",
    "Was the agent polite throughout the call? Answer Yes or No.",
    "Did the agent confirm the customer's identity before acting? Answer Yes or No.",
]


def star_transcripts(star: Path, n: int) -> list[str]:
    """The first ``n`` STAR dialogues with at least 4 utterances, rendered as Customer/Agent lines."""
    out = []
    for path in sorted(star.glob("*.json"), key=lambda p: int(p.stem) if p.stem.isdigit() else 0):
        events = json.loads(path.read_text(encoding="utf-8")).get("Events", [])
        turns = [f"{'Customer' if e['Agent'] == 'User' else 'Agent'}: {e['Text']}"
                 for e in events if e.get("Action") == "utter" and e.get("Text")]
        if len(turns) >= 4:
            out.append("\n".join(turns))
        if len(out) == n:
            break
    if not out:
        raise SystemExit(f"no STAR dialogues under {star}")
    return out


def requests(n: int, star: Path):
    """A lazy stream of ``n`` distinct audit requests over STAR transcripts."""
    from cfbench.judges import GenerationConfig, Request

    cfg = GenerationConfig(temperature=0.0, max_tokens=8, seed=0, top_logprobs=5)
    transcripts = star_transcripts(star, 200)
    system = {"role": "system", "content": "You audit contact-center calls. Judge only on evidence in the call."}
    i = 0
    variant = 0
    while True:
        for t_idx, text in enumerate(transcripts):
            for q in QUESTIONS:
                if i == n:
                    return
                user = f"Call transcript (variant {variant}):\n{text}\n\nQuestion: {q}"
                yield Request(f"v{variant}-t{t_idx}-{i}", (system, {"role": "user", "content": user}), cfg)
                i += 1
        variant += 1


def _child_plan(n: int, star: str, out: str) -> None:
    """Run in a fresh process: plan n requests, print rate, RSS and shard sizes as JSON."""
    from cfbench.judges import ResponseCache
    from cfbench.judges.batch import plan_batch

    cache = ResponseCache(Path(out) / "cache.sqlite")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    manifest = plan_batch(requests(n, Path(star)), "openai:gpt-4o-mini", Path(out) / "job", cache=cache,
                          progress=False)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"n": manifest["n_planned"], "seconds": dt, "cpu": cpu, "rss_mb": rss / 1024,
                      "rss_start_mb": rss0 / 1024,
                      "shards": [(s["count"], s["bytes"]) for s in manifest["shards"]]}))


def plan_in_child(n: int, star: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        code = (f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r}); import bench_paper_scale as b; "
                f"b._child_plan({n}, {str(star)!r}, {tmp!r})")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))})
        return json.loads(out.stdout.strip().splitlines()[-1])


def bench_import(n: int) -> tuple[float, float]:
    """Batch output lines imported per wall second and per CPU second."""
    from cfbench.judges import ResponseCache
    from cfbench.judges.batch import _import_lines

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for i in range(n):
                body = {"id": f"c{i}", "object": "chat.completion", "choices": [{
                    "index": 0, "message": {"role": "assistant", "content": "No" if i % 3 else "Yes"},
                    "finish_reason": "stop",
                    "logprobs": {"content": [{"token": "No", "logprob": -0.2, "top_logprobs": [
                        {"token": "No", "logprob": -0.2}, {"token": "Yes", "logprob": -1.7}]}]}}],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 1, "total_tokens": 901}}
                fh.write(json.dumps({"id": f"b{i}", "custom_id": f"{i:064x}", "error": None,
                                     "response": {"status_code": 200, "body": body}}) + "\n")
        cache = ResponseCache(Path(tmp) / "c.sqlite")
        # what collect does with one shard: the shard's custom_ids (with their max_tokens) are the
        # authority; both passes (conflict check, then store) are timed
        planned = {f"{i:064x}": 5 for i in range(n)}
        t0, c0 = time.perf_counter(), time.process_time()
        counts = _import_lines(cache, "openai:gpt-4o-mini", [path], allowed=planned)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        ok, bad = counts["ok"], counts["failed"]
        assert (ok, bad, counts["refused"]) == (n, 0, 0), counts
        stats = cache.stats()
        print(f"   import: {n:,} lines in {dt:.2f} s; cache {stats['size_bytes'] / n:.0f} bytes per reply")
        return n / dt, n / cpu


def bench_replay(n: int, star: Path) -> tuple[float, float]:
    """µs per request of a warm replay (keys + batched look-ups + frame), wall and CPU."""
    from cfbench.judges import Response, ResponseCache, run_requests

    spec = "openai:gpt-4o-mini@http://127.0.0.1:9/v1"  # never called: replay
    reqs = list(requests(n, star))
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "c.sqlite")
        cache.put_many((r.cache_key(spec), spec, Response(
            text="Yes" if i % 3 else "No", top_logprobs={"Yes": -0.1 - i * 1e-6, "No": -2.4 + i * 1e-6},
            prompt_tokens=900 + i % 50, completion_tokens=1, finish_reason="stop").to_json(), 0.1)
            for i, r in enumerate(reqs))
        run_requests(spec, reqs[:1000], cache=cache, mode="replay", progress=False)  # warm the page cache
        best = best_cpu = float("inf")
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            res = run_requests(spec, reqs, cache=cache, mode="replay", progress=False)
            best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
        assert res.judgments.ok.all() and res.judgments.cache_hit.all()
        from cfbench.judges.base import request_keys

        t0 = time.perf_counter()
        request_keys(spec, reqs)
        keys_us = (time.perf_counter() - t0) / n * 1e6
        print(f"   replay: {n:,} requests in {best:.3f} s wall, {best_cpu:.3f} s CPU (best of 3); "
              f"computing the keys alone {keys_us:.1f} µs/request wall")
        return best / n * 1e6, best_cpu / n * 1e6


def analysis_rows(n_rows: int, seed: int = 0) -> pd.DataFrame:
    """A contact-center ``rows`` frame of about ``n_rows`` rows, with the schema :func:`run_plan` returns.

    The plan is the study's own (all shipped transcripts, every table dimension, fairness arm,
    coaching tasks, 3 robustness repeats); no judge is called: the
    parsed values are drawn from ``numpy.random.default_rng(seed)`` (a per-unit base answer
    flipped in 12 % of rows, confidences and scores around a per-unit level, 2 % unparsed).
    The plan's items are tiled with new item ids up to ``n_rows``.
    """
    import numpy as np

    from cfbench.studies.contact_center_qa.qa import load_rubric

    plan, _, _ = contact_center_plan("scripted:cc-qa")
    tpl = plan.rows
    copies = -(-n_rows // len(tpl))
    rows = pd.concat([tpl] * copies, ignore_index=True)
    copy = np.repeat(np.arange(copies), len(tpl))
    rows["item_id"] = rows["item_id"].astype(str) + "~" + pd.Series(copy).map("{:03d}".format)
    rng = np.random.default_rng(seed)
    n = len(rows)
    unit = pd.factorize(rows["item_id"] + "/" + rows["question_id"] + "/" + rows["judge"])[0]
    base = rng.random(unit.max() + 1)[unit]
    qa = (rows["task"] == "qa").to_numpy()
    ok = rng.random(n) >= 0.02
    answer = (base > 0.5) ^ (rng.random(n) < 0.12)
    conf = np.clip(np.round(100 * base + rng.normal(0, 8, n)), 0, 100)
    rows["cache_hit"] = True
    rows["ok"] = True
    rows["answer"] = np.where(qa & ok, np.where(answer, "Yes", "No"), None)
    rows["answer_yes"] = np.where(qa & ok, answer.astype(float), np.nan)
    rows["confidence"] = np.where(qa & ok, conf, np.nan)
    rows["p_yes"] = np.where(qa & ok, np.clip(base + rng.normal(0, 0.1, n), 0, 1), np.nan)
    rows["score"] = np.where(~qa & ok, np.clip(np.round(1 + 4 * base + rng.normal(0, 0.7, n)), 1, 5), np.nan)
    rows["parse_ok"] = ok
    rows = rows.join(load_rubric().set_index("question_id")[["category", "type"]], on="question_id")
    rows["label"] = None
    return rows


def _child_analysis(n: int, frame_path: str) -> None:
    """Run in a fresh process: read the rows, time the study tables, print seconds and RSS as JSON."""
    from cfbench.studies.contact_center_qa.tables import study_tables

    rows = pd.read_parquet(frame_path)
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    frame_mb = rows.memory_usage(deep=True).sum() / 2**20
    t0, c0 = time.perf_counter(), time.process_time()
    tables = study_tables(rows, n_boot=1000, seed=0)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n": len(rows), "seconds": dt, "cpu": cpu, "rss_loaded_mb": rss_loaded, "rss_mb": rss,
                      "frame_mb": frame_mb, "cfr_rows": len(tables["cfr"]), "masd_rows": len(tables["masd"])}))


def analysis_in_child(n: int, tmp: Path) -> dict:
    path = tmp / f"rows_{n}.parquet"
    analysis_rows(n).to_parquet(path)
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r}); import bench_paper_scale as b; "
            f"b._child_analysis({n}, {str(path)!r})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=50_000)
    ap.add_argument("--large", type=int, default=200_000)
    ap.add_argument("--import-n", type=int, default=100_000)
    ap.add_argument("--replay", type=int, default=100_000)
    ap.add_argument("--analysis", type=int, nargs=2, default=[250_000, 1_000_000], metavar=("SMALL", "LARGE"),
                    help="rows of the two synthetic contact-center frames analysed (0 0 skips)")
    ap.add_argument("--star", type=Path, default=STAR)
    args = ap.parse_args()
    header("paper scale: batch plan, shards, collect/import, replay, analysis")

    small, large = plan_in_child(args.small, args.star), plan_in_child(args.large, args.star)
    for name, r in (("small", small), ("large", large)):
        rate, cpu_rate = r["n"] / r["seconds"], r["n"] / r["cpu"]
        print(f"batch plan ({name}): {r['n']:,} requests in {r['seconds']:.2f} s = {rate:,.0f} requests/s wall, "
              f"{cpu_rate:,.0f} per CPU second; peak RSS {r['rss_mb']:.0f} MB  RATIO vs 10,000/s target = "
              f"{rate / 10_000:.2f} wall, {cpu_rate / 10_000:.2f} cpu (vs 50,000/s aim = {cpu_rate / 50_000:.2f} cpu)")
    print(f"batch plan memory: RSS large/small = {large['rss_mb'] / small['rss_mb']:.2f} for "
          f"{large['n'] / small['n']:.0f}x the requests (flat = 1.00)")
    counts = [c for c, _ in large["shards"]]
    sizes = [b for _, b in large["shards"]]
    print(f"shards (large): {len(counts)} files; largest {max(counts):,} lines = {max(counts) / 50_000:.2f} of the "
          f"50,000 limit; largest {max(sizes) / 2**20:.1f} MB = {max(sizes) / (200 * 2**20):.2f} of the 200 MB limit; "
          f"{sum(sizes) / sum(counts):.0f} bytes per line")

    rate, cpu_rate = bench_import(args.import_n)
    print(f"collect/import: {rate:,.0f} lines/s wall, {cpu_rate:,.0f} per CPU second  RATIO vs 10,000/s target = "
          f"{rate / 10_000:.2f} wall, {cpu_rate / 10_000:.2f} cpu")

    us, cpu_us = bench_replay(args.replay, args.star)
    print(f"replay: {us:.1f} µs per request wall, {cpu_us:.1f} µs CPU  RATIO target/actual (20 µs) = "
          f"{20 / us:.2f} wall, {20 / cpu_us:.2f} cpu (>= 1 meets it)")

    if min(args.analysis) > 0:
        with tempfile.TemporaryDirectory() as tmp:
            runs = [analysis_in_child(n, Path(tmp)) for n in args.analysis]
        for r in runs:
            per_m, cpu_per_m = r["seconds"] / r["n"] * 1e6, r["cpu"] / r["n"] * 1e6
            extra = r["rss_mb"] - r["rss_loaded_mb"]
            print(f"analysis ({r['n']:,} rows, every contact-center table, 1,000 item resamples): {r['seconds']:.1f} s "
                  f"wall, {r['cpu']:.1f} s CPU = {per_m:.1f} s per million rows wall, {cpu_per_m:.1f} CPU  RATIO "
                  f"target/actual (30 s per million rows) = {30 / per_m:.2f} wall, {30 / cpu_per_m:.2f} cpu; "
                  f"frame {r['frame_mb']:.0f} MB in memory, peak RSS {r['rss_mb']:.0f} MB, {extra:.0f} MB above the "
                  f"loaded frame = {extra / r['frame_mb']:.2f}x the frame (target <= {ANALYSIS_RSS_FACTOR:g}x)")
        small, large = runs
        growth = (large["rss_mb"] - small["rss_mb"]) / (large["n"] - small["n"]) * 1e6
        print(f"analysis memory: peak RSS {small['rss_mb']:.0f} -> {large['rss_mb']:.0f} MB for "
              f"{large['n'] / small['n']:.1f}x the rows = {growth:.0f} MB per extra million rows (linear, bounded by "
              f"the frame: RATIO peak-above-frame / frame = {(large['rss_mb'] - large['rss_loaded_mb']) / large['frame_mb']:.2f} "
              f"vs target {ANALYSIS_RSS_FACTOR:g})")


if __name__ == "__main__":
    main()
