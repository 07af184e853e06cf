"""How long are the embedded model's identity-tone replies, and how many does a token cap cut?

The identity-tone contract asks for 120-150 words. This script sends ``--n-prompts``
of the study's prompts x ``--identities`` identity descriptors (the study's own
requests: contract as system message, grammatical descriptor + task as user
message, T = 0.2, top-p = 0.9) to the local model with ``--cap`` new tokens and no
cache, and prints per reply: completion tokens, finish reason, words; then the
share of replies at the cap, token quantiles, the wall time and the seconds per
reply. Use it to choose ``completion_cap`` and ``n_prompts`` of
``configs/identity_tone/default.yaml`` (see the numbers recorded there).

Loads the local model (``cfbench model install``); keep it small on a shared CPU.

Usage: ``python benchmarks/bench_identity_length.py [--n-prompts 3] [--identities 2] [--cap 300]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import header

from cfbench.judges import get_judge, run_requests

SPEC = "local:qwen2.5-coder-1.5b"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-prompts", type=int, default=3)
    ap.add_argument("--first-prompt", type=int, default=0, help="index of the first prompt used")
    ap.add_argument("--identities", type=int, default=2, help="how many of the 8 identities (spread over the list)")
    ap.add_argument("--cap", type=int, default=300)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from cfbench.perturb.stimuli import identity_ids
    from cfbench.studies.identity_tone import prompts as P
    from cfbench.studies.identity_tone.audit import audit_design
    from cfbench.studies.identity_tone.truncation import reply_truncated

    header("identity-tone reply length on the embedded model")
    ids = identity_ids()
    pick = [ids[round(k * (len(ids) - 1) / max(1, args.identities - 1))] for k in range(args.identities)]
    prompts = P.load_prompts(args.first_prompt + args.n_prompts).iloc[args.first_prompt:]
    variants = audit_design(prompts, seed=args.seed, source="cfbench")
    variants = variants[variants.identity.isin(pick)].reset_index(drop=True)
    reqs = P.build_advice_requests(variants, config=P.advice_config(seed=args.seed, max_tokens=args.cap))
    judge = get_judge(SPEC, parallel=args.parallel)
    try:
        t0 = time.perf_counter()
        res = run_requests(judge, reqs, cache=False, progress=False)
        wall = time.perf_counter() - t0
    finally:
        judge.close()
    j = res.judgments
    words = j.text.fillna("").str.split().str.len()
    cut = reply_truncated(j.finish_reason, j.completion_tokens, cap=args.cap)
    for (_, r), w, c in zip(j.iterrows(), words, cut):
        print(f"{r.request_id:40s} tokens {r.completion_tokens:4d}  finish {r.finish_reason!s:7s} words {w:4d}"
              f"{'  CUT' if c else ''}")
    tok = j.completion_tokens.to_numpy(dtype=float)
    print(f"\nreplies {len(j)}, cap {args.cap}: at the cap {int(cut.sum())} ({100 * cut.mean():.0f} %)")
    print(f"completion tokens: mean {tok.mean():.0f}, median {np.median(tok):.0f}, max {tok.max():.0f}, "
          f"p90 {np.quantile(tok, 0.9):.0f}; words mean {words.mean():.0f}, max {words.max()}; "
          f"tokens per word {tok.sum() / max(1, words.sum()):.2f}")
    print(f"wall {wall:.0f} s for {len(j)} replies at parallel {args.parallel}: {wall / len(j):.1f} s per reply, "
          f"{tok.sum() / wall:.1f} generated tokens/s")


if __name__ == "__main__":
    main()
