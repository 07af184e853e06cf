"""The library reproduces every figure seed 001 prints, from the shipped observations."""

from pathlib import Path

import pytest

from cfbench.io.pairs import load_pairs
from cfbench.studies.shopflow import FairnessContract, audit_pairs, compare_candidate

REPO = Path(__file__).resolve().parents[1]
V = ["formal", "conversational"]


@pytest.fixture(scope="module")
def contract():
    return FairnessContract.from_yaml(REPO / "cfbench/studies/shopflow/data/contract.yaml")


@pytest.fixture(scope="module")
def seed(contract):
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv", variants=V)
    return audit_pairs(f, contract, threshold=0.70, variants=V)


@pytest.fixture(scope="module")
def candidate(contract):
    f = load_pairs(REPO / "cfbench/studies/shopflow/data/seed_observations.csv", score_column="candidate_score", variants=V)
    return audit_pairs(f, contract, threshold=0.70, variants=V)


def pct(x):
    return round(100 * x, 1)


def test_flips(seed):
    assert seed.flips.values.tolist() == [["p4", "auto_serve", "human_review"],
                                          ["p5", "auto_serve", "human_review"],
                                          ["n1", "auto_serve", "human_review"]]


def test_rates_and_gaps(seed):
    r = seed.rates
    assert [pct(r.at["formal", m]) for m in ("selection", "tpr", "fpr")] == [60.0, 83.3, 25.0]
    assert [pct(r.at["conversational", m]) for m in ("selection", "tpr", "fpr")] == [30.0, 50.0, 0.0]
    assert (pct(seed.tpr_gap), pct(seed.fpr_gap)) == (33.3, 25.0)
    assert list(seed.checks["status"]) == ["FAIL", "FAIL"]
    assert list(seed.checks["role"]) == ["primary", "guardrail"]


def test_wilson_and_support(seed):
    w = seed.wilson_tpr.set_index("slice")
    assert [pct(w.at["formal", "ci_low"]), pct(w.at["formal", "ci_high"])] == [43.6, 97.0]
    assert [pct(w.at["conversational", "ci_low"]), pct(w.at["conversational", "ci_high"])] == [18.8, 81.2]
    assert not seed.support_ok
    assert seed.summary()["minimum_support"] == "FAIL"


def test_calibration_cells(seed):
    got = {(v, b): (n, pct(x)) for v, b, n, x in
           seed.calibration[["variant", "band", "n", "observed_ready"]].itertuples(index=False)}
    assert got == {("formal", "below 0.70"): (4, 25.0), ("formal", "0.70 to <0.90"): (5, 80.0),
                   ("formal", "0.90 and above"): (1, 100.0), ("conversational", "below 0.70"): (7, 42.9),
                   ("conversational", "0.70 to <0.90"): (3, 100.0)}
    assert seed.calibration["n"].max() < 10 and not seed.calibration["sufficient"].any()


def test_intersections_and_attribution(seed):
    i = seed.intersections
    assert sorted(zip(i.channel, i.variant)) == [("chat", "conversational"), ("chat", "formal"),
                                                 ("email", "conversational"), ("email", "formal")]
    assert (i.n_pos == 3).all() and (i.tpr_status == "insufficient").all() and i.tpr.isna().all()
    assert dict(zip(seed.attribution.pair_id, seed.attribution.stage)) == {
        "p4": "judge_or_route", "p5": "judge_or_route", "n1": "judge_or_route"}


def test_candidate_and_release(seed, candidate):
    assert candidate.tpr_gap == 0.0 and candidate.fpr_gap == 0.0 and candidate.n_flips == 0
    cmp = compare_candidate(seed, candidate).set_index("metric")
    assert cmp.at["tpr_gap", "candidate_status"] == "PASS"
    assert cmp.at["tpr_gap", "change"] == pytest.approx(-1 / 3)
    assert candidate.release.decision == "BLOCKED"
    assert list(candidate.release.missing) == [
        "representative_reviewed_slice_set", "minimum_positive_and_negative_support",
        "approved_group_definition_and_privacy_review", "production_monitoring_owner"]
    # the baseline itself also fails its metric checks
    assert seed.release.missing[0] == "synthetic_regression_pairs_pass"


#: the seed's printed output, transcribed from seed 001 in its order (the reference being reproduced)
SEED_PRINTED = """Fixture type: synthetic matched wording audit
Matched pairs: 10; scored rows: 20
Routing threshold: 0.70
Flipped matched pairs:
p4: formal=auto_serve, conversational=human_review
p5: formal=auto_serve, conversational=human_review
n1: formal=auto_serve, conversational=human_review
formal selection=60.0% TPR=83.3% FPR=25.0%
conversational selection=30.0% TPR=50.0% FPR=0.0%
TPR gap=33.3%; FPR gap=25.0%
TPR gap: FAIL
FPR guardrail: FAIL
formal TPR=5/6 95% interval=[43.6%, 97.0%]
conversational TPR=3/6 95% interval=[18.8%, 81.2%]
Minimum slice support: FAIL
conversational 0.70 to 0.89 : n=3, ready=100.0%
conversational below 0.70 : n=7, ready=42.9%
formal 0.70 to 0.89 : n=5, ready=80.0%
formal 0.90 and above: n=1, ready=100.0%
formal below 0.70 : n=4, ready=25.0%
Calibration decision: insufficient support
chat / conversational: n=3, insufficient
chat / formal : n=3, insufficient
email / conversational: n=3, insufficient
email / formal : n=3, insufficient
{'p4': 'judge_or_route', 'p5': 'judge_or_route', 'n1': 'judge_or_route'}
Candidate TPR gap=0.0%; FPR gap=0.0%
Interpretation: regression repaired on synthetic pairs, not validated for release
Metric promotion: BLOCKED
missing: representative_reviewed_slice_set
missing: minimum_positive_and_negative_support
missing: approved_group_definition_and_privacy_review
missing: production_monitoring_owner""".splitlines()

#: where cfbench's line deliberately differs from the seed's: the band of scores in [0.70, 0.90) is labelled
#: so that 0.895 has a band, and the interpretation is generated from the result (it also runs on user pairs)
KNOWN_WORDING = {"0.70 to <0.90": "0.70 to 0.89", "regression repaired on these pairs": "regression repaired on "
                 "synthetic pairs"}


def test_every_line_the_seed_prints_in_its_order(seed, candidate):
    from cfbench.studies.shopflow.findings import seed_lines

    ours = seed_lines(seed, candidate, fixture=True, variants=V)

    def norm(line: str) -> str:
        for mine, theirs in KNOWN_WORDING.items():
            line = line.replace(mine, theirs)
        return " ".join(line.split()).replace(" :", ":")

    assert [norm(x) for x in ours] == [norm(x) for x in SEED_PRINTED]
