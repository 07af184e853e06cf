"""Where a run's outputs go: one writer for tables, figures and summary.json.

Notebooks never write files themselves; they hand frames, figures and the
summary to :class:`RunOutput`, which writes them under the run's directory
(``results/<study>/<config>/`` under ``cfbench reproduce``).
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .core.paths import RESULTS_MARKER as MARKER
from .core.secrets import scrub_secrets
from .core.text import csv_text

__all__ = ["MARKER", "MATH_IGNORE", "frame_html", "no_math_in_tables",
           "RunOutput", "StudyResult", "InvariantError", "to_jsonable", "scrub_secrets",
           "notebook_output_dir", "interval_caption", "method_names", "plot_sequences",
           "sequential_paragraph", "released", "draws_text_as_written"]


def to_jsonable(obj: Any) -> Any:
    """Convert numpy/pandas scalars and containers to JSON-safe Python (NaN -> None)."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, pd.DataFrame):
        return to_jsonable(obj.to_dict(orient="records"))
    if isinstance(obj, pd.Series):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def method_names(frame: pd.DataFrame, *, column: str = "ci_method") -> list[str]:
    """The distinct interval methods a drawn table states in ``column``, most frequent first (ties in order
    of appearance); rows with no method (NaN or "") are left out. A frame without the column gives []."""
    if column not in getattr(frame, "columns", ()) or not len(frame):
        return []
    vals = [str(v) for v in frame[column] if isinstance(v, str) and v.strip()]
    counts: dict[str, int] = {}
    for v in vals:
        counts[v] = counts.get(v, 0) + 1
    return sorted(counts, key=lambda m: -counts[m])


def interval_caption(frame: pd.DataFrame, *, n: str = "n_items", unit: str = "items", level: float = 0.95,
                     column: str = "ci_method", width: int = 0) -> str:
    """Caption of the intervals a figure draws, computed from the drawn table itself: the level, the unit
    the interval is over with its n (``frame[n]``: one number, or ``lo-hi`` when cells differ) and every
    method named in ``frame[column]`` (with how many cells use it when they differ). Nothing in it is
    typed by the figure, so a title cannot name a method the table did not use.

    >>> f = pd.DataFrame({"n_items": [4, 4], "ci_method": ["clopper-pearson", "clopper-pearson"]})
    >>> interval_caption(f, unit="transcripts")
    '95% intervals over 4 transcripts: clopper-pearson'
    """
    ns = pd.to_numeric(frame[n], errors="coerce").dropna() if n in getattr(frame, "columns", ()) else pd.Series(
        dtype=float)
    n_txt = "" if not len(ns) else (f"{int(ns.min())}" if ns.min() == ns.max() else f"{int(ns.min())}-{int(ns.max())}")
    methods = method_names(frame, column=column)
    if len(methods) > 3:  # e.g. one method whose text carries a per-cell number: name what they share
        import os.path

        stem = os.path.commonprefix(methods)
        stem = stem[:max(stem.rfind(","), stem.rfind(" "), 0)].rstrip(" ,")
        m_txt = (f"{stem}, ... ({len(methods)} variants, each cell's in {column})" if len(stem) >= 10 else
                 f"{'; '.join(methods[:3])}; and {len(methods) - 3} more (see {column})")
    elif len(methods) > 1:
        per = frame[column].astype(str).value_counts()
        m_txt = "; ".join(f"{m} ({int(per[m])} of {len(frame)})" for m in methods)
    else:
        m_txt = methods[0] if methods else "no interval (no method in the table)"
    if n_txt == "1":  # "1 transcript", "1 row per bar"
        head, _, tail = unit.partition(" ")
        unit = (head[:-1] if head.endswith("s") else head) + (f" {tail}" if tail else "")
    over = f"{n_txt + ' ' if n_txt else ''}{unit}"
    if methods and all(m.startswith("none") for m in methods):
        text = f"no interval ({over}): {m_txt}"
    else:
        text = f"{round(level * 100, 2):g}% intervals over {over}: {m_txt}"  # 98.33%, not 98.3333%
    if width:
        import textwrap

        text = "\n".join(textwrap.wrap(text, width=width, break_on_hyphens=False))
    return text


def _checkout_root(start: Path) -> Path | None:
    """The cfbench checkout holding ``start`` (a folder with ``pyproject.toml``, ``notebooks/`` and ``configs/``)."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "notebooks").is_dir() and (folder / "configs").is_dir():
            return folder
    return None


#: the classes that keep a block from being typeset: ``tex2jax_ignore`` for MathJax 2 (nbconvert's HTML pages,
#: the classic notebook), ``mathjax_ignore`` for MathJax 3 (JupyterLab 4, which does not read the older name)
MATH_IGNORE = "tex2jax_ignore mathjax_ignore"


def frame_html(frame: pd.DataFrame) -> str | None:
    """pandas' HTML of ``frame`` inside a block that no page's MathJax typesets.

    A table cell that holds two dollar signs ("from $20 to $45", a STAR customer's words) is set as a
    formula by the page's MathJax. pandas' ``display.html.use_mathjax = False`` marks the table with
    ``tex2jax_ignore``, which MathJax 2 reads and JupyterLab's MathJax 3 does not; pandas releases from
    pandas-dev/pandas#60311 on add ``mathjax_ignore`` too, earlier ones (cfbench allows pandas 2.1) do not.
    So the block carries both names (:data:`MATH_IGNORE`) whatever pandas is installed. None when pandas
    gives no HTML (``display.notebook_repr_html`` off).
    """
    with pd.option_context("display.html.use_mathjax", False):
        inner = frame._repr_html_()
    return None if inner is None else f'<div class="{MATH_IGNORE}">{inner}</div>'


def no_math_in_tables() -> bool:
    """Show every DataFrame of the running notebook through :func:`frame_html` (called by the study notebooks'
    set-up cell); False outside IPython, where nothing is shown as HTML."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, frame_html)
    return True


def notebook_output_dir(output_dir: str, study: str) -> Path:
    """Where a study notebook writes its files.

    ``cfbench reproduce`` passes the folder it runs the notebook in. Run by hand (JupyterLab,
    ``output_dir`` left ""), the notebook writes to ``results/<study>/lab/`` of the checkout it
    stands in (found upward from the working folder, so ``notebooks/`` stays clean), else to
    ``results/<study>/lab/`` under the working folder. That folder carries cfbench's marker; an
    existing folder there without it is refused rather than written into.
    """
    if output_dir:
        return Path(output_dir)
    from .core.errors import InputError

    cwd = Path.cwd()
    folder = (_checkout_root(cwd) or cwd) / "results" / study / "lab"
    if folder.exists() and not (folder / MARKER).is_file() and (folder.is_symlink() or any(folder.iterdir())):
        raise InputError(f"exists and was not made by cfbench (no {MARKER}); set output_dir to another folder",
                         source=str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("written by a cfbench notebook run by hand; cfbench replaces or deletes only "
                                 "folders holding this file\n", encoding="utf-8")
    return folder


class RunOutput:
    """Writes a run's artefacts under one directory.

    >>> out = RunOutput("results/shopflow/smoke")      # doctest: +SKIP
    >>> out.table("rates", rates_df)                   # doctest: +SKIP
    >>> out.figure("rates", fig)                       # doctest: +SKIP
    >>> out.summary({"decision": "BLOCKED"})           # doctest: +SKIP
    """

    def __init__(self, directory: str | os.PathLike[str]):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._summary: dict[str, Any] = {}

    def path(self, name: str) -> Path:
        return self.dir / name

    def table(self, name: str, frame: pd.DataFrame, *, fmt: str = "csv") -> Path:
        """Write ``frame`` as ``<name>.csv`` (or ``.parquet``)."""
        if fmt == "csv":
            p = self.dir / f"{name}.csv"
            text = csv_text(frame)  # formula cells neutralised: the one CSV writer
            p.write_text(scrub_secrets(text), encoding="utf-8")
        elif fmt == "parquet":
            p = self.dir / f"{name}.parquet"
            frame.to_parquet(p, index=False)
        else:
            raise ValueError(f"unknown table format {fmt!r} (csv or parquet)")
        return p

    def figure(self, name: str, fig: Any, *, dpi: int = 130) -> Path:
        """Save a matplotlib figure as ``<name>.png``."""
        p = self.dir / f"{name}.png"
        fig.savefig(p, dpi=dpi, bbox_inches="tight")
        return p

    def summary(self, data: Mapping[str, Any], *, merge: bool = True) -> Path:
        """Write (or merge into) ``summary.json``."""
        if merge:
            self._summary.update(to_jsonable(data))
        else:
            self._summary = to_jsonable(dict(data))
        p = self.dir / "summary.json"
        text = json.dumps(self._summary, indent=2, sort_keys=True, ensure_ascii=False)
        p.write_text(scrub_secrets(text) + "\n", encoding="utf-8")
        return p


class InvariantError(AssertionError):
    """A run broke an invariant :meth:`StudyResult.check` verifies (lists every broken one)."""


@dataclass
class StudyResult:
    """What a study's ``run(params)`` returns: every intermediate frame, the tables, figures and summary.

    ``frames`` holds the steps a student should be able to inspect (variants, plan,
    judgments, ...), ``tables`` the analysis tables written as CSV, ``figures`` the
    matplotlib figures written as PNG, ``summary`` the headline numbers
    (``summary.json``). Each study subclasses this and implements :meth:`invariants`
    (name -> holds) and :meth:`findings` (a Markdown paragraph generated from the
    numbers: what the run shows, what it cannot show, and the power behind that).
    """

    params: Any
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    #: tables written as parquet instead of CSV (large or nested)
    parquet_tables: tuple[str, ...] = ()

    def invariants(self) -> dict[str, bool]:
        """Named checks of the run; every value must be True."""
        return {}

    def check(self) -> dict[str, bool]:
        """Raise :class:`InvariantError` naming every invariant that does not hold; else return them."""
        checks = self.invariants()
        broken = [name for name, ok in checks.items() if not ok]
        if broken:
            raise InvariantError("invariants broken: " + "; ".join(broken))
        return checks

    def findings(self) -> str:
        """What this run shows, in words generated from its numbers (Markdown)."""
        return ""

    def view(self, directory: "str | os.PathLike[str] | None" = None, *, height: int = 720) -> Any:
        """The run explorer page (:mod:`cfbench.view`), shown inline when it is a cell's last line.

        ``directory``: the results folder this result was saved to (``view.html`` is written
        there, with the input frames the page reads that the study did not write, see
        :data:`cfbench.view.INPUT_FRAMES`); without it the result is saved to a temporary folder
        first and the page only lives in memory (``.save(path)`` writes it).
        """
        import tempfile

        from cfbench.view import ViewPage, write_inputs, write_view

        if directory is not None:
            write_inputs(directory, self.frames)
            path = write_view(directory)
            return ViewPage(path.read_text(encoding="utf-8"), path=path, height=height)
        with tempfile.TemporaryDirectory(prefix="cfbench-view-") as tmp:
            self.save(tmp)
            write_inputs(tmp, self.frames)
            path = write_view(tmp, Path(tmp) / "view.html", title=f"{type(self).__name__} (unsaved run)")
            return ViewPage(path.read_text(encoding="utf-8"), height=height)

    def save(self, out: "RunOutput | str | os.PathLike[str]") -> "RunOutput":
        """Write tables (CSV; frames named in ``parquet_tables`` as parquet), figures and the summary."""
        out = out if isinstance(out, RunOutput) else RunOutput(out)
        for name, frame in self.tables.items():
            out.table(name, frame, fmt="parquet" if name in self.parquet_tables else "csv")
        for name, fig in self.figures.items():
            out.figure(name, fig)
        out.summary(self.summary)
        return out


def released(figures: Mapping[str, Any]) -> dict[str, Any]:
    """``figures`` (name -> matplotlib figure), each released from pyplot's registry and kept for saving and
    display. A study's ``run`` returns its figures so: run again and again in a lab session, it leaves no
    figure open, so memory does not grow and pyplot never warns of "More than 20 figures"."""
    figures = dict(figures)
    if figures:
        import matplotlib.pyplot as plt

        for fig in figures.values():
            plt.close(fig)
    return figures


def draws_text_as_written(build: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a function that builds figures: its text is drawn as written, never as mathtext.

    Figure text carries names from the user's data and configs (judge specs, model paths, dimension labels,
    wordings). Two ``$`` in one of them made matplotlib set the span between as a formula (``a$b$c``: "a", an
    italic "b", "c"), and a span that is no valid formula (``$\\frac$``) raised while the figure was being
    laid out, which ended the run. No cfbench figure uses mathtext. So the figure is built with
    ``text.parse_math`` off: every text made during the build keeps that setting, tick labels included, and the
    layout's measuring reads plain text. The caller's matplotlib settings are untouched."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return build(*args, **kwargs)

    return wrapper


def sequential_paragraph(table: pd.DataFrame | None, *, n_walked: int, budget: int, stopped_by: str = "",
                         unit: str, cells: str, name: Any, stopped_note: str, all_decided: str = "every cell decided",
                         left: Any = None, tail: str = "", alpha: float = 0.05, n_cells: int | None = None) -> str:
    """One findings paragraph of a sequential audit, from its cells table (a row per cell: ``verdict``,
    ``stopped_at_item``, ``stopped_at_wave``, ``reason``, and whatever ``name`` reads) and how its walk ended
    (``n_walked`` of ``budget`` units walked; ``stopped_by``: the budget that stopped it, "" if none). Empty
    for no table.

    It says the cells' count and error rate (each cell at ``alpha`` / cells, Bonferroni), how the walk ended,
    which cells were decided early (``name(row)``: the cell's name as Markdown, the caller escaping what it
    shows; then verdict, the ``unit`` and wave it stopped at, and why) followed by ``stopped_note``, the
    undecided cells (``left(rows)`` -> a sentence without its full stop; default: how many), and ``tail``.
    ``cells`` follows the count ("gap cells, each a confidence sequence of the matched-pair gap"); ``n_cells``
    is the walk's Bonferroni divisor when it split its level over more cells than the table has rows (default:
    the rows)."""
    if table is None or not len(table):
        return ""
    n_cells = len(table) if n_cells is None else int(n_cells)
    is_decided = table["verdict"].isin(["pass", "fail"])
    said = "; ".join(f"{name(r)} {r.verdict} at {unit} {int(r.stopped_at_item)} (wave {int(r.stopped_at_wave)}: "
                     f"{r.reason})" for r in table[is_decided].itertuples(index=False))
    undecided = table[~is_decided]
    if stopped_by:
        ended = f"it stopped after {n_walked} of its {budget} {unit}s at its {stopped_by}"
    elif not len(undecided) and n_walked < budget:
        ended = f"it stopped after {n_walked} of its {budget} {unit}s, {all_decided}"
    else:
        ended = f"it judged {n_walked} of its {budget} {unit}s"
    if left is None:
        rest = f"{len(undecided)} cell{'s' if len(undecided) != 1 else ''} inconclusive" if len(undecided) else ""
    else:
        rest = left(undecided) if len(undecided) else ""
    pct = f"{100 * alpha:g} %"
    return (f"**Sequential audit**: {n_cells} {cells} at {pct} / {n_cells} (Bonferroni: at most {pct} chance of any "
            f"wrong verdict across the cells, looking after every wave); {ended}. "
            + (f"Stopped early, {stopped_note}: {said}." if said else "No cell was decided.")
            + (f" {rest}." if rest else "") + (f" {tail}" if tail else ""))


@draws_text_as_written
def plot_sequences(waves: pd.DataFrame, cells: pd.DataFrame, *, key_names: Sequence[str], ylabel: str,
                   unit: str = "items", scale: float = 100.0, lo: float = -1.0, hi: float = 1.0,
                   labels: Mapping[tuple, str] | None = None, title: str = "Sequential audit"):
    """The figure of a sequential audit, from the tables of :class:`cfbench.stats.sequential_cells.SequentialCells`
    (``waves_table``, ``table``; a cell is named by its ``key_names`` columns, no study is known here).

    One panel per cell (rows of ``cells``, in order): the band of the sequence after each wave (step
    plot from the whole range at 0 items), the maximum dashed (and its negative for a two-sided gate), 0 as
    a thin line, and a vertical line where the cell stopped coloured by its verdict (an undecided cell: where
    its sequence ended). The caption's method, level and n are read from the tables."""
    import matplotlib.pyplot as plt

    from .stats import verdicts as V

    keys = [tuple(r) for r in cells[list(key_names)].itertuples(index=False)]
    keys = [k for k in keys if ((waves[list(key_names)] == pd.Series(k, index=list(key_names))).all(axis=1)).any()]
    ncol = min(4, max(1, len(keys)))
    nrow = max(1, -(-len(keys) // ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.1 * ncol, 1.0 + 2.1 * nrow), squeeze=False, sharey=True)
    cell_of = cells.set_index(list(key_names))
    for ax, key in zip(axes.flat, keys):
        sel = (waves[list(key_names)] == pd.Series(key, index=list(key_names))).all(axis=1)
        w = waves[sel].sort_values("items")
        x = np.concatenate([[0], w["items"].to_numpy(float)])
        ylo = np.concatenate([[lo * scale], w["cs_low"].to_numpy(float) * scale])
        yhi = np.concatenate([[hi * scale], w["cs_high"].to_numpy(float) * scale])
        ax.fill_between(x, ylo, yhi, step="post", color="#8da0cb", alpha=0.45, linewidth=0)
        ax.step(x, ylo, where="post", color="#4c72b0", linewidth=0.8)
        ax.step(x, yhi, where="post", color="#4c72b0", linewidth=0.8)
        mx = float(w["maximum"].iloc[0]) * scale
        ax.axhline(mx, color="#c44e52", linestyle="--", linewidth=1)
        if bool(w["two_sided"].iloc[0]):
            ax.axhline(-mx, color="#c44e52", linestyle="--", linewidth=1)
        ax.axhline(0, color="black", linewidth=0.6)
        row = cell_of.loc[key if len(key) > 1 else key[0]]
        verdict = str(row["verdict"])
        stop = float(row["stopped_at_item"])
        stop = stop if np.isfinite(stop) else float(w["items"].iloc[-1])
        ax.axvline(stop, color=V.KIND_COLOURS.get(V.verdict_kind(verdict), "#888888"), linewidth=1.2)
        one = unit[:-1] if unit.endswith("s") else unit
        where = (f"{verdict} at {one} {int(stop)}" if verdict in ("pass", "fail")
                 else f"{verdict} after {int(stop)} {unit}")
        name = (labels or {}).get(key, " x ".join(str(k) for k in key))
        ax.set_title(f"{name}\n{where}", fontsize=7)
        ax.set_ylim(lo * scale, hi * scale)
        ax.set_xlabel(unit, fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes[0][0].set_ylabel(ylabel, fontsize=7)
    last = waves.sort_values("items").groupby(list(key_names), sort=False).tail(1)
    level = float(last["level"].iloc[0]) if len(last) else 0.95
    fig.suptitle(f"{title}: each cell's confidence sequence over {unit}, the gate's maximum dashed, the stopping "
                 "point a vertical line\n" + interval_caption(last, n="items", unit=unit, level=level, width=110),
                 fontsize=8)
    fig.tight_layout()
    return fig
