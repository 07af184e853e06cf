"""Plugins that fight back (issue 36): each entry point stands alone, a name clash is refused, a
``sys.exit`` at import is caught, and the run record names the plugin packages and versions.

The packages are ``*.dist-info`` folders written by hand into a folder on ``PYTHONPATH`` (what
importlib.metadata reads for an installed package), with the modules beside them; each command
runs in a fresh interpreter, as a user's would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_pkg import DIMS

ROOT = Path(__file__).resolve().parents[1]

MODULES = {
    "cfx_good.py": DIMS + '\nGOOD = HeaderCue("good_cue", "Good", {"a": "Note: A.", "b": "Note: B."})\n',
    "cfx_shadow.py": DIMS + '\nGENDER = HeaderCue("gender", "Gender", {"female": "F.", "male": "M."})\n',
    "cfx_dup_a.py": DIMS + '\nDUP = HeaderCue("dup_cue", "Dup", {"a": "A.", "b": "B."})\n',
    "cfx_dup_b.py": DIMS + '\nDUP = HeaderCue("dup_cue", "Dup", {"a": "A2.", "b": "B2."})\n',
    "cfx_exit.py": "import sys\nsys.exit(0)\n",
    "cfx_judge.py": "def make(model, **options):\n    raise RuntimeError('never built in these tests')\n",
}

PACKAGES = {  # distribution -> (version, {group: {name: target}})
    "cfx-good": ("1.2.3", {"cfbench.perturbers": {"good_cue": "cfx_good:GOOD"}}),
    "cfx-shadow": ("0.1", {"cfbench.perturbers": {"gender": "cfx_shadow:GENDER"}}),
    "cfx-dup-a": ("1.0", {"cfbench.perturbers": {"dup_cue": "cfx_dup_a:DUP"},
                          "cfbench.judges": {"twin": "cfx_judge:make"}}),
    "cfx-dup-b": ("2.0", {"cfbench.perturbers": {"dup_cue": "cfx_dup_b:DUP"},
                          "cfbench.judges": {"twin": "cfx_judge:make"}}),
    "cfx-exit": ("0.0.1", {"cfbench.perturbers": {"exit_cue": "cfx_exit:X"}}),
    "cfx-broken": ("0.0.2", {"cfbench.perturbers": {"broken_cue": "cfx_missing_module:X"},
                             "cfbench.studies": {"ghost_study": "cfx_missing_study"},
                             "cfbench.judges": {"scripted": "cfx_judge:make"}}),
}


def _write_site(site: Path, packages: dict) -> None:
    site.mkdir(parents=True, exist_ok=True)
    for name, text in MODULES.items():
        (site / name).write_text(text, encoding="utf-8")
    for dist, (version, groups) in packages.items():
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = []
        for group, eps in groups.items():
            lines.append(f"[{group}]")
            lines += [f"{k} = {v}" for k, v in eps.items()]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cfx")
    _write_site(tmp / "site", PACKAGES)
    src = tmp / "t.jsonl"
    src.write_text(json.dumps({"id": "t1", "agent_name": "Omar", "turns": [
        {"speaker": "agent", "text": "Hello, my name is Omar. How can I help you today?"},
        {"speaker": "customer", "text": "My order has not arrived yet and I am worried."},
        {"speaker": "agent", "text": "I am sorry to hear that, I will check the order for you now."}]}) + "\n")
    return tmp


def _cfbench(tmp: Path, *args: str, site_dir: str = "site") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp / site_dir), str(ROOT)]),
           "CFBENCH_CACHE_DIR": str(tmp / "cache")}
    env.pop("CFBENCH_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "cfbench.cli", *args], env=env, cwd=tmp, capture_output=True,
                          text=True, timeout=300)


def _warnings(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [ln for ln in stderr.splitlines() if "warning: plugin package" in ln]


def test_variants_run_with_the_good_plugin_despite_the_bad_ones(site):
    import pandas as pd

    from cfbench.perturb import get_perturber

    out = site / "v"
    r = _cfbench(site, "variants", str(site / "t.jsonl"), "--out", str(out), "--dimensions", "gender,good_cue",
                 "--quiet")
    assert r.returncode == 0, r.stderr
    warnings = _warnings(r.stderr)
    by_name = {name: [w for w in warnings if f"'{name}'" in w] for name in
               ("gender", "dup_cue", "exit_cue", "broken_cue")}
    assert all(len(ws) >= 1 for ws in by_name.values()), warnings
    assert "built-in" in by_name["gender"][0] and "cfx-shadow" in by_name["gender"][0]
    assert len(by_name["dup_cue"]) == 2 and all("cfx-dup-a" in w and "cfx-dup-b" in w for w in by_name["dup_cue"])
    assert "SystemExit" in by_name["exit_cue"][0] and "cfx-exit" in by_name["exit_cue"][0]
    assert "cfx_missing_module" in by_name["broken_cue"][0]
    assert len(warnings) == len(set(warnings)) == 5  # each said once
    v = pd.read_parquet(out / "variants.parquet")
    builtin = get_perturber("gender")  # cfbench's own, in this process (no plugin on its path)
    gender = v[v.dimension == "gender"]
    assert len(gender) and set(gender["perturber"]) == {builtin.description.tag}
    assert set(gender["condition"]) == set(builtin.dimension.conditions)
    assert (v.dimension == "good_cue").sum() == 2


def test_a_refused_dimension_is_unknown_not_a_traceback(site):
    r = _cfbench(site, "variants", str(site / "t.jsonl"), "--out", str(site / "v2"), "--dimensions", "dup_cue",
                 "--quiet")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("cfbench: error")]
    assert len(lines) == 1 and "dup_cue" in lines[0]
    _warnings(r.stderr)


def test_judges_lists_everything_despite_a_missing_study_module_and_a_shadowing_backend(site):
    r = _cfbench(site, "judges")
    assert r.returncode == 0, r.stderr
    warnings = _warnings(r.stderr)
    assert any("'ghost_study'" in w and "cfx_missing_study" in w for w in warnings), warnings
    assert any("'scripted'" in w and "built-in" in w for w in warnings), warnings
    assert sum("'twin'" in w for w in warnings) == 2
    assert "scripted" in r.stdout and "twin" not in r.stdout


def test_sys_exit_in_a_plugin_flag_module_is_an_error_not_success(site):
    r = _cfbench(site, "--plugin", "cfx_exit", "variants", str(site / "t.jsonl"), "--out", str(site / "v3"),
                 "--quiet")
    assert r.returncode == 2 and "cfx_exit" in r.stderr and "SystemExit" in r.stderr
    assert not (site / "v3").exists()


def test_plugin_packages_and_versions_for_the_run_record(site):
    code = ("import json, cfbench.plugins as p, cfbench.perturb.base as b; b.load_plugins(); "
            "print(json.dumps(p.packages()))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site / "site"), str(ROOT)])}
    env.pop("CFBENCH_PLUGINS", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    found = {e["package"]: e for e in json.loads(r.stdout.strip().splitlines()[-1])}
    assert found["cfx-good"]["version"] == "1.2.3"
    assert found["cfx-good"]["entry_points"] == ["cfbench.perturbers:good_cue"]
    assert found["cfx-shadow"]["entry_points"] == ["cfbench.perturbers:gender (disabled)"]
    assert found["cfx-broken"]["version"] == "0.0.2"


def test_run_info_records_the_plugin_packages(tmp_path, monkeypatch):
    """The run record of a reproduce run holds plugins.packages() (here: in this process)."""
    from test_reproduce_swap import FakePapermill

    from cfbench.cli.reproduce import notebook, provenance
    from cfbench.cli.reproduce.config import Run, project_root
    from cfbench.cli.reproduce.run import run_study

    monkeypatch.setenv("CFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    for module, name, value in ((notebook, "kernel_manager", lambda: None), (notebook, "shutdown", lambda km: None),
                                (notebook, "write_view_page", lambda f, r: None),
                                (provenance, "git_commit", lambda root: None)):
        monkeypatch.setattr(module, name, value)
    fake = [{"package": "cfx-good", "version": "1.2.3", "entry_points": ["cfbench.perturbers:good_cue"],
             "modules": []}]
    monkeypatch.setattr("cfbench.plugins.packages", lambda: fake)
    run_study(FakePapermill("x"), project_root(), Run("shopflow", "smoke", {}, "--config smoke"), tmp_path / "R",
              "live")
    info = json.loads((tmp_path / "R" / "shopflow" / "smoke" / "run_info.json").read_text())
    assert info["plugins"] == fake
