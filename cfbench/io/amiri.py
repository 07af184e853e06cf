"""Loader for the released seed-002 workbook (Amiri-Margavi et al. 2026).

``Sample_Data_Paper.numbers`` from the authors' repository
``Alireza-Amiri/Fairness-and-Bias-Dataset`` (pinned commit ``8868486``). It is
read with ``numbers-parser`` from a local path, or — only when asked, and
only with network access — downloaded from the pinned commit. Each sheet is
cached as parquet under ``<cfbench cache>/amiri2026/<file sha256 prefix>/``,
so a changed file never reads a stale cache. The workbook is the authors'
research data: never commit it (or a copy) into the project.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.files import shorten
from ..core.paths import cache_dir as _user_cache_dir
from .headers import check_header

__all__ = [
    "AmiriWorkbook",
    "load_amiri",
    "default_amiri_path",
    "AMIRI_REPO",
    "AMIRI_COMMIT",
    "AMIRI_FILE",
    "CAREER_COLUMNS",
    "SHEETS",
    "RELEASED_METRICS",
    "released_scores",
    "released_table2",
    "released_pairs",
    "compare_to_released",
]

AMIRI_REPO = "Alireza-Amiri/Fairness-and-Bias-Dataset"
AMIRI_COMMIT = "8868486"
AMIRI_FILE = "Sample_Data_Paper.numbers"
AMIRI_URL = f"https://raw.githubusercontent.com/{AMIRI_REPO}/{AMIRI_COMMIT}/{AMIRI_FILE}"

CAREER_COLUMNS = [
    "model", "prompt_id", "identity", "base_prompt", "full_prompt", "output", "is_error",
    "refusal_label", "sentiment", "politeness_count", "hedging_count", "neg_tone_count",
    "word_count", "char_count",
]
_NUMERIC = ["sentiment", "politeness_count", "hedging_count", "neg_tone_count", "word_count", "char_count"]

#: attribute -> (sheet name, required columns)
SHEETS = {
    "career": ("Career_Data", CAREER_COLUMNS),
    "table2": ("Tone_Linguistic_Framing", ["model", "identity", "Number of Prompt", "mean_sentiment",
                                           "mean_politeness", "mean_hedging", "mean_neg_tone", "mean_words"]),
    "significance": ("Statistical_Significance", [
        "model", "metric", "identity_A", "identity_B", "n_prompts", "mean_A", "mean_B",
        "mean_diff_A_minus_B", "paired_t_stat", "paired_t_pvalue", "wilcoxon_stat",
        "wilcoxon_pvalue", "cohens_d_paired"]),
    "gaps_by_mean": ("Largest_Observed_Identity_Gaps_basedon_mean_A_minus_B",
                     ["model", "metric", "identity_A", "identity_B", "mean_diff_A_minus_B", "cohens_d_paired"]),
    "gaps_selected": ("Largest_Observed_Identity_Gaps_basedon_mean_Wilcoxon_pvalue_and_cohen_d",
                      ["model", "metric", "identity_A", "identity_B", "mean_diff_A_minus_B", "cohens_d_paired"]),
    "refusal": ("Refusal_Table", ["Model", "identity", "Number of Prompt", "full_refusal_rate",
                                  "partial_refusal_rate", "no_refusal_rate"]),
}


@dataclass
class AmiriWorkbook:
    """The released sheets as frames (see :data:`SHEETS`), plus provenance."""

    career: pd.DataFrame
    table2: pd.DataFrame
    significance: pd.DataFrame
    gaps_by_mean: pd.DataFrame
    gaps_selected: pd.DataFrame
    refusal: pd.DataFrame
    source: str
    sha256: str


def default_amiri_path() -> Path | None:
    """``$CFBENCH_AMIRI_PATH``, else ``../shared/data/amiri2026/`` beside a source checkout."""
    env = os.environ.get("CFBENCH_AMIRI_PATH")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2].parent / "shared" / "data" / "amiri2026")
    for c in candidates:
        p = c / AMIRI_FILE if c.is_dir() else c
        if p.is_file():
            return p
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _download(dest_dir: Path) -> Path:  # pragma: no cover - needs network
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / AMIRI_FILE
    if not dest.exists():
        with urllib.request.urlopen(AMIRI_URL, timeout=60) as resp, tempfile.NamedTemporaryFile(
                dir=dest_dir, delete=False) as tmp:
            shutil.copyfileobj(resp, tmp)
        Path(tmp.name).replace(dest)
    return dest


def _read_sheet(doc, sheet: str, required: list[str], source: str) -> pd.DataFrame:
    try:
        table = doc.sheets[sheet].tables[0]
    except (KeyError, IndexError) as exc:
        raise InputError("sheet missing", source=source, field=sheet) from exc
    rows = table.rows(values_only=True)
    if not rows:
        raise InputError("sheet is empty", source=source, field=sheet)
    header = [h for h in rows[0]]
    check_header(header, source=source, record=f"sheet {sheet!r} header")
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"sheet {sheet!r} lacks column(s) {missing}", source=source, field=missing[0])
    keep = [i for i, h in enumerate(header) if h is not None]
    frame = pd.DataFrame([[r[i] for i in keep] for r in rows[1:]], columns=[header[i] for i in keep])
    # Numbers tables carry blank rows below the data; these are layout, not records.
    return frame.dropna(how="all").reset_index(drop=True)


def _validate_career(career: pd.DataFrame, source: str) -> pd.DataFrame:
    for i, row in career.iterrows():
        rec = f"{row.get('model')}/{row.get('prompt_id')}/{row.get('identity')}"
        for col in ("model", "prompt_id", "identity"):
            if not isinstance(row[col], str) or not row[col]:
                raise InputError("missing key value", source=source, record=f"row {i + 2}", field=col)
        if not isinstance(row["output"], str):
            raise InputError(f"output is not text ({type(row['output']).__name__})", source=source,
                             record=rec, field="output")
        for col in _NUMERIC:
            v = row[col]
            if not isinstance(v, (int, float)) or pd.isna(v):
                raise InputError(f"not a number: {v!r}", source=source, record=rec, field=col)
        if not isinstance(row["is_error"], (bool, np.bool_)):  # the text "False" would read as True
            raise InputError(f"not a checkbox value (true or false): {shorten(row['is_error'])}", source=source,
                             record=rec, field="is_error")
    keys = ["model", "prompt_id", "identity"]
    twice = career.duplicated(keys, keep=False).to_numpy()
    if twice.any():  # a second row would count its prompt twice in every paired comparison
        first, again = np.flatnonzero(twice)[:2]
        row = career.iloc[first]
        raise InputError(f"this model, prompt and identity has more than one row (rows {first + 2} and "
                         f"{again + 2})", source=source, record="/".join(str(row[k]) for k in keys), field="identity")
    career = career.copy()
    career[_NUMERIC] = career[_NUMERIC].astype(float)
    career["is_error"] = career["is_error"].astype(bool)
    return career


def _to_cache(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)


def load_amiri(path: str | os.PathLike[str] | None = None, *, download: bool = False,
               cache_dir: str | os.PathLike[str] | None = None, use_cache: bool = True) -> AmiriWorkbook:
    """Load the released workbook.

    ``path`` is the ``.numbers`` file or its directory; ``None`` tries
    :func:`default_amiri_path`, then (only with ``download=True``) the
    authors' repository at commit :data:`AMIRI_COMMIT`. Raises
    ``FileNotFoundError`` when no copy is available.
    """
    cache_root = Path(cache_dir) if cache_dir else _user_cache_dir() / "amiri2026"
    if path is not None:
        p = Path(path)
        p = p / AMIRI_FILE if p.is_dir() else p
    else:
        p = default_amiri_path()
        if p is None and download:
            p = _download(cache_root / "download" / AMIRI_COMMIT)
    if p is None or not p.is_file():
        raise FileNotFoundError(
            f"released seed-002 workbook not found ({p or 'no path given; set CFBENCH_AMIRI_PATH'}); "
            f"it is {AMIRI_FILE} from github.com/{AMIRI_REPO} at commit {AMIRI_COMMIT}")
    digest = _sha256(p)
    source = str(p)
    cdir = cache_root / digest[:16]
    frames: dict[str, pd.DataFrame] = {}
    if use_cache and all((cdir / f"{k}.parquet").exists() for k in SHEETS):
        frames = {k: pd.read_parquet(cdir / f"{k}.parquet") for k in SHEETS}
    else:
        from numbers_parser import Document

        try:
            doc = Document(str(p))
        except Exception as exc:  # numbers_parser raises its own types for non-Numbers files
            raise InputError(f"not a readable .numbers workbook ({type(exc).__name__}: {exc})", source=source,
                             field="<file>") from None
        for key, (sheet, required) in SHEETS.items():
            frames[key] = _read_sheet(doc, sheet, required, source)
        frames["career"] = _validate_career(frames["career"], source)
        if use_cache:
            for k, f in frames.items():
                _to_cache(f.astype({c: "string" for c in f.columns if f[c].dtype == object}), cdir / f"{k}.parquet")
    career = frames["career"]
    for col in ("model", "prompt_id", "identity", "output", "base_prompt", "full_prompt", "refusal_label"):
        career[col] = career[col].astype(str)
    return AmiriWorkbook(**frames, source=source, sha256=digest)


#: cfbench tone-metric name -> released column / metric name.
RELEASED_METRICS = {"sentiment": "sentiment", "politeness": "politeness_count", "hedging": "hedging_count",
                    "neg_tone": "neg_tone_count", "words": "word_count", "chars": "char_count"}
_TABLE2 = {"Number of Prompt": "n", "mean_sentiment": "sentiment", "mean_politeness": "politeness",
           "mean_hedging": "hedging", "mean_neg_tone": "neg_tone", "mean_words": "words"}
_PAIRS = {"identity_A": "identity_a", "identity_B": "identity_b", "n_prompts": "n", "mean_A": "mean_a",
          "mean_B": "mean_b", "mean_diff_A_minus_B": "mean_diff", "paired_t_stat": "t",
          "paired_t_pvalue": "t_p", "wilcoxon_stat": "wilcoxon_stat", "wilcoxon_pvalue": "wilcoxon_p",
          "cohens_d_paired": "cohens_d"}


def released_scores(wb: AmiriWorkbook) -> pd.DataFrame:
    """The released per-response metrics in cfbench's column names."""
    c = wb.career
    out = c[["model", "prompt_id", "identity"]].copy()
    for ours, theirs in RELEASED_METRICS.items():
        out[ours] = c[theirs].astype(float)
    return out


def released_table2(wb: AmiriWorkbook) -> pd.DataFrame:
    """``Tone_Linguistic_Framing`` in cfbench's Table-2 columns."""
    t = wb.table2.rename(columns=_TABLE2)
    t["n"] = t["n"].astype(int)
    return t[["model", "identity", "n", "sentiment", "politeness", "hedging", "neg_tone", "words"]]


def released_pairs(wb: AmiriWorkbook) -> pd.DataFrame:
    """``Statistical_Significance`` in cfbench's pair columns (metric names mapped)."""
    back = {v: k for k, v in RELEASED_METRICS.items()}
    s = wb.significance.rename(columns=_PAIRS)
    s["metric"] = s["metric"].map(lambda m: back.get(m, m))
    s["n"] = s["n"].astype(int)
    return s[["model", "metric", *_PAIRS.values()]]


def compare_to_released(ours: pd.DataFrame, released: pd.DataFrame, *, keys: list[str],
                        columns: dict[str, float]) -> pd.DataFrame:
    """Match counts per column: ``columns`` maps a column to its absolute tolerance.

    Returns one row per column: n_rows, n_match, max_abs_diff. Rows of
    ``released`` with no counterpart in ``ours`` count as mismatches.
    """
    merged = released.merge(ours, on=keys, how="left", suffixes=("_released", "_ours"),
                            validate="one_to_one")
    rows = []
    for col, tol in columns.items():
        a = merged[f"{col}_released"].astype(float).to_numpy()
        b = merged[f"{col}_ours"].astype(float).to_numpy()
        diff = np.abs(a - b)
        match = (diff <= tol) | (np.isnan(a) & np.isnan(b))
        rows.append({"column": col, "tolerance": tol, "n_rows": len(merged), "n_match": int(match.sum()),
                     "max_abs_diff": float(np.nanmax(diff)) if np.isfinite(diff).any() else float("nan")})
    return pd.DataFrame(rows)
