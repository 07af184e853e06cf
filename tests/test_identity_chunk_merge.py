"""Identity-tone fresh-audit tables from per-prompt statistics: any chunking of the replies, updated into
separate states and merged in any order, gives the tables of one state of all replies (``audit.new_state``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from merge_util import cuts, merge_as_random_tree, merge_in_random_order

from cfbench.core.errors import InputError
from cfbench.studies.identity_tone import audit as A
from cfbench.studies.identity_tone import prompts as P

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "results" / "identity_tone" / "default"
OPTS = dict(seed=0, n_resamples=300, cap=300)  # fewer resamples than the run's: the same code, faster


def _committed() -> pd.DataFrame:
    """The committed default run's 80 replies (a local model, 10 prompts x 8 identities; read only)."""
    if not (DEFAULT / "fresh_responses.csv").is_file():
        pytest.skip("no committed identity-tone default folder")
    r = pd.read_csv(DEFAULT / "fresh_responses.csv", keep_default_na=False, na_values=[""])
    return r.assign(truncated=pd.array(r["truncated"], dtype="boolean"))


def _scripted() -> pd.DataFrame:
    """Two scripted assistants on 6 prompts, with a failed call, a blank reply and a cut reply marked, and the
    placebo arm (one reply per prompt and model, ``arm = "placebo"``; the identity replies ``arm = "identity"``)."""
    variants = A.audit_design(P.load_prompts(6), seed=0, source="test")
    pv = A.placebo_design(P.load_prompts(6), seed=0, source="test")
    sent = pd.concat([variants, pv[variants.columns]], ignore_index=True)
    r, _ = P.generate_advice(["scripted:identity-advice", "scripted:garbage"], sent,
                             config=P.advice_config(seed=0, max_tokens=300), system=None, cache=False)
    r = r.reset_index(drop=True)
    r["arm"] = np.where(r["variant_id"].isin(set(pv["variant_id"])), A.PLACEBO, "identity")
    r.loc[3, "status"], r.loc[11, "status"] = "error", "empty"
    r["truncated"] = pd.array(r["truncated"], dtype="boolean")
    r.loc[20, "truncated"] = True
    return r


def _lexicons():
    return {"described": P.load_lexicons(), "as_run": P.load_as_run_terms()}


@pytest.fixture(scope="module", params=["committed-default", "scripted-two-models"])
def case(request):
    rows = (_committed() if request.param == "committed-default" else _scripted())
    rows = rows.assign(**{A.ORDER: np.arange(len(rows))})
    return request.param, rows, A.new_state(_lexicons()).update(rows).compute(**OPTS)


def _assert_same(a: A.Audit, b: A.Audit, what: str) -> None:
    assert list(a.tables) == list(b.tables) and list(a.frames) == list(b.frames), what
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True, obj=f"{what}: {name}")
    for name in a.frames:
        pd.testing.assert_frame_equal(a.frames[name], b.frames[name], check_exact=True, obj=f"{what}: {name}")
    assert json.dumps(a.summary, sort_keys=True, default=str) == json.dumps(b.summary, sort_keys=True, default=str)



def test_one_state_has_every_table_with_rows(case):
    name, rows, t = case
    for k, v in t.tables.items():
        assert len(v), f"{name}: {k}"
    p = t.tables["fresh_pairs_described"]
    assert p["ci_high"].notna().any() and (p["n"] > 0).all()
    arm = rows["arm"] if "arm" in rows.columns else pd.Series("identity", index=rows.index)
    assert t.summary["n_replies"] == int((arm != A.PLACEBO).sum())
    if name == "scripted-two-models":  # the placebo arm's table is made from the merged per-prompt statistics too
        pl = t.tables["fresh_placebo_described"]
        assert len(pl) == 8 and (pl.loc[pl["model"] == "scripted:identity-advice", "n_prompts"] > 0).all()
        assert pl["ci_high"].notna().any()


@pytest.mark.parametrize("seed", [0])
def test_random_row_chunks_in_separate_states_merge_to_one_state(case, seed):
    """Replies shuffled and cut at random positions (empty and one-row chunks included, so a prompt's replies
    land in several states), each chunk its own state, merged in a random order."""
    name, rows, want = case
    rng = np.random.default_rng(seed)
    f = rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)
    states = [A.new_state(_lexicons()).update(f.iloc[a:b]) for a, b in cuts(rng, len(f), 9)]
    merged = merge_in_random_order(states, rng)
    _assert_same(merged.compute(**OPTS), want, f"{name} seed {seed}")


def test_whole_prompts_in_sealed_compacted_states_merge_to_one_state(case, tmp_path):
    """Prompts spread over states at random (state 0 empty), each prompt sealed on its own, two states compacted
    after every update, one spilling to disk; merged as a random tree. The bootstrap intervals come out bit for
    bit: prompts are resampled in sorted order."""
    name, rows, want = case
    rng = np.random.default_rng(3)
    ids = sorted(rows["prompt_id"].unique())
    k = len(ids) // 2 + 2
    home = dict(zip(ids, rng.integers(1, k, size=len(ids))))
    states = [A.new_state(_lexicons(), compact_every=1 if i < 3 else 4, spill=tmp_path if i == 1 else None)
              for i in range(k)]
    for pid in rng.permutation(ids):
        states[home[pid]].update(rows[rows["prompt_id"] == pid], complete=True)
    assert not states[0].items
    merged = merge_as_random_tree(states, rng)
    _assert_same(merged.compute(**OPTS), want, name)
    assert list(tmp_path.iterdir()) == []


def test_the_tables_differ_when_a_reply_changes(case):
    """The comparisons above can fail: one reply scored differently changes the tables."""
    name, rows, want = case
    ok = rows.index[rows["status"] == "ok"][0]
    other = rows.copy()
    other.loc[ok, "text"] = "Thank you, this is wonderful, great and excellent advice. " + str(other.loc[ok, "text"])
    with pytest.raises(AssertionError):
        _assert_same(A.new_state(_lexicons()).update(other).compute(**OPTS), want, name)


def test_a_reply_given_twice_or_without_its_position_is_refused(case):
    name, rows, want = case
    twice = A.new_state(_lexicons()).update(rows).merge(A.new_state(_lexicons()).update(rows.iloc[:1]))
    with pytest.raises(InputError, match="given twice"):
        twice.compute(**OPTS)
    with pytest.raises(InputError) as info:
        A.new_state(_lexicons()).update(rows.drop(columns=[A.ORDER])).compute(**OPTS)
    assert info.value.field == A.ORDER


# -- the reproduction of the released workbook: the same state shape over the 480 released replies ---------

@pytest.fixture(scope="module")
def released():
    from cfbench.io import amiri
    from cfbench.studies.identity_tone import reproduction as R

    try:
        wb = amiri.load_amiri()
    except FileNotFoundError:
        pytest.skip("released seed-002 workbook not found (set CFBENCH_AMIRI_PATH)")
    resp = R.released_responses(wb).assign(**{R.ORDER: np.arange(480)})
    lex = dict(as_run_terms=P.load_as_run_terms(), described_lexicons=P.load_lexicons())
    opts = dict(wb=wb, seed=0, n_resamples=200)
    return R, resp, lex, opts, R.new_state(**lex).update(resp).compute(**opts)


def _same_reproduction(a, b, what: str) -> None:
    assert list(a.tables) == list(b.tables) and list(a.frames) == list(b.frames), what
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True, obj=f"{what}: {name}")
    for name in a.frames:
        pd.testing.assert_frame_equal(a.frames[name], b.frames[name], check_exact=True, obj=f"{what}: {name}")
    assert json.dumps(a.summary, sort_keys=True, default=str) == json.dumps(b.summary, sort_keys=True, default=str)


def test_released_replies_in_chunks_and_sealed_prompts_merge_to_one_state(released, tmp_path):
    """The 480 released replies: shuffled and cut at random (prompts split across states), and separately
    whole prompts sealed in compacted states (one spilling), each merged in a random order; both give the
    one-state reproduction, and one reply scored differently does not."""
    R, resp, lex, opts, want = released
    rng = np.random.default_rng(5)
    f = resp.iloc[rng.permutation(len(resp))].reset_index(drop=True)
    states = [R.new_state(**lex).update(f.iloc[a:b]) for a, b in cuts(rng, len(f), 8)]
    merged = states[0]
    for i in rng.permutation(len(states) - 1) + 1:
        merged.merge(states[i])
    _same_reproduction(merged.compute(**opts), want, "random chunks")
    sealed = [R.new_state(**lex, compact_every=1, spill=tmp_path if i == 0 else None) for i in range(4)]
    for pid in rng.permutation(sorted(resp["prompt_id"].unique())):
        sealed[int(rng.integers(0, 4))].update(resp[resp["prompt_id"] == pid], complete=True)
    for i in (2, 3, 1):
        sealed[0].merge(sealed[i])
    _same_reproduction(sealed[0].compute(**opts), want, "sealed prompts")
    assert list(tmp_path.iterdir()) == []
    other = resp.copy()
    other.loc[0, "text"] = "Wonderful, great, excellent and happy advice. " + str(other.loc[0, "text"])
    with pytest.raises(AssertionError):
        _same_reproduction(R.new_state(**lex).update(other).compute(**opts), want, "one reply changed")
