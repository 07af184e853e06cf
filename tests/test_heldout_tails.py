"""The held-out families of ``benchmarks/bench_heldout_tails.py``: each closed-form mean (the truth every
coverage cell is scored against) agrees with a large simulation of the family as the bench draws it, and
the rare-shift family's unseen share is what 0.85^K says. A wrong truth would move every cell of that
family's row; the tolerance is 5 Monte Carlo standard errors."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(import_benchmark):
    return import_benchmark("bench_heldout_tails")


@pytest.mark.parametrize("name", ["pyes_rare15", "pyes_lognormal_wide", "pyes_pareto", "score_zero80",
                                  "coaching_wide", "gamma_shape03"])
def test_closed_form_truth_matches_simulation(bench, name):
    num, den, truth, vr = bench.heldout(name, np.random.default_rng(11), 50_000, 40)
    v = (num / den).ravel()
    assert vr[0] <= v.min() and v.max() <= vr[1]
    se = v.std() / np.sqrt(v.size)
    assert abs(v.mean() - truth) < 5 * se, (name, v.mean(), truth, se)


def test_rare_family_unseen_share(bench):
    num, _, _, _ = bench.heldout("pyes_rare15", np.random.default_rng(12), 40_000, 8)
    unseen = (num < bench.LARGE).all(axis=1).mean()
    assert abs(unseen - 0.85 ** 8) < 0.012, unseen  # |N(0, .03)| >= 0.1 is rare (0.09 %) and adds to "seen"


def test_quick_run_prints_every_family_and_size(bench, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(bench.__file__)
    out = subprocess.run([sys.executable, str(script), "--quick"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for name in bench.HELDOUT:
        for n in (8, 20, 60):
            assert f"| {name}: " in out.stdout and f" | {n} | " in out.stdout, (name, n)
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and " x" in line]
    assert len(rows) == 3 * len(bench.HELDOUT)
    assert "* `pyes_rare15`, 8 items:" in out.stdout and "* `pyes_rare15`, 60 items:" not in out.stdout


@pytest.mark.parametrize("shape", ["9 points on 1 item in 9", "7 points on 1 item in 7", "5 points on 1 item in 5",
                                   "3 points on 1 item in 3", "+4 on 40 %, -2 on 30 % (independent)",
                                   "2 points on 30 %, 1 on 40 %, else 0", "+2 on 60 %, -1 on 20 %, else 0"])
def test_gate_shapes_sit_on_the_maximum(bench, shape):
    """Each held-out shape of the pointwise gate's net shift has mean 1 point, the gate's maximum, so a pass there
    is a false pass; 5 Monte Carlo SE."""
    v = bench.GATE_SHAPES[shape](np.random.default_rng(13), (2_000_000,))
    assert -9 <= v.min() and v.max() <= 9
    assert abs(v.mean() - bench.GATE_MAX) < 5 * v.std() / np.sqrt(v.size), (shape, v.mean())
    assert set(bench.GATE_SHAPES) == set(test_gate_shapes_sit_on_the_maximum.pytestmark[0].args[1])
