"""Plugins: a package installed beside cfbench adds a dimension and a judge backend that
``cfbench variants``, ``cfbench judges``, ``cfbench reproduce -p`` and ``audit()`` use, with no cfbench
file edited (entry points), plus the ``--plugin`` flag and the ``plugins:`` config key.

The package (tests/plugin_pkg.py) is pip-installed with ``--target`` into a temporary folder that
goes first on PYTHONPATH of every subprocess, so its entry points are real installed metadata.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cfbench import plugins
from cfbench.core.errors import InputError

from plugin_pkg import write_plugin
from star_util import need_star

ROOT = Path(__file__).resolve().parents[1]


_star_dir = need_star


# ------------------------------------------------------------------------------------------ unit

def test_split_plugin_args_takes_every_flag_form():
    mods, rest = plugins.split_plugin_args(["--plugin", "a.b", "variants", "f.json", "--plugin=c", "--out", "o"])
    assert mods == ["a.b", "c"] and rest == ["variants", "f.json", "--out", "o"]
    with pytest.raises(InputError, match="needs a module"):
        plugins.split_plugin_args(["variants", "--plugin"])


@pytest.mark.parametrize("bad", ["no_such_module_cfb_xyz", "two words", ""])
def test_use_names_the_module_that_fails(bad):
    with pytest.raises(InputError) as e:
        plugins.use([bad], source="cfg.yaml")
    assert e.value.source == "cfg.yaml" and e.value.field == "plugins"


def test_use_rejects_a_mapping():
    with pytest.raises(InputError, match="list of module names"):
        plugins.use({"a": 1}, source="cfg.yaml")


def test_register_checks_the_dimension():
    from cfbench.perturb import Dimension, Perturber
    from cfbench.perturb.base import register

    class Bad(Perturber):
        dimension = Dimension("bad_dim", "Bad", "extra", "teleport", ("a", "b"), ("a", "b"))

    with pytest.raises(ValueError, match="operation"):
        register(Bad)
    with pytest.raises(TypeError):
        register(object())  # type: ignore[arg-type]


def test_unknown_group_is_refused():
    with pytest.raises(ValueError, match="unknown cfbench entry-point group"):
        plugins.entry_points_of("cfbench.nothing")


def test_registry_counts_come_from_the_registry():
    from cfbench.perturb.base import TABLE_DIMENSIONS, count_sentence, dimension_ids

    rows = dimension_ids(table_only=True)
    assert rows == list(TABLE_DIMENSIONS)
    assert count_sentence() == f"13 dimensions ({len(rows)} rows)"


# ------------------------------------------------------------------------- installed package

@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugin")
    pkg = write_plugin(tmp)
    site = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(site), str(pkg)], check=True, capture_output=True, timeout=300)
    assert (site / "cfbench_mini_plugin-0.0.1.dist-info" / "entry_points.txt").is_file()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "CFBENCH_CACHE_DIR": str(tmp / "cache")}
    env.pop(plugins.ENV_VAR, None)
    return tmp, env


def _run(env, *args, cwd=None, timeout=600):
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_variants_cli_uses_the_entry_point_dimension_and_the_flag_one_on_star(plugin_env):
    tmp, env = plugin_env
    star = _star_dir()
    out = tmp / "variants"
    r = _run(env, "-m", "cfbench.cli", "--plugin", "mini_cfplugin.extra", "variants", str(star / "10.json"),
             "--out", str(out), "--dimensions", "age_cue,tenure_cue", "gender", "--quiet")
    assert r.returncode == 0, r.stderr
    v = pd.read_parquet(out / "variants.parquet")
    made = v[v["dimension"].isin(["age_cue", "tenure_cue"])]
    assert sorted(made["condition"]) == ["new", "sixties", "twenties", "veteran"]
    assert made["applicable"].all() and made["valid"].all()
    assert set(made["perturber"]) == {"age_cue@1", "tenure_cue@1"}
    assert made.set_index("condition").loc["sixties", "header"] == "Agent notes:\n- Agent age band: 60-69."
    page = (out / "review.html").read_text()
    assert "Agent age band: 60-69." in page and "Tenure: 12 years." in page
    # without the flag the second dimension is unknown, one clear line
    r = _run(env, "-m", "cfbench.cli", "variants", str(star / "10.json"), "--out", str(tmp / "v2"),
             "--dimensions", "tenure_cue", "--quiet")
    assert r.returncode == 2 and "unknown dimension 'tenure_cue'" in r.stderr and "age_cue" in r.stderr


def test_a_broken_plugin_flag_is_one_line(plugin_env):
    _, env = plugin_env
    r = _run(env, "-m", "cfbench.cli", "--plugin", "mini_cfplugin.nothing_here", "judges")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "mini_cfplugin.nothing_here" in r.stderr


def test_judges_lists_the_plugin_backend_and_every_script(plugin_env):
    _, env = plugin_env
    r = _run(env, "-m", "cfbench.cli", "judges")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("kw ") and "mini_cfplugin.judge:KeywordJudge" in ln for ln in lines)
    for name in ("cc-qa", "cc-coach", "identity-advice", "shopflow-ready", "echo", "yes", "no", "garbage", "fail"):
        hits = [ln for ln in lines if ln.split()[:1] == [f"scripted:{name}"]]
        assert len(hits) == 1 and len(hits[0].split()) > 1, name  # one line each, with what it does


AUDIT = """
import json, sys, warnings
warnings.simplefilter("ignore")
from cfbench.io.dialogues import load_dialogues
from cfbench.studies.contact_center_qa import audit
ts = [t for t in load_dialogues(sys.argv[1]) if t.labels][:4]
r = audit(ts, judges=["kw:thank", "scripted:cc-qa"], questions=["issue_resolution"],
          dimensions=["age_cue", "gender"], n_items=3, n_boot=50, progress=False)
print(json.dumps({"cols": list(r.tables["table2"].columns), "cfr": r.tables["cfr"][["judge", "dimension", "n_pairs"]].values.tolist(),
                  "warnings": r.warnings, "items": r.summary["items"], "acc": r.tables["accuracy"][["judge", "n"]].values.tolist()}))
"""


def test_audit_uses_the_plugin_dimension_and_judge_and_warns_about_what_yields_nothing(plugin_env):
    _, env = plugin_env
    r = _run(env, "-c", AUDIT, str(_star_dir()))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["cols"][-2:] == ["kw:thank", "scripted:cc-qa"]  # the order given, not alphabetical
    assert len(out["items"]) == 3
    judged = {(j, d) for j, d, n in out["cfr"] if n > 0}
    assert ("kw:thank", "age_cue") in judged and ("scripted:cc-qa", "age_cue") in judged
    assert not any(d == "gender" for _, d in judged)  # STAR agents give no name
    w = out["warnings"]
    assert any(x.startswith("dimension gender") and "no agent name" in x for x in w)
    assert any(x.startswith("judge kw:thank has no P(Yes)") and "no log-probs" in x for x in w)
    assert not any("scripted:cc-qa" in x for x in w)
    printed = [ln for ln in r.stdout.splitlines() if ln.startswith("warning: ")]
    assert len(printed) == len(w) == 2
    assert all(n == 3 for _, n in out["acc"])  # accuracy against the customers' own answers


def test_reproduce_notebook_uses_entry_points_and_the_plugins_key(plugin_env):
    tmp, env = plugin_env
    results = tmp / "results"
    r = _run(env, "-m", "cfbench.cli", "reproduce", "--config", "smoke", "--study", "contact_center_qa",
             "-p", "judges", "[kw:thank, scripted:cc-qa]", "-p", "dimensions", "[age_cue, tenure_cue]",
             "-p", "plugins", "[mini_cfplugin.extra]", "-p", "fairness", "false", "-p", "coaching", "false",
             "-p", "n_boot", "50", "--results", str(results))
    assert r.returncode == 0, r.stderr[-3000:]
    run = results / "contact_center_qa" / "smoke"
    t2 = pd.read_csv(run / "table2.csv")
    assert list(t2.columns)[-2:] == ["kw:thank", "scripted:cc-qa"]
    assert {"Agent age", "Agent tenure"} <= set(t2["row"])
    cfr = pd.read_csv(run / "cfr.csv")
    assert set(cfr["dimension"]) == {"age_cue", "tenure_cue"} and (cfr["n_pairs"] > 0).all()
    w = pd.read_csv(run / "warnings.csv")
    assert list(w["kind"]) == ["p_yes"] and list(w["judge"]) == ["kw:thank"]
    assert "plugins" not in json.loads((run / "summary.json").read_text())["params"]


STUDY = """
from cfbench.studies import available, load
assert "mini_quiz" in available() and "contact_center_qa" in available()
quiz = load("mini_quiz")
r = quiz.run(quiz.Params(judges=("kw:thank", "scripted:yes")))
print(r.tables["answers"].values.tolist())
"""


def test_a_plugin_study_is_found_and_runs_with_the_plugin_judge(plugin_env):
    _, env = plugin_env
    r = _run(env, "-c", STUDY)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[['kw:thank', 'Yes 70'], ['scripted:yes', 'Yes']]"
    listing = _run(env, "-m", "cfbench.plugins")
    assert "cfbench.studies" in listing.stdout and "mini_cfplugin.quiz" in listing.stdout


def test_reproduce_runs_a_plugin_study_from_the_notebook_and_configs_it_ships(plugin_env):
    tmp, env = plugin_env
    results = tmp / "results-study"
    r = _run(env, "-m", "cfbench.cli", "reproduce", "--study", "mini_quiz", "--config", "smoke",
             "--results", str(results))
    assert r.returncode == 0, r.stderr[-3000:]
    run = results / "mini_quiz" / "smoke"
    answers = pd.read_csv(run / "answers.csv")
    assert answers.values.tolist() == [["kw:thank", "Yes 70"], ["scripted:yes", "Yes"]]
    nb = json.loads((run / "mini_quiz.ipynb").read_text())
    assert any("How this notebook was produced" in "".join(c["source"]) for c in nb["cells"])
    info = json.loads((run / "run_info.json").read_text())
    assert info["study"] == "mini_quiz" and info["config"] == "smoke"
    missing = _run(env, "-m", "cfbench.cli", "reproduce", "--study", "mini_quiz", "--config", "paper",
                   "--results", str(results))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "configs" in missing.stderr and "paper.yaml" in missing.stderr
