"""The readiness task on the embedded local judge yields P(ready) from logprobs."""

from pathlib import Path

import pytest

from cfbench.io.pairs import load_pairs
from cfbench.studies.shopflow import readiness as R

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.local_model
def test_local_judge_scores_one_pair_from_logprobs():
    from cfbench.judges import run_requests
    from cfbench.judges.local import embedded_model_status

    ok, why = embedded_model_status()
    if not ok:
        pytest.skip(f"embedded model not available: {why}")
    pairs = load_pairs(REPO / "cfbench/studies/shopflow/data/pairs.jsonl", score_column=None)
    one = pairs[pairs.pair_id == "sf01"].reset_index(drop=True)
    res = run_requests("local:qwen2.5-coder-1.5b", R.build_requests(one), progress=False)
    p = R.parse_readiness(res.judgments)
    assert p.parse_ok.all() and (p.score_source == "logprobs").all()
    assert p.score.between(0, 1).all() and (p.yes_no_mass > 0.5).all()
