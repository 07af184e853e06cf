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
