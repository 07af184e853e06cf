"""The results-folder leak check finds a credential in every file a run writes, in any form."""

from __future__ import annotations

import pandas as pd

from cfbench.core.secrets import find_secret_leaks

KEY = "sk-test-4f9a7c2e1b8d6a3f5e0c9b7a"


def test_every_written_form_is_found(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pd.DataFrame({"text": ["fine", f"echo {KEY}"]}).to_parquet(tmp_path / "judgments.parquet")
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)  # as a server's JSON may spell it
    (tmp_path / "summary.json").write_text('{"x": "' + escaped + '"}')
    (tmp_path / "table.csv").write_text(f"a,b\n1,{KEY[3:20]}\n")  # a 17-character piece
    (tmp_path / "clean.csv").write_text("a,b\n1,2\n")
    found = {p.rsplit("/", 1)[1] for p in find_secret_leaks(tmp_path)}
    assert found == {"judgments.parquet", "summary.json", "table.csv"}


def test_nothing_to_find_without_credentials(tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "t.csv").write_text(f"{KEY}\n")
    assert find_secret_leaks(tmp_path) == []


def test_a_key_inside_the_view_pages_compressed_data_is_found(tmp_path, monkeypatch):
    from cfbench.view import view_html

    for name in ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # pages written while the key was not in the environment (so the page's own scrub did not see it)
    leaky = view_html({"title": "t", "run_info": {"command": f"reply said {KEY}"}, "pairs": None})
    clean = view_html({"title": "t", "run_info": {"command": "nothing here"}, "pairs": None})
    assert KEY not in leaky and KEY[8:] not in leaky  # gzip + base64: invisible to a plain text scan
    (tmp_path / "view.html").write_text(leaky, encoding="utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "view.html").write_text(clean, encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert [p.rsplit("/", 1)[1] for p in find_secret_leaks(tmp_path)] == ["view.html"]
    assert find_secret_leaks(tmp_path / "other") == []
