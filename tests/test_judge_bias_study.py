"""The judge-bias study end to end on its smoke config (scripted doubles), and its notebook under papermill."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cfbench.core.errors import InputError
from cfbench.report import InvariantError
from cfbench.studies.judge_bias import Params, iter_requests, run
from cfbench.studies.judge_bias.study import n_requests, plan

from judge_bias_util import star_dir

REPO = Path(__file__).resolve().parents[1]


def _config(name: str) -> dict:
    return yaml.safe_load((REPO / "configs" / "judge_bias" / f"{name}.yaml").read_text())


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("judge_bias_smoke")
    params = Params.from_config(_config("smoke"), star_path=str(star_dir()))
    return run(params, out=out, progress=False), out


def test_every_config_is_valid_and_unknown_names_are_rejected():
    for name in ("smoke", "default", "paper"):
        Params.from_config(_config(name), source=f"{name}.yaml")
    with pytest.raises(InputError):
        Params.from_config({"n_items": 3})
    with pytest.raises(InputError):
        Params(cues=("position", "flattery"))
    with pytest.raises(InputError):
        Params(pointwise_cues=("bandwagon",))  # a slot-letter cue has no pointwise form


def test_smoke_run_on_star_writes_tables_figures_and_passes_its_check(smoke):
    result, out = smoke
    checks = result.check()
    assert checks and all(checks.values())
    S = json.loads((out / "summary.json").read_text())
    assert S["source"] == "star" and S["judge_is_test_double"] and S["n_requests"] == n_requests(result.params)
    assert S["items_by_kind"] == {"draft": 4, "control": 4}
    for name in ("items", "answers", "position", "accuracy", "noise", "cues", "pointwise", "parse_failures"):
        assert (out / f"{name}.csv").is_file(), name
    for fig in ("cue_shifts", "net_flips", "pointwise_shifts"):
        assert (out / f"{fig}.png").stat().st_size > 10_000
    cues = pd.read_csv(out / "cues.csv")
    assert list(cues["cue"]) == list(result.params.cues)
    assert cues["shift_ci_method"].notna().all() and (cues["shift_ci_high"] > cues["shift_ci_low"]).all()


def test_findings_come_from_the_numbers_and_flag_the_test_double(smoke):
    result, _ = smoke
    text = result.findings()
    assert "scripted test double" in text and "star" in text
    c = result.tables["cues"].set_index("cue")
    assert f"{c.loc['authority', 'chose_cued_with_cue'] * 100:.0f}%" in text
    for cue in result.params.cues:
        assert f"`{cue}`" in text
    assert "not decidable at this n" in text  # 8 items cannot pass a 0.10 gate


def test_the_authority_double_is_caught_and_the_content_only_double_is_not(tmp_path):
    """A judge that follows the supervisor label moves toward it beyond noise at 30 items; a judge that
    reads only the reply texts shows no label-cue shift and full position consistency."""
    kw = dict(star_path=str(star_dir()), n_draft=15, n_control=15, pointwise_cues=(), n_boot=300)
    biased = run(Params(judges=("scripted:judge-bias-authority",), **kw), progress=False).tables["cues"].set_index("cue")
    assert biased.loc["authority", "significant"] and biased.loc["authority", "beyond_noise"]
    assert biased.loc["authority", "shift_ci_low"] > 0
    assert biased.loc["authority", "gate"].startswith("fail")  # shown above 0.10, whatever the n
    fair = run(Params(judges=("scripted:judge-bias-hash",), **kw), progress=False)
    t = fair.tables["cues"].set_index("cue")
    for cue in ("authority", "source", "bandwagon", "position"):
        assert t.loc[cue, "shift"] == 0 and not t.loc[cue, "significant"]
        assert t.loc[cue, "shift_ci_low"] < 0 < t.loc[cue, "shift_ci_high"]
    assert fair.tables["position"].set_index("metric").loc["position_consistency", "estimate"] == 1.0
    fair.check()


def test_iter_requests_are_exactly_what_run_sends(smoke):
    result, _ = smoke
    planned = list(iter_requests(result.params))
    assert [r.request_id for r in planned] == result.sent_ids
    assert [r.request_id for r in planned] == list(result.frames["judgments"]["request_id"])
    # the cache keys (judge, whole messages, settings) of the planned requests are the ones the run used
    assert [r.cache_key(result.params.judge) for r in planned] == list(result.frames["judgments"]["key"])


def test_a_judge_with_no_parseable_reply_stops_with_the_reason(tmp_path):
    params = Params(star_path="none", n_draft=0, n_control=4, pointwise_cues=(), n_boot=100, judges=("scripted:garbage",))
    with pytest.raises(InputError, match="all 28 pairwise replies .* are parse failures"):
        run(params, out=tmp_path, progress=False)
    assert (tmp_path / "answers.csv").is_file() and not (tmp_path / "cues.csv").exists()


def test_partial_parse_failures_are_counted_and_excluded_not_read_as_verdicts(tmp_path):
    from cfbench.judges.scripted import register_script
    from cfbench.studies.judge_bias.tasks import _script

    good = _script(False)
    # every request of the first item's "source" cue and one baseline answer fail to parse
    register_script("judge-bias-test-partial", lambda r: "Both replies are fine" if (
        "/source/" in r.request_id or r.request_id.endswith("/baseline/realA")) and "cc" in r.request_id else good(r))
    params = Params(star_path="none", n_draft=0, n_control=4, pointwise_cues=(), n_boot=100,
                    judges=("scripted:judge-bias-test-partial",))
    result = run(params, out=tmp_path, progress=False)
    result.check()
    pf = result.tables["parse_failures"].set_index(["task", "condition"])
    assert pf.loc[("pairwise", "source"), "failures"] == 4 and pf.loc[("pairwise", "baseline"), "failures"] == 4
    cues = result.tables["cues"].set_index("cue")
    assert cues.loc["source", "n_items"] == 0 and cues.loc["source", "shift_ci_method"].startswith("none:")
    assert result.tables["position"].set_index("metric").loc["position_consistency", "n_items"] == 0
    # authority is compared with the baseline answer in the same order: items asked in order realA lost theirs
    in_b = int((result.tables["items"]["single_order"] == "realB").sum())
    assert cues.loc["authority", "n_items"] == in_b and in_b > 0


def test_check_names_a_broken_invariant(smoke):
    result, _ = smoke
    saved = result.summary["n_requests"]
    result.summary["n_requests"] = saved + 1
    try:
        with pytest.raises(InvariantError, match="every planned request"):
            result.check()
    finally:
        result.summary["n_requests"] = saved


def test_plan_is_seeded_and_item_grouped():
    p1 = plan(Params(star_path="none", n_draft=1, n_control=3))
    p2 = plan(Params(star_path="none", n_draft=1, n_control=3))
    assert [r.request_id for r in p1.requests] == [r.request_id for r in p2.requests]
    assert p1.targets == p2.targets and p1.cue_order == p2.cue_order
    ids = [r.request_id.split("/")[0] for r in p1.requests]
    assert ids == sorted(ids, key=ids.index)  # all requests of one item together (shared prompt prefix)


def test_notebook_parameters_mirror_params():
    import ast

    nb = json.loads((REPO / "notebooks" / "judge_bias.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    src = "".join(cell["source"])
    defaults = {n.target.id: ast.literal_eval(n.value) for n in ast.parse(src).body}
    assert list(defaults)[:2] == ["output_dir", "config_name"] and defaults["output_dir"] == ""  # results/judge_bias/lab/
    assert list(defaults)[2:] == [f.name for f in fields(Params)]
    for f in fields(Params):
        v = defaults[f.name]
        assert (tuple(v) if isinstance(v, list) else v) == f.default, f.name
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")


@pytest.mark.slow
def test_notebook_runs_on_smoke_with_papermill_and_embeds_its_figures(tmp_path):
    pm = pytest.importorskip("papermill")
    params = _config("smoke")
    params.update(output_dir=".", config_name="smoke", star_path=str(star_dir()))
    pm.execute_notebook(str(REPO / "notebooks" / "judge_bias.ipynb"), str(tmp_path / "judge_bias.ipynb"),
                        parameters=params, cwd=str(tmp_path), kernel_name="python3", progress_bar=False)
    for name in ("cues.csv", "position.csv", "summary.json", "cue_shifts.png", "net_flips.png", "pointwise_shifts.png"):
        assert (tmp_path / name).is_file(), name
    nb = json.loads((tmp_path / "judge_bias.ipynb").read_text())
    images = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) == 3
    texts = "".join(o.get("data", {}).get("text/markdown", "") if isinstance(o.get("data", {}).get("text/markdown"), str)
                    else "".join(o.get("data", {}).get("text/markdown", [])) for c in nb["cells"]
                    for o in c.get("outputs", []))
    assert "from **star**" in texts and "scripted test double" in texts
    assert json.loads((tmp_path / "summary.json").read_text())["config"] == "smoke"


def test_audit_on_the_callers_own_pairs_for_two_judges(tmp_path):
    from cfbench.studies import judge_bias

    pairs = [{"id": f"t{k}", "kind": "control",
              "context": [{"speaker": "agent", "text": "Hello, how can I help?"},
                          {"speaker": "customer", "text": f"My parcel number {k} never arrived."}],
              "reply": f"Sorry to hear that. Could you confirm the address for parcel {k}?",
              "alternative": "Have a lovely weekend!"} for k in range(5)]
    res = judge_bias.audit(pairs, judges=["scripted:judge-bias-hash", "scripted:judge-bias-authority"],
                           cues=["position", "authority"], out=tmp_path, progress=False, n_boot=100)
    assert set(res) == {"scripted:judge-bias-hash", "scripted:judge-bias-authority"}
    for spec, r in res.items():
        r.check()
        assert r.summary["source"] == "user" and list(r.tables["cues"]["cue"]) == ["position", "authority"]
        assert (tmp_path / spec.replace(":", "_") / "cues.csv").is_file()
    bad = [dict(pairs[0]), dict(pairs[1], context=[{"speaker": "customer", "text": "hi"},
                                                   {"speaker": "agent", "text": "hello"}])]
    with pytest.raises(InputError, match="t1.*context.*must end with a customer turn"):
        judge_bias.audit(bad, judges=["scripted:judge-bias-hash"])
    with pytest.raises(InputError, match="alternative"):
        judge_bias.audit([pairs[0], dict(pairs[1], alternative=pairs[1]["reply"].upper())],
                         judges=["scripted:judge-bias-hash"])


def test_estimate_seconds_counts_the_configs_calls():
    from cfbench.studies import judge_bias

    default = _config("default")
    assert judge_bias.n_requests(Params.from_config(default)) == 112
    est = judge_bias.estimate_seconds(default)
    assert est == 15 + 112 * 2.0 and 180 <= est <= 300  # "about 4 minutes" as the config says
    assert judge_bias.estimate_seconds(_config("smoke")) < 5
