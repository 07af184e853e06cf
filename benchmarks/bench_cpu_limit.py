"""How fast the embedded judge runs against what this CPU can do.

Part 1 — the CPU's limits, on the same thread counts the judge uses:

* memory bandwidth: numpy streaming read (``dot`` of two 128 MiB float32
  buffers, one thread per slice, BLAS pinned to one thread) and copy
  (``copyto`` of 256 MiB, counted as read + write). Buffers are 8x the L3.
  Generating one token reads every weight matrix once (the token embedding is a
  row lookup, so it is left out), hence **generated tok/s <= read GB/s /
  weight bytes per token**. The KV cache (a few MB at these prompt lengths) and
  activations are ignored, so the bound is slightly optimistic.
* compute: numpy float32 GEMM (1024^3, OpenBLAS on N threads) and an AVX2 int8
  multiply-add loop in registers (``vpmaddubsw`` + ``vpmaddwd`` + ``vpaddd``,
  the integer pipeline ggml's AVX2 quantized dot products use; compiled with
  gcc at run time, skipped without gcc). Evaluating one prompt token costs
  about 2 x (matrix parameters) operations (attention adds ~3 % at 500 tokens),
  hence **prompt tok/s <= int8 op/s / (2 x matrix parameters)** (the output matrix
  only runs for the last prompt token, so it is left out). This is a peak:
  ggml also unpacks 4-bit weights, converts block sums to float and scales
  them, so reaching 100 % is impossible; the float32 GEMM figure is shown for
  comparison (llama.cpp does not use it for quantized weights).

Part 2 — the judge itself, through :class:`cfbench.judges.local.LocalJudge`,
each configuration in a fresh child process, configurations interleaved round
by round (A/B/A/B) so a busy machine depresses all of them alike:

* prompt tok/s: two real QA prompts (``issue_resolution``, compact contract)
  built from STAR dialogues, each judged from an empty KV cache, timed by
  llama.cpp's own prompt-evaluation counter;
* generated tok/s: llama.cpp's own decode timer over a 16-token greedy answer;
* verdicts: the greedy reply and P(Yes) of the first token on every STAR
  prompt, compared with the first configuration of the same model (a setting
  is only a candidate default if the replies match and |dP(Yes)| < 1e-6).

The load average is printed with every figure.

Usage::

    python benchmarks/bench_cpu_limit.py                      # bounds + 1.5B at threads 1,2 x n_batch 64..512
    python benchmarks/bench_cpu_limit.py --models qwen2.5-coder-1.5b qwen2.5-coder-0.5b --batches 128 --threads 2
    python benchmarks/bench_cpu_limit.py --skip-cpu --configs 'n_batch=128' 'n_batch=128,flash_attn=1'

Builds (issue 38): each llama-cpp-python wheel installed with ``pip install --no-deps --target DIR``, run
in the same interleaved rounds, printed as ratios to the one named ``native`` (``@VARIANT`` forces a CPU
variant of a run-time-dispatch build through ``CFBENCH_GGML_CPU_VARIANT``)::

    python benchmarks/bench_cpu_limit.py --skip-cpu --threads 2 --batches 128 --rounds 3 \\
        --builds native=/tmp/llama-native shipped=/tmp/llama-shipped shipped@baseline=/tmp/llama-shipped \\
                 portable=/tmp/llama-portable
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _common import REPO, header

STAR = Path(os.environ.get("CFBENCH_STAR_DIR", "/work/shared/data/star/dialogues"))
STAR_IDS = ("60", "90")  # an early disconnect (86 chars) and a disconnect (399 chars): 208 and 320 prompt tokens


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


# ---------------------------------------------------------------- CPU limits
def _best(fn, repeats: int, threads: int = 1) -> float:
    """Shortest run in CPU seconds per thread (a busy machine steals wall time, not CPU time)."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, (time.process_time() - t0) / threads)
    return best


def _parallel(n: int, work) -> None:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def bandwidth(threads: int, *, mib: int = 256, repeats: int = 5) -> dict[str, float]:
    """Streaming read and copy GB/s with ``threads`` Python threads (numpy releases the GIL)."""
    from threadpoolctl import threadpool_limits

    n = mib * 2**20 // 4
    a = np.ones(n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    c = np.empty(n, dtype=np.float32)
    sl = [slice(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    half = [slice(s.start // 2, s.stop // 2) for s in sl]
    with threadpool_limits(1):
        t_read = _best(lambda: _parallel(threads, lambda i: np.dot(a[half[i]], b[half[i]])), repeats, threads)
        t_copy = _best(lambda: _parallel(threads, lambda i: np.copyto(c[sl[i]], a[sl[i]])), repeats, threads)
    return {"read_GBs": n * 4 / t_read / 1e9, "copy_GBs": 2 * n * 4 / t_copy / 1e9}


def gemm_gflops(threads: int, *, size: int = 1024, repeats: int = 5) -> float:
    from threadpoolctl import threadpool_limits

    x = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    with threadpool_limits(threads):
        t = _best(lambda: x @ x, repeats, threads)
    return 2 * size**3 / t / 1e9


INT8_C = r"""
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long ITERS;
static void *work(void *out) {
    /* 6 independent chains with distinct inputs; the empty asm hides the inputs from the optimiser */
    __m256i a = _mm256_set1_epi8(3), one = _mm256_set1_epi16(1);
    __m256i b0 = _mm256_set1_epi8(1), b1 = _mm256_set1_epi8(2), b2 = _mm256_set1_epi8(3),
            b3 = _mm256_set1_epi8(4), b4 = _mm256_set1_epi8(5), b5 = _mm256_set1_epi8(6);
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0;
    for (long i = 0; i < ITERS; i++) {
        __asm__ volatile("" : "+x"(a), "+x"(b0), "+x"(b1), "+x"(b2), "+x"(b3), "+x"(b4), "+x"(b5));
#define STEP(s, b) s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        STEP(s0, b0) STEP(s1, b1) STEP(s2, b2) STEP(s3, b3) STEP(s4, b4) STEP(s5, b5)
    }
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3)),
                                 _mm256_add_epi32(s4, s5));
    *(int *)out = _mm256_extract_epi32(s, 0);
    return NULL;
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]); ITERS = atol(argv[2]);
    pthread_t th[64]; int out[64]; struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, work, &out[i]);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    double c = (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec);
    /* 6 chains x 32 int8 multiply-adds (2 ops each) per iteration per thread */
    printf("%f %f %d\n", 2.0 * 32 * 6 * ITERS * n / s / 1e9, 2.0 * 32 * 6 * ITERS * n / (c / n) / 1e9, out[0]);
    return 0;
}
"""


def int8_gops(threads: int, *, repeats: int = 3) -> float | None:
    """Peak AVX2 int8 multiply-add throughput (Gop/s, 2 ops per MAC), or None without gcc."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="cfbench-int8-"))
    (tmp / "k.c").write_text(INT8_C)
    subprocess.run([cc, "-O2", "-mavx2", "-o", str(tmp / "k"), str(tmp / "k.c"), "-lpthread"], check=True)
    runs = [subprocess.run([str(tmp / "k"), str(threads), "20000000"], check=True, capture_output=True,
                           text=True).stdout.split() for _ in range(repeats)]
    shutil.rmtree(tmp)
    return max(float(r[1]) for r in runs)  # per CPU-second x threads: what the cores do while they are ours


# ---------------------------------------------------------------- model sizes from the GGUF header
_BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 20: (32, 18),
          30: (1, 2)}


def gguf_weights(path: Path) -> dict[str, float]:
    """Bytes and parameters of the matrices a token touches (token embedding excluded: a row lookup).

    ``prompt_params`` also leaves out ``output.weight``: while evaluating a
    prompt, only the last token's logits are computed.
    """
    def rd(f, fmt):
        return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]

    def rstr(f):
        return f.read(rd(f, "Q"))

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def skip(f, t):
        if t in scalar:
            rd(f, scalar[t])
        elif t == 8:
            rstr(f)
        else:  # array
            et, n = rd(f, "I"), rd(f, "Q")
            if et in scalar:
                f.seek(n * struct.calcsize(scalar[et]), 1)
            else:
                for _ in range(n):
                    skip(f, et)

    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        rd(f, "I")
        n_t, n_kv = rd(f, "Q"), rd(f, "Q")
        for _ in range(n_kv):
            rstr(f)
            skip(f, rd(f, "I"))
        nbytes = params = prompt_params = 0
        for _ in range(n_t):
            name = rstr(f).decode()
            dims = [rd(f, "Q") for _ in range(rd(f, "I"))]
            typ = rd(f, "I")
            rd(f, "Q")
            n = int(np.prod(dims))
            if name == "token_embd.weight":
                continue
            bs, bb = _BLOCK[typ]
            nbytes += n // bs * bb
            if len(dims) == 2:
                params += n
                if name != "output.weight":  # logits are computed for the last prompt token only
                    prompt_params += n
    return {"weight_bytes": nbytes, "matrix_params": params, "prompt_params": prompt_params}


# ---------------------------------------------------------------- the judge (child process)
def star_turns(dialogue_id: str) -> list[dict]:
    events = json.loads((STAR / f"{dialogue_id}.json").read_text())["Events"]
    speaker = {"User": "customer", "Wizard": "agent"}
    return [{"speaker": speaker[e["Agent"]], "text": e["Text"]} for e in events
            if e.get("Action") in ("utter", "pick_suggestion") and e.get("Agent") in speaker and e.get("Text", "").strip()]


def star_requests():
    from cfbench.judges.base import GenerationConfig
    from cfbench.studies.contact_center_qa.qa import format_transcript, load_rubric, qa_config, qa_request

    rubric = load_rubric().set_index("question_id")
    q = dict(rubric.loc["issue_resolution"]) | {"question_id": "issue_resolution"}
    cfg = qa_config("compact", GenerationConfig(temperature=0.0, max_tokens=10, seed=0))
    return [qa_request(f"star-{d}", format_transcript(star_turns(d), None, record=d), q, mode="compact", config=cfg)
            for d in STAR_IDS]


def child(conf: dict) -> dict:
    import llama_cpp

    from cfbench.judges.base import GenerationConfig, Request, yes_probability
    from cfbench.judges.local import LocalJudge

    opts = {k: v for k, v in conf.items() if k not in ("model", "build", "variant")}
    t0 = time.perf_counter()
    judge = LocalJudge(conf["model"], **opts)
    load_s = time.perf_counter() - t0
    llm = judge._llm
    reqs = star_requests()
    llm.reset()
    judge._eval_prompt(judge._prompt_tokens(reqs[0])[0][:32])  # page the weights in
    la = os.getloadavg()[0]
    verdicts = []
    llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for r in reqs:  # each prompt from an empty KV cache, through the judge's own path
        llm.reset()
        resp = judge.complete(r)
        verdicts.append({"id": r.request_id, "text": resp.text, "p_yes": yes_probability(resp.top_logprobs),
                         "prompt_tokens": resp.prompt_tokens})
    pp = llama_cpp.llama_perf_context(llm._ctx.ctx)  # llama.cpp's timers: multi-token decodes are "prompt"
    cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0) / conf["n_threads"]
    gen_req = Request("gen", ({"role": "user", "content": "Write a 300-word story about a customer calling a "
                                                          "help desk about a broken router."},),
                      GenerationConfig(temperature=0.0, max_tokens=16, seed=0))
    llm.reset()
    llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    judge.complete(gen_req)
    cpu_share_gen = (time.process_time() - cpu0) / (time.perf_counter() - wall0) / conf["n_threads"]
    perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
    judge.close()
    return {"conf": conf, "load_s": load_s, "cpu_backend": judge.cpu_backend.describe(),
            "prompt_tok_s": pp.n_p_eval / (pp.t_p_eval_ms / 1000), "prompt_tokens": pp.n_p_eval, "cpu_share": cpu_share,
            "cpu_share_gen": cpu_share_gen,
            "gen_tok_s": perf.n_eval / (perf.t_eval_ms / 1000), "gen_tokens": perf.n_eval,
            "verdicts": verdicts, "load1_start": la, "load1_end": os.getloadavg()[0]}


BUILDS: dict[str, str] = {}  # --builds name=DIR: a llama-cpp-python installed with `pip install --target DIR`
VARIANT_ENV = "CFBENCH_GGML_CPU_VARIANT"


def run_child(conf: dict) -> dict:
    first = [BUILDS[conf["build"]]] if BUILDS.get(conf.get("build", "")) else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(first + [str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.pop(VARIANT_ENV, None)
    if conf.get("variant"):
        env[VARIANT_ENV] = conf["variant"]
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(conf)], capture_output=True, text=True,
                         env=env, cwd=str(REPO / "benchmarks"))
    if out.returncode:
        raise RuntimeError(f"child {conf} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse_conf(text: str, model: str, threads: int) -> dict:
    conf: dict = {"model": model, "n_threads": threads}
    for item in filter(None, text.split(",")):
        k, v = item.split("=")
        conf[k] = v if k in ("model", "build", "variant") else int(v)
    if "flash_attn" in conf:
        conf["flash_attn"] = bool(conf["flash_attn"])
    return conf


def parse_builds(items: list[str]) -> list[dict]:
    """``NAME[@VARIANT]=DIR`` items: remember each build's DIR, return the per-configuration keys."""
    out = []
    for item in items:
        name, _, where = item.partition("=")
        build, _, variant = name.partition("@")
        BUILDS[build] = where
        out.append({"build": build} | ({"variant": variant} if variant else {}))
    return out


def summarize(confs: list[dict], results: dict[int, list[dict]], bounds: dict[int, dict], sizes: dict,
              reference: str = "native") -> None:
    """The Markdown table: medians over rounds and their ratios to the bounds at the same thread count."""
    print("\nSummary (median over rounds; bound ratios use Part 1 at the same thread count)")
    print("Wall-clock tok/s are what a user saw on this busy machine; 'per CPU-s' divides by the share of the")
    print("threads' wall time they actually ran (for 2 OpenMP threads spinning counts as running, so it stays low);")
    print("the bound ratios use the per-CPU-s rate, like the bounds.")
    print("| model | threads | settings | prompt tok/s wall | per CPU-s | of int8 bound | gen tok/s wall | per CPU-s | "
          "of bandwidth bound | load1 | CPU share | verdicts vs first row |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    first: dict[str, list[dict]] = {}  # verdict reference
    for i, conf in enumerate(confs):
        rs = results[i]
        pt = float(np.median([r["prompt_tok_s"] for r in rs]))
        gt = float(np.median([r["gen_tok_s"] for r in rs]))
        pc = float(np.median([r["prompt_tok_s"] / r["cpu_share"] for r in rs]))
        gc = float(np.median([r["gen_tok_s"] / r.get("cpu_share_gen", r["cpu_share"]) for r in rs]))
        m, t = conf["model"], conf["n_threads"]
        b = bounds.get(t)
        p_bound = b["int8_Gops"] * 1e9 / (2 * sizes[m]["prompt_params"]) if b and b["int8_Gops"] else None
        g_bound = b["read_GBs"] * 1e9 / sizes[m]["weight_bytes"] if b else None
        v = rs[0]["verdicts"]
        ref = first.setdefault("run", v)  # every row against the run's first configuration
        same = all(a["text"] == c["text"] for a, c in zip(v, ref))
        dp = max(abs(a["p_yes"] - c["p_yes"]) for a, c in zip(v, ref))
        settings = ",".join(f"{k}={val}" for k, val in conf.items() if k not in ("model", "n_threads", "build"))
        settings = (f"{conf['build']}: " if conf.get("build") else "") + settings
        print(f"| {m} | {t} | {settings} | {pt:.1f} | {pc:.1f} | "
              f"{f'{pc / p_bound:.2f} of {p_bound:.0f}' if p_bound else 'n/a'} | {gt:.1f} | {gc:.1f} | "
              f"{f'{gc / g_bound:.2f} of {g_bound:.0f}' if g_bound else 'n/a'} | "
              f"{np.mean([r['load1_start'] for r in rs]):.2f} | {np.median([r['cpu_share'] for r in rs]):.2f} | "
              f"{'same replies' if same else 'REPLIES DIFFER'}, max dP(Yes) {dp:.1e} |")
    if any(c.get("build") for c in confs):
        build_ratios(confs, results, reference)
    print("P(Yes) per STAR prompt, first round:")
    for i, conf in enumerate(confs):
        print(f"  {json.dumps(conf)}: " + " ".join(f"{v['p_yes']:.6f}:{v['text'].strip()[:6]!r}"
                                                    for v in results[i][0]["verdicts"]))


def build_ratios(confs: list[dict], results: dict[int, list[dict]], reference: str = "native") -> None:
    """Each build's median prompt and generated tok/s per CPU-second as a ratio to the ``reference`` build."""
    def med(i: int, key: str, share: str) -> float:
        return float(np.median([r[key] / r.get(share, r["cpu_share"]) for r in results[i]]))

    ref = {(c["model"], c["n_threads"]): i for i, c in enumerate(confs)
           if reference in (c.get("build"), f"{c.get('build')}@{c.get('variant')}")}
    print(f"\nBuilds against the {reference} build (median per CPU-second over rounds, same machine, interleaved)")
    print(f"| build | CPU backend loaded | prompt tok/s | x {reference} | gen tok/s | x {reference} | load1 |")
    print("|---|---|---|---|---|---|---|")
    for i, c in enumerate(confs):
        j = ref.get((c["model"], c["n_threads"]))
        p, g = med(i, "prompt_tok_s", "cpu_share"), med(i, "gen_tok_s", "cpu_share_gen")
        rp = f"{p / med(j, 'prompt_tok_s', 'cpu_share'):.2f}" if j is not None else "n/a"
        rg = f"{g / med(j, 'gen_tok_s', 'cpu_share_gen'):.2f}" if j is not None else "n/a"
        name = c.get("build", "") + (f" ({VARIANT_ENV}={c['variant']})" if c.get("variant") else "")
        la = np.mean([r["load1_start"] for r in results[i]])
        print(f"| {name} | {results[i][0].get('cpu_backend', '?')} | {p:.1f} | {rp} | {g:.1f} | {rg} | {la:.2f} |")


def summarize_file(path: Path, reference: str = "native") -> None:
    """Re-print the summary from a ``--json`` file (bounds as measured in that run)."""
    from cfbench.judges.local import _resolve_model_path

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    confs: list[dict] = []
    results: dict[int, list[dict]] = {}
    bounds: dict[int, dict] = {}
    for r in rows:
        if r["conf"] not in confs:
            confs.append(r["conf"])
        results.setdefault(confs.index(r["conf"]), []).append(r)
        if r.get("bounds"):
            bounds.setdefault(r["conf"]["n_threads"], r["bounds"])
    sizes = {c["model"]: gguf_weights(_resolve_model_path(c["model"])) for c in confs}
    summarize(confs, results, bounds, sizes, reference)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--models", nargs="+", default=["qwen2.5-coder-1.5b"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--batches", nargs="+", type=int, default=[64, 128, 256, 512])
    ap.add_argument("--configs", nargs="+", default=None,
                    help="explicit settings per configuration, e.g. 'n_batch=128,flash_attn=1' (replaces --batches)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="append every measurement to this JSON-lines file")
    ap.add_argument("--summarize", type=Path, default=None, help="only re-print the summary of a --json file")
    ap.add_argument("--builds", nargs="+", default=None, metavar="NAME=DIR",
                    help="compare llama-cpp-python builds, each installed with `pip install --target DIR` "
                         "(an empty DIR: this interpreter's own); a 'native' build is the ratio reference; "
                         "NAME@VARIANT forces that CPU variant of the build (e.g. shipped@baseline=DIR)")
    ap.add_argument("--reference", default="native", help="the build (NAME or NAME@VARIANT) ratios are taken to")
    args = ap.parse_args()
    if args.summarize:
        summarize_file(args.summarize, args.reference)
        return
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    header("CPU limit vs the embedded judge")
    confs = [parse_conf(c, m, t) for m in args.models for t in args.threads
             for c in (args.configs or [f"n_batch={b}" for b in args.batches])]
    if args.builds:
        confs = [c | b for c in confs for b in parse_builds(args.builds)]
    bounds: dict[int, dict] = {}
    if not args.skip_cpu:
        print("Part 1: CPU limits (per CPU-second x threads: what the cores do while they are ours)")
        for t in sorted({c["n_threads"] for c in confs}):
            bw = bandwidth(t)
            bounds[t] = bw | {"gemm_GFs": gemm_gflops(t), "int8_Gops": int8_gops(t)}
            b = bounds[t]
            int8 = f"{b['int8_Gops']:.0f}" if b["int8_Gops"] else "n/a"
            print(f"  threads {t}: read {b['read_GBs']:.1f} GB/s, copy {b['copy_GBs']:.1f} GB/s, "
                  f"f32 GEMM {b['gemm_GFs']:.0f} GFLOP/s, int8 AVX2 peak {int8} Gop/s   ({load()})", flush=True)
    from cfbench.judges.local import EMBEDDED_MODELS, _resolve_model_path

    sizes = {}
    for m in dict.fromkeys(c["model"] for c in confs):
        sizes[m] = gguf_weights(_resolve_model_path(m))
        print(f"  {m}: {sizes[m]['weight_bytes'] / 1e6:.0f} MB of weights read per generated token, "
              f"{sizes[m]['prompt_params'] / 1e9:.3f} G matrix parameters per prompt token")
    print(f"Part 2: the judge, {len(confs)} configurations x {args.rounds} rounds (interleaved)")
    results: dict[int, list[dict]] = {i: [] for i in range(len(confs))}
    for rnd in range(args.rounds):
        for i, conf in enumerate(confs):
            r = run_child(conf)
            results[i].append(r)
            print(f"  round {rnd} {json.dumps(conf)}: prompt {r['prompt_tok_s']:.1f} tok/s, gen {r['gen_tok_s']:.1f} "
                  f"tok/s (load1 {r['load1_start']:.2f}->{r['load1_end']:.2f}, CPU share {r['cpu_share']:.2f})",
                  flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(r | {"round": rnd, "bounds": bounds.get(conf["n_threads"])}) + "\n")
    summarize(confs, results, bounds, sizes, args.reference)
    print(f"({load()})")


if __name__ == "__main__":
    main()
