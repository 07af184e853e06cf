"""What ``cfbench reproduce`` does to an executed notebook before it is kept.

Two things, both about what a reader of ``results/<study>/<config>/<study>.ipynb`` sees:

* **Progress bars as their last state.** A text progress bar redraws one line with carriage
  returns; papermill stores every redraw as its own stream output, so a notebook that judged
  288 requests kept 288 lines of bar (46 % of the rendered judge-bias notebook). A terminal
  shows only the last state of such a line; :func:`collapse_streams` keeps exactly that, and
  merges consecutive outputs of one stream, as Jupyter's own display does. Text without carriage
  returns is kept line for line.
* **No path of the machine that ran it.** papermill records the absolute input and output paths;
  :func:`portable_metadata` replaces them with the project-relative ones, and :func:`portable_text`
  makes the paths a cell printed (a warning names the file it came from) project-relative, with a
  staging folder's name replaced by the final one.

Pure functions on the notebook's JSON (a dict), so they are tested without running a kernel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["collapse_streams", "last_state", "portable_metadata", "portable_text", "tidy_executed"]

# Everything up to a carriage return that is followed by more text on the same line: what a terminal overwrites.
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n\r])")


def last_state(text: str) -> str:
    r"""The text as a terminal leaves it: each line shows what was written after its last ``\r``.

    >>> last_state("\rbar  0%\rbar 50%\rbar 100%\n")
    'bar 100%\n'
    >>> last_state("plain\nlines\n")
    'plain\nlines\n'
    """
    text = text.replace("\r\n", "\n")
    text = _OVERWRITTEN.sub("", text)
    return text.replace("\r", "")


def _text(output: dict[str, Any]) -> str:
    t = output.get("text", "")
    return "".join(t) if isinstance(t, list) else str(t)


def collapse_streams(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One cell's outputs with consecutive outputs of one stream merged and redrawn lines reduced
    to their last state. Other outputs (tables, figures, errors) keep their place and content."""
    out: list[dict[str, Any]] = []
    for o in outputs:
        if o.get("output_type") == "stream" and out and out[-1].get("output_type") == "stream" \
                and out[-1].get("name") == o.get("name"):
            out[-1] = {**out[-1], "text": _text(out[-1]) + _text(o)}
        else:
            out.append(dict(o))
    for o in out:
        if o.get("output_type") == "stream":
            o["text"] = last_state(_text(o))
    return [o for o in out if o.get("output_type") != "stream" or o["text"].strip()]


def portable_metadata(nb: dict[str, Any], *, study: str, config: str) -> None:
    """papermill's absolute input/output paths replaced by the project-relative ones (in place)."""
    meta = nb.setdefault("metadata", {}).setdefault("papermill", {})
    meta["input_path"] = f"notebooks/{study}.ipynb"
    meta["output_path"] = f"results/{study}/{config}/{study}.ipynb"


def portable_text(text: str, *, root: Path | None, config: str) -> str:
    """``text`` with the project root's absolute path dropped (so ``/home/x/cfbench/cfbench/io/a.py`` reads
    ``cfbench/io/a.py``) and a staging folder (``.<config>.staging-<id>``) named by its final name.

    >>> portable_text("/srv/p/cfbench/io/a.py:28: UserWarning", root=Path("/srv/p"), config="default")
    'cfbench/io/a.py:28: UserWarning'
    >>> portable_text("results/s/.default.staging-x1/t.csv", root=None, config="default")
    'results/s/default/t.csv'
    """
    if root is not None:
        text = text.replace(str(root).rstrip("/\\") + "/", "")
    return re.sub(r"\." + re.escape(config) + r"\.staging-[A-Za-z0-9_]+", config, text)


def _portable_outputs(outputs: list[dict[str, Any]], *, root: Path | None, config: str) -> None:
    for o in outputs:
        if o.get("output_type") == "stream":
            o["text"] = portable_text(_text(o), root=root, config=config)
        elif o.get("output_type") == "error":
            o["traceback"] = [portable_text(str(t), root=root, config=config) for t in o.get("traceback", [])]


def tidy_executed(notebook: Path, *, study: str, config: str, root: Path | None = None) -> None:
    """Apply all three to an executed notebook file, rewriting it (``root``: the project's folder)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    portable_metadata(nb, study=study, config=config)
    for cell in nb.get("cells", []):
        if cell.get("outputs"):
            cell["outputs"] = collapse_streams(cell["outputs"])
            _portable_outputs(cell["outputs"], root=root, config=config)
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
