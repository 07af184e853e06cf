"""The contact-center study path runs one way: items -> variants -> requests -> judgments -> tables (item
statistics and every table from them) -> streamed (the Parquet row writer) -> figures -> findings -> study.

Each step module may import the steps before it and the leaf helpers, never a later step. Imports
are read from the source with ``ast`` (every import, including those inside functions), so a lazy
import cannot hide a step that climbs back up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_util import from_module

PKG_NAME = "cfbench.studies.contact_center_qa"
PKG = Path(__file__).resolve().parents[1] / "cfbench" / "studies" / "contact_center_qa"

#: the steps, in order; a step may import only the ones before it (and the leaves)
STEPS = ["items", "variants", "requests", "calculator", "judging", "screen", "tables", "gates", "sequential", "streamed", "figures", "findings",
         "explorer", "study", "batch_waves", "__init__"]
#: helpers every step may use; they import only each other
LEAVES = {"params", "prompts", "qa", "coaching", "scripted", "synth"}


def _local(module: str) -> str | None:
    """The package's module a dotted name refers to (``synth.generator`` -> ``synth``), or None."""
    if module == PKG_NAME:
        return "__init__"
    if not module.startswith(PKG_NAME + "."):
        return None
    return module[len(PKG_NAME) + 1:].split(".")[0]


def _submodules() -> set[str]:
    return {p.stem for p in PKG.glob("*.py")} | {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}


def _imports(path: Path, package: str) -> set[str]:
    """The package's modules ``path`` imports (anywhere in the file)."""
    subs = _submodules()
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = from_module(node, package)
            # ``from pkg import tables`` imports the submodule; ``from pkg import run`` imports __init__
            names = [f"{mod}.{a.name}" if mod == PKG_NAME and a.name in subs else mod for a in node.names]
        else:
            continue
        out.update(m for m in map(_local, names) if m is not None)
    return out


def _module_imports() -> dict[str, set[str]]:
    """Step or leaf name -> the package's modules it imports (a subpackage's files count as one)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        name = rel.parts[0] if len(rel.parts) > 1 else path.stem
        package = ".".join([PKG_NAME, *rel.parts[:-1]])
        graph.setdefault(name, set()).update(_imports(path, package) - {name})
    return graph


GRAPH = _module_imports()


def test_every_module_of_the_package_is_a_step_or_a_leaf():
    assert set(GRAPH) == set(STEPS) | LEAVES, "new module: put it in STEPS (in order) or LEAVES"


@pytest.mark.parametrize("step", STEPS)
def test_a_step_imports_only_earlier_steps_and_leaves(step):
    allowed = set(STEPS[: STEPS.index(step)]) | LEAVES
    assert GRAPH[step] <= allowed, f"{step} imports a later step: {sorted(GRAPH[step] - allowed)}"


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_a_leaf_imports_only_leaves(leaf):
    assert GRAPH[leaf] <= LEAVES, f"{leaf} imports a step: {sorted(GRAPH[leaf] - LEAVES)}"


def test_the_check_sees_imports_inside_functions(tmp_path):
    # a lazy import of a later step, as the old stream.py had, is caught
    f = tmp_path / "items.py"
    f.write_text("def f():\n    from cfbench.studies.contact_center_qa.requests import plan_for\n"
                 "    from . import judging\n    from .study import run\n", encoding="utf-8")
    assert _imports(f, PKG_NAME) == {"requests", "judging", "study"}


def test_the_graph_is_real():
    # the checks above would pass vacuously on an empty graph
    assert {"items", "variants", "prompts"} <= GRAPH["requests"]
    assert {"requests", "items"} <= GRAPH["judging"]
    assert {"judging", "tables", "streamed", "requests"} <= GRAPH["study"]
