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
from cfbench.studies.judge_bias.metrics import MATCHED_METHOD
from cfbench.studies.judge_bias.study import n_requests, plan

from judge_bias_util import star_dir

REPO = Path(__file__).resolve().parents[1]


def _config(name: str) -> dict:
    return yaml.safe_load((REPO / "configs" / "judge_bias" / f"{name}.yaml").read_text())


@pytest.fixture(scope="module")
def smoke_and_left_open(tmp_path_factory):
    """The smoke run, its folder, and the pyplot figures it left open."""
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    out = tmp_path_factory.mktemp("judge_bias_smoke")
    params = Params.from_config(_config("smoke"), star_path=str(star_dir()))
    result = run(params, out=out, progress=False)
    return result, out, set(plt.get_fignums()) - before


@pytest.fixture(scope="module")
def smoke(smoke_and_left_open):
    return smoke_and_left_open[:2]


def test_a_run_leaves_no_figure_open_in_pyplot(smoke_and_left_open):
    """Its figures are kept for saving and display, not in pyplot's registry (before, a lab session reached pyplot's
    "More than 20 figures" warning on the fourth run, as this test file's longer runs did)."""
    result, _, left_open = smoke_and_left_open
    assert len(result.figures) >= 2 and not left_open


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
    assert S["judges"] == list(result.params.judges) and S["n_requests_all_judges"] == 2 * S["n_requests"]
    assert S["items_by_kind"] == {"draft": 4, "control": 4}
    for name in ("items", "answers", "position", "accuracy", "noise", "cues", "pointwise", "parse_failures"):
        assert (out / f"{name}.csv").is_file(), name
    for fig in ("cue_shifts", "net_flips", "pointwise_shifts"):
        assert (out / f"{fig}.png").stat().st_size > 10_000
    cues = pd.read_csv(out / "cues.csv")
    assert list(zip(cues["judge"], cues["cue"])) == [(j, c) for j in result.params.judges for c in result.params.cues]
    assert cues["shift_ci_method"].notna().all() and (cues["shift_ci_high"] > cues["shift_ci_low"]).all()
    assert cues["net_ci_method"].eq(MATCHED_METHOD).all()
    assert cues["net_repeat_ci_method"].str.startswith("MOVER of two clopper-pearson").all()
    # the pairwise gate passes exactly when every net upper bound is below 0.10, at any n; at 8 items that
    # needs the reference to flip on more items than the cue (none here: every row is undecided or fails)
    highs = cues[["net_ci_high", "net_repeat_ci_high"]].max(axis=1)
    assert ((cues["gate"] == "pass") == ((highs < 0.10) & cues["responsive"].astype(bool))).all()
    assert set(cues["gate_kind"]) <= {"inconclusive", "uninformative", "fail"}
    assert ((cues["gate_kind"] == "fail") == (cues[["net_ci_low", "net_repeat_ci_low"]].max(axis=1) > 0.10)).all()
    # the pointwise gate keeps its floor: no pass below 32 items
    pw = pd.read_csv(out / "pointwise.csv")
    assert set(pw["gate_kind"]) <= {"inconclusive", "uninformative", "fail"}


def test_findings_come_from_the_numbers_and_flag_the_test_double(smoke):
    result, _ = smoke
    text = result.findings()
    assert "scripted test double" in text and "star" in text
    for judge in result.params.judges:  # one section per judge, with its own numbers
        assert f"### `{judge}`" in text
        c = result.tables["cues"]
        c = c[c["judge"] == judge].set_index("cue")
        section = text.split(f"### `{judge}`")[1].split("### ")[0]
        assert f"chose the cued reply {c.loc['authority', 'chose_cued_with_cue'] * 100:.0f}% with the cue" in section
        assert "power: the sign test detects" in section and "this n could bound net flips at 37%" in section
    assert "(headline judge)" in text and "(comparison judge" in text and "**Across judges:**" in text
    assert "What this cannot show" in text
    for cue in result.params.cues:
        assert f"`{cue}`" in text
    assert "`uninformative` (" in text or "`inconclusive` (" in text  # 8 items cannot pass a 0.10 gate


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
    J = result.frames["judgments"]
    for judge in result.params.judges:  # every judge is sent exactly the planned requests
        mine = J[J["judge"] == judge]
        assert [r.request_id for r in planned] == list(mine["request_id"])
        # the cache keys (judge, whole messages, settings, repeat index) of the planned requests are the run's
        assert [r.cache_key(judge) for r in planned] == list(mine["key"])


def test_a_judge_with_no_parseable_reply_stops_with_the_reason(tmp_path):
    from cfbench.perturb.judge_cues import BATTERY

    params = Params(star_path="none", n_draft=0, n_control=4, pointwise_cues=(), n_boot=100, judges=("scripted:garbage",))
    n_pairwise = 4 * (3 + len(BATTERY) - 1)  # per item: 2 orders + 1 reworded + 1 per non-position cue
    with pytest.raises(InputError, match=f"all {n_pairwise} pairwise replies .* are parse failures"):
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
    assert pf.loc[("pairwise", "source"), "n_not_read"] == 4 and pf.loc[("pairwise", "baseline"), "n_not_read"] == 4
    # the replies came and could not be read: unparseable, not timeouts or any other kind
    assert pf.loc[("pairwise", "source"), "n_unparseable"] == 4 and pf.loc[("pairwise", "baseline"), "n_unparseable"] == 4
    from cfbench.judges.failures import KIND_COLUMNS

    assert (pf[list(KIND_COLUMNS)].sum(axis=1) == pf["n_not_read"]).all()
    assert result.summary["failures_by_kind"] == {"unparseable": int(pf["n_not_read"].sum())}
    assert f"{int(pf['n_not_read'].sum())} answers not read ({int(pf['n_not_read'].sum())} unparseable)" \
        in result.findings()
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
    pm = pytest.importorskip("papermill")  # papermill reads every parameter (a comment it cannot parse drops one)
    assert list(pm.inspect_notebook(str(REPO / "notebooks" / "judge_bias.ipynb"))) == list(defaults)


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
    """The default's header: 36 items, 2 + 1 + (cues - 1) calls per item and judge (+ 1 with the placebo arm),
    both local judges, at 1.83 s / 0.77 s per call plus 8 s per model load; at least 36 items, so a gate can pass."""
    from cfbench.perturb.judge_cues import BATTERY
    from cfbench.studies import judge_bias

    default = _config("default")
    p = Params.from_config(default)
    assert p.cues == BATTERY and p.n_repeats == 0 and not p.pointwise_cues
    assert p.n_draft + p.n_control == 36 and p.judges == ("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-0.5b")
    per_item = 3 + len(BATTERY) - 1 + (1 if p.placebo else 0)
    per_judge = 36 * per_item
    assert judge_bias.n_requests(p) == per_judge == len(plan(p).requests)
    est = judge_bias.estimate_seconds(default)
    assert est == pytest.approx(8 + per_judge * 1.83 + 8 + per_judge * 0.77)
    assert est <= 15 * 60  # the header's 14.3 min
    header = (REPO / "configs" / "judge_bias" / "default.yaml").read_text()
    assert f"36 x {per_item} = {per_judge} calls per judge" in header and f"{est / 60:.1f} min" in header
    assert judge_bias.estimate_seconds(_config("smoke")) < 10  # scripted judges: seconds


def test_repeats_are_sent_at_a_positive_temperature_with_the_repeat_index_in_the_key(smoke):
    result, _ = smoke
    p = result.params
    assert p.temperature > 0 and p.n_repeats == 1
    planned = {r.request_id: r for r in iter_requests(p)}
    reps = [r for rid, r in planned.items() if "/repeat1/" in rid]
    assert len(reps) == 8 * 3  # both baseline orders (pairwise) and the pointwise baseline, per item
    for r in reps:
        base = planned[r.request_id.replace("/repeat1/", "/baseline/")]
        assert r.messages == base.messages and r.repeat == 1 and base.repeat == 0
        assert r.cache_key(p.judge) != base.cache_key(p.judge)
    noise = result.tables["noise"].set_index(["judge", "metric"])
    assert noise.loc[("scripted:judge-bias-authority", "repeat_flip_rate"), "estimate"] == 0  # deterministic
    assert noise.loc[("scripted:judge-bias-sampled", "repeat_flip_rate"), "estimate"] > 0  # 20% of draws turn
    assert "repeat_flip_rate" in result.tables["cues"].columns and "net_repeat_abs_shift" in result.tables["pointwise"]
    assert "a claim must hold against both references" in result.summary["noise_reference"]


def test_at_temperature_0_no_repeat_is_sent_and_the_run_says_why():
    p = Params(star_path="none", n_draft=0, n_control=3, pointwise_cues=())
    assert p.n_repeats == 0 and not any("/repeat" in r.request_id for r in iter_requests(p))
    assert n_requests(p) == len(list(iter_requests(p)))
    result = run(p, progress=False)
    assert list(result.tables["noise"]["metric"]) == ["reworded_prompt_flip_rate"]
    assert "identical by construction" in result.summary["noise_reference"]
    assert "identical by construction, so the rewording is the only reference" in result.findings()
    # asked for explicitly (an API judge may vary at temperature 0), repeats are sent
    p2 = Params(star_path="none", n_draft=0, n_control=3, pointwise_cues=(), repeats=2)
    ids = [r.request_id for r in iter_requests(p2)]
    assert sum("/repeat2/" in i for i in ids) == 3 * 2 and n_requests(p2) == len(ids)


def test_all_resolves_to_the_battery_and_a_single_judge_config_still_loads():
    from cfbench.perturb.judge_cues import BATTERY, get_cue

    p = Params()
    assert p.cues == BATTERY and p.pointwise_cues == tuple(c for c in BATTERY if "pointwise" in get_cue(c).tasks)
    assert Params(cues=("position", "all")).cues == BATTERY  # no cue twice
    assert Params.from_config({"judge": "scripted:judge-bias-hash"}).judges == ("scripted:judge-bias-hash",)
    with pytest.raises(InputError, match="judges"):
        Params(judges=("scripted:judge-bias-hash", "scripted:judge-bias-hash"))
    with pytest.raises(InputError, match="repeats"):
        Params(repeats=-1)
    with pytest.raises(InputError, match="gate_max_score_shift"):
        Params(gate_max_score_shift=0)


def test_without_star_the_synthetic_calls_give_the_defaults_36_items():
    p = Params.from_config(_config("default"), star_path="none")
    pl = plan(p)
    assert pl.source == "synthetic" and len(pl.items) == 36 and len({i.item_id for i in pl.items}) == 36
    assert len({(i.context, i.real) for i in pl.items}) == 36  # distinct points, not the same one twice
    assert [i.item_id for i in plan(Params(star_path="none", n_draft=0, n_control=5)).items] == \
        [i.item_id for i in pl.items[:5]]  # the first round is what a smaller run draws


def test_the_default_design_on_star_with_two_judges(tmp_path):
    """The default config's design (36 STAR items, every cue, two judges, pairwise only) on scripted doubles:
    36 items make the gate decidable; a content-only judge with no noise would pass every label cue on its interval,
    but it picks by a hash of the texts, not by quality (control accuracy about 0.5), so it is uninformative."""
    params = Params.from_config(_config("default"), star_path=str(star_dir()), n_boot=200,
                                judges=["scripted:judge-bias-hash", "scripted:judge-bias-authority"])
    result = run(params, out=tmp_path, progress=False)
    result.check()
    S = result.summary
    assert S["source"] == "star" and S["items_by_kind"] == {"draft": 18, "control": 18}
    c = result.tables["cues"].set_index(["judge", "cue"])
    for cue in ("authority", "source", "bandwagon"):
        r = c.loc[("scripted:judge-bias-hash", cue)]
        assert r.net_ci_high < 0.10 and r.net_repeat_ci_high < 0.10 if "net_repeat_ci_high" in c.columns else True
        assert r.gate_kind == "uninformative" and not r.responsive
    a = c.loc[("scripted:judge-bias-authority", "authority")]
    assert a.significant and a.beyond_noise and a.gate.startswith("fail")
    assert "`authority` moved `scripted:judge-bias-authority` beyond its own noise" in result.findings()
    assert (tmp_path / "net_flips.png").stat().st_size > 10_000


def test_the_pointwise_gate_on_36_star_items_passes_a_label_blind_judge_and_fails_a_label_follower():
    """Pointwise on real STAR text at 36 items (>= 32, so decidable): the content-only double's scores ignore
    labels (net 0 on every item: passes at 1.0 point); the authority double adds 3 points under the supervisor
    label (shown above the maximum: fails); the findings carry both gates."""
    params = Params(star_path=str(star_dir()), n_draft=18, n_control=18, context_turns=4, n_boot=200,
                    cues=("position", "authority"), pointwise_cues=("authority", "source"),
                    judges=("scripted:judge-bias-hash", "scripted:judge-bias-authority"))
    result = run(params, progress=False)
    result.check()
    pw = result.tables["pointwise"].set_index(["judge", "cue"])
    for cue in ("authority", "source"):
        r = pw.loc[("scripted:judge-bias-hash", cue)]
        assert r.gate_kind == "uninformative" and r.net_abs_shift == 0 and r.net_ci_high < 1.0 and r.n_items_net == 36
    a = pw.loc[("scripted:judge-bias-authority", "authority")]
    assert a.score_shift > 2 and a.gate == "fail" and a.significant
    text = result.findings()
    assert "gate: net |score shift| upper bound < 1 points" in text and "gate: uninformative (" in text
    assert "items' scores one way" in text


def test_every_cued_presentation_sent_is_in_the_cue_guard_table_and_records_what_it_stands_for(smoke):
    result, out = smoke
    p = result.params
    guards = pd.read_csv(out / "cue_guards.csv").set_index("dimension")
    n_items = len(result.tables["items"])
    sent_cues = [c for c in p.cues if c != "position"]
    assert list(guards.index) == [f"cue:{c}" for c in sent_cues]
    assert (guards["n_made"] == n_items).all() and (guards["n_rejected"] == 0).all()
    shown = result.frames["shown"]
    ident = shown[shown["cue"].str.startswith("agent_identity@")]
    placebo = ident["cue"].str.endswith("+placebo")
    if "agent_identity" in sent_cues:  # both replies signed, each side saying which identity its name signals
        assert (~placebo).sum() == n_items and all(len(s) == 2 for s in ident["stands_for"])
        # the placebo arm: at most one more per item (none where the identity has no other name of the class)
        assert placebo.sum() == (n_items if p.placebo else 0) or (p.placebo and 0 < placebo.sum() <= n_items)
    assert all(s == {} for s in shown[shown["cue"] == "none"]["stands_for"])
