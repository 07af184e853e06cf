"""How a run fails: in one line, and on a full disk by freeing the space this run took.

A notebook that raises is :class:`StudyFailed`, its message one line (:func:`one_line`: the
notebook's own exception, scrubbed of credentials). A full disk (an ``ENOSPC`` anywhere in the
chain, or a cell that raised one) is :class:`DiskFull`: the run's own staging and failed folders are
removed first, so the previous results stay and the space comes back.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ...core.secrets import scrub
from . import folders
from .config import Run
from .folders import is_ours

__all__ = ["StudyFailed", "DiskFull", "is_disk_full", "free_space_if_full", "staging_folder", "one_line"]


class StudyFailed(RuntimeError):
    """A study notebook raised; the message is one line and names where the failed notebook is."""

    def __init__(self, study: str, where: Path, cause: str):
        self.study, self.where, self.cause = study, where, cause
        super().__init__(f"study {study} failed: {cause} (executed notebook: {where}; "
                         "previous results left untouched)")


class DiskFull(StudyFailed):
    """The disk filled up while a run wrote its results; the run's own folders were removed."""

    def __init__(self, study: str, where: Path, removed: list[str]):
        self.study, self.where, self.cause = study, where, "no space left on device"
        RuntimeError.__init__(self, f"study {study} failed: no space left on device under {where}; cfbench removed "
                              f"its own folders of this run ({', '.join(removed) or 'none'}) to free the space; "
                              "previous results left untouched")


def is_disk_full(exc: BaseException | None) -> bool:
    """An OSError ENOSPC/EDQUOT anywhere in the chain, or a notebook cell that raised one."""
    import errno

    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = f"{getattr(exc, 'ename', '')} {getattr(exc, 'evalue', '')}"
        if "No space left on device" in text or "Disk quota exceeded" in text:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def free_space_if_full(exc: BaseException, run: Run, *dirs: Path) -> None:
    """When ``exc`` is a full disk: delete ``dirs`` (this run's staging folder, the config's failed
    folder: cfbench's own; a notebook written on a full disk is truncated anyway) and raise
    :class:`DiskFull`, one line."""
    if not is_disk_full(exc):
        return
    removed = []
    for folder in dirs:
        if is_ours(folder, run.config):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    raise DiskFull(run.study, dirs[-1].parent, removed) from None


def staging_folder(final: Path, failed: Path, run: Run) -> Path:
    """This run's staging folder; on a full disk the config's old failed folder (cfbench's own) is
    removed and the folder made again, and a disk still full is one line (:class:`DiskFull`)."""
    try:
        return folders.new_folder(final.parent, f".{run.config}.staging-")
    except OSError as exc:
        if not is_disk_full(exc) or not is_ours(failed, run.config):
            free_space_if_full(exc, run, failed)
            raise
        shutil.rmtree(failed, ignore_errors=True)
        print(f"[cfbench] {run.study} / {run.config}: the disk is full; removed {failed.name} (a failed run's "
              "folder) to make room", file=sys.stderr, flush=True)
    try:
        return folders.new_folder(final.parent, f".{run.config}.staging-")
    except OSError as exc:
        free_space_if_full(exc, run, failed)
        raise


def one_line(exc: BaseException) -> str:
    """``ExceptionName: message`` from a papermill execution error (the notebook's own exception)."""
    ename = getattr(exc, "ename", None) or type(exc).__name__
    evalue = getattr(exc, "evalue", None)
    if evalue is None:
        evalue = str(exc)
    text = " ".join(str(evalue).split())
    cell = getattr(exc, "exec_count", None)
    where = f" in cell [{cell}]" if cell else ""
    return f"{ename}{where}: {scrub(text)[:500]}"  # a notebook's error may quote a key (a URL holding one)
