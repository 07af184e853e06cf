"""Identity-tone fresh-audit tables from per-prompt statistics: any chunking of the replies, updated into
separate states and merged in any order, gives the tables of one state of all replies (``audit.new_state``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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
    """Two scripted assistants on 6 prompts, with a failed call, a blank reply and a cut reply marked."""
    variants = A.audit_design(P.load_prompts(6), seed=0, source="test")
    r, _ = P.generate_advice(["scripted:identity-advice", "scripted:garbage"], variants,
                             config=P.advice_config(seed=0, max_tokens=300), system=None, cache=False)
    r = r.reset_index(drop=True)
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


def _cuts(rng: np.random.Generator, n: int, k: int) -> list[tuple[int, int]]:
    inner = sorted(rng.integers(0, n + 1, size=k - 4).tolist())
    one = int(rng.integers(0, max(n - 1, 1)))
    edges = sorted([0, 0, one, one + 1, *inner, n, n])
    return list(zip(edges[:-1], edges[1:]))


def test_one_state_has_every_table_with_rows(case):
    name, rows, t = case
    for k, v in t.tables.items():
        assert len(v), f"{name}: {k}"
    p = t.tables["fresh_pairs_described"]
    assert p["ci_high"].notna().any() and (p["n"] > 0).all()
    assert t.summary["n_replies"] == len(rows)


@pytest.mark.parametrize("seed", [0])
def test_random_row_chunks_in_separate_states_merge_to_one_state(case, seed):
    """Replies shuffled and cut at random positions (empty and one-row chunks included, so a prompt's replies
    land in several states), each chunk its own state, merged in a random order."""
    name, rows, want = case
    rng = np.random.default_rng(seed)
    f = rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)
    states = [A.new_state(_lexicons()).update(f.iloc[a:b]) for a, b in _cuts(rng, len(f), 9)]
    order = rng.permutation(len(states))
    merged = states[order[0]]
    for i in order[1:]:
        merged.merge(states[i])
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
    pool = [states[i] for i in rng.permutation(k)]
    while len(pool) > 1:
        i, j = sorted(rng.choice(len(pool), size=2, replace=False))
        pool[i].merge(pool.pop(j))
    _assert_same(pool[0].compute(**OPTS), want, name)
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
