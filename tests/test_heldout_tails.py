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


GATE_SHAPE_NAMES = ["9 points on m/9 of items", "7 points on m/7 of items", "5 points on m/5 of items",
                    "3 points on m/3 of items", "+4m on 40 %, -2m on 30 % (independent)",
                    "2m on 30 %, m on 40 %, else 0", "+2m on 60 %, -m on 20 %, else 0",
                    "m - 1, m or m + 1 (1/4, 1/2, 1/4)"]


@pytest.mark.parametrize("maximum", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("shape", GATE_SHAPE_NAMES)
def test_gate_shapes_sit_on_the_maximum(bench, shape, maximum):
    """Each held-out shape of the pointwise gate's net shift has mean m, the gate's maximum, so a pass there is a
    false pass (5 Monte Carlo SE), and stays inside -9..9; a shape that cannot is left out (None), not clipped."""
    assert set(bench.GATE_SHAPES) == set(GATE_SHAPE_NAMES)
    assert {m for m, _ in bench.GATE_CASES} == {1.0, 2.0, 4.0}
    draw = bench.GATE_SHAPES[shape](maximum)
    if draw is None:
        assert shape in ("3 points on m/3 of items", "+4m on 40 %, -2m on 30 % (independent)") and maximum == 4.0
        return
    v = draw(np.random.default_rng(13), (2_000_000,))
    assert -9 <= v.min() and v.max() <= 9
    assert abs(v.mean() - maximum) < 5 * v.std() / np.sqrt(v.size), (shape, maximum, v.mean())


def test_gate_cases_start_at_the_gate_floor(bench):
    """Each maximum's smallest size is at or just above the pointwise gate's floor, the fewest items it can pass at."""
    from cfbench.studies.judge_bias.metrics import items_needed_score_gate

    for m, sizes in bench.GATE_CASES:
        need = items_needed_score_gate(m)
        assert need <= min(sizes) <= max(need, 8), (m, need, sizes)
