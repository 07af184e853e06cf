"""Executed notebooks as a reader gets them: progress bars at their last state, no machine path,
overrides only where they change something; and the committed default folders hold to that."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from cfbench.cli.reproduce.executed import collapse_streams, last_state, tidy_executed
from cfbench.cli.reproduce.config import differing, relative_to

REPO = Path(__file__).resolve().parents[1]
DEFAULTS = sorted((REPO / "results").glob("*/default"))


def _stream(text, name="stderr"):
    return {"output_type": "stream", "name": name, "text": text}


def _bar(n, total=288):
    return f"\rjudge x: {100 * n // total:3d}%|{'#' * (10 * n // total):<10}| {n}/{total} [00:0{n % 9}<?]"


def test_a_redrawn_bar_keeps_only_its_last_state():
    outs = [_stream(_bar(k)) for k in range(0, 289)] + [_stream("\n")]
    got = collapse_streams(outs)
    assert len(got) == 1
    assert got[0]["text"].strip() == _bar(288).strip("\r")
    assert got[0]["text"].count("\n") == 1


def test_plain_lines_tables_and_figures_keep_their_place():
    figure = {"output_type": "display_data", "data": {"image/png": "iVBOR"}, "metadata": {}}
    outs = [_stream("warning one\n"), _stream("warning two\n"), figure, _stream("after\n", "stdout"),
            _stream("\rbar 1/2\rbar 2/2\n", "stdout")]
    got = collapse_streams(outs)
    assert [o["output_type"] for o in got] == ["stream", "display_data", "stream"]
    assert got[0]["text"] == "warning one\nwarning two\n"
    assert got[1] == figure
    assert got[2]["text"] == "after\nbar 2/2\n"


def test_two_streams_are_not_merged_into_each_other():
    got = collapse_streams([_stream("a\n", "stdout"), _stream("\rb 1\rb 2", "stderr"), _stream("c\n", "stdout")])
    assert [(o["name"], o["text"]) for o in got] == [("stdout", "a\n"), ("stderr", "b 2"), ("stdout", "c\n")]


@pytest.mark.parametrize("text,want", [("x\r\ny\n", "x\ny\n"), ("a\rb\rc", "c"), ("done\r", "done"),
                                       ("\r\r", ""), ("one\ntwo\rTWO\n", "one\nTWO\n")])
def test_last_state_reads_like_a_terminal(text, want):
    assert last_state(text) == want


def test_tidy_rewrites_the_file_and_drops_papermill_paths(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "execution_count": 1,
                     "outputs": [_stream(_bar(k)) for k in range(5)]}],
          "metadata": {"papermill": {"input_path": "/home/someone/x/notebooks/s.ipynb",
                                     "output_path": "/home/someone/x/results/s/.d.staging-1/s.ipynb"}},
          "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "s.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    tidy_executed(path, study="s", config="d")
    back = json.loads(path.read_text(encoding="utf-8"))
    assert back["metadata"]["papermill"] == {"input_path": "notebooks/s.ipynb", "output_path": "results/s/d/s.ipynb"}
    assert len(back["cells"][0]["outputs"]) == 1 and "\r" not in back["cells"][0]["outputs"][0]["text"]


def test_path_parameters_become_relative_to_the_run_folder(tmp_path):
    staging = tmp_path / "results" / "study" / ".default.staging-abc"
    data = tmp_path / "shared" / "data" / "star"
    got = relative_to(staging, {"real_path": str(data), "transcripts_path": "synthetic:seed=1",
                                 "n_items": 4, "judge_path": ""})
    assert got["real_path"] == str(Path("..", "..", "..", "shared", "data", "star"))
    assert (staging / got["real_path"]).resolve() == data.resolve()
    assert got["transcripts_path"] == "synthetic:seed=1" and got["n_items"] == 4 and got["judge_path"] == ""


def test_overrides_equal_to_the_config_are_not_listed():
    base = {"repeat_penalty": 1.1, "n_items": 4}
    assert differing({"repeat_penalty": 1.1, "n_items": 8, "seed": 3}, base) == (("n_items", 8), ("seed", 3))
    assert differing(None, base) == ()


def test_a_run_note_reaches_the_provenance_cell_escaped_and_scrubbed(monkeypatch):
    from cfbench.cli.reproduce.provenance import provenance_markdown, run_note

    key = "sk-proj-" + "Zq8Wm3Xv7Rt2Ly5Np9Kd" * 2
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("CFBENCH_RUN_NOTE", f"fresh clone,\n empty cache <script>x</script> {key}")
    note = run_note()
    assert "\n" not in note and key[8:20] not in note and note.startswith("fresh clone, empty cache")
    text = provenance_markdown({"study": "s", "config": "default", "mode": "live", "note": note})
    (line,) = [x for x in text.splitlines() if x.startswith("- note: ")]
    assert "fresh clone, empty cache" in line and "<script>" not in line
    monkeypatch.delenv("CFBENCH_RUN_NOTE")
    assert run_note() == "" and "- note:" not in provenance_markdown({"study": "s", "config": "default"})


# ---- the committed default folders -------------------------------------------------------------------

# An absolute path of a POSIX or Windows machine, as it appears inside JSON, CSV or notebook text.
_ABS = re.compile(r"""(?:^|[\s"'=(\[,:])(/(?:home|root|work|tmp|Users|mnt|opt|var|srv|private)/[^\s"',)\]]+"""
                  r"""|[A-Za-z]:\\\\?(?:Users|home)[^\s"',]*)""")


def _texts(folder: Path):
    for f in sorted(folder.rglob("*")):
        if f.suffix in {".csv", ".json", ".ipynb", ".html", ".md", ".txt"}:
            yield f.name, f.read_text(encoding="utf-8", errors="replace")
        elif f.suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(f)
            buf = io.StringIO()
            for col in table.column_names:
                if str(table.schema.field(col).type) in ("string", "large_string"):
                    for v in table.column(col).to_pylist():
                        if v:
                            buf.write(v + "\n")
            buf.write(json.dumps({k.decode(errors="replace"): v.decode(errors="replace")
                                  for k, v in (table.schema.metadata or {}).items()}))
            yield f.name, buf.getvalue()


@pytest.mark.parametrize("folder", DEFAULTS, ids=[f.parent.name for f in DEFAULTS])
def test_no_committed_file_holds_a_path_of_the_machine_that_made_it(folder):
    found = [(name, m.group(1)[:80]) for name, text in _texts(folder) for m in _ABS.finditer(text)]
    assert found == []


# A text progress bar as tqdm (and cfbench's own text bar) draws it: "42%|####      | 120/288".
_BAR = re.compile(r"\d+%\|[^|\n]*\|\s*\d+/\d+")


def _lines(text) -> list[str]:
    return ("".join(text) if isinstance(text, list) else text).split("\n")


def _rendered_lines(cell) -> tuple[int, int]:
    """(all lines a reader scrolls past in this cell, of which progress-bar lines in stored streams)."""
    total, bars = len(_lines(cell.get("source", ""))), 0
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            lines = _lines(o.get("text", ""))
            bars += sum(len(_BAR.findall(line)) for line in lines)  # each redraw counts, even on one line
            total += len(lines)
        elif "image/png" in o.get("data", {}):
            total += 25  # a figure is about 25 text lines tall
        else:
            total += len(_lines(o.get("data", {}).get("text/plain", "")))
    return total, bars


@pytest.mark.parametrize("folder", DEFAULTS, ids=[f.parent.name for f in DEFAULTS])
def test_committed_notebooks_store_progress_as_one_final_line(folder):
    nb = json.loads((folder / f"{folder.parent.name}.ipynb").read_text(encoding="utf-8"))
    totals = [_rendered_lines(c) for c in nb["cells"]]
    total, bars = sum(t for t, _ in totals), sum(b for _, b in totals)
    redraws = sum("\r" in "".join(_lines(o["text"]))
                  for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "stream")
    assert redraws == 0
    assert bars <= 0.05 * total, f"{bars} of {total} lines are stored progress bars"


_MACHINE_PATH = re.compile(r"(?<![\w.])/(?:home|root|work|tmp|Users|srv|opt|mnt)/[^\s\"']+")


@pytest.mark.parametrize("folder", DEFAULTS, ids=[f.parent.name for f in DEFAULTS])
def test_committed_results_name_no_path_of_the_machine_that_made_them(folder):
    """Executed notebooks, pages and tables: no absolute path and no staging folder name."""
    for f in sorted(folder.iterdir()):
        if f.suffix not in (".ipynb", ".html", ".csv", ".json", ".md"):
            continue
        text = f.read_text(encoding="utf-8")
        found = _MACHINE_PATH.findall(text) + re.findall(r"\.[\w-]+\.staging-\w+", text)
        assert not found, f"{f.name}: {found[:3]}"


def test_a_long_run_note_is_cut_at_a_word_and_says_so(monkeypatch):
    from cfbench.cli.reproduce.provenance import NOTE_MAX, run_note

    words = " ".join(f"word{i:04d}" for i in range(400))  # 3,599 characters
    monkeypatch.setenv("CFBENCH_RUN_NOTE", words)
    note = run_note()
    assert note.endswith(" [...]") and len(note) <= NOTE_MAX + 6
    assert note[: -len(" [...]")].split()[-1] in words.split()  # the last word kept is whole
    monkeypatch.setenv("CFBENCH_RUN_NOTE", words[:500])
    assert run_note() == words[:500].strip()  # a note under the limit is kept whole


def test_the_provenance_cell_says_how_many_replies_the_run_added():
    from cfbench.cli.reproduce.provenance import provenance_markdown

    def cache_line(added):
        info = {"study": "s", "config": "default", "mode": "live",
                "cache": {"file": "$CFBENCH_CACHE_DIR/responses.sqlite", "replies_before": 917,
                          "started_empty": False, "replies_added": added}}
        (line,) = [x for x in provenance_markdown(info).splitlines() if x.startswith("- response cache:")]
        return line

    assert "no reply added by this run" in cache_line(0) and "says nothing of a live run" in cache_line(0)
    assert "128 replies added by this run" in cache_line(128) and "nothing of a live run" not in cache_line(128)


def test_tidy_drops_the_machine_path_a_warning_printed(tmp_path):
    """A UserWarning names the file it came from: the committed contact-center notebook showed
    /work/<clone>/cfbench/io/dialogues.py. Tracebacks and staging folder names likewise."""
    root = tmp_path / "clone"
    warn = f"bar 0/36\r{root}/cfbench/io/dialogues.py:28: UserWarning: load_star: 30 dialogue(s) left out\n"
    nb = {"cells": [{"cell_type": "code", "source": "", "metadata": {}, "execution_count": 1,
                     "outputs": [_stream(warn),
                                 {"output_type": "error", "ename": "E", "evalue": "x",
                                  "traceback": [f"File {root}/results/s/.d.staging-7f/x.py, line 1"]}]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "s.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    tidy_executed(path, study="s", config="d", root=root)
    text = path.read_text(encoding="utf-8")
    assert str(root) not in text and "staging" not in text
    out = json.loads(text)["cells"][0]["outputs"]
    assert out[0]["text"].startswith("cfbench/io/dialogues.py:28: UserWarning")
    assert out[1]["traceback"] == ["File results/s/d/x.py, line 1"]
