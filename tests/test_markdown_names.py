"""Issue 36: names from outside (judge specs, config file names, overrides, dimension and cue names) put into
notebook Markdown never become live markup: rendered with nbconvert to HTML, no tag or handler survives."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from cfbench.core.text import md_code, md_safe, md_text

nbformat = pytest.importorskip("nbformat")
nbconvert = pytest.importorskip("nbconvert")

HOSTILE = ["<img src=x onerror=alert(0)>", "<svg onload=alert(1)>", "</script><script>alert(1)</script>",
           "a`<img src=x onerror=alert(2)>`b", "``<img src=x onerror=alert(3)>``", "[click](javascript:alert(4))",
           "![x](http://remote.test/pixel.png)", "<a href='javascript:alert(5)'>x</a>", "*bold* $x$ | cell |"]
BAD_TAGS = {"img", "svg", "script", "iframe", "object", "embed", "style", "math", "video", "audio", "form"}
URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "data"}


class _Tags(HTMLParser):
    """Tags and attributes inside the rendered Markdown cells (the page's own scaffolding left out)."""

    def __init__(self):
        super().__init__()
        self.depth = 0  # inside a rendered markdown cell when > 0
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if self.depth:
            self.depth += 1
            if "anchor-link" in classes:  # nbconvert's own link to a heading
                return
            links = [v or "" for k, v in attrs if k in URL_ATTRS]
            if tag in BAD_TAGS or any(k.startswith("on") for k, _ in attrs) or \
                    any(not v.lower().startswith(("http://", "https://", "#")) for v in links):
                self.found.append(f"<{tag} {attrs}>")
        elif tag == "div" and "jp-RenderedMarkdown" in classes:
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1


def live_markup(*markdown: str) -> list[str]:
    """Tags, handlers and script links that the Markdown cells ``markdown`` put into nbconvert's HTML."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(m) for m in markdown])
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    parser = _Tags()
    parser.feed(html)
    return parser.found


def test_the_checker_sees_raw_markup():  # else every test below would pass vacuously
    assert live_markup(f"judge `{HOSTILE[3]}`")
    assert live_markup("x " + HOSTILE[0]) and live_markup("x " + HOSTILE[5])


@pytest.mark.parametrize("name", HOSTILE)
def test_helpers_and_the_boundary_leave_no_live_markup(name):
    cells = [f"judge {md_code(name)} on **{md_text(name)}**", md_safe(f"judge `{name}`; dimension {name}"),
             md_safe(f"**{md_text(name)}** and {md_code(name)}; cue {md_text(name)}"),
             md_safe(f"### `{name}` (headline judge)\n\n- **{md_text(name)}** - 3 replies read")]
    assert live_markup(*cells) == [], cells


@pytest.mark.parametrize("name", ["a`b", "``x``", "`lead", "trail`", "plain"])
def test_a_code_span_holds_whatever_its_name_holds(name):
    span = md_code(name)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"x {span} y")])
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert f"<code>{name.replace('<', '&lt;')}</code>" in html


@pytest.mark.parametrize("text", ["x\\`<img src=x onerror=alert(1)>\\` y",  # escaped backticks open no span
                                  "a`b, <img src=x onerror=alert(3)>\n\n**c`d**",  # nor a span across paragraphs
                                  "x `a\n\n[c](javascript:alert(4))\n\nb` y",
                                  "judges: x\\`y, <img src=x onerror=alert(5)>; z\\`"])
def test_the_boundary_sees_no_span_where_the_renderer_sees_none(text):
    assert live_markup(text)  # raw, the renderer makes it live
    assert live_markup(md_safe(text)) == [], md_safe(text)


def test_the_provenance_cell_escapes_config_names_overrides_and_command():
    from cfbench.cli.reproduce import provenance_markdown

    bad = HOSTILE[0]
    info = {"study": "contact_center_qa", "config": f"{bad}-3f2a", "mode": "live", "config_source": f"-f {bad}.yaml",
            "overrides": {"judges": [f"openai:{HOSTILE[3]}@http://127.0.0.1:9/v1"]},
            "command": f"cfbench reproduce -f '{bad}.yaml'", "cpu_model": HOSTILE[1], "cache": {"file": HOSTILE[4]},
            "wall_s": 1.0}
    assert live_markup(provenance_markdown(info)) == []


def test_contact_center_header_and_findings_with_a_hostile_judge_name(tmp_path):
    pytest.importorskip("aiohttp")
    from cfbench.judges.fakeserver import FakeOpenAIServer
    from cfbench.studies.contact_center_qa import Params, run

    with FakeOpenAIServer() as srv:
        judges = (f"openai:{HOSTILE[0]}@{srv.base_url}", f"openai:{HOSTILE[3]}@{srv.base_url}")
        r = run(Params(judges=judges, n_items=2, dimensions=("gender", "priming"), qa_mode="compact", n_boot=20,
                       coaching=False), progress=False)
    header, findings = r.header(), r.findings()
    assert "onerror" in header  # the name is shown, as text
    assert live_markup(header, findings) == []


class _Text(HTMLParser):
    """The text of the rendered Markdown cells outside code, where a page's MathJax looks for formulas."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.code = 0
        self.parts: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += 1
            self.code += tag in ("code", "pre")
            if tag == "a" and "anchor-link" not in (dict(attrs).get("class") or ""):
                self.links.append(dict(attrs).get("href") or "")
        elif tag == "div" and "jp-RenderedMarkdown" in (dict(attrs).get("class") or ""):
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1
            self.code -= tag in ("code", "pre")

    def handle_data(self, data):
        if self.depth and not self.code:
            self.parts.append(data)


def math_and_links(*markdown: str) -> tuple[list[str], list[str]]:
    """What nbconvert's page would set as math (``$``, ``\\(``, ``\\[``, ``\\begin`` in text outside code, as
    its MathJax reads them) and the links it made, for the Markdown cells ``markdown``."""
    import re

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(m) for m in markdown])
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    parser = _Text()
    parser.feed(html)
    text = "".join(parser.parts)
    return re.findall(r"\$|\\[(\[]|\\begin", text), parser.links


MATHS = [r"\(x+y\)", r"\[x\]", "$x$ and $y$", r"\\(x\\)", "$$x$$", r"\begin{equation}x\end{equation}",
         r"\\begin{x}", "a`$ b $c", "cost \\$1 and \\$2",
         # character references the page decodes to $ or a backslash before MathJax reads it
         "&#36;x&#36;", "&#x24;y&#X024;", "&dollar;z&dollar;", "&#92;(x&#92;)", "&bsol;begin{x}", "&#x5C;[x&#x5c;]"]
LINKS = ["https://evil.test/a", "http://x.test/?q=1"]  # nbconvert links bare URLs with a scheme
GFM_LINKS = ["see www.evil.test now", "mail a@b.com", "ftp://x.test"]  # JupyterLab's renderer (GFM) links these too


def test_the_checkers_see_math_and_links():  # else the tests below would pass vacuously
    for name in MATHS[2:]:  # raw, \( and \[ are Markdown escapes of ( and [
        assert math_and_links(name)[0], name
    for name in LINKS:
        assert math_and_links(name)[1], name


@pytest.mark.parametrize("name", MATHS + LINKS + GFM_LINKS)
def test_no_name_becomes_math_or_a_link(name):
    # A backslash escape is not enough: nbconvert renders \$x\$ and \\(x\\) as $x$ and \(x\), which the page's
    # MathJax sets as formulas; words that could be math or links are shown in code spans.
    cells = [f"judge **{md_text(name)}** end", md_safe(f"dim {name} end"), md_safe(f"- cue {md_text(name)}; `{name}`")]
    assert math_and_links(*cells) == ([], []), cells
    assert [md_safe(c) for c in cells] == cells  # escaping twice changes nothing


@pytest.mark.parametrize("name", GFM_LINKS)
def test_what_gfm_would_link_is_in_a_code_span_or_escaped(name):
    import re

    word = next(w for w in name.split() if re.search(r"://|www\.|@", w))
    assert md_code(word) in md_text(name)
    assert not re.search(r"(?<!\\)(?:://|www\.|\w@\w)", md_safe(f"dim {name} end"))


def test_md_text_shows_such_a_name_whole_and_leaves_others_as_they_were():
    assert md_text("a $b c") == "a `$b` c"
    assert md_text("p < 0.05 [0.1, 0.2]") == "p &lt; 0.05 \\[0.1, 0.2\\]"
    assert md_safe("p < 0.05 [0.1, 0.2] **b** @ `x`") == "p < 0.05 [0.1, 0.2] **b** @ `x`"
