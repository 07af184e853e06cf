"""The results folders a run writes, and which of them cfbench may touch.

A run's results land in ``<results>/<study>/<name>``; a variation of a shipped config gets its own
name (:func:`results_folder_name`), so it never lands in a reference run's folder. cfbench replaces
or deletes only folders it made (the marker file :data:`MARKER`, and a ``run_info.json`` naming the
study and config); one run at a time per folder (:class:`FolderLock`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from ...core.errors import InputError
from ...core.paths import RESULTS_MARKER as MARKER

__all__ = ["MARKER", "results_folder_name", "check_name", "check_results_dir", "check_config_file", "is_ours",
           "check_ours", "FolderLock", "utc_now", "new_folder", "remove_ours"]


def results_folder_name(base: str, overrides: Mapping[str, Any] | None = None,
                        file_params: Mapping[str, Any] | None = None) -> str:
    """``base`` (a shipped config, or a file's stem) plus ``-<8 hex>`` when the run is not a shipped
    config as it is: the hash covers the file's parameters (``-f``) and the overrides (``-p``), so
    the same variation always lands in the same folder and never in a reference run's."""
    if not overrides and file_params is None:
        return base
    blob = json.dumps({"file": file_params, "overrides": dict(overrides or {})}, sort_keys=True, default=str)
    return f"{base}-{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:8]}"


def check_name(name: str, *, source: str) -> None:
    """A results folder name must be one plain path component (``..yaml`` has the stem ``.``)."""
    if (not name or name in (".", "..") or name.startswith(".") or "/" in name or "\\" in name
            or name.endswith((".failed", ".staging", ".lock"))):
        raise InputError(f"cannot name a results folder {name!r}; rename the file (a plain name such as "
                         "my-config.yaml)", source=source)


def check_results_dir(results_dir: Path) -> None:
    text = str(results_dir)
    resolved = results_dir.resolve()
    if resolved == Path(resolved.anchor):
        raise InputError("is the filesystem root; give a folder for the results", source=f"--results {text}")
    if results_dir.exists() and not results_dir.is_dir():
        raise InputError("is a file, not a folder", source=f"--results {text}")
    for parent in resolved.parents:  # mkdir under a file would raise NotADirectoryError later
        if parent.exists() and not parent.is_dir():
            raise InputError(f"{parent} is a file, not a folder", source=f"--results {text}")


def check_config_file(config_file: Path) -> None:
    if config_file.is_dir():
        raise InputError("is a folder; -f takes a YAML file", source=f"-f {config_file}")
    if not config_file.exists():
        raise InputError("no such file", source=f"-f {config_file}")


def is_ours(folder: Path, config: str | None = None) -> bool:
    """A folder cfbench made for this study and config: it holds the marker and, when it has a
    ``run_info.json``, that file names the study it sits under and ``config`` (default: the folder's
    own name); a folder written before the marker existed counts when its ``run_info.json`` does.
    A marker alone in another study's results (reached through a link, or copied) is not ours."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    info = folder / "run_info.json"
    try:
        data = json.loads(info.read_text(encoding="utf-8")) if info.is_file() else None
    except (OSError, ValueError):
        return False
    named = (isinstance(data, dict) and data.get("study") == folder.parent.name
             and data.get("config") == (config or folder.name))
    if (folder / MARKER).is_file():
        return data is None or named
    return named


def check_ours(final: Path, *, force: bool) -> None:
    """Refuse, in one line, a results folder cfbench would replace but did not make."""
    for path in (final, final.parent):
        if path.is_symlink():
            what = "results folder" if path == final else "study folder"
            raise InputError(f"is a symbolic link; cfbench replaces a {what}'s contents by renaming and never "
                             "follows a link out of the results folder given (point --results at the real "
                             "folder, or remove the link)", source=str(path))
        if path.exists() and not path.is_dir():
            raise InputError("is a file, not a results folder; move it or choose another --results",
                             source=str(path))
    if final.exists() and not force and not is_ours(final):
        raise InputError(f"exists and was not made by cfbench (no {MARKER} in it); nothing was changed - "
                         "choose another --results, or pass --force to replace it", source=str(final))


class FolderLock:
    """One run at a time per results folder: ``.<name>.lock`` beside it, held with ``flock``.
    A second run refuses at once in one line; it never touches the first run's staging."""

    def __init__(self, final: Path):
        self.final = final
        self.path = final.parent / f".{final.name}.lock"
        self.fd: int | None = None

    def __enter__(self) -> "FolderLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    holder = os.read(fd, 200).decode("utf-8", "replace").strip()
                finally:
                    os.close(fd)
                raise InputError(f"another cfbench run is writing these results ({holder or 'pid unknown'}); "
                                 "wait for it to finish, or choose another --results", source=str(self.final)) from None
            try:  # the file may have been removed by the previous holder between open and flock
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, started {utc_now()}".encode())
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(self.fd)
            self.fd = None


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def new_folder(parent: Path, prefix: str) -> Path:
    """A fresh folder of this run (unique name, marker inside): nothing another run owns is reused."""
    import tempfile

    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        folder.chmod(0o755)
        (folder / MARKER).write_text("written by cfbench reproduce; cfbench replaces or deletes only folders "
                                     "holding this file\n", encoding="utf-8")
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)  # a full disk: no folder without its marker left behind
        raise
    return folder


def remove_ours(folder: Path, config: str | None = None) -> None:
    """Delete a folder only if cfbench made it (for ``config``; never follows a link)."""
    if is_ours(folder, config):
        shutil.rmtree(folder, ignore_errors=True)
