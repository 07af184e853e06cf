"""Counts that README and the docs state come from the registry (cfbench.perturb.base.count_sentence)."""

from __future__ import annotations

import re
from pathlib import Path

from cfbench.perturb.base import TABLE_DIMENSIONS, count_sentence, dimension_ids

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_readme_states_the_registry_count():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"\d+ dimensions \(\d+ rows\)", text)
    assert found, "README no longer states the dimension count"
    assert set(found) == {count_sentence()}


def test_every_table_row_count_in_the_docs_matches():
    n_rows = len(dimension_ids(table_only=True))
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"\b(\d+) (?:table rows|dimensions \((\d+) rows\))", text):
            rows = int(m.group(2) or m.group(1))
            assert rows == n_rows, f"{path.name}: {m.group(0)!r} but the registry has {n_rows} table rows"


def test_count_sentence_follows_the_registry():
    rows = dimension_ids(table_only=True)
    assert rows == list(TABLE_DIMENSIONS)
    # name and cue variants of one identity are one dimension, two rows
    families = {r.removesuffix("_name").removesuffix("_cues") for r in rows}
    assert count_sentence() == f"{len(families)} dimensions ({len(rows)} rows)"
    assert len(families) < len(rows)
