"""Figures draw names as written, and cfbench leaves the user's matplotlib backend alone.

Judge specs, model paths, dimension labels and wordings reach figure text. Before, two ``$`` in such a name
were set as a formula, and a span that is no valid formula (``$\\frac$``) raised while the contact-center
heatmap was laid out, ending the run. And three study figure modules called ``matplotlib.use("Agg")`` on
import, which in a Jupyter kernel switched the inline backend off: a researcher's own figures, made after
running a study notebook in the same kernel, were no longer shown. And the contact-center heatmap measured its
labels with ``fig.canvas.get_renderer()``, which only Agg canvases have: on the svg, pdf or cairo backends
the run ended with an AttributeError."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib import cbook
from matplotlib.text import Text

from cfbench.judges.scripted import _SCRIPTS, register_script

REPO = Path(__file__).resolve().parents[1]
ODD = "$\\frac$"  # no valid formula: mathtext raises on it


def _alias(name: str) -> str:
    """``scripted:<name><ODD>``, answering as the registered script ``name``."""
    register_script(name + ODD, _SCRIPTS[name])
    return f"scripted:{name}{ODD}"


def _drawn_as_written(figures: dict, name: str) -> None:
    assert figures
    shown = []
    for key, fig in figures.items():
        fig.savefig(io.BytesIO(), format="png")  # draws every text; a formula that does not parse raises here
        texts = [t.get_text() for t in fig.findobj(Text) if t.get_text()]
        as_math = [s for t, s in zip(fig.findobj(Text), texts) if t.get_parse_math() and cbook.is_math_text(s)]
        assert not as_math, (key, as_math)
        shown += [s for s in texts if name in s]
    assert shown, f"the name {name!r} is in no figure: this test would not see it drawn"


def test_the_contact_center_figures_draw_a_judge_spec_with_dollars_as_written():
    from cfbench.studies.contact_center_qa import Params, run

    judge = _alias("cc-qa")
    result = run(Params(judges=(judge,), n_items=2, dimensions=("gender", "priming"), n_boot=50,
                        coaching_items=0), progress=False)
    _drawn_as_written(result.figures, judge)


def test_the_judge_bias_figures_draw_judge_specs_with_dollars_as_written():
    import yaml

    from cfbench.studies.judge_bias import Params, run

    from judge_bias_util import star_dir

    cfg = yaml.safe_load((REPO / "configs" / "judge_bias" / "smoke.yaml").read_text())
    cfg["judges"] = [_alias(j.split(":", 1)[1]) for j in cfg["judges"]]
    result = run(Params.from_config(cfg, star_path=str(star_dir())), progress=False)
    _drawn_as_written(result.figures, ODD)


def test_the_shopflow_figures_draw_a_judge_spec_with_dollars_as_written():
    import yaml

    from cfbench.studies.shopflow import Params, run

    cfg = yaml.safe_load((REPO / "configs/shopflow/smoke.yaml").read_text())
    cfg["judge"] = _alias(cfg["judge"].split(":", 1)[1])
    result = run(Params.from_config(cfg, n_boot=200, max_pairs=20, candidate_prompt=""), progress=False)
    _drawn_as_written(result.figures, cfg["judge"])


def test_the_identity_tone_figures_draw_a_model_spec_with_dollars_as_written():
    from cfbench.studies.identity_tone import Params, run

    model = _alias("identity-advice")
    result = run(Params(reproduce_released=False, n_prompts=6, n_resamples=300, fresh_models=(model,)))
    _drawn_as_written(result.figures, model)


def test_building_a_figure_leaves_the_callers_matplotlib_settings_as_they_were():
    import matplotlib

    from cfbench.studies.contact_center_qa import figures as CC
    import pandas as pd

    before = matplotlib.rcParams["text.parse_math"]
    fig = CC.heatmap(pd.DataFrame({"judge": "j", "dimension": ["gender"], "masd": [1.0], "n_items": 8}),
                     value="masd", row_order=["gender"], n="n_items")
    assert matplotlib.rcParams["text.parse_math"] == before is True
    assert all(not t.get_parse_math() for t in fig.findobj(Text))


def _builds_figures(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "subplots", "figure") and isinstance(node.func.value, ast.Name) and node.func.value.id == "plt":
            return True
    return False


def test_every_function_that_builds_a_figure_draws_its_text_as_written():
    found, bare = [], []
    for path in sorted((REPO / "cfbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and _builds_figures(node):
                found.append(f"{path.relative_to(REPO)}:{node.name}")
                names = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in node.decorator_list}
                if "draws_text_as_written" not in names:
                    bare.append(found[-1])
    assert len(found) >= 19 and not bare, bare


def test_importing_every_cfbench_module_leaves_the_matplotlib_backend_alone():
    """In a subprocess: choose a backend, import every module of the package, read the backend back."""
    code = """
import importlib, pkgutil, matplotlib
matplotlib.use("svg")
import matplotlib.pyplot
import cfbench
names = [m.name for m in pkgutil.walk_packages(cfbench.__path__, "cfbench.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(len(names), matplotlib.get_backend())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    n, backend = out.stdout.split()
    assert int(n) > 100 and backend == "svg", out.stdout


def test_every_study_draws_its_figures_on_a_backend_that_is_not_agg():
    """The svg backend's canvas has no ``get_renderer``; a run must not depend on the user's backend."""
    import matplotlib
    import matplotlib.pyplot as plt
    import yaml

    from cfbench.studies import contact_center_qa as CC, identity_tone as IT, judge_bias as JB, shopflow as SF

    from judge_bias_util import star_dir

    was = matplotlib.get_backend()
    plt.switch_backend("svg")
    try:
        runs = [CC.run(CC.Params(n_items=2, dimensions=("gender", "priming"), n_boot=50, coaching_items=0),
                       progress=False),
                JB.run(JB.Params.from_config(yaml.safe_load((REPO / "configs/judge_bias/smoke.yaml").read_text()),
                                             star_path=str(star_dir())), progress=False),
                SF.run(SF.Params.from_config(yaml.safe_load((REPO / "configs/shopflow/smoke.yaml").read_text()),
                                             n_boot=200, max_pairs=20, candidate_prompt=""), progress=False),
                IT.run(IT.Params(reproduce_released=False, n_prompts=6, n_resamples=300))]
        for result in runs:
            assert len(result.figures) >= 2
            for fig in result.figures.values():
                fig.savefig(io.BytesIO(), format="svg")
    finally:
        plt.switch_backend(was)
