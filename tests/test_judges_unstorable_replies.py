"""Issue 36: a reply holding a lone surrogate (valid JSON, ``"\\ud800"``, not encodable as UTF-8) is a
failure of that one request, named with a reason; the rest of the run is stored and a rerun works."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("aiohttp")

from cfbench.judges import GenerationConfig, Request, run_requests
from cfbench.judges.fakeserver import FakeOpenAIServer


def req(i: int) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": f"question {i}"},), GenerationConfig(max_tokens=64))


def test_one_reply_with_a_lone_surrogate_in_forty_is_one_named_failure(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    cache = tmp_path / "responses.sqlite"
    reqs = [req(i) for i in range(40)]
    with FakeOpenAIServer() as srv:
        srv.script(["ok"] * 17 + ["surrogate"] + ["ok"] * 22)
        res = run_requests(f"openai:m@{srv.base_url}", reqs, cache=cache, progress=False, concurrency=1)
        assert res.stats["n_failed"] == 1
        bad = res.judgments[~res.judgments.ok]
        assert len(bad) == 1 and "reply text holds a lone surrogate (U+D800 at character 4)" in bad.error.iloc[0]
        named = bad.request_id.iloc[0]
        assert any(f"request {named} " in r.getMessage() and "lone surrogate" in r.getMessage()
                   for r in caplog.records)
        # the 39 others were stored; the rerun asks again only for the one that failed, and it now answers
        again = run_requests(f"openai:m@{srv.base_url}", reqs, cache=cache, progress=False, concurrency=1)
    assert again.stats["n_failed"] == 0 and again.stats["n_cached"] == 39
    assert again.judgments.text.map(lambda t: t.encode("utf-8") is not None).all()


def test_a_surrogate_in_the_top_logprobs_is_caught_too():
    from cfbench.judges.base import Response
    from cfbench.judges.runner import reply_problem

    assert "lone surrogate" in reply_problem(Response(text="Yes", top_logprobs={"\udfff": -0.1}), 16)
    assert reply_problem(Response(text="Yes 😀 fine", top_logprobs={"Yes": -0.1}), 16) is None


def test_a_request_with_a_lone_surrogate_is_one_line_naming_the_request(tmp_path):
    from cfbench.core.errors import InputError

    good = req(0)
    bad = Request("dialogue-7", ({"role": "system", "content": "rate"}, {"role": "user", "content": "hi \ud800 x"}),
                  GenerationConfig())
    with pytest.raises(InputError) as info:
        run_requests("scripted:yes", [good, bad], cache=tmp_path / "c.sqlite", progress=False)
    msg = str(info.value)
    assert "'dialogue-7'" in msg and "messages[1].content" in msg and "U+D800 at character 3" in msg


def test_a_key_echoed_in_any_text_field_of_a_reply_is_refused():
    """The credential check reads every text field: the text, the first-token alternatives and the finish
    reason (a server echoing the key into ``finish_reason`` once had it cached and written to the judgments)."""
    from cfbench.judges import Response
    from cfbench.judges.runner import reply_problem

    key = "sk-proj-Xq7Lm2PzR9tKw4VbN8cJhY3dGf6SaE1uTo5iWnQ"
    creds = {"OPENAI_API_KEY": key}
    for reply in (Response(text=f"key {key}"), Response(text="Yes", top_logprobs={key: -0.1}),
                  Response(text="Yes", finish_reason=f"stop; auth={key}")):
        reason = reply_problem(reply, 16, creds=creds)
        assert reason and "echoed a credential" in reason and key not in reason
    assert reply_problem(Response(text="Yes", finish_reason="stop"), 16, creds=creds) is None
