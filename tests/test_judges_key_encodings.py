"""Issue 26: key spellings that passed the scrubber (mixed-case percent escapes, an 11-character
piece, base64) never reach the terminal, the cache or the judgments; the scrubber is canonical."""

from __future__ import annotations

import base64
import logging
import sqlite3

import pytest

pytest.importorskip("aiohttp")

from cfbench.core.secrets import FRAGMENT, echoed_credential, find_secret_leaks, scrub
from cfbench.judges import GenerationConfig, Request, ResponseCache, run_requests
from cfbench.judges.fakeserver import FakeOpenAIServer

KEY = "sk-proj-" + "Q7wE4rT9yU2iO5pA8sD3fG6h"
BODY = KEY[len("sk-proj-"):]


def mixed_case_percent(s: str) -> str:
    """``%73%6b%2D…``: every byte escaped, hex digits alternating in case."""
    out = []
    for i, b in enumerate(s.encode()):
        h = f"{b:02x}"
        out.append("%" + (h.upper() if i % 2 else h))
    return "".join(out)


class HostileServer(FakeOpenAIServer):
    """The fake server plus the spellings of issue 26: ``pct-401`` (a 401 whose body spells the key
    in mixed-case percent escapes); replies come from ``self.reply`` (set per test)."""

    async def _reply(self, action, body, key):
        from aiohttp import web

        if action == "pct-401":
            return web.Response(text=f"invalid key {mixed_case_percent(key)} (check your settings)", status=401,
                                content_type="text/plain")
        return await super()._reply(action, body, key)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def req(i: int) -> Request:
    return Request(f"r{i}", ({"role": "user", "content": f"question {i}"},), GenerationConfig(max_tokens=64))


def no_trace(text: str) -> bool:
    """No piece of 8+ characters of the key's secret part, in any reading."""
    return not any(BODY[i:i + 8] in text for i in range(len(BODY) - 7)) and echoed_credential(text) is None


def check_everywhere(res, cache_path, caplog, capsys) -> None:
    frame = res.judgments.astype(str).to_csv()
    assert no_trace(frame), frame
    assert no_trace(caplog.text), caplog.text
    cap = capsys.readouterr()
    assert no_trace(cap.out + cap.err)
    con = sqlite3.connect(cache_path)
    dump = "\n".join(con.iterdump())
    con.close()
    assert no_trace(dump)
    assert ResponseCache(cache_path).find_secret_leaks() == []


@pytest.mark.parametrize("spelling", [
    mixed_case_percent(KEY), "%73%6b%2D" + KEY[3:], mixed_case_percent(KEY).lower().replace("%2d", "%2D"),
    KEY[4:4 + 11], KEY[-8:], base64.b64encode(KEY.encode()).decode(),
    base64.b64encode(b"xx" + KEY.encode()).decode(), base64.urlsafe_b64encode(KEY.encode()).decode(),
    "".join(f"%25{b:02X}" for b in KEY.encode()),  # percent-encoded twice
    "\\u0073\\u006B" + KEY[2:], "sk%2Dproj%2d" + BODY,
])
def test_scrub_reads_every_spelling_canonically(spelling):
    text = f"before {spelling} after"
    assert echoed_credential(text) == "OPENAI_API_KEY"
    out = scrub(text)
    assert "<OPENAI_API_KEY>" in out and echoed_credential(out) is None, out
    assert out.startswith("before ") and out.endswith(" after")


def test_the_fragment_rule_is_eight_and_the_public_prefix_alone_is_not_a_leak():
    assert FRAGMENT == 8
    assert echoed_credential("use a key that starts with sk-proj- like all project keys") is None
    assert echoed_credential(f"x {BODY[5:13]} y") == "OPENAI_API_KEY"
    assert echoed_credential(f"x {BODY[5:12]} y") is None  # 7 characters: below the rule
    assert scrub("ordinary text, 100% fine, \\n and base64 aGVsbG8gd29ybGQ=") == \
        "ordinary text, 100% fine, \\n and base64 aGVsbG8gd29ybGQ="


def test_a_401_with_the_key_in_mixed_case_percent_escapes_reaches_no_log_cache_or_row(tmp_path, caplog, capsys):
    caplog.set_level(logging.WARNING)
    cache_path = tmp_path / "c.sqlite"
    with HostileServer() as srv:
        srv.script(["pct-401"] * 6)
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(6)], cache=cache_path,
                           progress=False, concurrency=2)
    assert res.stats["n_failed"] == 6
    assert res.judgments.error.str.contains("invalid key <OPENAI_API_KEY>").all(), res.judgments.error.tolist()
    check_everywhere(res, cache_path, caplog, capsys)


@pytest.mark.parametrize("reply", [
    f"Sure, the token fragment {KEY[9:20]} is fine.",                  # an 11-character piece
    f"Encoded: {base64.b64encode(KEY.encode()).decode()}",              # base64 of the key
    f"Encoded: {base64.b64encode(('k=' + KEY).encode()).decode()}",     # base64, key not aligned
    f"Yes. {mixed_case_percent(KEY[8:20])}",                            # percent-escaped piece
])
def test_replies_holding_a_piece_or_an_encoding_of_the_key_are_failures_never_stored(tmp_path, caplog, capsys,
                                                                                     reply):
    caplog.set_level(logging.WARNING)
    cache_path = tmp_path / "c.sqlite"
    with HostileServer(reply=reply) as srv:
        res = run_requests(f"openai:m@{srv.base_url}", [req(i) for i in range(5)], cache=cache_path,
                           progress=False)
    assert not res.judgments.ok.any()
    assert res.judgments.error.str.contains("reply echoed a credential").all()
    assert res.judgments.text.isna().all()
    check_everywhere(res, cache_path, caplog, capsys)


def test_results_folder_check_finds_base64_and_short_pieces(tmp_path):
    (tmp_path / "a.txt").write_text(base64.b64encode(KEY.encode()).decode())
    (tmp_path / "b.txt").write_text(f"x {KEY[12:23]} y")
    (tmp_path / "c.txt").write_text(mixed_case_percent(KEY))
    (tmp_path / "ok.txt").write_text("nothing here, sk-proj- is a public prefix")
    found = sorted(p.rsplit("/", 1)[1] for p in find_secret_leaks(tmp_path))
    assert found == ["a.txt", "b.txt", "c.txt"]


def test_leaking_cache_rows_are_removed_and_the_rest_kept(tmp_path):
    from cfbench.core.secrets import SecretLeakError
    from cfbench.judges import Response
    from cfbench.judges.cache import remove_leaking_rows

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k-clean", "openai:m", Response(text="Yes"), 0.1)
    cache.put("k-b64", "openai:m", Response(text=base64.b64encode(KEY.encode()).decode()), 0.1)
    cache.record_failures("openai:m", [("k-pct", f"401: {mixed_case_percent(KEY)}"), ("k-ok", "500: fine")])
    removed = remove_leaking_rows(cache)
    assert sorted(removed) == ["failures:k-pct", "responses:k-b64"]
    assert cache.find_secret_leaks() == []
    assert cache.get("k-clean") is not None and cache.failures_many(["k-ok"]) == {"k-ok": "500: fine"}
    assert issubclass(SecretLeakError, ValueError)  # the CLI prints ValueErrors as one line, exit 2


def test_hf_backend_scrubs_the_token_and_survives_a_date_retry_after(monkeypatch):
    from cfbench.judges.base import RetryableError
    from cfbench.judges.hf_backend import HFJudge

    token = "hf_" + "Zx8Cv7Bn6Mm5Qw4Er3Ty2Ui1"
    monkeypatch.setenv("HF_TOKEN", token)

    class Resp:
        status_code = 429
        headers = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}

    class Boom(Exception):
        response = Resp()

    class Client:
        def chat_completion(self, **kw):
            raise Boom(f"rate limited for token {mixed_case_percent(token)} at https://x/?t={token[3:15]}")

    judge = HFJudge("m/x")
    judge.spec = "hf:m/x"
    monkeypatch.setattr(judge, "_get_client", lambda: Client())
    with pytest.raises(RetryableError) as info:
        judge.complete(req(0))
    msg = str(info.value)
    assert info.value.retry_after is None and info.value.overload
    assert "<HF_TOKEN>" in msg and echoed_credential(msg, ("HF_TOKEN",)) is None and token[3:11] not in msg
