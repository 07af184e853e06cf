"""Contact-center tables from item statistics: any chunking of the judged rows, updated into separate states
and merged, gives the tables of one state of all rows (``tables.new_state``, ``metrics.state.ItemState``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from merge_util import cuts, merge_as_random_tree, merge_in_random_order

from cfbench.studies.contact_center_qa import Params
from cfbench.studies.contact_center_qa.judging import iter_judged
from cfbench.studies.contact_center_qa.tables import TABLES, new_state

REPO = Path(__file__).resolve().parents[1]
TWO = ["scripted:cc-qa", "scripted:cc-coach"]


def _config(name: str, **over) -> Params:
    m = yaml.safe_load((REPO / "configs" / "contact_center_qa" / f"{name}.yaml").read_text())
    m.update(real_items=0, **over)
    return Params.from_config(m)


#: two judges, every arm and task with rows: the default's sampled conditions on all 15 dimensions (on the
#: shipped synthetic calls, whose agents have names, so the name dimensions and the placebo apply) with a
#: paraphrase and two temperatures, the fairness arm, coaching notes and the placebo arm on; and the answer /
#: rationale / evidence contract
CASES = {
    "default-like": _config("default", judges=TWO, n_items=4, n_boot=50, fairness=True, coaching=True,
                            transcripts_path="", require_agent_name=True,  # synthetic calls: named agents
                            coaching_items=2, placebo=True, dimensions=[], paraphrases=1, repeats=3,
                            robustness_temperatures=[0.0, 0.7]),
    "evidence": _config("smoke", judges=TWO, qa_mode="json", evidence_chars=80, n_items=3, paraphrases=0,
                        coaching=False, n_boot=50),
}
#: tables a case leaves empty by design
EMPTY = {"default-like": {"evidence_checks"}, "evidence": {"placebo_contrast"}}


@pytest.fixture(scope="module", params=sorted(CASES))
def judged(request, tmp_path_factory):
    """(case, params, [(rows, judgments, variants) per transcript]) from the scripted judges, live."""
    import os

    old = os.environ.get("CFBENCH_CACHE_DIR")
    os.environ["CFBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        per = [(rows, judgments, variants) for _, variants, _, judgments, rows, _ in iter_judged(CASES[request.param])]
    finally:
        if old is None:
            os.environ.pop("CFBENCH_CACHE_DIR", None)
        else:
            os.environ["CFBENCH_CACHE_DIR"] = old
    return request.param, CASES[request.param], per, _one_state(per, CASES[request.param])


def _tables(state, params) -> dict[str, pd.DataFrame]:
    return state.compute(n_boot=params.n_boot, seed=params.seed)


def _assert_same(a: dict, b: dict, what: str) -> None:
    assert set(a) == set(b) == set(TABLES)
    for name in TABLES:
        pd.testing.assert_frame_equal(a[name].reset_index(drop=True), b[name].reset_index(drop=True),
                                      check_exact=False, rtol=1e-12, atol=1e-12, obj=f"{what}: {name}")


def _one_state(per, params):
    state = new_state()
    for rows, judgments, variants in per:
        state.update(rows, judgments, variants, complete=True)
    return _tables(state, params)



def test_one_state_has_every_table_with_rows(judged):
    case, params, per, t = judged
    for name in TABLES:
        assert len(t[name]) or name in EMPTY[case], f"{case}: {name} is empty"
    assert t["cfr"]["ci_high"].notna().any() and t["masd"]["ci_high"].notna().any()
    assert len(t["judge_differences"]) and set(t["judge_differences"]["judge_a"]) <= set(TWO)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_row_chunks_in_separate_states_merge_to_one_state(judged, seed):
    """The rows, judgments and variants each cut at random row positions (empty and one-row chunks
    included, so an item's rows land in several states), each chunk its own state, merged in a random
    order: the same tables as one state."""
    case, params, per, want = judged
    rng = np.random.default_rng(seed)
    frames = [pd.concat([p[k] for p in per], ignore_index=True) for k in range(3)]
    states = []
    for k, f in enumerate(frames):
        f = f.iloc[rng.permutation(len(f))].reset_index(drop=True)  # rows in any order
        for a, b in cuts(rng, len(f), 9):
            chunk = [None, None, None]
            chunk[k] = f.iloc[a:b]
            states.append(new_state().update(*chunk))
    assert any(len(s._pending[0][k]) == 0 for s in states for k in range(3) if s._pending[0][k] is not None)
    merged = merge_in_random_order(states, rng)
    _assert_same(_tables(merged, params), want, f"{case} seed {seed}")


@pytest.mark.parametrize("seed", [0])
def test_whole_transcripts_in_sealed_compacted_states_merge_to_one_state(judged, seed, tmp_path):
    """Transcripts spread over states at random (some states empty, some with one transcript), each sealed
    per transcript, compacted after every update, one spilling to disk; merged as a random tree."""
    case, params, per, want = judged
    rng = np.random.default_rng(100 + seed)
    k = len(per) + 2
    home = rng.integers(0, k, size=len(per))
    home[0] = 1  # state 0 stays empty unless drawn; state 1 has at least one transcript
    states = [new_state(compact_every=1, spill=tmp_path if i == 1 else None) for i in range(k)]
    for (rows, judgments, variants), h in zip(per, home):
        states[h].update(rows, judgments, variants, complete=True)
    assert any(not s.items for s in states)
    merged = merge_as_random_tree(states, rng)
    _assert_same(_tables(merged, params), want, f"{case} seed {seed}")
    assert list(tmp_path.iterdir()) == []  # the spilled statistics were read back and removed


def test_compute_after_each_wave_then_more_transcripts(judged):
    """A sequential audit's use: compute after a wave, update with the next, compute again."""
    case, params, per, full = judged
    state = new_state()
    half = len(per) // 2
    for p in per[:half]:
        state.update(*p)  # pending until compute seals them
    first = _tables(state, params)
    _assert_same(first, _one_state(per[:half], params), f"{case} first wave")
    for p in per[half:]:
        state.update(*p, complete=True)
    _assert_same(_tables(state, params), full, f"{case} both waves")
    _assert_same(_tables(state, params), full, f"{case} computed twice")


def test_rows_of_a_sealed_item_are_refused(judged):
    case, params, per, full = judged
    rows, judgments, variants = per[0]
    state = new_state().update(rows.iloc[:5], complete=True)
    with pytest.raises(ValueError, match="arrived after the item's statistics were made"):
        state.update(rows.iloc[5:])
    other = new_state().update(rows.iloc[5:], complete=True)
    with pytest.raises(ValueError, match="arrived after"):
        new_state().update(rows.iloc[:5], complete=True).merge(other)
    with pytest.raises(ValueError, match="arrived after"):  # pending there, sealed here
        new_state().update(rows.iloc[:5], complete=True).merge(new_state().update(rows.iloc[5:]))
    with pytest.raises(ValueError, match="sealed in the other state and still have rows pending in this one"):
        new_state().update(rows.iloc[5:]).merge(new_state().update(rows.iloc[:5], complete=True))
    with pytest.raises(ValueError, match="no 'item_id' column"):
        new_state().update(rows.drop(columns=["item_id"]))


def test_the_tables_differ_when_a_transcript_is_missing(judged):
    """The comparisons above can fail: leaving one transcript out changes the tables."""
    case, params, per, full = judged
    less = _one_state(per[1:], params)
    with pytest.raises(AssertionError):
        _assert_same(less, full, case)


def test_p_yes_first_seen_in_a_later_transcript_still_counts(judged):
    """Flags merge as a union: a judge whose first transcript carries no P(Yes) but a later one does is not
    reported as a judge without P(Yes) (the first transcript's "none" used to win the merge)."""
    from cfbench.studies.contact_center_qa.study import finish_tables

    case, params, per, full = judged
    if params.qa_mode != "compact":
        pytest.skip("P(Yes) exists in the compact contract only")
    state = new_state()
    state.update(per[0][0].assign(p_yes=np.nan), per[0][1], per[0][2], complete=True)
    for p in per[1:]:
        state.update(*p, complete=True)
    judges = set(per[0][0]["judge"])
    assert all(("p_yes_any", j) in state.stats.flags for j in judges)
    tables = finish_tables(_tables(state, params), params, state.stats.flags, state.stats.frame("variants"))
    assert not (tables["warnings"]["kind"] == "p_yes").any()
    alone = new_state().update(per[0][0].assign(p_yes=np.nan), per[0][1], per[0][2], complete=True)
    tables = finish_tables(_tables(alone, params), params, alone.stats.flags, alone.stats.frame("variants"))
    assert set(tables["warnings"].loc[tables["warnings"]["kind"] == "p_yes", "judge"]) == judges  # can fail


#: an error string of each kind the runner writes (the kinds of ``cfbench.judges.failures``)
_ERRORS = {"not sent (plan only)": "not sent (plan only): recorded for `cfbench cache export`",
           "timeout": "RetryableError: timeout: no reply within timeout_s=120 s (gave up after 3 attempt(s))",
           "http error": "JudgeError: 500 Internal Server Error: boom",
           "bad reply": "JudgeError: malformed response: no choices"}


def test_failure_kind_counts_merge_to_one_state(judged):
    """``parse_rates``' kind columns (issue 37) are item statistics like the rest: judgments with failures of
    every kind set on random rows, cut into random chunks and merged, count each kind as one state does, and
    as many as were set."""
    from cfbench.judges.failures import FAILURE_KINDS, KIND_COLUMNS

    case, params, per, _ = judged
    rng = np.random.default_rng(7)
    spoiled, set_kinds = [], []
    for rows, judgments, variants in per:
        j = judgments.copy()
        pick = rng.choice(list(FAILURE_KINDS) + ["reply"] * 4, size=len(j))
        for i, kind in enumerate(pick):
            if kind in _ERRORS:
                j.iloc[i, j.columns.get_loc("error")] = _ERRORS[kind]
                j.iloc[i, j.columns.get_loc("text")] = None
            elif kind == "refusal":
                j.iloc[i, j.columns.get_loc("text")] = "I am unable to rate this call."
            elif kind == "unparseable":
                j.iloc[i, j.columns.get_loc("text")] = "hmm"
        j["parse_ok"] = j["parse_ok"].astype(bool) & (pick == "reply")
        set_kinds += [k for k, ok in zip(pick, j["parse_ok"]) if k != "reply" or not ok]
        spoiled.append((rows, j, variants))
    want = _one_state(spoiled, params)
    frames = [pd.concat([p[k] for p in spoiled], ignore_index=True) for k in range(3)]
    merged = new_state()
    for a, b in cuts(rng, len(frames[1]), 7):
        merged.merge(new_state().update(frames[0].iloc[:0], frames[1].iloc[a:b], None))
    merged.merge(new_state().update(frames[0], None, frames[2]))
    _assert_same(_tables(merged, params), want, f"{case} with failures")
    pr = want["parse_rates"]
    got = {k: int(pr[c].sum()) for k, c in zip(FAILURE_KINDS, KIND_COLUMNS)}
    for kind in FAILURE_KINDS:  # the double's own unreadable replies count as unparseable
        assert got[kind] == sum(1 for k in set_kinds if k == kind) + (
            0 if kind != "unparseable" else sum(1 for k in set_kinds if k == "reply")), kind
    assert all(got[k] > 0 for k in FAILURE_KINDS) and int(pr["n_not_read"].sum()) == len(set_kinds)
