"""FairnessContract loading/validation and the release decision."""

from pathlib import Path

import re

import pytest
import yaml

from cfbench.core.errors import InputError
from cfbench.studies.shopflow import FairnessContract, ReleaseRequirement, release_decision

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "cfbench/studies/shopflow/data/contract.yaml").read_text())


def _write(tmp_path, data):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_shipped_contract():
    c = FairnessContract.from_yaml(REPO / "cfbench/studies/shopflow/data/contract.yaml")
    assert (c.primary_metric, c.max_tpr_gap, c.max_fpr_gap) == ("equal_opportunity", 0.10, 0.10)
    assert (c.min_positive_per_slice, c.min_negative_per_slice) == (50, 30)
    assert [r.name for r in c.release_requirements][0] == "synthetic_regression_pairs_pass"


@pytest.mark.parametrize("key,value", [
    ("max_tpr_gap", 1.5), ("max_fpr_gap", -0.1), ("max_tpr_gap", "small"), ("min_positive_per_slice", -1),
    ("min_negative_per_slice", 2.5), ("primary_metric", "accuracy"),
])
def test_bad_values_name_the_field(tmp_path, key, value):
    with pytest.raises(InputError) as e:
        FairnessContract.from_yaml(_write(tmp_path, {**BASE, key: value}))
    assert e.value.field == key and str(tmp_path) in str(e.value)


def test_unknown_and_missing_keys(tmp_path):
    with pytest.raises(InputError) as e:
        FairnessContract.from_yaml(_write(tmp_path, {**BASE, "max_tpr_gaps": 0.1}))
    assert e.value.field == "max_tpr_gaps"
    data = dict(BASE)
    del data["max_fpr_gap"]
    with pytest.raises(InputError) as e:
        FairnessContract.from_yaml(_write(tmp_path, data))
    assert e.value.field == "max_fpr_gap"


def test_bad_requirements(tmp_path):
    reqs = [{"name": "owner", "source": "attested"}]
    with pytest.raises(InputError) as e:
        FairnessContract.from_yaml(_write(tmp_path, {**BASE, "release_requirements": reqs}))
    assert e.value.record == "owner" and e.value.field == "attested"
    reqs = [{"name": "x", "source": "metric_checks"}, {"name": "x", "source": "minimum_support"}]
    with pytest.raises(InputError, match="twice"):
        FairnessContract.from_yaml(_write(tmp_path, {**BASE, "release_requirements": reqs}))
    reqs = [{"name": "x", "source": "metric_checks", "attested": True}]
    with pytest.raises(InputError):
        FairnessContract.from_yaml(_write(tmp_path, {**BASE, "release_requirements": reqs}))


def _contract(*attested):
    reqs = [ReleaseRequirement("gaps", "metric_checks"), ReleaseRequirement("support", "minimum_support")]
    reqs += [ReleaseRequirement(f"signoff{i}", "attested", a) for i, a in enumerate(attested)]
    return FairnessContract("equal_opportunity", 0.1, 0.1, 50, 30, tuple(reqs))


def test_release_approved_only_when_everything_holds():
    d = release_decision(_contract(True, True), metric_checks_pass=True, support_pass=True)
    assert d.decision == "APPROVED" and d.missing == ()
    d = release_decision(_contract(True, False), metric_checks_pass=False, support_pass=True)
    assert d.decision == "BLOCKED" and d.missing == ("gaps", "signoff1")
    d = release_decision(_contract(False, False), metric_checks_pass=False, support_pass=False)
    assert d.missing == ("gaps", "support", "signoff0", "signoff1")


def test_contract_without_requirements_gates_on_the_computed_checks():
    c = FairnessContract("equalized_odds", 0.1, 0.1, 1, 1)
    assert release_decision(c, metric_checks_pass=True, support_pass=True).decision == "APPROVED"
    assert release_decision(c, metric_checks_pass=True, support_pass=False).missing == (
        "minimum_positive_and_negative_support",)


# issue 12 section 3: each of these was accepted before (the duplicate key silently took the last value,
# release_requirements: [] silently dropped every sign-off)
HOSTILE = Path(__file__).resolve().parent / "hostile" / "contract"


@pytest.mark.parametrize("name,field,record", [
    ("duplicate_key.yaml", "max_tpr_gap", "line 6"),
    ("duplicate_nested_key.yaml", "attested", "line 10"),
    ("empty_requirements.yaml", "release_requirements", None),
])
def test_contract_file_problems_are_errors(name, field, record):
    with pytest.raises(InputError) as info:
        FairnessContract.from_yaml(HOSTILE / name)
    err = info.value
    assert err.field == field and name in str(err)
    if record is not None:
        assert err.record == record


def test_gap_interval_settings_are_checked():
    base = {"primary_metric": "equal_opportunity", "max_tpr_gap": 0.1, "max_fpr_gap": 0.1,
            "min_positive_per_slice": 1, "min_negative_per_slice": 1}
    assert FairnessContract.from_mapping(base).gap_interval.method == "tango"
    c = FairnessContract.from_mapping({**base, "gap_interval": {"method": "tango", "confidence": 0.9}})
    assert (c.gap_interval.method, c.gap_interval.confidence) == ("tango", 0.9)
    assert FairnessContract.from_mapping({**base, "gap_interval": {"method": "exact"}}).gap_interval.method == "exact"
    # methods that ignored the pairing, gave [0, 0] or failed the false-pass check are refused with the reason
    for old, reason in (("newcombe", "independent samples"), ("paired_bootstrap", "[0, 0]"),
                        ("newcombe_paired", "up to 9 %")):
        with pytest.raises(InputError, match=re.escape(reason)) as info:
            FairnessContract.from_mapping({**base, "gap_interval": {"method": old}})
        assert info.value.field == "method" and "tango" in str(info.value)
    for bad, field in (({"method": "wald"}, "method"), ({"confidence": 1.0}, "confidence"),
                       ({"confidence": "0.95"}, "confidence"), ({"level": 0.9}, "gap_interval")):
        with pytest.raises(InputError) as info:
            FairnessContract.from_mapping({**base, "gap_interval": bad})
        assert info.value.field == field
