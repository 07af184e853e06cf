"""``cfbench variants FILE --out DIR``: make the variants of a transcript file and a review page.

``FILE`` is a transcripts file (JSONL or CSV, see docs/transcripts.md), a STAR
dialogue (``*.json``) or a folder of STAR dialogues. Writes ``DIR/variants.parquet``
(the tidy variants frame; ``turns`` and ``edits`` as nested lists),
``DIR/rejections.csv`` (Table 9: guard / LLM / human columns) and
``DIR/review.html`` (self-contained, see :mod:`cfbench.perturb.review`).
With ``--decisions reviewed.csv`` (the CSV the page exports) rejected variants
are marked invalid with reason "human review". ``--limit N`` keeps the first N
transcripts (in the order the file or folder lists them), ``--sample N`` a
random N of them drawn with ``--seed`` (the same seed the perturbers use), so a
review of a large corpus can start on a manageable, reproducible subset.

With ``--cues NAME ...`` (the judge-bias cues, ``all`` = the battery) the rows are cued
candidate pairs instead (:func:`cfbench.perturb.judge_cue_review.cue_variants`): ``FILE`` is a
folder of STAR dialogues (items drawn as the judge-bias study draws them: ``--n-draft`` typed
drafts and ``--n-control`` known-worse controls, with ``--seed``), a JSONL of your own pairs
(``context``, ``reply``, ``alternative``, optional ``id``/``kind``) or a transcripts file (control
items from its calls). The same three files are written; each item's pair is cued once per cue and
per candidate, and Table 9 counts the cue guards' verdicts; ``guard_catch.csv`` says how many
deliberately corrupted cued pairs each guard rejects.

Wire into the main CLI with ``add_parser(subparsers)``; also runnable as
``python -m cfbench.cli.variants``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from cfbench.core.text import csv_text

__all__ = ["add_parser", "run_variants", "run_cue_variants", "cue_items", "load_any", "select_transcripts", "main"]


def load_any(path: str | Path) -> list[Any]:
    """Transcripts from a JSONL/CSV file, a STAR ``*.json`` dialogue or a folder of them."""
    from cfbench.io.dialogues import load_dialogues

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        ts = load_dialogues(path)
    for w in caught:
        print(f"cfbench variants: {w.message}", file=sys.stderr)
    return ts


def select_transcripts(ts: list[Any], *, limit: int | None = None, sample: int | None = None,
                       seed: int = 0) -> list[Any]:
    """The first ``limit`` transcripts, or ``sample`` of them drawn at random with ``seed`` (kept in
    their original order); all of them when both are None."""
    from cfbench.core.errors import InputError

    if limit is not None and sample is not None:
        raise InputError("give --limit or --sample, not both", source="command line", field="--sample")
    for name, n in (("--limit", limit), ("--sample", sample)):
        if n is not None and (not isinstance(n, int) or n < 1):
            raise InputError(f"must be a whole number >= 1, got {n!r}", source="command line", field=name)
    if limit is not None:
        return ts[:limit]
    if sample is not None and sample < len(ts):
        import numpy as np

        keep = np.sort(np.random.default_rng(seed).choice(len(ts), size=sample, replace=False))
        return [ts[i] for i in keep]
    return ts


def run_variants(file: str | Path, out: str | Path, *, dimensions: list[str] | None = None, seed: int = 0,
                 decisions: str | Path | None = None, progress: bool = True, limit: int | None = None,
                 sample: int | None = None) -> dict[str, Path]:
    """Make the variants of ``file`` (or of ``limit`` / a seeded ``sample`` of its transcripts) into
    ``out``; returns the written paths."""
    from cfbench.perturb import make_variants

    out = Path(out)
    _check_out_folder(out)  # before the work, not after it
    ts = select_transcripts(load_any(file), limit=limit, sample=sample, seed=seed)
    v = make_variants(ts, dimensions=dimensions, seed=seed, decisions=decisions, progress=progress)
    return _write_review(out, v, ts, title=_file_title(file))


def _file_title(file: str | Path) -> str:
    # a file name the file system gives in no encoding (undecodable bytes) is shown with \x escapes
    return os.fsencode(Path(file).name).decode("utf-8", "backslashreplace")


def _write_review(out: Path, v: Any, transcripts: Any, *, title: str) -> dict[str, Path]:
    """Write ``variants.parquet``, ``rejections.csv`` (Table 9) and ``review.html`` of the variants ``v``."""
    from cfbench.core.errors import InputError
    from cfbench.perturb import rejection_table
    from cfbench.perturb.review import review_html

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder ({exc.strerror or type(exc).__name__})",
                         source=str(out), field="--out") from None
    paths = {"variants": out / "variants.parquet", "rejections": out / "rejections.csv",
             "review": out / "review.html"}
    _note_made(out, [p.name for p in paths.values()])  # before writing: a crash leaves files it can replace
    _replace_file(paths["variants"], lambda tmp: v.to_parquet(tmp, index=False))
    rejections = csv_text(rejection_table(v))
    _replace_file(paths["rejections"], lambda tmp: tmp.write_text(rejections, encoding="utf-8"))
    page = review_html(v, transcripts, title=title)
    _replace_file(paths["review"], lambda tmp: tmp.write_text(page, encoding="utf-8"))
    return paths


def _replace_file(path: Path, write: Any) -> None:
    """``write(tmp)`` a new file beside ``path``, then rename it onto ``path``: a ``review.html`` that
    is a symbolic link is replaced by the new file, its target is never written (nor is a
    half-written file left under the name)."""
    from cfbench.core.errors import InputError

    if path.is_dir() and not path.is_symlink():
        raise InputError("is a folder; cfbench writes a file of this name here", source=str(path), field="--out")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()


def cue_items(file: str | Path, *, n_draft: int, n_control: int, seed: int, context_turns: int = 6) -> list[Any]:
    """Judge-bias items from a STAR folder, a JSONL of pairs or a transcripts file (see the module doc)."""
    import json

    from cfbench.core.errors import InputError
    from cfbench.core.files import read_text
    from cfbench.studies.judge_bias.items import items_from_pairs, star_items, synthetic_items

    path = Path(file)
    if path.is_dir():
        return star_items(path, n_draft=n_draft, n_control=n_control, seed=seed, context_turns=context_turns)
    if not path.is_file():
        raise InputError("does not exist", source=str(path), record="<file>")
    first = None
    if path.suffix.lower() == ".jsonl":
        lines = [ln for ln in read_text(path).splitlines() if ln.strip()]
        records = []
        for k, ln in enumerate(lines):
            try:
                records.append(json.loads(ln))
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON ({exc.msg})", source=str(path), record=f"line {k + 1}") from None
        first = records[0] if records else None
        if isinstance(first, dict) and "reply" in first and "alternative" in first:
            return items_from_pairs(records, source=str(path))
    return synthetic_items(path, n_control=n_draft + n_control, seed=seed, context_turns=context_turns)


def run_cue_variants(file: str | Path, out: str | Path, *, cues: list[str], seed: int = 0, n_draft: int = 10,
                     n_control: int = 10, decisions: str | Path | None = None) -> dict[str, Path]:
    """Cued pairs of the items in ``file`` (every cue, both candidates cued in turn) into ``out``:
    ``variants.parquet``, ``rejections.csv`` (Table 9 rows ``cue:<name>``), ``review.html`` and
    ``guard_catch.csv`` (per cue and corruption kind, how many corrupted cued pairs the guard rejects)."""
    from cfbench.core.errors import InputError
    from cfbench.perturb.judge_cue_review import cue_guard_catch_table, cue_variants
    from cfbench.perturb.judge_cues import BATTERY, cues as registered

    names = list(BATTERY) if cues == ["all"] else list(cues)
    unknown = [c for c in names if c not in registered()]
    if unknown:
        raise InputError(f"unknown cue(s) {unknown} (known: {', '.join(sorted(registered()))}, or all)",
                         source="command line", field="--cues")
    for name, n in (("--n-draft", n_draft), ("--n-control", n_control)):
        if not isinstance(n, int) or n < 0:
            raise InputError(f"must be a whole number >= 0, got {n!r}", source="command line", field=name)
    out = Path(out)
    _check_out_folder(out)
    items = cue_items(file, n_draft=n_draft, n_control=n_control, seed=seed)
    v = cue_variants(items, names, seed=seed, decisions=decisions)
    paths = _write_review(out, v, [], title="cues: " + _file_title(file))
    paths["guard_catch"] = out / "guard_catch.csv"
    _note_made(out, ["guard_catch.csv"])
    table = csv_text(cue_guard_catch_table(items, names, seed=seed))
    _replace_file(paths["guard_catch"], lambda tmp: tmp.write_text(table, encoding="utf-8"))
    return paths


#: the files a variants run writes into ``--out``, and the note saying cfbench made them there
MADE_FILES = ("variants.parquet", "rejections.csv", "review.html", "guard_catch.csv")
MADE_NOTE = ".cfbench-variants"


def _check_out_folder(out: Path) -> None:
    """``--out`` must be a folder, or a path whose nearest existing parent is a folder; and a file there of a
    name cfbench writes must be one it made (:data:`MADE_NOTE` lists them): cfbench replaces only what it
    made, never a researcher's own ``review.html``."""
    from cfbench.core.errors import InputError

    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == out else f"has a file in its path ({p})"
                raise InputError(f"--out must be a folder; this path {what}", source=str(out), field="--out")
            break
    note = out / MADE_NOTE
    made = set(note.read_text(encoding="utf-8").split()) if note.is_file() else set()
    theirs = [n for n in MADE_FILES if (out / n).exists() and n not in made]
    if theirs:
        raise InputError(f"holds {', '.join(theirs)}, which cfbench did not make there (no {MADE_NOTE} lists "
                         "them); not overwritten: choose another --out", source=str(out), field="--out")


def _note_made(out: Path, names: Any) -> None:
    """Add ``names`` to the folder's :data:`MADE_NOTE`."""
    note = out / MADE_NOTE
    made = set(note.read_text(encoding="utf-8").split()) if note.is_file() else set()
    note.write_text("\n".join(sorted(made | set(names))) + "\n", encoding="utf-8")


def _cmd(args: argparse.Namespace) -> int:
    if args.cues:
        from cfbench.core.errors import InputError

        if args.dimensions or args.limit is not None or args.sample is not None:
            raise InputError("--cues makes cued candidate pairs; --dimensions, --limit and --sample are for "
                             "transcript variants", source="command line", field="--cues")
        names = [c for part in args.cues for c in part.split(",") if c]
        paths = run_cue_variants(args.file, args.out, cues=names, seed=args.seed, n_draft=args.n_draft,
                                 n_control=args.n_control, decisions=args.decisions)
        for p in paths.values():
            print(p)
        return 0
    dims = None
    if args.dimensions:
        dims = [d for part in args.dimensions for d in part.split(",") if d]
    paths = run_variants(args.file, args.out, dimensions=dims, seed=args.seed, decisions=args.decisions,
                         progress=not args.quiet, limit=args.limit, sample=args.sample)
    for p in paths.values():
        print(p)
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``variants`` command to an ``argparse`` sub-parser set (``func`` default set)."""
    p = subparsers.add_parser("variants", help="make counterfactual variants of transcripts and a review page")
    p.add_argument("file", help="transcripts (JSONL/CSV), a STAR dialogue (.json) or a folder of STAR dialogues")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--dimensions", nargs="+", metavar="DIM",
                   help="dimension ids (space- or comma-separated); default: the 15 table rows")
    p.add_argument("--decisions", metavar="CSV", help="review decisions exported by review.html")
    p.add_argument("--seed", type=int, default=0, help="seed of the perturbers and of --sample")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N transcripts")
    p.add_argument("--sample", type=int, metavar="N", help="a random N transcripts (drawn with --seed)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--cues", nargs="+", metavar="CUE",
                   help="judge-bias cues (space- or comma-separated, or all): review cued candidate pairs instead")
    p.add_argument("--n-draft", type=int, default=10, metavar="N",
                   help="with --cues and a STAR folder: items pairing the sent reply with the typed draft")
    p.add_argument("--n-control", type=int, default=10, metavar="N",
                   help="with --cues: items pairing the sent reply with a reply from elsewhere (known worse)")
    p.set_defaults(func=_cmd)
    return p


def main(argv: list[str] | None = None) -> int:
    from cfbench.core.errors import InputError

    parser = argparse.ArgumentParser(prog="cfbench")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["variants", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except (InputError, FileNotFoundError, ValueError, KeyError) as exc:
        print(f"cfbench: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
