"""ShopFlow matched-pair routing audit (seed 001).

Does a judge plus a score threshold send matched formal and conversational
requests down different routes (auto-serve vs human review)? The study routes
each scored pair, measures pair flips, selection/TPR/FPR per wording, their
gaps against a release contract (point rule and interval rule), exact
(Clopper-Pearson) rate intervals, matched-pair intervals and exact McNemar tests per stratum (TPR on
the ready pairs, FPR on the needs-review pairs), calibration by score
band, channel × wording support, and a release decision.

Quickstart — audit your own pairs CSV with any judge spec::

    from cfbench.studies.shopflow import Params, run
    # pairs.csv: pair_id,variant,expected_ready,channel,request,reply  (one row per pair × variant)
    params = Params(pairs_path="pairs.csv", judge="openai:gpt-4o-mini", variants=["formal", "conversational"])
    result = run(params, out="results/my_audit")
    result.tables["judged_rates"]          # selection / TPR / FPR per variant with counts
    result.tables["judged_interval_checks"]  # signed gaps, matched-pair intervals, interval rule
    result.tables["judged_stratum_tests"]    # which test answers the TPR and the FPR question
    print(result.findings())                # what the numbers show and cannot show
    result.check()                          # raises InvariantError if an invariant broke

Already have judge scores? ``audit_pairs(load_pairs("scored.csv"), FairnessContract.from_yaml(...),
threshold=0.7)`` audits them without calling any judge.
"""

from pathlib import Path

from . import readiness  # noqa: F401  (registers the scripted test double)
from .contract import FairnessContract, GapInterval, ReleaseRequirement
from .gate import (PairAudit, ReleaseDecision, audit_pairs, compare_candidate, gap_gate, interval_checks,
                   intersection_table, metric_checks, paired_mcnemar, pairs_needed,
                   release_decision, stratum_difference, stratum_tests, support_check)
from .policy import ROUTES, check_threshold, pair_flips, rates, route_rows, stage_attribution, threshold_sweep

__all__ = ["Params", "run", "ShopflowResult", "iter_requests", "shipped", "FairnessContract", "GapInterval", "ReleaseRequirement",
           "PairAudit", "ReleaseDecision", "audit_pairs", "compare_candidate",
           "interval_checks", "intersection_table", "metric_checks", "paired_mcnemar",
           "gap_gate", "pairs_needed", "stratum_difference", "stratum_tests",
           "release_decision", "support_check", "ROUTES", "check_threshold", "pair_flips", "rates", "route_rows",
           "stage_attribution", "threshold_sweep", "run_batch"]


def shipped(name: str) -> Path:
    """Path of a file shipped with the study (``pairs.jsonl``, ``contract.yaml``, ``seed_observations.csv``)."""
    return Path(__file__).resolve().parent / "data" / name


def __getattr__(name: str):  # Params/run/ShopflowResult/iter_requests load the judge runner only when asked for
    if name in ("Params", "run", "ShopflowResult", "iter_requests"):
        from . import study

        return getattr(study, name)
    if name == "run_batch":  # the sequential audit through the Batch API (``cfbench batch sequential``)
        from .batch_waves import run_batch

        return run_batch
    raise AttributeError(name)


from cfbench.view import register_explorer as _register_explorer  # noqa: E402

from .explorer import explorer_pairs  # noqa: E402

_register_explorer("shopflow", explorer_pairs,
                   inputs={"pairs": ("judged_pairs.csv", ("pair_id", "variant", "request"))})  # the run explorer's reader of this study's results folders
