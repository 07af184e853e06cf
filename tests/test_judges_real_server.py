"""A real OpenAI-compatible server nobody here wrote: llama-cpp-python's own (``python -m llama_cpp.server``,
the ``[server]`` extra) serving the embedded GGUF on loopback (issue 37).

The studies run through ``openai:<model>@http://127.0.0.1:PORT/v1`` and are compared with the embedded
``local:`` judge on the same requests: verdict agreement and the P(Yes) gap, never exact text (a
server with prompt caching moves P(Yes) in the third decimal from call to call). The fake server
(:mod:`cfbench.judges.fakeserver`) stays the tool for fault injection; this one is for truth.
Skipped only where the ``[local]`` extra (llama-cpp-python and the model) is absent; with it, a
missing ``[server]`` extra is a failure that says what to install.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import os

# Part of `make test` (about 4-11 min on 2 cores, more under load); CFBENCH_REAL_SERVER=0 leaves them out.
pytestmark = [pytest.mark.local_model,
              pytest.mark.skipif(os.environ.get("CFBENCH_REAL_SERVER") == "0",
                                 reason="real llama.cpp server tests switched off: CFBENCH_REAL_SERVER=0")]

LOCAL = "local:qwen2.5-coder-1.5b"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """``openai:`` spec of a llama.cpp server on loopback (2 threads, 4096 context), stopped afterwards
    (:func:`cfbench.judges.llama_server.embedded_server`, which the free-mode benchmark uses too)."""
    from cfbench.judges.llama_server import ServerStartError, embedded_server, missing_server_deps
    from cfbench.judges.local import embedded_model_status

    ok, why = embedded_model_status()
    if importlib.util.find_spec("llama_cpp") is None or not ok:
        pytest.skip(f"the [local] extra is absent: {why}")
    missing = missing_server_deps()
    assert not missing, f"llama-cpp-python's server needs {missing}: pip install 'cfbench[server]'"
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    try:
        server = embedded_server(n_ctx=4096, n_threads=2, log=log)
        info = server.__enter__()
    except ServerStartError as exc:
        pytest.fail(str(exc))
    try:
        yield info
    finally:
        server.__exit__(None, None, None)


def _compare(frame, key: str, p_col: str, verdict_col: str, server: str, local: str) -> dict:
    a = frame[frame.judge == server].set_index(key)
    b = frame[frame.judge == local].set_index(key)
    both = a.index.intersection(b.index)
    assert len(both) == len(a) == len(b), (len(a), len(b), len(both))
    gap = np.abs(a.loc[both, p_col].astype(float) - b.loc[both, p_col].astype(float))
    agree = (a.loc[both, verdict_col].astype(bool) == b.loc[both, verdict_col].astype(bool))
    return {"n": len(both), "agreement": float(agree.mean()), "max_gap": float(gap.max()),
            "disagree_p": b.loc[both][~agree.to_numpy()][p_col].astype(float).tolist()}


def test_contact_center_audit_through_the_server_agrees_with_the_local_judge(llama_server):
    from cfbench.studies.contact_center_qa import audit
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    spec = llama_server["spec"]
    r = audit(shipped_transcripts_path(), judges=[spec, LOCAL], questions=["issue_resolution"], dimensions=["gender"],
              conditions_per_dimension=1, repeats=1, n_items=2, qa_mode="compact", n_boot=50, progress=False)
    j = r.frames["judgments"]
    srv = j[j.judge == spec]
    assert len(srv) == len(j[j.judge == LOCAL]) >= 4 and srv.ok.all() and srv.parse_ok.all(), srv[["error", "text"]]
    assert srv.p_yes.notna().all()  # P(Yes) from the server's top_logprobs on every reply
    stats = r.summary["run_stats"][spec]
    assert stats["n_failed"] == 0 and stats["n_retried"] == 0
    cmp = _compare(j, "request_id", "p_yes", "answer_yes", spec, LOCAL)
    # the same GGUF and template: verdicts agree except near P(Yes) 0.5, P(Yes) within a few hundredths
    assert cmp["agreement"] >= 0.75 and cmp["max_gap"] <= 0.1, cmp
    assert all(abs(p - 0.5) < 0.15 for p in cmp["disagree_p"]), cmp


def test_shopflow_readiness_through_the_server_agrees_with_the_local_judge(llama_server):
    from cfbench.io.pairs import load_pairs
    from cfbench.judges import run_requests
    from cfbench.studies.shopflow import readiness as R

    repo = Path(__file__).resolve().parents[1]
    pairs = load_pairs(repo / "cfbench/studies/shopflow/data/pairs.jsonl", score_column=None).head(6)
    reqs = R.build_requests(pairs)
    parsed = []
    for spec in (llama_server["spec"], LOCAL):
        res = run_requests(spec, reqs, progress=False)
        assert res.stats["n_failed"] == 0 and res.stats["n_retried"] == 0, res.stats
        p = R.parse_readiness(res.judgments).assign(judge=spec)
        assert p.parse_ok.all() and (p.score_source == "logprobs").all()
        parsed.append(p.assign(ready=p.score >= 0.5))
    import pandas as pd

    cmp = _compare(pd.concat(parsed), "request_id", "score", "ready", llama_server["spec"], LOCAL)
    assert cmp["n"] == len(reqs) and cmp["agreement"] >= 0.75 and cmp["max_gap"] <= 0.1, cmp


def test_free_text_answers_complete_without_retries(llama_server):
    """The paper config's free mode: every request answered, none retried or timed out (the limit
    adapts to the one-slot server instead of queueing calls until they time out)."""
    from cfbench.studies.contact_center_qa import Params, run

    spec = llama_server["spec"]
    params = Params(judges=(spec,), n_items=2, require_agent_name=False, balance_label="", dimensions=("gender",),
                    conditions_per_dimension=1, questions=("issue_resolution",), qa_mode="free", max_tokens=160,
                    repeats=1, robustness_temperatures=(0.0,), fairness=False, coaching=False, n_boot=50,
                    timeout_s=300)
    r = run(params, progress=False)
    stats = r.summary["run_stats"][spec]
    j = r.frames["judgments"]
    assert len(j) == 4 and j.ok.all(), j.error.tolist()
    assert stats["n_failed"] == 0 and stats["n_retried"] == 0 and stats["failures_by_kind"] == {}, stats
    assert j.parse_ok.any()  # free text the parser could read


def test_server_provenance_names_the_model_the_server_reports(llama_server):
    from cfbench.judges.server_info import server_provenance

    rec = server_provenance([llama_server["spec"]])[0]
    assert rec["base_url"] == llama_server["base_url"] and rec["served_models"] == [llama_server["served"]]
    assert rec["served_models"][0].endswith(".gguf") and rec["server"] and "error" not in rec
