"""The results swap: a finished staging folder replaces the results, and survives a kill at any step.

A finished staging folder replaces the results in five steps: write the journal
``.<config>.swap`` (the staging and old folders' names), rename the results to ``.<config>.old-X``,
rename the staging folder to the results, delete the old folder, delete the journal. The journal
is written only once the staging folder is complete, so after a kill at any step
:func:`recover_swap` (the next run's first step, under the folder lock) can finish the swap or
undo it: the results folder ends up holding the old or the new results, complete, and nothing
of the swap is left beside it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from .folders import is_ours

__all__ = ["swap_in", "recover_swap"]


def _swap_journal(final: Path) -> Path:
    return final.parent / f".{final.name}.swap"


def _crash_point(step: str) -> None:
    """Between two steps of the swap (a no-op; tests make it raise to stand for a kill -9 there)."""


def swap_in(staging: Path, final: Path) -> None:
    """Replace ``final`` by the complete folder ``staging`` (see the comment above)."""
    import secrets

    journal = _swap_journal(final)
    old = final.parent / f".{final.name}.old-{secrets.token_hex(4)}"  # a fresh name: never another's
    tmp = journal.with_name(journal.name + ".tmp")
    try:
        tmp.write_text(json.dumps({"staging": staging.name, "old": old.name}) + "\n", encoding="utf-8")
        os.replace(tmp, journal)
    except OSError:
        tmp.unlink(missing_ok=True)  # nothing has moved yet
        raise
    _crash_point("journal written")
    if final.exists():
        final.rename(old)
    _crash_point("old results moved aside")
    staging.rename(final)
    _crash_point("new results in place")
    shutil.rmtree(old, ignore_errors=True)
    _crash_point("old results deleted")
    journal.unlink()


def _journal_names(final: Path) -> dict[str, Path]:
    """The staging and old folders a swap journal names (only names this swap could have made)."""
    journal = _swap_journal(final)
    try:
        data = json.loads(journal.read_text(encoding="utf-8")) if journal.is_file() else {}
    except (OSError, ValueError):
        data = {}
    pattern = re.compile(rf"\.{re.escape(final.name)}\.(staging|old)-[A-Za-z0-9_]+")
    out = {}
    for key in ("staging", "old"):
        name = data.get(key) if isinstance(data, dict) else None
        if isinstance(name, str) and pattern.fullmatch(name):
            out[key] = final.parent / name
    return out


def recover_swap(final: Path) -> None:
    """Finish or undo a swap a killed run left half done; says what it did in one line."""
    journal = _swap_journal(final)
    named = _journal_names(final)
    olds = [p for p in final.parent.glob(f".{final.name}.old-*") if p.is_dir() and not p.is_symlink()]
    if not olds and not journal.exists() and not journal.with_name(journal.name + ".tmp").exists():
        return
    done, changed = "removed the leftovers of an interrupted results swap", False
    if not final.exists() and not final.is_symlink():
        new = named.get("staging")
        if new is not None and new.is_dir() and not new.is_symlink() and (new / "run_info.json").is_file():
            new.rename(final)  # the journal is written only after the staging folder is complete
            done, changed = "finished an interrupted results swap (the new results are in place)", True
        else:
            mine = [p for p in olds if p == named.get("old") or is_ours(p, final.name)]
            if mine:
                max(mine, key=lambda p: p.stat().st_mtime).rename(final)
                done, changed = "undid an interrupted results swap (the previous results are back in place)", True
    leftovers = [p for p in olds if p.exists() and (p == named.get("old") or is_ours(p, final.name))]
    new = named.get("staging")
    if new is not None and new.is_dir() and not new.is_symlink() and is_ours(new, final.name):
        leftovers.append(new)  # the swap never started: the results in place stay
    for p in leftovers:
        shutil.rmtree(p, ignore_errors=True)
    for leftover in (journal, journal.with_name(journal.name + ".tmp")):
        if leftover.exists() or leftover.is_symlink():
            leftover.unlink()
            changed = True
    if changed or leftovers:
        print(f"[cfbench] {final}: {done}", file=sys.stderr, flush=True)
