"""Issue 36: text from outside (server error bodies, replies, notebook errors) never commands the terminal:
escape sequences, CR and newlines are shown as visible escapes wherever cfbench prints or logs it."""

from __future__ import annotations

import logging
import re

import pytest

from cfbench.core.text import for_terminal

pytest.importorskip("aiohttp")

from cfbench.judges.fakeserver import FakeOpenAIServer

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every control but the printer's own newline/tab


def test_for_terminal_shows_every_control_as_a_visible_escape():
    out = for_terminal("a\x1b]0;t\x07b\x1b[2J\r\nc\x00d\u202ee\x9b")
    assert not RAW.search(out) and "\n" not in out and "\u202e" not in out
    assert out == "a\\x1b]0;t\\x07b\\x1b[2J\\x0d\\x0ac\\x00d\\u202ee\\x9b"
    assert for_terminal("line one\nline\x1b two", newlines=True) == "line one\nline\\x1b two"
    assert for_terminal("plain text, ünïcode ok") == "plain text, ünïcode ok"


def test_runner_warnings_show_a_hostile_error_body_inert(tmp_path, caplog, capsys):
    from cfbench.judges import GenerationConfig, Request, run_requests

    caplog.set_level(logging.WARNING)
    with FakeOpenAIServer() as srv:
        srv.script(["ansi:400"] * 3)
        res = run_requests(f"openai:m@{srv.base_url}", [Request("r0", ({"role": "user", "content": "q"},),
                                                                GenerationConfig(max_tokens=8))],
                           cache=False, progress=False)
    assert res.stats["n_failed"] == 1
    shown = [r.getMessage() for r in caplog.records]
    assert any("owned" in m for m in shown), shown
    assert all(not RAW.search(m) and "\n" not in m for m in shown), shown
    cap = capsys.readouterr()
    assert not RAW.search(cap.out + cap.err)


def test_judges_check_cannot_forge_a_line(capsys, monkeypatch):
    from cfbench.cli import main

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer() as srv:
        srv.script(["ansi:400"] * 3)
        code = main(["judges", "--check", f"openai:m@{srv.base_url}"])
    cap = capsys.readouterr()
    assert code == 1
    assert not RAW.search(cap.out + cap.err)
    assert not [ln for ln in (cap.out + cap.err).splitlines() if ln.startswith("[cfbench] all requests")]


def test_cli_error_lines_show_controls_inert(capsys, tmp_path):
    from cfbench.cli import main

    bad = tmp_path / "t\x1b]0;owned\x07.jsonl"
    code = main(["variants", str(bad), "--out", str(tmp_path / "o")])
    cap = capsys.readouterr()
    assert code == 2 and "cfbench: error:" in cap.err and not RAW.search(cap.err), repr(cap.err)
