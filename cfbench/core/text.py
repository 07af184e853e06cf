"""Outside text made safe for where it goes: a file, a terminal, a spreadsheet, Markdown or HTML.

Text that reaches cfbench from outside (judge replies, server error bodies, transcripts, judge and
config names) is data. These helpers keep it from acting as anything else:

* :func:`unstorable` says why a text cannot be written as UTF-8 (a lone surrogate), naming the
  character and where it is;
* :func:`for_terminal` neutralises control characters (escape sequences that set a title, clear the
  screen or rewrite a line) before a line is printed;
* :func:`neutralise_cell` keeps a spreadsheet from evaluating a CSV text cell (``=``, ``+``, ``-``,
  ``@``, tab, CR at its start);
* :func:`md_text` and :func:`md_code` put outside text into notebook Markdown: escaped for Markdown and
  HTML (a raw ``<img onerror>`` never reaches a page), code spans whose fence outlasts any run of
  backticks inside.

No imports from the rest of the package.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["unstorable", "find_unstorable", "for_terminal", "neutralise_cell", "md_text", "md_code", "md_safe",
           "html_text", "csv_text", "contradicting_verdict", "json_spans", "json_values"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def unstorable(text: object) -> str | None:
    """Why ``text`` cannot be stored as UTF-8 (``holds a lone surrogate (U+D800 at character 4)``), else
    None (also for anything that is not a string)."""
    if isinstance(text, str) and (m := _SURROGATE.search(text)):
        return f"holds a lone surrogate (U+{ord(m.group(0)):04X} at character {m.start()})"
    return None


def find_unstorable(obj: object, where: str = "") -> tuple[str, str] | None:
    """The first string (key or value) inside ``obj`` (nested dicts and lists, as JSON loads them) that
    cannot be stored as UTF-8: ``(field path, reason)`` such as ``("turns[2].text", "holds a lone
    surrogate (U+D800 at character 5)")``, else None."""
    if isinstance(obj, str):
        bad = unstorable(obj)
        return (where or "<value>", bad) if bad else None
    if isinstance(obj, dict):
        for k, v in obj.items():
            sub = f"{where}.{k}" if where else str(k)
            if bad := unstorable(k):
                return sub, f"name {bad}"
            if found := find_unstorable(v, sub):
                return found
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            if found := find_unstorable(v, f"{where}[{i}]"):
                return found
    return None


# -- terminals ---------------------------------------------------------------------------------------
#: control characters (C0, DEL, C1) and the bidi controls that reorder what a line shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: object, *, newlines: bool = False) -> str:
    """``text`` safe to print: every control character (escape sequences that set a title, clear the
    screen or move the cursor; CR that overwrites a line; NUL; bidi overrides) shown as a visible
    ``\\x1b``-style escape instead of acting; newlines too unless ``newlines`` (so outside text cannot
    forge a line of its own, such as a fake "all requests succeeded").

    >>> for_terminal("boom \\x1b]0;owned\\x07\\r\\nall requests succeeded")
    'boom \\\\x1b]0;owned\\\\x07\\\\x0d\\\\x0aall requests succeeded'
    """
    text = text if isinstance(text, str) else str(text)
    if newlines:
        return "\n".join(_CONTROL.sub(lambda m: _shown(m.group(0)), line) for line in text.split("\n"))
    return _CONTROL.sub(lambda m: _shown(m.group(0)), text)


# -- spreadsheets ------------------------------------------------------------------------------------
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: str) -> str:
    """A CSV text cell a spreadsheet shows as text: a leading ``=``, ``+``, ``-``, ``@``, tab or CR gets a
    ``'`` in front (:func:`cfbench.perturb.read_decisions` takes it off). Only text: a number in a numeric
    column never comes here (:func:`csv_text`), so ``-0.25`` stays a number.

    >>> neutralise_cell("=cmd|' /C calc'!A0"), neutralise_cell("star-1::gender::male")
    ("'=cmd|' /C calc'!A0", 'star-1::gender::male')
    """
    return "'" + value if value.startswith(_FORMULA_START) else value


def csv_text(frame: "object") -> str:
    """The one CSV serialisation of cfbench's tables (a pandas DataFrame, no index): every text cell
    and column name a spreadsheet would evaluate neutralised (:func:`neutralise_cell`); numbers, booleans
    and missing values written as they are."""
    import pandas as pd

    assert isinstance(frame, pd.DataFrame)
    import csv

    out = frame.copy(deep=False)
    has_cr = False
    for col in out.columns:
        series = out[col]
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            out[col] = series.map(lambda v: neutralise_cell(v) if isinstance(v, str) else v, na_action="ignore")
            has_cr = has_cr or bool(out[col].map(lambda v: isinstance(v, str) and "\r" in v).any())
    out.columns = [neutralise_cell(c) if isinstance(c, str) else c for c in out.columns]
    # Python 3.11's csv leaves a field holding a lone CR unquoted (a reader then splits the row there):
    # such a table is written with every text cell quoted; any other keeps the minimal quoting
    return out.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC if has_cr else csv.QUOTE_MINIMAL)


# -- replies ----------------------------------------------------------------------------------------------
#: a Yes or No standing alone after a sentence break, a line break or a turn ("but", "actually", "wait"),
#: optionally labelled ("Final answer: No"): a second verdict, not a word inside reasoning ("the agent said no")
_OTHER_VERDICT = re.compile(
    r"(?:^|[.!?;:\n]|\bbut\b|\bactually\b|\bwait\b)[\s,*_\"'`(\[]*"
    r"(?:(?:final\s+)?(?:answer|verdict|decision)\s*(?:is\s*)?[:=\-]?\s*[*_\"'`]*)?"
    r"(yes|no)\b(?![-'’]\w)[\s*_\"'`)\]]*(?=$|[.!?;\n,])", re.I)


def contradicting_verdict(rest: str, answer: str) -> str | None:
    """In ``rest`` (a reply after its verdict ``answer``, "Yes" or "No"), the first Yes / No that stands on
    its own and says the opposite ("Yes. No.", "Yes, but actually no.", "Yes\\nFinal answer: No"), else
    None. A reply stating both is ambiguous: a parse failure, never a verdict."""
    for m in _OTHER_VERDICT.finditer(rest):
        if m.group(1).lower() != answer.lower():
            return m.group(0).strip()
    return None


def json_spans(text: str) -> list[tuple[int, int, list[tuple[str, Any]]]]:
    """Every JSON object in ``text`` (scanned from each ``{`` not inside an object already read) as
    ``(start, end, pairs)``: where it lies and its (key, value) pairs in order - duplicate keys kept, as a
    parser that keeps the last would hide them. Nested objects are read as values."""
    out: list[tuple[int, int, list[tuple[str, Any]]]] = []
    dec = json.JSONDecoder(object_pairs_hook=lambda pairs: pairs, strict=False)
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, list):
            out.append((pos, end, [(str(k), v) for k, v in obj]))
        pos = text.find("{", end)
    return out


def json_values(text: str) -> list[list[tuple[str, Any]]]:
    """The (key, value) pairs of every JSON object in ``text``, as :func:`json_spans` reads them."""
    return [pairs for _, _, pairs in json_spans(text)]


# -- Markdown and HTML ---------------------------------------------------------------------------------
_MD_PUNCT = re.compile(r"([`*_\[\]|~])")  # what can open markup inside a line (backslash and $: _LITERAL_WORD)
_TICKS = re.compile(r"`+")
#: a word a renderer may turn into math or a link: a backslash (``\\(`` opens math), a dollar, a URL scheme,
#: ``www.`` or an e-mail address. :func:`md_text` shows such a word in a code span, where no renderer sets math
#: (MathJax skips code) or links; a backslash escape is not enough: ``\\$x\\$`` renders as ``$x$``, which
#: the page's MathJax then sets as a formula.
_LITERAL_WORD = re.compile(r"\S*(?:[\\$]|://|www\.|[A-Za-z0-9._%+-]@[A-Za-z0-9])\S*", re.I)
_UNSAFE = re.compile(r"(?:\\?\$)+|\\\\(?=[()\[\]A-Za-z])|\\(?=[A-Za-z])|\\.|<(?=[A-Za-z/!?])|\](?=[(\[:])|"
                     r":(?=//)|(?<=www)\.|(?<=[A-Za-z0-9._%+-])@(?=[A-Za-z0-9])|"
                     r"&(?:#0*36|#x0*24|(?-i:dollar)|#0*92|#x0*5c|(?-i:bsol));", re.S | re.I)


def html_text(text: object) -> str:
    """``text`` for HTML text or a quoted attribute: ``&``, ``<``, ``>``, quotes escaped."""
    import html

    return html.escape(text if isinstance(text, str) else str(text), quote=True)


def _md_inline(text: str) -> str:
    """``text`` with no backslash, dollar or link in it, HTML escaped and its inline marks backslash-escaped."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _MD_PUNCT.sub(r"\\\1", escaped)


def md_text(text: object) -> str:
    """Outside text (a judge, config, dimension or cue name) as inert inline Markdown: on one line,
    HTML escaped (no tag, no entity of its own) and every mark that can open inline markup backslash-escaped
    (no emphasis, code, link or image, table cell, strike-through); a word holding a backslash, a dollar, a
    URL, ``www.`` or an e-mail address is shown in a code span, so no renderer sets it as math or a link.
    Meant for text inside a line, never at its start."""
    one_line = " ".join((text if isinstance(text, str) else str(text)).split())
    out: list[str] = []
    pos = 0
    for m in _LITERAL_WORD.finditer(one_line):
        out += [_md_inline(one_line[pos:m.start()]), md_code(m.group(0))]
        pos = m.end()
    out.append(_md_inline(one_line[pos:]))
    return "".join(out)


def md_code(text: object) -> str:
    """Outside text as an inline code span that holds whatever it contains: fenced by one backtick more
    than its longest run of backticks, padded when it starts or ends with one, on one line. Markdown and
    HTML inside a code span are shown, never interpreted."""
    one_line = " ".join((text if isinstance(text, str) else str(text)).split()) or " "
    fence = "`" * (max((len(m) for m in _TICKS.findall(one_line)), default=0) + 1)
    pad = " " if one_line[0] == "`" or one_line[-1] == "`" or (one_line[0] == " " and one_line[-1] == " ") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def _escaped(text: str, i: int) -> bool:
    """Whether the character at ``i`` follows an odd run of backslashes (a Markdown escape)."""
    k = i
    while k > 0 and text[k - 1] == "\\":
        k -= 1
    return (i - k) % 2 == 1


def _outside_code(text: str) -> str:
    """Text outside code spans: no tag (``<`` before a letter, ``/``, ``!`` or ``?`` written ``&lt;``), no
    link, image or link definition (``]`` before ``(``, ``[`` or ``:`` backslash-escaped; cfbench's own
    Markdown uses none), no formula (a run of ``$``, escaped or not, and a backslash before a letter or,
    escaped, before a bracket, are shown in a code span: JupyterLab, GitHub and nbconvert's MathJax set the
    text between two ``$`` or between ``\\(`` and ``\\)`` as math; cfbench's own Markdown writes amounts as
    "USD 1.23"; a character reference to ``$`` or ``\\`` is shown the same way), no autolink (``:`` before
    ``//``, the ``.`` of ``www.`` and the ``@`` of an address backslash-escaped). ``p < 0.05`` and
    ``[0.12, 0.34]`` stay as they are; any other escape pair is kept."""
    return _UNSAFE.sub(_defused, text)


def _defused(m: re.Match) -> str:
    """What :func:`_outside_code` writes for one match of ``_UNSAFE``."""
    mark = m.group(0)
    if mark[0] == "&":  # a character reference the page decodes to $ or a backslash, which MathJax then reads
        return "`$`" if mark == "&dollar;" or mark.lower().lstrip("&#x0") in ("36;", "24;") else "`\\`"
    if mark[-1] == "$":  # a code span: MathJax skips code, and ``\\$`` renders as a ``$`` it would read
        return md_code(mark.replace("\\", ""))
    if mark in ("\\", "\\\\"):  # a backslash before a bracket or a letter: ``\\(`` and ``\\begin`` open math
        return "`\\`"
    if mark[0] == "\\":
        return mark
    return "&lt;" if mark == "<" else "\\" + mark


def md_safe(markdown: str) -> str:
    """Markdown cfbench built (its own emphasis, headings, lists and code spans kept) with, outside code
    spans, every ``<`` that could open a tag written ``&lt;`` and every ``]`` that could close a link or
    ``$`` that could open a formula escaped: whatever an interpolated name held,
    no raw HTML tag, link or remote image reaches the page. Code spans are found as CommonMark finds
    them (a run of n backticks closed by the next run of exactly n), so a backtick inside a name that
    breaks a span still leaves whatever follows it escaped; and where a renderer might not see a span, none is
    assumed (an escaped backtick, ``\\```, opens none; a span must close on its own line, as every span
    :func:`md_code` writes does, so no blank line or block that ends a paragraph can lie inside one). Erring
    that way only shows an escape inside what renders as code; the other way would leave markup live."""
    out: list[str] = []
    pos = 0
    n = len(markdown)
    while pos < n:
        m = _TICKS.search(markdown, pos)
        if m is None:
            out.append(_outside_code(markdown[pos:]))
            break
        if _escaped(markdown, m.start()):  # a literal backtick; the rest of its run may still open a span
            out.append(_outside_code(markdown[pos:m.start() + 1]))
            pos = m.start() + 1
            continue
        out.append(_outside_code(markdown[pos:m.start()]))
        fence = m.group(0)
        line_end = markdown.find("\n", m.end())
        line_end = n if line_end < 0 else line_end
        close = m.end()
        while True:
            c = _TICKS.search(markdown, close, line_end)
            if c is None or len(c.group(0)) == len(fence):
                break
            close = c.end()
        if c is None:  # an unclosed run is literal backticks, escaped so that no later span pairs with them
            out.append("\\`" * len(fence))
            pos = m.end()
            continue
        out.append(markdown[m.start():c.end()])
        pos = c.end()
    return "".join(out)
