"""`cfbench view DIR` never follows a link out of DIR: a `view.html` link is replaced, not written through,
and a linked file outside the folder is never read into the page (issue 36)."""

from __future__ import annotations

import os

import pytest

from view_util import hostile_cc_folder, page_data

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")


def test_view_html_link_out_of_the_folder_is_replaced_not_followed(tmp_path):
    from cfbench.cli import main

    run, outside = tmp_path / "run", tmp_path / "outside.txt"
    hostile_cc_folder(run)
    outside.write_text("precious", encoding="utf-8")
    (run / "view.html").symlink_to(outside)
    assert main(["view", str(run)]) == 0
    assert outside.read_text(encoding="utf-8") == "precious"  # the link's target is untouched
    assert not (run / "view.html").is_symlink()
    assert (run / "view.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_linked_files_outside_the_folder_are_not_embedded(tmp_path):
    from cfbench.cli import main

    run = tmp_path / "run"
    hostile_cc_folder(run)
    private = tmp_path / "private.txt"
    private.write_text("secret_col\nDO-NOT-EMBED-4711\n", encoding="utf-8")
    (run / "linked.csv").symlink_to(private)
    (run / "linked_fig.png").symlink_to(tmp_path / "private.txt")
    (run / "inside.csv").write_text("a\n1\n", encoding="utf-8")
    assert main(["view", str(run), "--out", str(tmp_path / "p.html")]) == 0
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    data = page_data(page)
    names = {t["name"] for t in data["tables"]}
    assert "inside" in names and "linked" not in names
    assert "DO-NOT-EMBED-4711" not in str(data) and "DO-NOT-EMBED-4711" not in page
    assert "linked.csv" not in {f["name"] for f in data["files"]}
    assert any("link" in n and "linked.csv" in n for n in data["notes"])  # said on the page, not silent


def test_a_link_inside_the_folder_is_still_read(tmp_path):
    from cfbench.view import write_view

    run = tmp_path / "run"
    hostile_cc_folder(run)
    (run / "real.csv").write_text("x\n2\n", encoding="utf-8")
    (run / "alias.csv").symlink_to(run / "real.csv")
    data = page_data(write_view(run, tmp_path / "v.html").read_text(encoding="utf-8"))
    assert {"real", "alias"} <= {t["name"] for t in data["tables"]}
