"""`cfbench variants`: a bad --out and an undecodable file name are one line or handled, never a traceback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cfbench.cli import main


def _star_dialogue() -> Path:
    for up in Path(__file__).resolve().parents:
        d = up / "shared" / "data" / "star" / "dialogues"
        if d.is_dir():
            return d / "410.json"
    pytest.skip("STAR dialogues not found in shared/data/star beside the checkout")


def _one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cfbench: error:") and "\n" not in err and "Traceback" not in err, err
    return err


def test_out_that_is_a_file_or_under_a_file_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    star = _star_dialogue()
    (tmp_path / "outfile").write_text("mine")
    import cfbench.perturb as perturb

    def no_work(*a, **k):
        raise AssertionError("variants were made before --out was checked")

    monkeypatch.setattr(perturb, "make_variants", no_work)
    err = _one_line(capsys, ["variants", str(star), "--out", str(tmp_path / "outfile"), "--quiet"])
    assert "--out must be a folder; this path is a file" in err and "outfile" in err
    err = _one_line(capsys, ["variants", str(star), "--out", str(tmp_path / "outfile" / "sub"), "--quiet"])
    assert "has a file in its path" in err
    assert (tmp_path / "outfile").read_text() == "mine"  # untouched


@pytest.mark.skipif(os.name != "posix", reason="undecodable file names are a POSIX thing")
def test_a_file_name_that_is_not_utf8_gives_a_page_titled_with_escapes(tmp_path, capsys):
    star = _star_dialogue()
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/dialogue\xff.json"))
    try:
        shutil.copy(star, odd)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses undecodable names")
    out = tmp_path / "out"
    assert main(["variants", str(odd), "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err
    page = (out / "review.html").read_text(encoding="utf-8")
    assert "<title>cfbench variant review: dialogue\\xff.json</title>" in page
