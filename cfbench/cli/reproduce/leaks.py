"""A credential from the environment must not survive in anything a run leaves behind.

After the last file of a run is written (and of a failed run too), its folder and the response cache
are searched for every form of each key (:mod:`cfbench.core.secrets`); a hit quarantines the folder,
removes the cache rows holding it, and fails the run in one line.
"""

from __future__ import annotations

import time
from pathlib import Path

from ...core.secrets import locate_secret_leaks, note_unsearched
from .config import Run

__all__ = ["leak_check"]


def leak_check(folder: Path, run: Run) -> str | None:
    """Check every file a run leaves behind (its staging folder, whether it succeeded or failed) and the
    response cache for a credential from the environment. On a hit the folder is moved aside whole to
    ``<config>.quarantined-<UTC time>`` (readable by its owner only; nothing is deleted), the cache rows
    holding it are removed, and the one-line reason is returned: which files, where in each, never the
    credential. None when nothing leaked."""
    note_unsearched()  # a placeholder key is said once and not hunted (it would match ordinary words)
    files = [f"{Path(p).relative_to(folder)} ({where})" for p, where in locate_secret_leaks(folder)]
    leaks = files + [f"the response cache ({hit})" for hit in _cache_leaks()]
    if not leaks:
        return None
    removed = _remove_cache_leaks()
    shown = ", ".join(leaks[:5]) + (f" and {len(leaks) - 5} more" if len(leaks) > 5 else "")
    import secrets

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = folder.parent / f"{run.config}.quarantined-{stamp}"
    if aside.exists():
        aside = folder.parent / f"{run.config}.quarantined-{stamp}-{secrets.token_hex(3)}"
    folder.rename(aside)
    for sub in [aside, *aside.rglob("*")]:
        if sub.is_dir() and not sub.is_symlink():
            sub.chmod(0o700)
    try:
        shown_aside = str(aside.relative_to(Path.cwd().resolve()))
    except ValueError:
        shown_aside = str(aside)
    kept = (f"the run's outputs were moved aside to {shown_aside} (readable by you only; look at the "
            "files named, then delete the folder)")
    return (f"a credential from the environment was written to {shown}; {kept}, and {len(removed)} cache "
            "row(s) holding it removed (previous results left untouched)")


def _remove_cache_leaks() -> list[str]:
    """Delete the response-cache rows that hold a credential; their names."""
    from ...judges.cache import ResponseCache, default_cache_path, remove_leaking_rows

    path = default_cache_path()
    return remove_leaking_rows(ResponseCache(path)) if path.is_file() else []


def _cache_leaks() -> list[str]:
    """The response cache, checked like the results (its pending prompts are compressed on disk)."""
    from ...judges.cache import ResponseCache, default_cache_path

    path = default_cache_path()
    return ResponseCache(path, read_only=True).find_secret_leaks() if path.is_file() else []
