"""Build the run explorer page of a results folder (``view.html``).

Reading: the pairs come from the study that wrote the folder, as a :class:`~cfbench.view.pairs.PairSet`
(the protocol in :mod:`cfbench.view.pairs`); this module knows no study. The tables (every CSV),
figures (every PNG) and provenance (``run_info.json``, ``summary.json``) are read from the folder itself;
a file that is a link out of the folder is not read (the page says so). What a folder lacks is said on
the page (``notes``), never filled in.

Writing: the data travel as JSON inside ``<script type="application/json">`` (gzip +
base64, ``<``, ``>`` and ``&`` escaped as ``\\u003c`` etc.), rendered by one inline script
whose SHA-256 is the only script the page's Content-Security-Policy allows
(``default-src 'none'``: no network, no other script). The script builds every element with
DOM calls and ``textContent``; no data string ever reaches ``innerHTML``.
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import html
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from cfbench.core.errors import InputError
from cfbench.core.paths import package_text
from cfbench.core.secrets import credentials, echoed_credential, scrub_secrets
from cfbench.core.text import csv_text

from .pairs import PairSet, final_name, folder_file, read_json, study_of

__all__ = ["ViewPage", "build_payload", "view_html", "write_view", "diff_segments", "register_explorer",
           "explorer_for", "write_inputs", "variants_for_page", "INPUT_FRAMES",
           "MAX_TABLE_ROWS", "PAGE_VERSION"]

PAGE_VERSION = 2
#: rows of one CSV table embedded in the page (the rest is counted, not shown)
MAX_TABLE_ROWS = 2000
_NUM_DIGITS = 6

# ---------------------------------------------------------------------------------------------
# diff: the review page's word-level diff, turned into plain segments (no HTML reaches the page)

_TAG = re.compile(r"(<del>.*?</del>|<ins>.*?</ins>)", re.S)


class _Segs:
    """Alternating segments under construction: even positions unchanged, odd positions changed."""

    def __init__(self) -> None:
        self.items = [""]

    def same(self, text: str) -> None:
        if not text:
            return
        if len(self.items) % 2 == 1:
            self.items[-1] += text
        else:
            self.items.append(text)

    def changed(self, text: str) -> None:
        if not text:
            return
        if len(self.items) % 2 == 0:
            self.items[-1] += text
        else:
            self.items.append(text)

    def extend(self, segs: Sequence[str]) -> None:
        for k, t in enumerate(segs):
            (self.same if k % 2 == 0 else self.changed)(t)


def diff_segments(before: str, after: str) -> tuple[list[str], list[str]]:
    """Word-level diff of two texts as alternating segments: ``[same, changed, same, changed, ...]``.

    Lines are matched first (a transcript's unchanged turns cost nothing); each replaced line is
    then diffed word by word with :func:`cfbench.perturb.review.diff_html` (the review page's
    diff), read back into plain text. Even positions are unchanged text, odd positions removed
    (left) or added (right) words; ``"".join(left) == before`` and ``"".join(right) == after``.

    >>> diff_segments("May I have your name?", "What is your name?")
    (['', 'May', ' ', 'I have', ' your name?'], ['', 'What', ' ', 'is', ' your name?'])
    """
    import difflib

    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    if len(a) <= 1 and len(b) <= 1:
        return _word_segments(before, after)
    left, right = _Segs(), _Segs()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.same("".join(a[i1:i2]))
            right.same("".join(b[j1:j2]))
        elif op == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(a[i1:i2], b[j1:j2]):
                sl, sr = _word_segments(x, y)
                left.extend(sl)
                right.extend(sr)
        elif op == "replace":
            sl, sr = _word_segments("".join(a[i1:i2]), "".join(b[j1:j2]))
            left.extend(sl)
            right.extend(sr)
        else:
            left.changed("".join(a[i1:i2]))
            right.changed("".join(b[j1:j2]))
    return left.items, right.items


def _word_segments(before: str, after: str) -> tuple[list[str], list[str]]:
    from cfbench.perturb.review import diff_html

    left, right = diff_html(before, after)
    out = []
    for side in (left, right):
        segs = [""]
        for part in _TAG.split(side):
            if not part:
                continue
            if part.startswith(("<del>", "<ins>")) and part.endswith(("</del>", "</ins>")):
                segs.append(html.unescape(part[5:-6]))
                segs.append("")
            else:
                segs[-1] += html.unescape(part)
        if segs[-1] == "" and len(segs) > 1:
            segs.pop()
        out.append(segs)
    return out[0], out[1]


# ---------------------------------------------------------------------------------------------
# a columnar pairs frame -> the page's payload


class _Strings:
    """A string table: each distinct text stored once, referenced by index (-1 for none)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def add(self, s: Any) -> int:
        if s is None or (isinstance(s, float) and math.isnan(s)) or s is pd.NA:
            return -1
        s = str(s)
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i

    def many(self, values: Iterable[Any]) -> list[int]:
        return [self.add(v) for v in values]


def _num(values: Any) -> list[Any]:
    arr = pd.to_numeric(pd.Series(values), errors="coerce").astype(float).to_numpy()
    out: list[Any] = []
    for v in arr:
        if not math.isfinite(v):
            out.append(None)
        elif v == int(v) and abs(v) < 2**53:
            out.append(int(v))
        else:
            out.append(float(f"{v:.{_NUM_DIGITS}g}"))
    return out


def _strs(values: Any) -> list[Any]:
    return [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))) else str(v)
            for v in values]


def _codes(values: Sequence[Any]) -> dict[str, Any]:
    """A categorical column: distinct values (in first-seen order) and one code per row."""
    s = pd.Series(_strs(values), dtype=object).fillna("(none)")
    codes, uniques = pd.factorize(s, sort=False)
    return {"values": [str(u) for u in uniques], "codes": codes.astype(int).tolist()}


def _pairs_payload(p: PairSet, strings: _Strings) -> dict[str, Any]:
    """The columnar, string-tabled form of a :class:`PairSet` the page's script reads."""
    p.check()
    facets = [{"name": "arm", **_codes(p.arm)}, {"name": "kind", **_codes(p.kind)}]
    facets += [{"name": k, **_codes(v)} for k, v in p.facets.items()]
    metrics = []
    for m in p.metrics:
        if m.kind == "num":
            metrics.append({"name": m.name, "kind": "num", "a": _num(m.a), "b": _num(m.b)})
        else:
            metrics.append({"name": m.name, "kind": "str", "a": strings.many(m.a), "b": strings.many(m.b)})
    flags = [{"name": f.name, "label": f.label, "yes": f.yes, "no": f.no,
              "values": [1 if bool(x) else 0 for x in f.values]} for f in p.flags]
    seen: dict[tuple[int, int], int] = {}
    diffs: list[list[int]] = []
    diff_blocks = []
    for t in p.diffs:
        index: list[int] = []
        for a, b in zip(t.a, t.b):
            ia, ib = strings.add(a), strings.add(b)
            if ia < 0 or ib < 0:
                index.append(-1)
                continue
            j = seen.get((ia, ib))
            if j is None:
                left, right = diff_segments(str(a), str(b))
                j = seen[(ia, ib)] = len(diffs)
                diffs.append([strings.add(s) for s in left] + [-2] + [strings.add(s) for s in right])
            index.append(j)
        diff_blocks.append({"label": t.label, "index": index})
    outputs = [{"label": t.label, "a": strings.many(t.a), "b": strings.many(t.b)} for t in p.outputs]
    return {"n": len(p), "ids": list(p.pair_id), "facets": facets,
            "side_a": strings.many(p.side_a), "side_b": strings.many(p.side_b),
            "metrics": metrics, "flags": flags, "diff_blocks": diff_blocks, "diffs": diffs, "outputs": outputs,
            "reasons": strings.many([r or None for r in (p.reasons or [])]),
            "same_input_note": p.same_input_note}

# ---------------------------------------------------------------------------------------------
# tables, figures, provenance: files of the folder itself (a link out of it is never read)


def _own_files(d: Path, pattern: str, skipped: list[str]) -> list[Path]:
    """The files of ``d`` matching ``pattern`` that stay inside ``d``; links out of it go to ``skipped``."""
    out = []
    for p in sorted(d.glob(pattern)):
        if folder_file(d, p.name) is not None:
            out.append(p)
        elif p.is_symlink():
            skipped.append(p.name)
    return out


def _read_json(d: Path, name: str) -> dict[str, Any]:
    p = folder_file(d, name)
    return {} if p is None else read_json(p)


def _tables(d: Path, skipped: list[str]) -> list[dict[str, Any]]:
    out = []
    for p in _own_files(d, "*.csv", skipped):
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text: {exc}", source=str(p)) from None
        reader = csv.reader(io.StringIO(text))
        header = next(reader, [])
        rows, n = [], 0
        for row in reader:
            n += 1
            if len(rows) < MAX_TABLE_ROWS:
                rows.append(row)
        out.append({"name": p.stem, "columns": header, "rows": rows, "n_rows": n})
    return out


_PNG = b"\x89PNG\r\n\x1a\n"


def _figures(d: Path, skipped: list[str] | None = None) -> list[dict[str, str]]:
    out = []
    for p in _own_files(d, "*.png", skipped if skipped is not None else []):
        data = p.read_bytes()
        if not data.startswith(_PNG):
            raise InputError("not a PNG file (bad signature)", source=str(p))
        out.append({"name": p.stem, "png": base64.b64encode(data).decode("ascii")})
    return out


def _files(d: Path) -> list[dict[str, Any]]:
    return [{"name": p.name, "bytes": p.stat().st_size} for p in sorted(d.iterdir())
            if folder_file(d, p.name) is not None]


def build_payload(directory: str | os.PathLike[str], pairs: PairSet | None = None, *,
                  title: str | None = None, study: str | None = None) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data (texts in a string table).

    ``pairs``: what the folder's study says about its pairs (its ``explorer_pairs(folder)``); without
    them the page shows the tables, figures and provenance only.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a results folder (no such directory)", source=str(d))
    info, summary = _read_json(d, "run_info.json"), _read_json(d, "summary.json")
    study = study or study_of(d) or "unknown study"
    strings = _Strings()
    notes = list(pairs.notes) if pairs is not None else [
        "No pairs: the folder's study found no judged rows to pair here, or describes none to the explorer "
        "(no explorer_pairs); the page shows the tables, figures and provenance only."]
    skipped: list[str] = []
    tables = _tables(d, skipped)
    _figures(d, skipped)
    if skipped:
        notes.append(f"Not read: {len(skipped)} link(s) pointing out of the folder ({', '.join(sorted(set(skipped))[:5])}).")
    name = final_name(d.resolve().name)
    return {
        "version": PAGE_VERSION,
        "title": title or f"{study} / {name}",
        "study": study,
        "notes": notes,
        "pairs": _pairs_payload(pairs, strings) if pairs is not None else None,
        "strings": strings.items,
        "tables": tables,
        "run_info": info,
        "summary": summary,
        "files": _files(d),
    }


# ---------------------------------------------------------------------------------------------
# the page


def _asset(name: str) -> str:
    return package_text(f"data/view/{name}")


def _json_for_script(obj: Any) -> str:
    """JSON that cannot end its ``<script>`` element or open a comment (``<``, ``>``, ``&`` escaped)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def view_html(payload: dict[str, Any], *, figures: Sequence[dict[str, str]] = ()) -> str:
    """The page as one string: CSP-locked, data gzip+base64 in a JSON script, one hashed inline script."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if credentials():
        data = scrub_secrets(data)
        if echoed_credential(data):
            raise RuntimeError("a credential survived scrubbing; the page was not written")
    packed = base64.b64encode(gzip.compress(data.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
    box = _json_for_script({"encoding": "gzip+base64", "payload": packed})
    figs = _json_for_script([{"name": scrub_secrets(f["name"]) if credentials() else f["name"], "png": f["png"]}
                             for f in figures])
    js, css = _asset("view.js"), _asset("view.css")
    csp = (f"default-src 'none'; script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    title = html.escape(str(payload.get("title", "cfbench view")))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            f'<meta name="referrer" content="no-referrer">\n'
            f"<title>cfbench view: {title}</title>\n<style>{css}</style></head>\n<body>\n"
            f'<noscript>This page needs JavaScript (its data are embedded, compressed).</noscript>\n'
            f'<div id="app" data-state="loading">loading...</div>\n'
            f'<script type="application/json" id="cfbench-data">{box}</script>\n'
            f'<script type="application/json" id="cfbench-figures">{figs}</script>\n'
            f"<script>{js}</script>\n</body></html>\n")


#: study name -> its ``explorer_pairs(folder)``; filled by :func:`register_explorer` (a study package does it
#: when imported, so ``result.view()`` in a notebook finds it; ``cfbench view`` imports the folder's study first)
_EXPLORERS: dict[str, Callable[[Path], "PairSet | None"]] = {}


def register_explorer(study: str, fn: Callable[[Path], "PairSet | None"], *,
                      inputs: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> None:
    """Make ``fn(folder) -> PairSet | None`` the reader of ``study``'s results folders for the page.

    ``inputs``: result frames ``fn`` reads that the study's run does not write itself, as frame name ->
    (file name, needed columns); ``result.view(folder)`` writes them (:func:`write_inputs`).
    """
    if not isinstance(study, str) or not study or not callable(fn):
        raise InputError("register_explorer needs a study name and a callable", source="cfbench.view",
                         field="study")
    for name, (fname, _cols) in (inputs or {}).items():
        if name in INPUT_FRAMES and INPUT_FRAMES[name][0] != fname:
            raise InputError(f"frame {name!r} is already written as {INPUT_FRAMES[name][0]}", source=study,
                             field="inputs")
    _EXPLORERS[study] = fn
    INPUT_FRAMES.update(inputs or {})


def explorer_for(study: str) -> Callable[[Path], "PairSet | None"] | None:
    """The registered reader of ``study`` (None when no imported study registered one)."""
    return _EXPLORERS.get(study)


def _registered_pairs(d: Path, study: str) -> tuple[str, "PairSet | None"]:
    """(study, pairs) from the registered reader of ``study``; a folder that names no study (a result saved
    without ``run_info.json``) is offered to each registered reader in turn, the first that finds its own
    files describing it."""
    if study:
        fn = explorer_for(study)
        return study, (fn(d) if fn is not None else None)
    for name, fn in _EXPLORERS.items():
        got = fn(d)
        if got is not None:
            return name, got
    return study, None


def _atomic_write(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` by renaming a new file over it: a link at ``target`` is replaced, never
    followed, so the write cannot land outside the folder it names."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_view(directory: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
               pairs: PairSet | None = None, title: str | None = None) -> Path:
    """Write the explorer page of ``directory`` to ``out`` (default ``directory/view.html``).

    ``pairs``: the study's description of its pairs; by default the registered reader of the folder's
    study (:func:`register_explorer`) is asked, and a folder whose study registered none gets no pairs.
    Files of the folder that are links out of it are not read; a link at ``out`` is replaced, not followed.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a results folder (no such directory)", source=str(d))
    study = study_of(d)
    if pairs is None:
        study, pairs = _registered_pairs(d, study)
    payload = build_payload(d, pairs, title=title, study=study or None)
    page = view_html(payload, figures=_figures(d))
    target = Path(out) if out is not None else d / "view.html"
    _atomic_write(target, page)
    return target


#: frames of a run the page reads when the study wrote no file for them: frame name -> (file, needed columns);
#: filled by the studies' :func:`register_explorer` calls (``inputs=``)
INPUT_FRAMES: dict[str, tuple[str, tuple[str, ...]]] = {}


def variants_for_page(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns of a variants frame the page reads, flattened for parquet (header as text, turns as
    ``{speaker, text}`` records)."""
    keep = [c for c in ("variant_id", "item_id", "dimension", "condition", "turns", "header") if c in frame.columns]
    f = frame[keep].copy()
    if "header" in f:
        f["header"] = [("\n".join(f"{k}: {v}" for k, v in h.items()) if isinstance(h, dict)
                        else (h if isinstance(h, str) else None)) for h in f["header"]]
    f["turns"] = [[{"speaker": str(t.get("speaker")), "text": str(t.get("text"))} for t in list(ts)]
                  if ts is not None and not isinstance(ts, float) else None for ts in f["turns"]]
    return f


def write_inputs(directory: str | os.PathLike[str], frames: dict[str, pd.DataFrame]) -> list[Path]:
    """Write the input frames the page needs (:data:`INPUT_FRAMES`) that ``directory`` lacks; returns them.

    Only a frame with the needed columns is written, and never over an existing file.
    """
    d = Path(directory)
    written = []
    for name, (fname, cols) in INPUT_FRAMES.items():
        frame = frames.get(name)
        target = d / fname
        if frame is None or target.exists() or target.is_symlink() or not isinstance(frame, pd.DataFrame):
            continue
        if not set(cols) <= set(frame.columns):
            continue
        if fname.endswith(".parquet"):
            variants_for_page(frame).to_parquet(target, index=False)
        else:
            text = csv_text(frame)
            _atomic_write(target, scrub_secrets(text) if credentials() else text)
        written.append(target)
    return written


class ViewPage:
    """A built page: ``save(path)``, and shown inline in a notebook (a sandboxed ``srcdoc`` iframe)."""

    #: pages larger than this are not copied into the notebook (a link to the file is shown instead)
    INLINE_MAX_BYTES = 4_000_000

    def __init__(self, html_text: str, *, path: Path | None = None, height: int = 720) -> None:
        self.html = html_text
        self.path = path
        self.height = int(height)

    def save(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        _atomic_write(p, self.html)
        self.path = p
        return p

    def _repr_html_(self) -> str:
        size = len(self.html.encode("utf-8"))
        if size > self.INLINE_MAX_BYTES:
            where = html.escape(str(self.path)) if self.path else "a file (call .save(path))"
            return (f"<p>The run explorer page is {size / 1e6:.1f} MB, too large to copy into the notebook; "
                    f"open {where} in a browser.</p>")
        # sandbox without allow-same-origin: the page runs in an opaque origin, its own CSP applies
        return (f'<iframe sandbox="allow-scripts" style="width:100%;height:{self.height}px;border:1px solid #ccc" '
                f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>')

    def __repr__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"<cfbench view page, {len(self.html):,} bytes{where}>"
