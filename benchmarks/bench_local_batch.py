"""Long sampled replies on the embedded judge: one at a time vs the batch engine.

The identity-tone audit asks the local model for ~100-word replies at T = 0.2;
its cost is generation, which on a CPU is bound by reading the weights once per
token. The batch engine (``cfbench/judges/local_batch.py``) decodes ``parallel``
replies per step. This script sends the same ``--n`` advice requests (the
identity-tone default's prompts x identities, ``--cap`` new tokens each) with
``parallel=1`` (llama-cpp-python's own completion loop, one reply at a time)
and with each ``--parallel`` value, no cache, and prints wall time, generated
tokens per second and the speed-up over ``parallel=1``. Target: >= 1.5x at
parallel 4. Verdict-free: it measures speed only (tests check the replies).

Usage: ``python benchmarks/bench_local_batch.py [--n 16] [--cap 96] [--parallel 2 4 8]``
"""

from __future__ import annotations

import argparse
import time

from _common import header

from cfbench.judges import get_judge, run_requests

SPEC = "local:qwen2.5-coder-1.5b"


def advice_requests(n: int, cap: int):
    from cfbench.studies.identity_tone import prompts as P
    from cfbench.studies.identity_tone.audit import audit_design

    variants = audit_design(P.load_prompts(max(1, -(-n // 8))), seed=0, source="cfbench").head(n)
    return P.build_advice_requests(variants, config=P.advice_config(seed=0, max_tokens=cap))


def run(parallel: int, reqs) -> tuple[float, int, int]:
    """Wall time, generated tokens, and how many of the engine's waits for a freed slot's replacement ran out
    (``refill_wait_s`` each; none when the runner announces the run's count, as it does)."""
    judge = get_judge(SPEC, parallel=parallel)
    try:
        t0 = time.perf_counter()
        res = run_requests(judge, reqs, cache=False, progress=False)
        wall = time.perf_counter() - t0
        engine = judge._batch_engine
        timeouts = engine.refill_timeouts if engine is not None else 0
    finally:
        judge.close()
    if not res.judgments.ok.all():
        raise SystemExit(f"parallel={parallel}: failed replies: {res.judgments.error.dropna().tolist()[:3]}")
    return wall, int(res.stats["completion_tokens"]), timeouts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--cap", type=int, default=96)
    ap.add_argument("--parallel", type=int, nargs="+", default=[2, 4, 8])
    args = ap.parse_args()
    header("local judge: batched generation")
    reqs = advice_requests(args.n, args.cap)
    base_wall, base_tok, _ = run(1, reqs)
    print(f"parallel=1: {len(reqs)} replies, {base_tok} tokens in {base_wall:.1f} s = {base_tok / base_wall:.1f} tok/s")
    for p in args.parallel:
        wall, tok, timeouts = run(p, reqs)
        speedup = (tok / wall) / (base_tok / base_wall)
        print(f"parallel={p}: {tok} tokens in {wall:.1f} s = {tok / wall:.1f} tok/s; "
              f"speed-up {speedup:.2f}x (target >= 1.5 at 4: ratio {speedup / 1.5:.2f}); "
              f"{timeouts} wait(s) for a replacement ran out")


if __name__ == "__main__":
    main()
