"""Issue 36: every CSV cfbench writes goes through one writer that neutralises text cells a spreadsheet
would evaluate (``=``, ``+``, ``-``, ``@``, tab, CR at the start); numbers stay numbers."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
from cfbench.core.text import csv_text, neutralise_cell
from cfbench.report import RunOutput

HOSTILE = ["=HYPERLINK(\"http://x.test\",\"click\")", "@SUM(A1:A9)", "-2+3+cmd|' /C calc'!A0", "\tYes 80",
           "+1+1", "\r=1", "Yes, 80"]
ROOT = Path(__file__).resolve().parents[1]


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_run_output_tables_neutralise_text_cells_and_keep_numbers(tmp_path):
    frame = pd.DataFrame({"request_id": [f"r{i}" for i in range(len(HOSTILE))], "text": HOSTILE,
                          "score": [-0.25, 1.5, -3.0, 0.0, 2.0, -1e-9, 80.0], "n": list(range(-3, 4)),
                          "ok": [True] * len(HOSTILE), "mixed": [-0.5, "=1", None, "x", -2, "@a", 3.25]})
    path = RunOutput(tmp_path).table("fresh_responses", frame)
    rows = _cells(path.read_bytes().decode("utf-8"))  # CR kept as written
    header, body = rows[0], rows[1:]
    text_col = [r[header.index("text")] for r in body]
    assert text_col == [neutralise_cell(h) for h in HOSTILE]
    assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in text_col)
    back = pd.read_csv(path)
    assert back["score"].tolist() == frame["score"].tolist() and back["n"].tolist() == frame["n"].tolist()
    assert [r[header.index("mixed")] for r in body] == ["-0.5", "'=1", "", "x", "-2", "'@a", "3.25"]


def test_column_names_from_outside_are_neutralised_too():
    assert _cells(csv_text(pd.DataFrame({"=cmd": [1], "ok": [2]})))[0] == ["'=cmd", "ok"]


def test_every_csv_cfbench_writes_goes_through_the_one_writer():
    """No ``.to_csv(`` and no ``csv.writer`` anywhere in the package but the writer itself. The exceptions
    are inputs, never results: ``save_transcripts``' CSV is read back by ``load_transcripts``, and the
    contact-center walk hands each transcript its slice of the user's review decisions through a
    temporary CSV the same loader reads (neutralising it would change the user's own values)."""
    offenders = []
    for path in sorted((ROOT / "cfbench").rglob("*.py")):
        if path.name == "text.py" and path.parent.name == "core":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(", line):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == ["cfbench/io/transcripts.py", "cfbench/studies/contact_center_qa/judging.py"], offenders
