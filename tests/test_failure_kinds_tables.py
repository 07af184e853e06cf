"""Every study table that counts unread replies counts them per failure kind (issue 37): a timeout, an HTTP
error, a refusal, an unparseable reply and a request never sent (plan only) are separate columns, named
the same in every study (``cfbench.judges.failures.KIND_COLUMNS``), and a timeout is never a parse failure.

A flaky test judge decides per request, from a hash of its id, whether to answer (the contact-center test
double), hang past the time limit, answer gibberish, refuse, or fail with an HTTP 500; the expected counts
are that decision applied to the plan's requests, independent of the classifier under test."""

from __future__ import annotations

import asyncio
import hashlib

import pandas as pd
import pytest

from cfbench.judges import GenerationConfig, judge_settings, registry
from cfbench.judges.base import JudgeError, Response
from cfbench.judges.failures import FAILURE_KINDS, KIND_COLUMNS, NOT_SENT, count_column
from cfbench.judges.scripted import ScriptedJudge

SPEC = "flakykinds:cc"
#: the limit the runner gives each attempt, and how long a "hanging" request waits (well past it)
TIMEOUT_S, HANG_S = 0.2, 2.0


def decision(request_id: str) -> str:
    """What the flaky judge does with this request: a failure kind, or "reply"."""
    h = int(hashlib.sha256(request_id.encode()).hexdigest()[:8], 16) % 7
    return {0: "timeout", 1: "unparseable", 2: "refusal", 3: "http error"}.get(h, "reply")


class FlakyJudge(ScriptedJudge):
    """The contact-center test double, except where :func:`decision` says otherwise. Its hang is an
    ``asyncio.sleep`` (cancelled when the runner cuts the attempt, holding no thread)."""

    def __init__(self, model: str, **options: object) -> None:
        super().__init__("cc-qa")
        self.spec = f"flakykinds:{model}"

    async def acomplete(self, request):
        what = decision(request.request_id)
        if what == "timeout":
            await asyncio.sleep(HANG_S)  # the runner cuts the attempt at TIMEOUT_S (three times): a timeout
        elif what == "unparseable":
            return Response(text="\u2591 the call went fine overall \u2592", completion_tokens=6)
        elif what == "refusal":
            return Response(text="I'm sorry, but I can't help with rating this call.", completion_tokens=11)
        elif what == "http error":
            raise JudgeError("500 Internal Server Error: the model crashed")
        return self.complete(request)


def test_the_kind_columns_are_named_from_the_kinds():
    assert KIND_COLUMNS == ("n_not_sent", "n_timeout", "n_http_error", "n_refusal", "n_unparseable",
                            "n_bad_reply")
    assert [count_column(k) for k in FAILURE_KINDS] == list(KIND_COLUMNS)
    with pytest.raises(ValueError, match="unknown failure kind"):
        count_column("parse failure")


@pytest.fixture(scope="module")
def flaky_run(tmp_path_factory):
    import cfbench.studies.contact_center_qa  # noqa: F401 - registers scripted:cc-qa
    from cc_fixtures import variants_frame

    from cfbench.studies.contact_center_qa.judging import run_plan
    from cfbench.studies.contact_center_qa.requests import plan_evaluation

    plan = plan_evaluation(variants_frame(), judges=[SPEC], questions=["issue_resolution"], qa_mode="compact",
                           config=GenerationConfig(max_tokens=8), repeats=2, coaching=True)
    with pytest.MonkeyPatch.context() as mp, judge_settings(timeout_s=TIMEOUT_S):
        mp.setitem(registry._BACKENDS, "flakykinds", FlakyJudge)  # this module's backend, for this run only
        judgments, rows, stats = run_plan(plan, cache=tmp_path_factory.mktemp("c") / "c.sqlite", progress=False)
    # what the plain double does with the same requests: where it answers, its own unreadable replies
    # (it leaves out a score now and then, on purpose) are the unparseable ones
    base = plan_evaluation(variants_frame(), judges=["scripted:cc-qa"], questions=["issue_resolution"],
                           qa_mode="compact", config=GenerationConfig(max_tokens=8), repeats=2, coaching=True)
    plain, _, _ = run_plan(base, cache=False, progress=False)
    return plan, judgments, rows, stats, plain


def _expected(judgments: pd.DataFrame, plain: pd.DataFrame) -> pd.DataFrame:
    """Per task, the requests meant to fail, per kind (columns of KIND_COLUMNS), and all of them: the
    flaky judge's decision, and where it lets the double answer, the double's unreadable replies."""
    unread = set(plain.loc[~plain["parse_ok"].astype(bool), "request_id"])
    assert not plain["text"].astype(str).str.startswith("I'm sorry").any()  # the double never refuses
    what = judgments["request_id"].map(lambda r: "unparseable" if decision(r) == "reply" and r in unread
                                       else decision(r))
    want = pd.DataFrame({"task": judgments["task"], "what": what})
    out = pd.DataFrame({col: want.groupby("task")["what"].apply(lambda s, k=kind: int((s == k).sum()))
                        for kind, col in zip(FAILURE_KINDS, KIND_COLUMNS)})
    out["n"] = want.groupby("task").size()
    return out.sort_index()


def test_contact_center_parse_rates_count_each_kind_exactly(flaky_run):
    from cfbench.studies.contact_center_qa.tables import study_tables

    plan, judgments, rows, stats, plain = flaky_run
    want = _expected(judgments, plain)
    assert set(want.columns) >= {"n_timeout", "n_unparseable", "n_refusal", "n_http_error"}
    for col in ("n_timeout", "n_unparseable", "n_refusal", "n_http_error"):  # every kind is exercised
        assert want[col].sum() >= 1, col
    assert want["n_timeout"].sum() < want["n"].sum()  # and some requests were answered
    pr = study_tables(rows, judgments, n_boot=20)["parse_rates"].set_index("task").sort_index()
    for col in KIND_COLUMNS:
        assert pr[col].tolist() == want[col].tolist(), col
    assert (pr["n_not_read"] == pr[list(KIND_COLUMNS)].sum(axis=1)).all()
    assert "n_parse_failures" not in pr.columns  # no column lumps a timeout in with the parse failures
    # the runner's own tally agrees with the table (it classifies the error strings it wrote)
    runner = stats[SPEC]["failures_by_kind"]
    assert runner.get("timeout") == int(want["n_timeout"].sum())
    assert runner.get("http error") == int(want["n_http_error"].sum())


def test_a_plan_only_run_counts_not_sent_and_no_parse_failure(tmp_path, monkeypatch):
    import cfbench.studies.contact_center_qa  # noqa: F401
    from cc_fixtures import variants_frame

    from cfbench.studies.contact_center_qa.judging import run_plan
    from cfbench.studies.contact_center_qa.requests import plan_evaluation
    from cfbench.studies.contact_center_qa.tables import study_tables

    monkeypatch.setenv("CFBENCH_MODE", "plan")
    plan = plan_evaluation(variants_frame(), judges=["scripted:cc-qa"], questions=["issue_resolution"],
                           qa_mode="compact", config=GenerationConfig(max_tokens=8), repeats=2, coaching=False)
    judgments, rows, _ = run_plan(plan, cache=tmp_path / "c.sqlite", progress=False)
    pr = study_tables(rows, judgments, n_boot=20)["parse_rates"]
    assert int(pr["n"].sum()) == len(judgments) > 0
    assert (pr["n_not_sent"] == pr["n"]).all() and (pr["n_not_read"] == pr["n"]).all()
    others = [c for c in KIND_COLUMNS if c != "n_not_sent"]
    assert (pr[others] == 0).all().all()
    assert NOT_SENT == FAILURE_KINDS[0]


def test_judge_bias_parse_failures_table_counts_each_kind():
    """judge_bias' ``parse_failures`` table: one column per kind, a timed-out call and a request never sent
    are not unparseable replies."""
    from cfbench.studies.judge_bias import metrics as M
    from cfbench.studies.judge_bias.tasks import parse_judgments

    def row(rid, text, error=None):
        return {"request_id": rid, "text": text, "ok": error is None, "error": error, "top_logprobs": None}

    j = pd.DataFrame([row("i1/pairwise/baseline/realA", "A"),
                      row("i1/pairwise/baseline/realB", None, "RetryableError: timeout: no reply within timeout_s=9 s"),
                      row("i2/pairwise/baseline/realA", "Both replies are fine"),
                      row("i2/pairwise/baseline/realB", "I cannot choose between these."),
                      row("i2/pairwise/source/realA", None, "not sent (plan only): recorded"),
                      row("i3/pairwise/source/realA", None, "JudgeError: 429 Too Many Requests: slow down")])
    parsed = parse_judgments(j).assign(judge="j")
    items = pd.DataFrame({"item_id": ["i1", "i2", "i3"], "kind": "control", "cued_candidate": "alt"})
    state = M.new_state().update(parsed, items)
    t = state.compute(judges=["j"], cues=["position"])["parse_failures"].set_index("condition")
    assert t.loc["baseline", ["n", "parsed", "n_not_read"]].tolist() == [4, 1, 3]
    assert t.loc["baseline", ["n_timeout", "n_unparseable", "n_refusal", "n_not_sent"]].tolist() == [1, 1, 1, 0]
    assert t.loc["source", ["n", "n_not_read", "n_not_sent", "n_http_error", "n_unparseable"]].tolist() == [2, 2, 1, 1, 0]
    assert (t[list(KIND_COLUMNS)].sum(axis=1) == t["n_not_read"]).all()


def test_a_dimension_without_pairs_says_which_replies_were_missing_and_why():
    """The contact-center warning for a dimension with no judged pair names the kinds (it used to say
    "parse failures" for requests that were never sent)."""
    from cfbench.studies.contact_center_qa import Params
    from cfbench.studies.contact_center_qa.study import drop_warnings
    from cfbench.studies.contact_center_qa.tables import PARSE_RATE_COLUMNS

    variants = pd.DataFrame({"item_id": ["c1"], "dimension": ["gender"], "condition": ["male"],
                             "applicable": [True], "valid": [True], "reason": [""], "rejection_reason": [""]})
    cfr = pd.DataFrame({"judge": ["j"], "arm": ["baseline"], "dimension": ["gender"], "n_pairs": [0]})
    rates = pd.DataFrame([["j", "qa", 4, 0.0, 0.0, 4, 3, 1, 0, 0, 0, 0]], columns=PARSE_RATE_COLUMNS)
    w = drop_warnings(Params(qa_mode="json"), ["gender"], variants, pd.DataFrame(), {"cfr": cfr, "parse_rates": rates})
    msg = w.loc[w["dimension"] == "gender", "message"].iloc[0]
    assert "3 not sent (plan only), 1 timeout" in msg and "parse failure" not in msg


def test_the_runs_tallies_add_the_kinds_of_every_transcript():
    """A contact-center run judges transcript by transcript; its ``run_stats`` used to keep the first
    transcript's ``failures_by_kind`` and ``retries_by_kind`` (and summed the peaks)."""
    from cfbench.studies.contact_center_qa.study import _add_stats

    agg: dict = {}
    _add_stats(agg, {"judge": "j", "n_failed": 1, "failures_by_kind": {"timeout": 1}, "retries_by_kind": {},
                     "concurrency_history": [1, 2], "peak_in_flight": 2, "non_completion_rate": 0.5})
    _add_stats(agg, {"judge": "j", "n_failed": 3, "failures_by_kind": {"timeout": 1, "unparseable": 2},
                     "retries_by_kind": {"timeout": 4}, "concurrency_history": [2], "peak_in_flight": 1,
                     "non_completion_rate": 1.0})
    assert agg == {"judge": "j", "n_failed": 4, "failures_by_kind": {"timeout": 2, "unparseable": 2},
                   "retries_by_kind": {"timeout": 4}, "concurrency_history": [1, 2, 2], "peak_in_flight": 2}
