"""A notebook parameter that no later cell reads is silently ignored: `cfbench reproduce -p NAME VALUE` and papermill
would accept it and change nothing (the judge-bias and ShopFlow notebooks once dropped their sequential budgets)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _cells(path: Path) -> tuple[str, list[str]]:
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    params = [c for c in code if "parameters" in (c.get("metadata", {}).get("tags") or [])]
    assert len(params) == 1, f"{path.name}: {len(params)} cells tagged 'parameters'"
    later = code[code.index(params[0]) + 1:]
    return "".join(params[0]["source"]), ["".join(c["source"]) for c in later]


def _read_names(source: str) -> set[str]:
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]  # magics are not Python
    tree = ast.parse("\n".join(lines))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_parameter_is_read_by_a_later_cell(path):
    params, later = _cells(path)
    declared = [t.target.id for t in ast.parse(params).body if isinstance(t, ast.AnnAssign)]
    assert declared, f"{path.name}: no parameters found"
    read = set().union(*(_read_names(src) for src in later))
    assert not [n for n in declared if n not in read], f"{path.name}: parameters no later cell reads"


def test_the_check_sees_an_ignored_parameter():
    assert "x" not in _read_names("y = 1\nprint(y)") and "x" in _read_names("print(x)")
