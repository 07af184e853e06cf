"""ShopFlow tables from per-pair statistics: any chunking of the scored rows (and the excluded rows), updated into
separate states and merged in any order, gives the tables of one state of all rows (``gate.new_state``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import cfbench.studies.shopflow.study as S
from merge_util import cuts, merge_as_random_tree, merge_in_random_order

from cfbench.core.errors import InputError
from cfbench.io.pairs import load_pairs
from cfbench.studies.shopflow import FairnessContract
from cfbench.studies.shopflow.gate import ORDER, new_state

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "results" / "shopflow" / "default"


def _params(name: str) -> S.Params:
    return S.Params.from_config(yaml.safe_load((REPO / "configs" / "shopflow" / f"{name}.yaml").read_text()))


def _committed():
    """The committed default run's judged rows (a local judge's P(ready) for the 44 shipped pairs; read only),
    put back on the shipped pairs."""
    if not (DEFAULT / "judged_rows.csv").is_file():
        pytest.skip("no committed ShopFlow default folder")
    params = _params("default")
    pairs = S._judged_pairs(params)
    jr = pd.read_csv(DEFAULT / "judged_rows.csv")[["pair_id", "variant", "score", "score_source", "yes_no_mass", "raw"]]
    rows = (pairs.drop(columns=["score", "request", "reply"]).merge(jr, on=["pair_id", "variant"])
            .merge(pairs[["pair_id", "variant"]].assign(**{ORDER: np.arange(len(pairs))}), on=["pair_id", "variant"]))
    return params, S._audit_kw(params, "judged"), rows, None


def _scripted():
    """The smoke design scored live by the scripted judge (about one reply in 25 unparseable: excluded pairs)."""
    params = _params("smoke")
    pairs = S._judged_pairs(params)
    _, _, scored = S._judge(params, pairs, params.prompt, progress=False)
    rows, excluded = S.judged_rows(pairs, scored)
    assert len(excluded)
    return params, S._audit_kw(params, "judged"), rows, excluded


def _seed():
    params = _params("default")
    f = load_pairs(params.path("seed_observations_path"), score_column="score", variants=list(params.variants))
    return params, S._audit_kw(params, "seed"), f.assign(**{ORDER: np.arange(len(f))}), None


@pytest.fixture(scope="module", params=["committed-default", "scripted-smoke", "seed"])
def case(request, tmp_path_factory):
    import os

    old = os.environ.get("CFBENCH_CACHE_DIR")
    os.environ["CFBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        params, kw, rows, excluded = {"committed-default": _committed, "scripted-smoke": _scripted,
                                      "seed": _seed}[request.param]()
    finally:
        if old is None:
            os.environ.pop("CFBENCH_CACHE_DIR", None)
        else:
            os.environ["CFBENCH_CACHE_DIR"] = old
    contract = FairnessContract.from_yaml(params.path("contract_path"))
    opts = dict(contract=contract, thresholds=params.sweep_thresholds(), **kw)
    return request.param, opts, rows, excluded, new_state().update(rows, excluded).compute(**opts)


def _assert_same(a, b, what: str) -> None:
    assert list(a.tables) == list(b.tables), what
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True, obj=f"{what}: {name}")
    assert json.dumps(a.audit.summary(), sort_keys=True, default=str) == json.dumps(b.audit.summary(), sort_keys=True,
                                                                                     default=str), what



def test_one_state_has_every_table_with_rows(case):
    name, opts, rows, excluded, t = case
    for k in ("rates", "flips", "rate_intervals", "interval_checks", "calibration", "threshold_sweep", "rows"):
        assert len(t.tables[k]), f"{name}: {k}"
    assert list(t.tables["rows"]["pair_id"].drop_duplicates()) == list(rows.sort_values(ORDER)["pair_id"].drop_duplicates())
    assert len(t.tables["excluded"]) == (0 if excluded is None else len(excluded))


@pytest.mark.parametrize("seed", [0, 1])
def test_random_row_chunks_in_separate_states_merge_to_one_state(case, seed):
    """Scored and excluded rows each shuffled and cut at random positions (empty and one-row chunks included, so
    a pair's two rows land in different states), each chunk its own state, merged in a random order."""
    name, opts, rows, excluded, want = case
    rng = np.random.default_rng(seed)
    states = []
    for k, f in enumerate((rows, excluded)):
        if f is None:
            continue
        f = f.iloc[rng.permutation(len(f))].reset_index(drop=True)
        for a, b in cuts(rng, len(f), 9):
            chunk = [None, None]
            chunk[k] = f.iloc[a:b]
            states.append(new_state().update(*chunk))
    merged = merge_in_random_order(states, rng)
    _assert_same(merged.compute(**opts), want, f"{name} seed {seed}")


def test_whole_pairs_in_sealed_compacted_states_merge_to_one_state(case, tmp_path):
    """Pairs spread over states at random (state 0 empty), each pair sealed on its own, two states compacted
    after every update, one spilling to disk; merged as a random tree."""
    name, opts, rows, excluded, want = case
    rng = np.random.default_rng(7)
    ex = excluded if excluded is not None else rows.iloc[:0]
    ids = list(dict.fromkeys(list(rows["pair_id"]) + list(ex["pair_id"])))
    k = len(ids) // 4 + 2
    home = dict(zip(ids, rng.integers(1, k, size=len(ids))))
    states = [new_state(compact_every=1 if i < 3 else 5, spill=tmp_path if i == 1 else None) for i in range(k)]
    for pid in rng.permutation(ids):
        states[home[pid]].update(rows[rows["pair_id"] == pid], ex[ex["pair_id"] == pid], complete=True)
    assert not states[0].items
    merged = merge_as_random_tree(states, rng)
    _assert_same(merged.compute(**opts), want, name)
    assert list(tmp_path.iterdir()) == []


def test_the_tables_differ_when_a_pair_is_missing(case):
    name, opts, rows, excluded, want = case
    flipped = want.tables["flips"]["pair_id"].iloc[0]  # a pair that changes a table when left out
    less = new_state().update(rows[rows["pair_id"] != flipped], excluded).compute(**opts)
    with pytest.raises(AssertionError):
        _assert_same(less, want, name)


def test_a_row_given_twice_or_without_its_position_is_refused(case):
    name, opts, rows, excluded, want = case
    twice = new_state().update(rows).merge(new_state().update(rows.iloc[:1]))
    with pytest.raises(InputError, match="given twice") as info:
        twice.compute(**opts)
    assert info.value.record == f"{rows['pair_id'].iloc[0]}/{rows['variant'].iloc[0]}"
    with pytest.raises(InputError) as info:
        new_state().update(rows.drop(columns=[ORDER])).compute(**opts)
    assert info.value.field == ORDER
