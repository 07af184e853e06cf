"""Loading matched-pair files: good files load, bad ones raise InputError naming pair and field."""

import json
from pathlib import Path

import pytest

from cfbench.core.errors import InputError
from cfbench.io.pairs import PAIR_COLUMNS, load_pairs, pairs_from_records
from cfbench.studies.shopflow import audit_pairs, route_rows, FairnessContract

REPO = Path(__file__).resolve().parents[1]
HEADER = "pair_id,variant,expected_ready,channel,evidence_passed,score\n"


def _csv(tmp_path, body, name="pairs.csv"):
    p = tmp_path / name
    p.write_text(HEADER + body, encoding="utf-8")
    return p


def test_seed_file_loads_as_twenty_tidy_rows():
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv")
    assert list(f.columns[: len(PAIR_COLUMNS)]) == PAIR_COLUMNS
    assert len(f) == 20 and f.pair_id.nunique() == 10
    assert f.groupby("variant").size().to_dict() == {"formal": 10, "conversational": 10}
    assert f.loc[(f.pair_id == "p5") & (f.variant == "conversational"), "score"].item() == 0.56
    assert f.expected_ready.dtype == bool and f.evidence_passed.all()


def test_candidate_scores_load_from_their_column():
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv", score_column="candidate_score")
    assert f.loc[(f.pair_id == "n3") & (f.variant == "conversational"), "score"].item() == 0.56
    assert "candidate_score" not in f.columns


def test_shipped_pairs_are_complete_synthetic_and_roughly_60_40():
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/pairs.jsonl", score_column=None)
    assert f.pair_id.nunique() >= 40
    assert f.synthetic.all()
    share_ready = f.groupby("pair_id").expected_ready.first().mean()
    assert 0.5 <= share_ready <= 0.7
    assert set(f.channel) == {"chat", "email"}
    assert f.score.isna().all()
    assert (f.request.str.len() > 0).all() and (f.reply.str.len() > 0).all()


def test_missing_variant_names_the_pair(tmp_path):
    p = _csv(tmp_path, "a1,formal,true,chat,true,0.8\na1,conversational,true,chat,true,0.7\n"
                       "a2,formal,false,chat,true,0.5\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a2" and e.value.field == "variant"
    assert "conversational" in str(e.value)


def test_mismatched_expected_outcome_names_the_pair(tmp_path):
    p = _csv(tmp_path, "a1,formal,true,chat,true,0.8\na1,conversational,false,chat,true,0.7\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1" and e.value.field == "expected_ready"


def test_mismatched_channel_names_the_pair(tmp_path):
    p = _csv(tmp_path, "a1,formal,true,chat,true,0.8\na1,conversational,true,email,true,0.7\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1" and e.value.field == "channel"


@pytest.mark.parametrize("bad", ["1.2", "-0.01", "nan", "NaN", "", "0.7x"])
def test_bad_score_names_row_and_field(tmp_path, bad):
    p = _csv(tmp_path, f"a1,formal,true,chat,true,0.8\na1,conversational,true,chat,true,{bad}\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1/conversational" and e.value.field == "score"


def test_nan_score_in_jsonl_is_rejected(tmp_path):
    p = tmp_path / "p.jsonl"
    rows = [{"pair_id": "a1", "variant": "formal", "expected_ready": True, "channel": "chat", "score": 0.5},
            {"pair_id": "a1", "variant": "conversational", "expected_ready": True, "channel": "chat",
             "score": float("nan")}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1/conversational" and e.value.field == "score"


def test_duplicate_rows_name_the_pair(tmp_path):
    p = _csv(tmp_path, "a1,formal,true,chat,true,0.8\na1,conversational,true,chat,true,0.7\n"
                       "a1,formal,true,chat,true,0.8\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1" and e.value.field == "variant" and "duplicate" in str(e.value)


def test_non_boolean_expected_outcome_is_not_coerced(tmp_path):
    p = _csv(tmp_path, "a1,formal,maybe,chat,true,0.8\na1,conversational,maybe,chat,true,0.7\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1/formal" and e.value.field == "expected_ready"


def test_empty_required_cell_is_reported(tmp_path):
    p = _csv(tmp_path, "a1,formal,true,,true,0.8\na1,conversational,true,chat,true,0.7\n")
    with pytest.raises(InputError) as e:
        load_pairs(p)
    assert e.value.record == "a1" and e.value.field == "channel"


def test_unexpected_variant_is_reported(tmp_path):
    p = _csv(tmp_path, "a1,formal,true,chat,true,0.8\na1,slang,true,chat,true,0.7\n")
    with pytest.raises(InputError) as e:
        load_pairs(p, variants=["formal", "conversational"])
    assert e.value.record == "a1" and e.value.field == "variant"


def test_blank_jsonl_line_and_bad_json_are_reported(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"pair_id": "a1"}\n\n')
    with pytest.raises(InputError, match="line 2"):
        load_pairs(p)
    p.write_text('{"pair_id": "a1",\n')
    with pytest.raises(InputError, match="not valid JSON"):
        load_pairs(p)


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="unsupported"):
        load_pairs(_csv(tmp_path, "", name="x.txt"))
    with pytest.raises(InputError, match="not found"):
        load_pairs(tmp_path / "nope.csv")


def test_missing_score_field_when_scores_required():
    recs = [{"pair_id": "a1", "variant": v, "expected_ready": True, "channel": "chat"}
            for v in ("formal", "conversational")]
    with pytest.raises(InputError) as e:
        pairs_from_records(recs)
    assert e.value.field == "score" and e.value.record == "a1/formal"
    assert pairs_from_records(recs, score_column=None).score.isna().all()


@pytest.mark.parametrize("t", [-0.1, 1.5, float("nan"), "high"])
def test_threshold_outside_unit_interval_is_rejected(t):
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv")
    with pytest.raises(InputError) as e:
        route_rows(f, t)
    assert e.value.field == "threshold"
    c = FairnessContract.from_yaml(REPO / "cfbench/studies/shopflow/data/contract.yaml")
    with pytest.raises(InputError):
        audit_pairs(f, c, threshold=t)
