"""A wheel installed into a fresh virtual environment, without the local judge, runs the smoke
studies from an unrelated directory and writes to ./results there (issue: installs that work anywhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: the fresh environment sees only what its wheel installed: a PYTHONPATH pointing at the checkout (as a test run may
#: set) would let pip take cfbench as installed from its egg-info and the smoke run import the checkout instead
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.mark.slow
def test_wheel_with_api_extra_runs_the_smoke_studies_anywhere(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True)
    wheel = next(dist.glob("cfbench-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", f"{wheel}[api]"], check=True, capture_output=True,
                   env=CLEAN_ENV)
    work = tmp_path / "elsewhere"
    work.mkdir()
    run = subprocess.run([str(env_dir / "bin" / "cfbench"), "reproduce", "--config", "smoke"], cwd=work,
                         capture_output=True, text=True, env=CLEAN_ENV)
    assert run.returncode == 0, run.stderr[-3000:]
    for study in ("shopflow", "identity_tone", "contact_center_qa"):
        out = work / "results" / study / "smoke"
        assert (out / f"{study}.ipynb").is_file() and (out / "summary.json").is_file(), study
        assert json.loads((out / "run_info.json").read_text())["config"] == "smoke"
    # the local judge is not installed, and cfbench says how to get it
    judges = subprocess.run([str(env_dir / "bin" / "cfbench"), "judges"], cwd=work, capture_output=True, text=True,
                            env=CLEAN_ENV)
    assert "local" in judges.stdout and "not usable" in judges.stdout and "cfbench[local]" in judges.stdout
