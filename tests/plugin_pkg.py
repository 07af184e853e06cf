"""A tiny plugin package, written into a folder by the plugin tests (tests/test_plugins*.py).

It adds a dimension (``age_cue``, a metadata header naming the agent's age band) and a judge
backend (``kw:<word>``, a keyword judge without log-probs) through entry points, and a second
dimension (``tenure_cue``) that only a ``--plugin`` flag or a ``plugins:`` config key brings in.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "cfbench-mini-plugin"
version = "0.0.1"

[project.entry-points."cfbench.perturbers"]
age_cue = "mini_cfplugin.dims:AGE_CUE"

[project.entry-points."cfbench.judges"]
kw = "mini_cfplugin.judge:KeywordJudge"

[project.entry-points."cfbench.studies"]
mini_quiz = "mini_cfplugin.quiz"

[tool.setuptools]
packages = ["mini_cfplugin"]

[tool.setuptools.package-data]
mini_cfplugin = ["*.ipynb", "configs/*.yaml"]
"""

DIMS = '''
from cfbench.perturb import Dimension, Perturber, Variant


class HeaderCue(Perturber):
    """A one-line header before the call; the turns are untouched."""

    def __init__(self, dim_id, label, lines):
        self.lines = lines
        self.dimension = Dimension(dim_id, label, "extra", "metadata_header", tuple(lines), tuple(lines),
                                   "a header line naming the agent's " + label.lower())

    def perturb(self, transcript, ident, condition, *, seed):
        turns = [{"speaker": t.speaker, "text": t.text} for t in transcript.turns]
        return Variant(turns, header="Agent notes:\\n- " + self.lines[condition], operation="metadata_header",
                       checks={"target_turns": []})


AGE_CUE = HeaderCue("age_cue", "Agent age", {"twenties": "Agent age band: 20-29.",
                                               "sixties": "Agent age band: 60-69."})
'''

EXTRA = '''
from cfbench.perturb.base import register
from mini_cfplugin.dims import HeaderCue

register(HeaderCue("tenure_cue", "Agent tenure", {"new": "Tenure: 2 weeks.", "veteran": "Tenure: 12 years."}))
'''

JUDGE = '''
import json

from cfbench.judges.base import Judge, Response


class KeywordJudge(Judge):
    """Yes when the customer's turns contain the keyword (default "thank"); no log-probs."""

    supports_logprobs = False
    supports_json_schema = True
    max_concurrency = 4

    def __init__(self, model, **options):
        self.word = model.lower()
        self.spec = "kw:" + model

    def complete(self, request):
        user = request.messages[-1]["content"]
        customer = " ".join(ln for ln in user.splitlines() if ln.startswith("Customer:")).lower()
        answer = "Yes" if self.word in customer else "No"
        if request.config.json_schema is not None:
            return Response(text=json.dumps({"answer": answer, "confidence": 70}))
        return Response(text=answer + " 70")
'''

QUIZ = '''
"""A two-question study: asks each judge Yes/No questions and tabulates the replies."""
from dataclasses import dataclass

import pandas as pd

from cfbench.judges import GenerationConfig, Request, run_requests
from cfbench.report import StudyResult


@dataclass(frozen=True)
class Params:
    judges: tuple = ("scripted:yes",)


def run(params, out=None):
    reqs = [Request("q0", ({"role": "user", "content": "Customer: thank you"},), GenerationConfig(max_tokens=4))]
    rows = [run_requests(j, reqs, cache=False, progress=False).judgments[["judge", "text"]] for j in params.judges]
    return StudyResult(params=params, tables={"answers": pd.concat(rows, ignore_index=True)})
'''


NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "params", "metadata": {"tags": ["parameters"]},
         "outputs": [], "source": ['output_dir: str = ""  # where the run writes\n',
                                   'config_name: str = "smoke"  # a label\n',
                                   'judges: list = ["scripted:yes"]  # judge specs\n']},
        {"cell_type": "code", "execution_count": None, "id": "run", "metadata": {}, "outputs": [],
         "source": ["from pathlib import Path\n",
                    "from mini_cfplugin.quiz import Params, run\n",
                    "result = run(Params(judges=tuple(judges)))\n",
                    "result.tables['answers'].to_csv(Path(output_dir or '.') / 'answers.csv', index=False)\n",
                    "result.tables['answers']"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}

SMOKE = 'judges: ["kw:thank", "scripted:yes"]\n'


def write_plugin(root: Path) -> Path:
    """Write the package source under ``root``; returns its folder."""
    pkg = root / "mini-plugin"
    (pkg / "mini_cfplugin").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(PYPROJECT)
    (pkg / "mini_cfplugin" / "__init__.py").write_text("")
    for name, body in (("dims", DIMS), ("extra", EXTRA), ("judge", JUDGE), ("quiz", QUIZ)):
        (pkg / "mini_cfplugin" / f"{name}.py").write_text(textwrap.dedent(body))
    # the study's notebook and configs ship beside its module, where `cfbench reproduce` looks for them
    (pkg / "mini_cfplugin" / "mini_quiz.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    (pkg / "mini_cfplugin" / "configs").mkdir()
    (pkg / "mini_cfplugin" / "configs" / "smoke.yaml").write_text(SMOKE)
    return pkg
