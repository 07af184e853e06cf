"""The import graph keeps its layers: generic code never reaches up into a study, and nothing cycles.

Read from the source with ``ast`` (every import, including those inside functions),
so a lazy import cannot hide a back-edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from import_util import from_module

PKG = Path(__file__).resolve().parents[1] / "cfbench"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = from_module(node, package)
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m == "cfbench" or m.startswith("cfbench.")}


GRAPH = {_module_name(p): _imports(p) for p in PKG.rglob("*.py")}
MODULES = set(GRAPH)


def _resolve(target: str) -> str | None:
    """The module an imported name lives in (``cfbench.stats.paired.x`` -> ``cfbench.stats.paired``)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


EDGES = {m: {r for t in targets if (r := _resolve(t)) and r != m} for m, targets in GRAPH.items()}

#: layer -> layers it must never import
FORBIDDEN = {
    "core": {"io", "perturb", "judges", "metrics", "stats", "studies", "report", "cli", "view"},
    "io": {"perturb", "judges", "metrics", "stats", "studies", "report", "cli", "view"},
    "perturb": {"judges", "metrics", "stats", "studies", "report", "cli", "view"},
    "judges": {"perturb", "metrics", "stats", "studies", "report", "cli", "io", "view"},
    "stats": {"io", "perturb", "judges", "metrics", "studies", "report", "cli", "view"},
    "metrics": {"perturb", "judges", "studies", "report", "cli", "view"},
    "report": {"perturb", "judges", "studies", "cli"},
    # the run explorer reads results files; it may reuse the review page's diff (perturb.review), never a study
    "view": {"judges", "studies", "cli", "report", "metrics", "stats"},
    # the command line (cfbench/cli/: one module per command, reproduce's machinery) sits on top of everything
    "studies": {"cli"},
    "plugins": {"cli"},
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_generic_layer_imports_nothing_above_it(layer):
    bad = sorted(f"{m} -> {t}" for m, ts in EDGES.items() if _layer(m) == layer
                 for t in ts if _layer(t) in FORBIDDEN[layer])
    assert bad == []


def test_a_study_imports_no_other_study():
    bad = sorted(f"{m} -> {t}" for m, ts in EDGES.items() if m.startswith("cfbench.studies.")
                 for t in ts if t.startswith("cfbench.studies.") and t.split(".")[2] != m.split(".")[2])
    assert bad == []


def test_no_import_cycle():
    # Tarjan's strongly connected components over module-level edges; a package's
    # __init__ importing its own submodules is not a cycle worth reporting.
    def is_parent(a: str, b: str) -> bool:
        return b.startswith(a + ".")

    edges = {m: {t for t in ts if not is_parent(m, t) and not is_parent(t, m)} for m, ts in EDGES.items()}
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert sccs == []


def test_the_graph_is_real():
    # the checks above would pass vacuously on an empty graph
    assert len(MODULES) > 40
    assert "cfbench.judges.runner" in EDGES["cfbench.studies.contact_center_qa.requests"] or any(
        t.startswith("cfbench.judges") for t in EDGES["cfbench.studies.contact_center_qa.requests"])
