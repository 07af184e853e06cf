"""A table cell's dollar signs are text, never a formula: the study notebooks show every DataFrame through
``report.frame_html``, whose block neither MathJax 2 (nbconvert's pages) nor MathJax 3 (JupyterLab) typesets.

The checker reads a page as MathJax does: text outside ``script``/``style``/``pre``/``code``/``textarea``
and outside a block with the ignore class of that MathJax version (``tex2jax_ignore`` for 2,
``mathjax_ignore`` for 3; JupyterLab 4 uses MathJax 3 with its default options). A ``$`` left there can
open a formula; the tests ask for none."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from cfbench.report import MATH_IGNORE, frame_html, no_math_in_tables

nbformat = pytest.importorskip("nbformat")
nbconvert = pytest.importorskip("nbconvert")

STAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "star" / "dialogues"
SKIP = {"script", "noscript", "style", "textarea", "pre", "code"}
VOID = {"br", "wbr", "img", "hr", "input", "meta", "link", "col", "area", "base", "embed", "source", "track"}


class _MathText(HTMLParser):
    """The text a MathJax whose ignore class is ``ignore`` searches for delimiters."""

    def __init__(self, ignore: str):
        super().__init__()
        self.ignore = ignore
        self.stack: list[bool] = []  # per open element: is its content read?
        self.parts: list[str] = []

    def _reading(self) -> bool:
        return not self.stack or self.stack[-1]

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        self.stack.append(self._reading() and tag not in SKIP and self.ignore not in classes)

    def handle_endtag(self, tag):
        if tag not in VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self._reading():
            self.parts.append(data)


def dollars_read(frame_output_html: str) -> dict[str, int]:
    """How many ``$`` each MathJax version reads on nbconvert's page of a notebook showing this HTML output."""
    out = nbformat.v4.new_output("display_data", data={"text/html": frame_output_html, "text/plain": "table"})
    cell = nbformat.v4.new_code_cell("T", outputs=[out])
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[cell]))
    found = {}
    for version, ignore in (("mathjax2", "tex2jax_ignore"), ("mathjax3", "mathjax_ignore")):
        p = _MathText(ignore)
        p.feed(html)
        found[version] = "".join(p.parts).count("$")
    return found


def _prices() -> pd.DataFrame:
    return pd.DataFrame({"turn": ["customer", "agent"],
                         "text": ["I was charged $20 and then $45 for one order", "A refund of $45 is on its way"],
                         "cost $": [20, 45]})


def test_the_checker_reads_the_dollars_of_pandas_own_html():  # else the tests below would pass vacuously
    frame = _prices()
    assert dollars_read(frame._repr_html_()) == {"mathjax2": 4, "mathjax3": 4}
    # pandas' own switch marks the table for MathJax 2 (and, from pandas 3, for MathJax 3 too)
    with pd.option_context("display.html.use_mathjax", False):
        assert dollars_read(frame._repr_html_())["mathjax2"] == 0


def test_frame_html_leaves_no_dollar_to_either_mathjax():
    frame = _prices()
    html = frame_html(frame)
    assert html.startswith(f'<div class="{MATH_IGNORE}">') and "I was charged $20 and then $45" in html
    assert dollars_read(html) == {"mathjax2": 0, "mathjax3": 0}


def test_frame_html_on_star_dialogues_with_prices():
    """Real customers' words: STAR dialogue 2810 names $500 in several turns."""
    from cfbench.io.star import load_star

    if not (STAR / "2810.json").is_file():
        pytest.skip("../shared/data/star is not beside this checkout")
    (t,) = load_star(STAR / "2810.json")
    frame = pd.DataFrame({"speaker": [x.speaker for x in t.turns], "text": [x.text for x in t.turns]})
    assert frame["text"].str.count(r"\$").sum() >= 2
    assert dollars_read(frame._repr_html_())["mathjax3"] >= 2
    assert dollars_read(frame_html(frame)) == {"mathjax2": 0, "mathjax3": 0}


def test_no_math_in_tables_registers_the_formatter_in_a_running_shell():
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell")
    assert no_math_in_tables() is False  # no shell: nothing to register, and it says so
    shell = interactiveshell.InteractiveShell.instance()
    try:
        assert no_math_in_tables() is True
        data, _ = shell.display_formatter.format(_prices())
        assert data["text/html"] == frame_html(_prices())
    finally:
        interactiveshell.InteractiveShell.clear_instance()


def test_every_study_notebook_turns_it_on_before_showing_a_table():
    for path in sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        setup = next(i for i, s in enumerate(code) if "pd.set_option(" in s)
        assert "\nno_math_in_tables()" in code[setup], path.name
        assert not any("display(" in s for s in code[:setup]), path.name


def test_frame_html_escapes_markup_from_files():
    frame = pd.DataFrame({"<script>alert(0)</script>": ["<img src=x onerror=alert(1)>", "../../etc/passwd $1 $2"]})
    html = frame_html(frame)
    assert "<script>" not in html and "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert dollars_read(html) == {"mathjax2": 0, "mathjax3": 0}
