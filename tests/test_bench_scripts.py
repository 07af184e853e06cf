"""The benchmark scripts run end to end at toy sizes and print the ratios they promise.

No timing is asserted (the machine is shared); the checks are on what each script
proves about correctness: the server's request counter, the zero-call warm run,
agreement with the reference loops.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(name: str, *args: str) -> str:
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / name), *args], cwd=REPO, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_bench_runner_counts_every_request():
    pytest.importorskip("aiohttp")
    out = _run("bench_runner.py", "--n", "300", "--c", "16", "--latency-ms", "20", "--overhead-n", "300", "--repeats", "1",
               "--queue-sizes", "1000,2000", "--queue-repeats", "1")
    assert "server counted 300 requests for 300 sent; 0 failed" in out
    assert re.search(r"EFFICIENCY achieved/\(C/L\) = \d\.\d{3}", out)
    assert "run_requests_warm_cache" in out


def test_bench_cache_warm_run_makes_no_call():
    pytest.importorskip("aiohttp")
    out = _run("bench_cache.py", "--items", "1", "--latency-ms", "5")
    assert re.search(r"warm: +[\d.]+ s  server received 0 requests", out)
    assert "replay mode: server received 0 requests; replies identical across the three runs: True" in out


def test_bench_dedup_server_sees_exactly_the_planned_requests():
    pytest.importorskip("aiohttp")
    out = _run("bench_dedup.py", "--items", "1", "--c", "16")
    planned = int(re.search(r"requests planned \(distinct prompts\): +(\d+)", out).group(1))
    received = int(re.search(r"requests the server received: +(\d+)", out).group(1))
    naive = int(re.search(r"naive calls .*: +(\d+)", out).group(1))
    assert received == planned < naive


def test_bench_metrics_agrees_with_the_reference_loops():
    out = _run("bench_metrics.py", "--rows", "20000", "--resamples", "200", "--pandas-loop-rows", "2000")
    assert "largest disagreement with the loops: 0.0e+00" in out
    assert "t and Wilcoxon identical" in out


@pytest.mark.local_model
def test_bench_local_judge_replay_without_the_model():
    from cfbench.judges.local import embedded_model_status

    ok, why = embedded_model_status()
    if not ok:
        pytest.skip(why)
    out = _run("bench_local_judge.py", "--skip-model", "--plan-items", "1")
    sent = int(re.search(r"prompt tokens sent: +([\d,]+)", out).group(1).replace(",", ""))
    ev = int(re.search(r"evaluated, runner order \(prefix-sorted\): +([\d,]+)", out).group(1).replace(",", ""))
    assert 0 < ev < sent


def test_bench_paper_scale_prints_every_figure_with_its_ratio():
    star = Path("/work/shared/data/star/dialogues")
    if not star.is_dir():
        pytest.skip("STAR dialogues not available")
    out = _run("bench_paper_scale.py", "--small", "300", "--large", "600", "--import-n", "500", "--replay", "400",
               "--analysis", "10000", "20000", "--star", str(star))
    for figure in ("batch plan (small)", "batch plan (large)", "shards (large)", "collect/import", "replay:",
                   "analysis (13,910 rows", "analysis (27,820 rows", "analysis memory"):
        assert figure in out, figure
    assert len(re.findall(r"RATIO", out)) >= 6
    assert "import: 500 lines" in out and "replay: 400 requests" in out


def test_bench_sentiment_range_holds_bounds_and_the_betting_interval_covers():
    """At a toy size: every family's rows print, the held rows say how often the range bound, and the betting
    interval (valid for any shape on the range) covers every audit of the rare-drop family, where cfbench's misses."""
    import numpy as np

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_sentiment_range as B
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    d, truth = B.draws("rare10", np.random.default_rng(0), 200, 10)
    lo, hi = B.betting_interval(d, -2.0, 2.0)
    assert np.all((lo <= truth) & (truth <= hi)) and np.all(lo >= -2.0) and np.all(hi <= 2.0)
    out = _run("bench_sentiment_range.py", "--audits", "60")
    for family in B.FAMILIES:
        assert re.search(rf"\| {family} \| cfbench, held at \[-2, 2\] \(now\) \| .*held \d+\.\d %", out), family
