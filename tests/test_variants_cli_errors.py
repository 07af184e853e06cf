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


def test_out_never_writes_through_a_linked_file(tmp_path, capsys):
    """A review.html (and the other outputs) that is a symbolic link is refused unless cfbench made that name
    there; when it did, the link is replaced and its target untouched."""
    import json

    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"id": "t1", "agent_name": "Omar", "turns": [
        {"speaker": "agent", "text": "Hello, my name is Omar. How can I help you today?"},
        {"speaker": "customer", "text": "My order has not arrived yet and I am worried."},
        {"speaker": "agent", "text": "I am sorry to hear that, I will check the order for you right now."}]}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("review.html", "variants.parquet", "rejections.csv"):
        (victim / name).write_text("precious")
        os.symlink(victim / name, out / name)
    # links cfbench did not make there: refused, nothing written anywhere
    assert main(["variants", str(src), "--out", str(out), "--quiet", "--dimensions", "gender"]) == 2
    assert "which cfbench did not make there" in capsys.readouterr().err
    assert all((victim / n).read_text() == "precious" and (out / n).is_symlink()
               for n in ("review.html", "variants.parquet", "rejections.csv"))
    # names an earlier run made there (its note lists them), since swapped for links: replaced, never written through
    (out / ".cfbench-variants").write_text("rejections.csv\nreview.html\nvariants.parquet\n")
    assert main(["variants", str(src), "--out", str(out), "--quiet", "--dimensions", "gender"]) == 0, \
        capsys.readouterr().err
    for name in ("review.html", "variants.parquet", "rejections.csv"):
        assert (victim / name).read_text() == "precious"
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    assert "<html" in (out / "review.html").read_text(encoding="utf-8").lower()
    assert sorted(p.name for p in out.iterdir()) == [".cfbench-variants", "rejections.csv", "review.html",
                                                     "variants.parquet"]


def test_a_review_page_cfbench_did_not_make_is_never_replaced(tmp_path):
    """cfbench replaces only what it made: a researcher's own review.html in --out stops the run before any
    work; files an earlier run made there (listed in .cfbench-variants) are replaced as before."""
    from cfbench.cli.variants import run_variants
    from cfbench.core.errors import InputError
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path

    out = tmp_path / "review"
    out.mkdir()
    mine = out / "review.html"
    mine.write_text("<p>my notes</p>")
    with pytest.raises(InputError, match="review.html, which cfbench did not make there"):
        run_variants(shipped_transcripts_path(), out, limit=1, progress=False)
    assert mine.read_text() == "<p>my notes</p>" and not (out / "variants.parquet").exists()
    mine.unlink()
    first = run_variants(shipped_transcripts_path(), out, limit=1, progress=False)
    again = run_variants(shipped_transcripts_path(), out, limit=1, progress=False)  # its own files: replaced
    assert first == again and all(p.exists() for p in again.values())
