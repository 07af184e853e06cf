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


def _live_dollars(markdown: str) -> list[int]:
    """Offsets of the ``$`` outside code spans that no backslash escapes (JupyterLab and GitHub read two of them
    in one paragraph as a formula and set the text between as math)."""
    import re

    plain = re.sub(r"(`+).*?\1", lambda m: " " * len(m.group(0)), markdown, flags=re.S)
    return [m.start() for m in re.finditer(r"\$", plain)
            if (len(plain[:m.start()]) - len(plain[:m.start()].rstrip("\\"))) % 2 == 0]


def test_the_boundary_escapes_every_dollar_outside_code_spans():
    assert _live_dollars("cost $1 and $2") == [5, 12]  # the checker sees them
    text = md_safe("cost $1 and $2; cache `$CFBENCH_CACHE_DIR/x`; kept \\$3; name a$b$c")
    assert _live_dollars(text) == []
    assert "`$CFBENCH_CACHE_DIR/x`" in text and "\\$1" in text and "kept \\$3" in text and "a\\$b\\$c" in text
    assert md_safe(text) == text  # escaping twice changes nothing
