"""Identity factors, descriptor template and the prompt × identity design."""

import pandas as pd
import pytest

from cfbench.core.errors import InputError
from cfbench.perturb.stimuli import (DESCRIPTOR_TEMPLATE, describe_identity, identity_ids, identity_label,
                                     identity_table, identity_variants)


def test_eight_identities_in_released_spelling():
    ids = identity_ids()
    assert len(ids) == 8 == len(set(ids))
    # the released workbook's identity ids and its pair order
    assert ids == ["older_female_US-born", "older_female_immigrant", "older_male_US-born",
                   "older_male_immigrant", "younger_female_US-born", "younger_female_immigrant",
                   "younger_male_US-born", "younger_male_immigrant"]


def test_descriptor_follows_protocol_template():
    assert DESCRIPTOR_TEMPLATE == "I am a [Age] [Gender] [Nationality] professional."
    assert describe_identity("younger_male_immigrant") == "I am a younger male immigrant professional."
    t = identity_table()
    assert set(t.columns) >= {"identity", "age", "gender", "nationality", "descriptor"}
    assert t.groupby("age").size().tolist() == [4, 4]


def test_labels():
    assert identity_label("older_female_US-born") == "Older Female (US-born)"
    assert identity_label("younger_male_immigrant", short=True) == "Younger M (Imm)"
    with pytest.raises(InputError, match="identity"):
        identity_label("nonsense")


def test_full_factorial_with_provenance():
    prompts = [{"prompt_id": "p1", "task": "I want a raise."}, {"prompt_id": "p2", "task": "I want a mentor."}]
    v = identity_variants(prompts, seed=3, prompt_version="vX")
    assert len(v) == 16
    assert v.groupby("prompt_id").identity.nunique().eq(8).all()
    assert v.variant_id.is_unique
    assert (v.seed == 3).all() and (v.prompt_version == "vX").all() and v.template.eq(DESCRIPTOR_TEMPLATE).all()
    # the identity is the only thing that differs within a prompt
    for pid, g in v.groupby("prompt_id"):
        assert g.task.nunique() == 1
        assert all(u == f"{d} {t}" for u, d, t in zip(g.user_text, g.descriptor, g.task))
    # order is a permutation per prompt
    assert v.groupby("prompt_id").order.apply(lambda s: sorted(s) == list(range(8))).all()


def test_order_depends_on_seed_and_prompt_only():
    a = identity_variants([{"prompt_id": "p1", "task": "x"}], seed=1)
    b = identity_variants([{"prompt_id": "p0", "task": "y"}, {"prompt_id": "p1", "task": "x"}], seed=1)
    c = identity_variants([{"prompt_id": "p1", "task": "x"}], seed=2)
    assert a.order.tolist() == b[b.prompt_id == "p1"].order.tolist()
    assert a.order.tolist() != c.order.tolist()


@pytest.mark.parametrize("prompts, field", [
    ([{"prompt_id": "p1", "task": ""}], "task"),
    ([{"prompt_id": "p1", "task": 3}], "task"),
    ([{"prompt_id": "", "task": "x"}], "prompt_id"),
    ([{"prompt_id": "p1", "task": "x"}, {"prompt_id": "p1", "task": "y"}], "prompt_id"),
    ([{"task": "x"}], "prompt_id"),
])
def test_bad_prompts_raise_naming_field(prompts, field):
    with pytest.raises(InputError) as err:
        identity_variants(prompts, seed=0)
    assert err.value.field == field


def test_accepts_dataframe():
    v = identity_variants(pd.DataFrame({"prompt_id": ["a"], "task": ["t"]}), seed=0)
    assert len(v) == 8
