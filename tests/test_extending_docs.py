"""docs/extending.md runs: every ``python`` block, in order, in one fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_the_page_has_an_example_of_each_kind():
    code = _blocks("python")
    assert len(code) >= 4
    joined = "\n".join(code)
    for must in ("register(ShiftCue())", "register_backend(", "def run(params", "audit("):
        assert must in joined
    # "about 20 lines": each example stays short enough to read at a glance
    assert all(len(b.strip().splitlines()) <= 40 for b in code)


def test_the_entry_point_groups_shown_are_the_ones_cfbench_reads():
    from cfbench.plugins import GROUPS

    (toml,) = _blocks("toml")
    shown = tomllib.loads(toml)["project"]["entry-points"]
    assert sorted(shown) == sorted(GROUPS)


def test_every_python_block_runs(tmp_path):
    script = tmp_path / "extending_snippets.py"
    script.write_text("\n\n".join(_blocks("python")), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CFBENCH_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("CFBENCH_PLUGINS", None)
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = r.stdout
    assert "shift_cue@1" in out and "night" in out
    assert "warning: judge short:5 has no P(Yes)" in out
    assert "short:3" in out and "scripted:yes" in out
