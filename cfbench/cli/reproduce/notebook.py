"""The kernel papermill runs a study notebook on, and the explorer page written after the run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from ...core.secrets import scrub
from ...core.text import for_terminal
from .config import Run

__all__ = ["kernel_manager", "shutdown", "write_view_page"]


def kernel_manager() -> Any:
    """A kernel on IPC sockets (local only, no plain-TCP ports; ipykernel warns about those), in a
    short temporary folder: a socket path must stay under ~100 characters."""
    import tempfile

    from jupyter_client import KernelManager

    return KernelManager(kernel_name="python3", transport="ipc",
                         ip=str(Path(tempfile.mkdtemp(prefix="cfbench-")) / "k"))


def shutdown(km: Any) -> None:
    if km.has_kernel:
        km.shutdown_kernel(now=False)
    shutil.rmtree(Path(km.ip).parent, ignore_errors=True)


def write_view_page(folder: Path, run: Run) -> None:
    """The run explorer page (``view.html``) of a finished run, provenance from its ``run_info.json``.
    A streamed run's page is built from its ``view_preview/`` folder (the first transcripts).
    A page that cannot be built costs one warning line, never the run."""
    try:
        import shutil

        from ...studies import explorer_pairs
        from ...view import write_view

        src, title = folder, f"{run.study} / {run.config}"  # the final name (``folder`` may be the staging one)
        preview = folder / "view_preview"
        if (preview / "rows.parquet").is_file():  # a streamed run: the page of its first transcripts (the
            src = preview  # whole design's rows.parquet would be read into memory: GBs at paper scale)
            title += " (the first transcripts of a streamed run)"
            if (folder / "run_info.json").is_file():
                shutil.copyfile(folder / "run_info.json", preview / "run_info.json")
        write_view(src, folder / "view.html", title=title, pairs=explorer_pairs(src))
    except Exception as exc:  # noqa: BLE001 - the results stand without their page
        message = for_terminal(scrub(" ".join(f"{type(exc).__name__}: {exc}".split())))[:300]
        print(f"[cfbench] warning: {run.study} / {for_terminal(run.config)}: view.html not written ({message}); "
              f"the results are complete, run `cfbench view` on the folder to retry", file=sys.stderr, flush=True)
