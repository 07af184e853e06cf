"""The committed default tables hold no interval bound beyond what the quantity can take (issue 33: a bootstrap
resample with no spread once put a bound at 3.8e11; a sentiment difference's bound once lay at -2.70, where a
VADER compound's differences end at -2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
BOUND_COLUMNS = ("ci_low", "ci_high", "adj_ci_low", "adj_ci_high", "ci_low_t", "ci_high_t", "ci_low_boot",
                 "ci_high_boot")

#: (study, file-name glob, rows where the metric column equals this (None: every row), low, high[, bound columns])
KNOWN_RANGES = [
    ("contact_center_qa", "*cfr.csv", None, 0.0, 1.0),
    ("contact_center_qa", "*accuracy.csv", None, 0.0, 1.0),
    ("contact_center_qa", "*masd.csv", None, 0.0, 100.0),
    ("contact_center_qa", "*cfr_minus_robustness.csv", None, -1.0, 1.0),
    ("contact_center_qa", "*net_cfr_gate.csv", None, -1.0, 1.0),
    ("contact_center_qa", "*responsiveness.csv", None, 0.0, 1.0),
    ("contact_center_qa", "placebo_contrast.csv", None, -1.0, 1.0),
    ("identity_tone", "pairs_*.csv", "sentiment", -2.0, 2.0),
    ("identity_tone", "fresh_pairs_*.csv", "sentiment", -2.0, 2.0),
    ("identity_tone", "fresh_placebo_described.csv", "sentiment", -2.0, 2.0),
    ("shopflow", "*_rate_intervals.csv", None, 0.0, 1.0),
    ("shopflow", "*_stratum_tests.csv", None, -1.0, 1.0),
    ("judge_bias", "accuracy.csv", None, 0.0, 1.0),
    ("judge_bias", "noise.csv", None, 0.0, 1.0),
    ("judge_bias", "position.csv", None, 0.0, 1.0),
    ("judge_bias", "placebo_contrast.csv", None, -1.0, 1.0, ("ci_low", "ci_high", "shift_ci_low", "shift_ci_high")),
    ("judge_bias", "cues.csv", None, -1.0, 1.0, ("shift_ci_low", "shift_ci_high", "net_ci_low", "net_ci_high")),
]


def violations(root: Path) -> list[str]:
    """Every bound above 1e6 in size, below its own row's lower bound, or outside a known range, as lines."""
    bad = []
    for path in sorted(root.glob("*/default/*.csv")):
        t = pd.read_csv(path)
        cols = [c for c in BOUND_COLUMNS if c in t and pd.api.types.is_numeric_dtype(t[c])]
        for c in cols:
            v = t[c].to_numpy(float)
            for i in np.flatnonzero(np.abs(np.nan_to_num(v)) > 1e6):
                bad.append(f"{path.relative_to(root)} row {i} {c}: {v[i]:g} (above 1e6)")
        for lo, hi in (("ci_low", "ci_high"), ("adj_ci_low", "adj_ci_high")):
            if lo in cols and hi in cols:
                for i in np.flatnonzero(t[lo].to_numpy(float) > t[hi].to_numpy(float) + 1e-9):
                    bad.append(f"{path.relative_to(root)} row {i}: {lo} above {hi}")
    for study, pattern, metric, low, high, *cols in KNOWN_RANGES:
        cols = cols[0] if cols else ("ci_low", "ci_high")
        files = sorted((root / study / "default").glob(pattern))
        if not files:
            bad.append(f"{study}/default/{pattern}: no such table (the check would pass on nothing)")
        for path in files:
            t = pd.read_csv(path)
            if metric is not None:
                t = t[t["metric"] == metric]
            for c in cols:
                v = t[c].to_numpy(float)
                out = (v < low - 1e-9) | (v > high + 1e-9)
                for i in np.flatnonzero(out):
                    bad.append(f"{path.relative_to(root)} row {t.index[i]} {c}: {v[i]:g} outside [{low:g}, {high:g}]")
    return bad


def test_the_committed_tables_hold_their_bounds_within_range():
    assert RESULTS.is_dir()
    assert violations(RESULTS) == []


def test_the_check_finds_a_bound_beyond_its_range(tmp_path):
    """The check is not empty: a sentiment bound of -2.7 and one of 3.8e11 are each named."""
    for study, pattern, _, _, _, *cols in KNOWN_RANGES:
        folder = tmp_path / study / "default"
        folder.mkdir(parents=True, exist_ok=True)
        name = pattern.replace("*", "x")
        bounds = cols[0] if cols else ("ci_low", "ci_high")
        row = {"metric": ["sentiment"]} | {c: [0.0 if c.endswith("low") else 0.5] for c in bounds}
        pd.DataFrame(row).to_csv(folder / name, index=False)
    assert violations(tmp_path) == []
    pd.DataFrame({"metric": ["sentiment", "words"], "ci_low": [-2.7, -3.8e11], "ci_high": [0.1, 5.0]}).to_csv(
        tmp_path / "identity_tone" / "default" / "fresh_pairs_x.csv", index=False)
    got = violations(tmp_path)
    assert any("-2.7 outside [-2, 2]" in line for line in got), got
    assert any("above 1e6" in line for line in got), got
