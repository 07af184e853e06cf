"""The command line is one package, one module per command (docs/architecture.md, "The command line")."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import cfbench
from cfbench import cli

COMMANDS = ["reproduce", "judges", "batch", "cache", "variants", "model", "view"]


def test_each_command_module_adds_exactly_its_own_command():
    modules = cli._commands()
    assert [m.__name__.rsplit(".", 1)[1] for m in modules] == COMMANDS
    for module in modules:
        sub = argparse.ArgumentParser(prog="cfbench").add_subparsers(dest="command")
        module.add_parser(sub)
        assert list(sub.choices) == [module.__name__.rsplit(".", 1)[1]], module.__name__


def test_python_m_cfbench_and_cfbench_cli_are_the_command_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(cfbench.__file__).parents[1])}
    for entry in ("cfbench", "cfbench.cli"):
        r = subprocess.run([sys.executable, "-m", entry, "--help"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("usage: cfbench ")
        assert "{" + ",".join(COMMANDS) + "}" in r.stdout
