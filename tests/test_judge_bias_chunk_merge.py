"""Judge-bias tables from item statistics: any chunking of the parsed answers (and the items rows), updated into
separate states and merged in any order, gives the tables of one state of all rows (``metrics.new_state``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from merge_util import cuts, merge_as_random_tree, merge_in_random_order

from cfbench.studies.judge_bias import metrics as M
from cfbench.studies.judge_bias.study import Params

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "results" / "judge_bias" / "default"


def _committed():
    """The committed default run's answers (two local judges, 36 STAR items; read only) and its parameters."""
    if not (DEFAULT / "answers.csv").is_file():
        pytest.skip("no committed judge-bias default folder")
    params = Params.from_config(yaml.safe_load((REPO / "configs" / "judge_bias" / "default.yaml").read_text()),
                                n_boot=200)  # fewer resamples than the run's 1000: the same code, faster
    return params, pd.read_csv(DEFAULT / "answers.csv"), pd.read_csv(DEFAULT / "items.csv")


def _scripted(tmp_path_factory):
    """The smoke design with two repeats, the pointwise task and the placebo arm, two scripted judges (one sampled),
    live."""
    import os

    from cfbench.studies.judge_bias.study import run

    m = yaml.safe_load((REPO / "configs" / "judge_bias" / "smoke.yaml").read_text())
    m.update(repeats=2, n_boot=200)
    params = Params.from_config(m)
    old = os.environ.get("CFBENCH_CACHE_DIR")
    os.environ["CFBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        r = run(params, progress=False)
    finally:
        if old is None:
            os.environ.pop("CFBENCH_CACHE_DIR", None)
        else:
            os.environ["CFBENCH_CACHE_DIR"] = old
    return params, r.frames["parsed"], r.frames["items"]


@pytest.fixture(scope="module", params=["committed-default", "scripted-repeats-pointwise"])
def case(request, tmp_path_factory):
    params, parsed, items = _committed() if request.param == "committed-default" else _scripted(tmp_path_factory)
    return request.param, params, parsed, items, _compute(M.new_state().update(parsed, items), params)


def _compute(state, params):
    return state.compute(judges=params.judges, cues=params.cues, pointwise_cues=params.pointwise_cues,
                         gate_max_net_flip=params.gate_max_net_flip, gate_max_score_shift=params.gate_max_score_shift,
                         alpha=params.alpha, multiplicity=params.multiplicity, n_boot=params.n_boot, seed=params.seed,
                         placebo_cues=params.placebo_cues)


def _assert_same(a: dict, b: dict, what: str) -> None:
    assert list(a) == list(b), what
    for name in a:  # exact: every estimate and interval bit for bit
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True, obj=f"{what}: {name}")



def test_one_state_has_every_table_with_rows(case):
    name, params, parsed, items, t = case
    want = ["parse_failures", "position", "accuracy", "noise", "cues"] + (["pointwise_control", "pointwise"] if params.pointwise_cues else [])
    want += ["placebo_contrast"] if params.placebo_cues else []
    assert list(t) == want
    if name == "scripted-repeats-pointwise":  # the smoke design runs the placebo arm: its table merges too
        assert params.placebo_cues == ("agent_identity",) and t["placebo_contrast"]["ci_high"].notna().all()
    for k in want:
        assert len(t[k]) and list(t[k]["judge"].unique()) == list(params.judges), f"{name}: {k}"
    assert t["cues"]["net_ci_high"].notna().all() and t["position"]["ci_high"].notna().all()
    if params.n_repeats:
        assert "repeat_flip_rate" in set(t["noise"]["metric"]) and t["cues"]["net_repeat_ci_high"].notna().all()


@pytest.mark.parametrize("seed", [0, 1])
def test_random_row_chunks_in_separate_states_merge_to_one_state(case, seed):
    """The answers and the items rows each shuffled and cut at random positions (empty and one-row chunks
    included, so an item's rows land in several states), each chunk its own state, merged in a random order."""
    name, params, parsed, items, want = case
    rng = np.random.default_rng(seed)
    states = []
    for k, f in enumerate((parsed, items)):
        f = f.iloc[rng.permutation(len(f))].reset_index(drop=True)
        for a, b in cuts(rng, len(f), 9):
            chunk = [None, None]
            chunk[k] = f.iloc[a:b]
            states.append(M.new_state().update(*chunk))
    merged = merge_in_random_order(states, rng)
    _assert_same(_compute(merged, params), want, f"{name} seed {seed}")


@pytest.mark.parametrize("seed", [0])
def test_whole_items_in_sealed_compacted_states_merge_to_one_state(case, seed, tmp_path):
    """Items spread over states at random (some states empty, some with one item), each item sealed on its own,
    compacted after every update, one state spilling to disk; merged as a random tree. The bootstrap intervals
    (position bias, pointwise shifts) come out bit for bit: items are resampled in sorted order."""
    name, params, parsed, items, want = case
    rng = np.random.default_rng(100 + seed)
    ids = list(items["item_id"])
    k = len(ids) // 3 + 2
    home = dict(zip(ids, rng.integers(1, k, size=len(ids))))  # state 0 stays empty
    states = [M.new_state(compact_every=1 if i < 3 else 4, spill=tmp_path if i == 1 else None) for i in range(k)]
    for item in rng.permutation(ids):
        states[home[item]].update(parsed[parsed["item_id"] == item], items[items["item_id"] == item], complete=True)
    assert not states[0].items
    merged = merge_as_random_tree(states, rng)
    _assert_same(_compute(merged, params), want, f"{name} seed {seed}")
    assert list(tmp_path.iterdir()) == []


def test_compute_after_a_wave_then_the_rest(case):
    name, params, parsed, items, want = case
    ids = sorted(items["item_id"])
    first, rest = ids[: len(ids) // 2], ids[len(ids) // 2:]
    state = M.new_state().update(parsed[parsed["item_id"].isin(first)], items[items["item_id"].isin(first)])
    half = _compute(state, params)
    alone = _compute(M.new_state().update(parsed[parsed["item_id"].isin(first)],
                                          items[items["item_id"].isin(first)]), params)
    _assert_same(half, alone, f"{name} first wave")
    state.update(parsed[parsed["item_id"].isin(rest)], items[items["item_id"].isin(rest)], complete=True)
    _assert_same(_compute(state, params), want, f"{name} both waves")


def test_the_tables_differ_when_an_item_is_missing(case):
    """The comparisons above can fail: leaving one item out changes the tables."""
    name, params, parsed, items, want = case
    drop = sorted(items["item_id"])[0]
    less = _compute(M.new_state().update(parsed[parsed["item_id"] != drop], items[items["item_id"] != drop]), params)
    with pytest.raises(AssertionError):
        _assert_same(less, want, name)


def test_answers_without_their_items_row_are_refused_by_name(case):
    name, params, parsed, items, want = case
    item = sorted(items["item_id"])[0]
    from cfbench.core.errors import InputError

    with pytest.raises(InputError, match=f"{item}.*cued_candidate|cued_candidate.*{item}"):
        M.new_state().update(parsed[parsed["item_id"] == item], complete=True)
