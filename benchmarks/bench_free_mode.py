"""The free-text contract through a real OpenAI-compatible server: completion, retries, wall time (issue 37).

Starts llama-cpp-python's own server on the embedded model (:func:`cfbench.judges.llama_server.embedded_server`,
the same start-up as ``tests/test_judges_real_server.py``), runs a contact-center ``audit()`` in
``qa_mode="free"`` of about ``--n`` requests (default 16: the first n/2 shipped transcripts, the gender
dimension with one sampled condition, one question, one repeat) through ``openai:`` with adaptive
concurrency, then sends the same requests one at a time (``concurrency=1``, no cache) to a freshly started
server, and prints for each: requests completed, parsed, retried (by kind), failed (by kind), the
concurrency history, the time spent in judge calls (the runner's ``wall_s``, summed over transcripts) and
the wall time (the audit's includes its tables and figures), then the ratio of the two judge-call times
and the CPU.

Each measurement gets its own server process, started and warmed up with one short call before the clock
runs, so neither inherits the other's KV cache or pays for paging the model in; the response cache is a
temporary folder, so nothing is answered from an earlier run. Other load on the machine moves both times:
run it on a quiet machine (the script prints the load average at the start and the end).

    nice python benchmarks/bench_free_mode.py            # 16 requests: minutes per run on 2 cores
    nice python benchmarks/bench_free_mode.py --one-at-a-time-first   # the other order (order effects)
    nice python benchmarks/bench_free_mode.py --n 2      # a smoke run of the script itself
    nice python benchmarks/bench_free_mode.py --adaptive-only   # the acceptance check alone (half the time)
    python benchmarks/bench_free_mode.py --timeout-s 300 --max-tokens 160

Needs the ``[local]`` extra (llama-cpp-python and the embedded model) and the ``[server]`` extra.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header  # noqa: E402  (puts the checkout first on the path)


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or "unknown CPU"


def _isolated_cache(tmp: Path) -> None:
    """``CFBENCH_CACHE_DIR`` at ``tmp`` (no reply from an earlier run), sharing the assembled model."""
    from cfbench.judges.cache import default_cache_dir

    models = default_cache_dir() / "models"
    if models.exists():
        (tmp / "models").symlink_to(models, target_is_directory=True)
    os.environ["CFBENCH_CACHE_DIR"] = str(tmp)


def _params(spec: str, n_items: int, args: argparse.Namespace, *, concurrency: int):
    """What ``audit()`` builds for these arguments (the same fields), with ``max_tokens`` set."""
    from cfbench.studies.contact_center_qa import Params

    return Params(judges=(spec,), n_items=n_items, require_agent_name=False, balance_label="",
                  dimensions=("gender",), conditions_per_dimension=1, questions=("issue_resolution",),
                  qa_mode="free", max_tokens=args.max_tokens, repeats=1, robustness_temperatures=(0.0,),
                  fairness=False, coaching=False, n_boot=50, seed=0, concurrency=concurrency,
                  timeout_s=args.timeout_s)


def _warm(spec: str) -> None:
    """One short call before the clock runs: the server pages its model in and compiles its graphs here,
    not in the first measured request (the first of two servers would otherwise pay for both)."""
    from cfbench.judges import GenerationConfig, Request, run_requests

    req = Request("warm-up", ({"role": "user", "content": "Say OK."},), GenerationConfig(max_tokens=2))
    run_requests(spec, [req], cache=False, progress=False)


def _adaptive(spec: str, transcripts: list, args: argparse.Namespace) -> dict:
    """The audit as a user runs it (adaptive concurrency, the run's cache); its judgments and tallies."""
    from cfbench.studies.contact_center_qa.study import run

    params = _params(spec, len(transcripts), args, concurrency=0)
    t0 = time.perf_counter()
    r = run(params, transcripts=transcripts, progress=False, say_warnings=False)
    wall = time.perf_counter() - t0
    j = r.frames["judgments"]
    s = r.summary["run_stats"][spec]
    return {"wall_s": wall, "calls_s": float(s.get("wall_s", float("nan"))), "ids": sorted(j["request_id"]),
            "n": len(j), "ok": int(j["ok"].sum()),
            "parsed": int(j["parse_ok"].sum()), "retried": int(s.get("n_retried", 0)),
            "retries_by_kind": dict(s.get("retries_by_kind", {})), "failed": int(s.get("n_failed", 0)),
            "failures_by_kind": dict(s.get("failures_by_kind", {})),
            "concurrency": list(s.get("concurrency_history", []))}


def _one_at_a_time(spec: str, transcripts: list, args: argparse.Namespace) -> dict:
    """The same per-transcript plans (:func:`iter_judged`, as ``run`` makes them) sent one call at a time,
    no cache; the tallies summed over the transcripts."""
    import collections

    from cfbench.judges import judge_settings
    from cfbench.studies.contact_center_qa.judging import iter_judged

    params = _params(spec, len(transcripts), args, concurrency=1)
    ids, n, ok, parsed, retried, failed, calls_s = [], 0, 0, 0, 0, 0, 0.0
    by_retry, by_fail = collections.Counter(), collections.Counter()
    t0 = time.perf_counter()
    with judge_settings(concurrency=1, timeout_s=args.timeout_s or None):
        for _, _, _, j, _, stats in iter_judged(params, transcripts=transcripts, cache=False):
            s = stats[spec]
            ids += list(j["request_id"])
            n, ok, parsed = n + len(j), ok + int(j["ok"].sum()), parsed + int(j["parse_ok"].sum())
            retried, failed = retried + int(s.get("n_retried", 0)), failed + int(s.get("n_failed", 0))
            calls_s += float(s.get("wall_s", float("nan")))
            by_retry.update(s.get("retries_by_kind", {}))
            by_fail.update(s.get("failures_by_kind", {}))
    return {"wall_s": time.perf_counter() - t0, "calls_s": calls_s, "ids": sorted(ids), "n": n, "ok": ok,
            "parsed": parsed,
            "retried": retried, "retries_by_kind": dict(by_retry), "failed": failed,
            "failures_by_kind": dict(by_fail), "concurrency": [1]}


def _line(name: str, m: dict) -> str:
    kinds = lambda d: ", ".join(f"{v} {k}" for k, v in sorted(d.items())) or "none"  # noqa: E731
    return (f"{name:14s} completed {m['ok']}/{m['n']} ({100 * m['ok'] / m['n']:.0f} %), parsed {m['parsed']}, "
            f"retried {m['retried']} ({kinds(m['retries_by_kind'])}), failed {m['failed']} "
            f"({kinds(m['failures_by_kind'])}), concurrency {m['concurrency']}, judge calls {m['calls_s']:.1f} s, "
            f"wall {m['wall_s']:.1f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16, help="requests (rounded up to whole transcripts of 2); default 16")
    ap.add_argument("--max-tokens", type=int, default=600, help="free-text budget (the study's default 600)")
    ap.add_argument("--timeout-s", type=float, default=0.0, help="per-call timeout from sending (0: 600 s)")
    ap.add_argument("--threads", type=int, default=2, help="server threads (default 2)")
    ap.add_argument("--one-at-a-time-first", action="store_true",
                    help="measure the one-at-a-time run first (run both orders to see an order effect)")
    ap.add_argument("--adaptive-only", action="store_true",
                    help="measure the adaptive run only (the acceptance check: completion and retries, no ratio)")
    ap.add_argument("--logs", metavar="DIR", help="keep the two servers' logs in DIR")
    args = ap.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore", message="Tight layout not applied")  # the audit's figures, irrelevant here
    if args.n < 1:
        ap.error("--n must be at least 1")

    from cfbench.io.dialogues import load_dialogues
    from cfbench.judges.llama_server import embedded_server, unavailable
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    why = unavailable()
    if why:
        print(f"cannot run: {why}")
        return 2
    header(f"free-mode contact-center audit through llama-cpp-python's server, {args.n} requests")
    transcripts = load_dialogues(shipped_transcripts_path())[:math.ceil(args.n / 2)]
    with tempfile.TemporaryDirectory(prefix="cfbench-bench-free-") as tmp:
        _isolated_cache(Path(tmp))
        logs = Path(args.logs) if args.logs else Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        order = [("one-at-a-time", _one_at_a_time), ("adaptive", _adaptive)]
        if args.adaptive_only:
            order = order[1:]
        got = {}
        for name, measure in (order if args.one_at_a_time_first else order[::-1]):
            with embedded_server(n_threads=args.threads, log=logs / f"server-{name}.log") as srv:
                print(f"   {name}: {srv['base_url']} serving {srv['served']} ({args.threads} threads)")
                _warm(srv["spec"])
                got[name] = measure(srv["spec"], transcripts, args)
        adaptive, single = got["adaptive"], got.get("one-at-a-time")
    if single is None:
        print(f"   {adaptive['n']} requests ({len(transcripts)} transcripts), qa_mode free, max_tokens "
              f"{args.max_tokens}, timeout_s {args.timeout_s:g} (0: 600)")
        print(_line("adaptive", adaptive))
        print(f"(CPU: {_cpu()}, {os.cpu_count()} cores, load average now {os.getloadavg()[0]:.2f}; "
              "no one-at-a-time run: --adaptive-only)")
        return 0 if adaptive["ok"] == adaptive["n"] else 1
    if adaptive["ids"] != single["ids"]:
        print("error: the two runs did not send the same requests")
        return 1
    print(f"   {adaptive['n']} requests ({len(transcripts)} transcripts), qa_mode free, max_tokens {args.max_tokens}, "
          f"timeout_s {args.timeout_s:g} (0: 600)")
    print(_line("adaptive", adaptive))
    print(_line("one at a time", single))
    print(f"judge-call time adaptive / one at a time: {adaptive['calls_s'] / single['calls_s']:.2f} "
          f"(CPU: {_cpu()}, {os.cpu_count()} cores, load average now {os.getloadavg()[0]:.2f})")
    return 0 if adaptive["ok"] == adaptive["n"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
