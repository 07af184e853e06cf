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

import re

__all__ = ["unstorable", "find_unstorable", "for_terminal", "neutralise_cell", "md_text", "md_code", "html_text"]

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
