"""The fault and review-page benchmarks run end to end at toy sizes (no timing asserted)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from star_util import need_star

REPO = Path(__file__).resolve().parents[1]


def _run(name: str, *args: str) -> str:
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / name), *args], cwd=REPO, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_bench_faults_meets_every_fault_kind_and_prints_the_ratio():
    pytest.importorskip("aiohttp")
    out = _run("bench_faults.py", "--n", "300", "--hang-s", "3", "--latency-ms", "20")
    faulty = re.search(r"faulty: ([\d,]+) of 300 completed.*\n +server answered (\{.*\})", out)
    assert faulty, out
    counts = eval(faulty.group(2))  # noqa: S307 - our own dict repr
    assert all(counts[k] > 0 for k in ("500", "hang", "truncated", "429"))
    assert re.search(r"RATIO faulty / healthy throughput = \d+\.\d\d", out)


def test_bench_review_page_prints_bytes_and_ratios():
    star = need_star()
    args = ["--star", str(star), "--limit", "6", "--n", "400"]
    out = _run("bench_review_page.py", *args)
    assert "400 variants on the page" in out and "RATIO page_mb" in out
    if shutil.which("chromium"):
        assert "RATIO first_render_ms" in out
        line = next(ln for ln in out.splitlines() if "first statuses shown" in ln)
        assert "not applicable" not in line  # the page opens on reviewable variants
