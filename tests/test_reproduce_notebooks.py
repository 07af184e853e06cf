"""What a student opens: every figure embedded, provenance in the notebook, the cfbench kernel, no outputs
committed, one line for sections a config did not run.

One module-scoped run executes every study notebook on the smoke config (scripted test doubles) into
a temporary folder; the checks read what it wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from cfbench.cli.reproduce import MARKER, provenance_markdown, reproduce, studies

pytest.importorskip("papermill")
REPO = Path(__file__).resolve().parents[1]
STUDIES = ("contact_center_qa", "identity_tone", "judge_bias", "shopflow")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke-results")
    info = reproduce("smoke", results_dir=out)
    return out, info


def _outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _text(nb) -> str:
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                     for o in _outputs(nb))


@pytest.mark.parametrize("study", STUDIES)
def test_every_png_the_run_wrote_is_embedded_in_the_executed_notebook(smoke, study):
    out, _ = smoke
    folder = out / study / "smoke"
    nb = nbformat.read(folder / f"{study}.ipynb", as_version=4)
    pngs = sorted(folder.glob("*.png"))
    images = [o for o in _outputs(nb) if "image/png" in o.get("data", {})]
    assert pngs, f"{study} wrote no figure"
    assert len(images) >= len(pngs), (study, len(images), [p.name for p in pngs])
    figure_reprs = [o for o in _outputs(nb) if "<Figure size" in "".join(o.get("data", {}).get("text/plain", ""))]
    assert figure_reprs == []  # a figure shown as its text repr is a figure the reader never sees


@pytest.mark.parametrize("study", STUDIES)
def test_the_executed_notebook_states_how_it_was_produced(smoke, study):
    out, info = smoke
    folder = out / study / "smoke"
    nb = nbformat.read(folder / f"{study}.ipynb", as_version=4)
    cell = nb.cells[1]
    assert cell.cell_type == "markdown" and "provenance" in cell.metadata.get("tags", [])
    run = json.loads((folder / "run_info.json").read_text())
    assert run == info[study]
    assert run["mode"] == "live" and run["replay"] is False and run["overrides"] == {}
    assert run["cpus"] >= 1 and run["cpu_model"] and run["cache"]["file"].endswith("responses.sqlite")
    assert run["cache"]["replies_added"] >= 0  # what this run put into the cache (0: all read from it)
    for fact in ("**live run**", f"{run['wall_s']:,.0f} s", str(run["cpus"]) + " cores", run["cpu_model"],
                 "--config smoke", run["cache"]["file"], run["started"]):
        assert fact in cell.source, fact
    if run["commit"]:
        assert run["commit"]["sha"][:12] in cell.source
    assert (folder / MARKER).is_file()
    assert nb.metadata["kernelspec"]["name"] == "cfbench"
    assert "Empty DataFrame" not in _text(nb)


def test_provenance_says_replay_and_a_cache_that_was_not_empty():
    text = provenance_markdown({"mode": "replay", "wall_s": 2.0, "cache": {"file": "~/.cache/cfbench/x",
                                                                            "replies_before": 1234,
                                                                            "started_empty": False},
                                "overrides": {"n_items": 4}, "commit": {"sha": "a" * 40, "dirty": True}})
    assert "**replay**" in text and "no model was called" in text and "1,234 replies" in text
    assert "`n_items = 4`" in text and "uncommitted changes" in text


def test_committed_notebooks_have_no_outputs_the_cfbench_kernel_and_write_under_results():
    assert set(studies()) == set(STUDIES)
    for study in STUDIES:
        nb = nbformat.read(REPO / "notebooks" / f"{study}.ipynb", as_version=4)
        assert nb.metadata["kernelspec"] == {"display_name": "Python (cfbench)", "language": "python",
                                             "name": "cfbench"}
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), study
        params = next(c.source for c in code if "parameters" in c.metadata.get("tags", []))
        assert 'output_dir: str = ""' in params, study  # "" by hand: results/<study>/lab/, never notebooks/
        assert "notebook_output_dir(output_dir" in "\n".join(c.source for c in code)


def test_sections_not_run_say_so_in_one_line(tmp_path):
    """Contact center with the fairness arm off and a judge that never flips: one line each, no empty frames."""
    reproduce("smoke", ["contact_center_qa"], results_dir=tmp_path,
              overrides={"fairness": False, "judges": ["scripted:yes"], "coaching": False})
    nb = nbformat.read(tmp_path / "contact_center_qa" / "smoke" / "contact_center_qa.ipynb", as_version=4)
    text = _text(nb)
    assert "Not run in this config: fairness is false" in text
    assert "No main-arm flip to show. Flips (baseline arm, all judges and dimensions): 0 of " in text
    assert "Empty DataFrame" not in text
    info = json.loads((tmp_path / "contact_center_qa" / "smoke" / "run_info.json").read_text())
    assert info["overrides"] == {"fairness": False, "judges": ["scripted:yes"], "coaching": False}


def test_run_all_by_hand_leaves_the_notebooks_folder_clean(tmp_path):
    """As JupyterLab does it: working folder notebooks/, parameters as committed (output_dir "")."""
    import shutil

    import papermill as pm

    from cfbench.cli.reproduce.notebook import kernel_manager, shutdown

    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    (tmp_path / "notebooks").mkdir()
    shutil.copy(REPO / "notebooks" / "shopflow.ipynb", tmp_path / "notebooks" / "shopflow.ipynb")
    km = kernel_manager()
    try:
        pm.execute_notebook(str(tmp_path / "notebooks" / "shopflow.ipynb"), str(tmp_path / "executed.ipynb"),
                            cwd=str(tmp_path / "notebooks"), kernel_name="python3", km=km, progress_bar=False,
                            parameters={"n_boot": 50})
    finally:
        shutdown(km)
    assert [p.name for p in (tmp_path / "notebooks").iterdir()] == ["shopflow.ipynb"]
    lab = tmp_path / "results" / "shopflow" / "lab"
    assert (lab / MARKER).is_file() and len(list(lab.glob("*.png"))) >= 6 and (lab / "summary.json").is_file()


def test_reproduce_runs_where_the_cfbench_kernel_is_not_registered(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    real = KernelSpecManager.get_kernel_spec

    def without_cfbench(self, kernel_name):
        if kernel_name == "cfbench":
            raise NoSuchKernel(kernel_name)
        return real(self, kernel_name)

    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", without_cfbench)
    with pytest.raises(NoSuchKernel):  # the guard is real: asking for the notebooks' kernel now fails
        KernelSpecManager().get_kernel_spec("cfbench")
    info = reproduce("smoke", ["shopflow"], results_dir=tmp_path, overrides={"n_boot": 50})
    assert info["shopflow"]["mode"] == "live" and (tmp_path / "shopflow" / "smoke" / "summary.json").is_file()
