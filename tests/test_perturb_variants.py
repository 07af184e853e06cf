"""make_variants: the tidy frame, one original per item, determinism per (seed, item), helpers."""

from __future__ import annotations

import pandas as pd
import pytest

from cfbench.io.transcripts import load_transcripts, save_transcripts
from cfbench.perturb import (DEFAULT_DIMENSIONS, DIMENSIONS, TABLE_DIMENSIONS, make_variants, rejection_table,
                             side_by_side)
from cfbench.core.schema import VARIANT_COLUMNS
from cfbench.perturb._variants import PROVENANCE_COLUMNS
from cfbench.studies.contact_center_qa.synth import generate_transcripts, shipped_transcripts_path


@pytest.fixture(scope="module")
def shipped():
    return load_transcripts(shipped_transcripts_path())


@pytest.fixture(scope="module")
def frame(shipped):
    return make_variants(shipped, seed=0, progress=False)


def test_fifteen_table_dimensions():
    assert len(TABLE_DIMENSIONS) == 15 and DEFAULT_DIMENSIONS == TABLE_DIMENSIONS
    assert TABLE_DIMENSIONS == ("gender", "ethnicity_name", "ethnicity_cues", "religion_name", "religion_cues",
                                "disability", "past_performance", "agent_profile", "customer_profile", "priming",
                                "contextual_metadata", "directness", "politeness", "formality", "emotional_labor")
    ops = {d: DIMENSIONS[d].operation for d in TABLE_DIMENSIONS}
    assert {d for d, o in ops.items() if o == "metadata_header"} == {
        "past_performance", "agent_profile", "customer_profile", "priming", "contextual_metadata"}
    assert {d for d, o in ops.items() if o == "context_injection"} == {"ethnicity_cues", "religion_cues", "disability"}


def test_frame_shape(frame, shipped):
    assert list(frame.columns) == VARIANT_COLUMNS + PROVENANCE_COLUMNS
    per_item = 1 + sum(len(DIMENSIONS[d].conditions) for d in TABLE_DIMENSIONS)
    assert len(frame) == per_item * len(shipped)
    orig = frame[frame["dimension"] == "original"]
    assert len(orig) == len(shipped) and orig["item_id"].is_unique
    assert (orig["condition"] == "original").all() and orig["variant_id"].str.endswith("::original").all()
    assert frame["variant_id"].is_unique
    assert set(frame["dimension"]) == set(TABLE_DIMENSIONS) | {"original"}
    na = frame[~frame["applicable"]]
    assert (na["turns"].isna()).all() and (na["reason"] != "").all() and (~na["valid"]).all()
    # on the shipped set, every variant that could be made passes the guards
    made = frame[frame["applicable"]]
    assert made["valid"].all(), made.loc[~made["valid"], "rejection_reason"].tolist()
    # not applicable only where the agent's name is absent
    unnamed = {t.id for t in shipped if not t.agent_name}
    assert set(na["item_id"]) <= unnamed and unnamed


def test_rejection_table_and_side_by_side(frame, shipped):
    tab = rejection_table(frame)
    assert list(tab["dimension"]) == list(TABLE_DIMENSIONS)
    assert (tab["n_rejected"] == 0).all() and (tab["n_made"] > 0).all()
    from cfbench.perturb import identify_turns

    item = next(t.id for t in shipped if t.agent_name and identify_turns(t).gender_words)
    sbs = side_by_side(frame, item)
    assert set(sbs["dimension"]) == set(TABLE_DIMENSIONS)
    hdr = sbs[sbs["where"] == "header"]
    assert set(hdr["dimension"]) == {"past_performance", "agent_profile", "customer_profile", "priming",
                                     "contextual_metadata"}
    g = sbs[sbs["dimension"] == "gender"]
    assert (g["original"] != g["variant"]).all() and len(g) >= 2
    with pytest.raises(KeyError):
        side_by_side(frame, "no-such-item")


def test_same_seed_and_item_give_the_same_variants_whatever_the_batch(shipped):
    small = make_variants(shipped[3:5], seed=4, progress=False)
    big = make_variants(shipped, seed=4, progress=False)
    sub = big[big["item_id"].isin([t.id for t in shipped[3:5]])].reset_index(drop=True)
    pd.testing.assert_frame_equal(small, sub)
    other = make_variants(shipped[3:5], seed=5, progress=False)
    assert not small["turns"].equals(other["turns"])


def test_path_input_unknown_dimension_and_duplicates(tmp_path, shipped):
    p = save_transcripts(shipped[:2], tmp_path / "mine.jsonl")
    v = make_variants(p, dimensions=["priming", "disfluency"], seed=0, progress=False)
    assert set(v["dimension"]) == {"original", "priming", "disfluency"}
    with pytest.raises(KeyError):
        make_variants(shipped[:1], dimensions=["height"], progress=False)
    dup = generate_transcripts(1, seed=0) * 2
    from cfbench.core.errors import InputError
    with pytest.raises(InputError):
        make_variants(dup, progress=False)


def test_plain_dict_records_are_validated():
    v = make_variants([{"id": "a", "turns": [{"speaker": "agent", "text": "Hi, this is Wei. How can I help?"},
                                              {"speaker": "customer", "text": "My order is late."},
                                              {"speaker": "agent", "text": "I have reshipped it."},
                                              {"speaker": "customer", "text": "Thanks."}]}],
                      dimensions=["ethnicity_name", "politeness"], progress=False)
    pol = v[(v["dimension"] == "politeness") & (v["condition"] != "original")]
    assert (~pol["applicable"]).all()
    eth = v[v["dimension"] == "ethnicity_name"]
    assert eth["applicable"].all() and eth["valid"].all()
    from cfbench.core.errors import InputError
    with pytest.raises(InputError):
        make_variants([{"id": "b", "turns": [{"speaker": "bot", "text": "x"}]}], progress=False)


def test_each_perturber_has_a_frozen_description_recorded_on_its_rows():
    import dataclasses

    from cfbench.perturb.base import perturbers

    for dim, p in perturbers().items():
        d = p.description
        assert d.name == dim and d.version >= 1 and d.does
        with pytest.raises(dataclasses.FrozenInstanceError):
            d.version = 99  # type: ignore[misc]
        assert d.to_dict()["parameters"] == dict(d.parameters)
    assert perturbers()["religion_cues"].description.to_dict()["parameters"]["cues_version"] == 3
    from cfbench.studies.contact_center_qa.synth import generate_transcripts

    v = make_variants(generate_transcripts(2, seed=0), dimensions=["politeness", "religion_cues"], progress=False)
    tags = v.groupby("dimension")["perturber"].unique().to_dict()
    assert list(tags["original"]) == ["original"]
    assert list(tags["politeness"]) == ["politeness@2"] and list(tags["religion_cues"]) == ["religion_cues@3"]
