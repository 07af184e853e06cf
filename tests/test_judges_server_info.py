"""Provenance of a judge server and `cfbench judges` for keyless servers (issue 37)."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp")

from cfbench.cli import main  # noqa: E402
from cfbench.judges.fakeserver import FakeOpenAIServer  # noqa: E402
from cfbench.judges.server_info import public_url, server_provenance, server_specs  # noqa: E402
from cfbench.cli.reproduce import provenance_markdown  # noqa: E402


def test_public_url_strips_credentials():
    assert public_url("https://u:pw@gw.example:8443/v1?key=pw#frag") == "https://gw.example:8443/v1"


def test_server_specs_finds_openai_judges_in_any_parameter():
    params = {"judges": ["local:x", "openai:m@http://h/v1"], "judge": "openai:n", "rewrite_judge": "",
              "n_items": 3}
    assert server_specs(params) == ["openai:m@http://h/v1", "openai:n"]


def test_provenance_of_a_server_that_answers_and_of_one_that_does_not(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-provenance-0123456789abcdef")
    with FakeOpenAIServer() as srv:
        # the fake serves no /models: recorded as an error with the URL, the key nowhere
        rec = server_provenance([f"openai:m@{srv.base_url}"])[0]
    assert rec["base_url"] == srv.base_url and rec["model"] == "m" and "GET /models" in rec["error"]
    assert "sk-test" not in repr(rec)
    md = provenance_markdown({"servers": [rec, {"base_url": "http://h/v1", "model": "m", "served_models": ["a`b"],
                                                "server": "uvicorn", "client": "cfbench"}]})
    assert "judge server: `http://h/v1` (model `m`; serves `a'b`; server `uvicorn`" in md


def test_cfbench_judges_agrees_with_check_for_a_keyless_server(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer(reply="Yes") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        assert main(["judges"]) == 0
        listing = capsys.readouterr().out
        assert main(["judges", "--check", "openai:m"]) == 0
    line = next(ln for ln in listing.splitlines() if ln.startswith("openai"))
    assert "usable without a key" in line and "needs OPENAI_API_KEY" not in line
