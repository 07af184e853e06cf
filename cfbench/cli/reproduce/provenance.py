"""What a finished run records about itself: ``run_info.json`` and the provenance cell.

After papermill, the executed notebook gets a provenance cell under its title (live, replay or plan;
commit; machine; wall time; the response cache; the exact command; the judge servers asked), made
from the same fields as the ``run_info.json`` beside it. Text from outside (config names, overrides,
server replies) enters the cell as inert Markdown.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any, Mapping

from ...core.secrets import scrub
from ...core.text import md_code, md_safe, md_text
from .config import Run
from .folders import utc_now

__all__ = ["run_info", "provenance_markdown", "write_provenance", "cache_state", "git_commit", "shown_path",
           "run_note"]


def _plugin_packages() -> list[dict[str, Any]]:
    """The plugin packages installed or imported, with versions (:func:`cfbench.plugins.packages`)."""
    from ... import plugins

    try:
        return plugins.packages()
    except Exception as exc:  # noqa: BLE001 - the run record names the problem instead
        return [{"error": " ".join(f"{type(exc).__name__}: {exc}".split())[:200]}]


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as the provenance shows it: relative to the working folder when under it, else its name
    (no machine's folders in an executed notebook)."""
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return p.name


def _portable_command(command: str) -> str:
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return " ".join(shlex.quote(shown_path(w) if os.path.isabs(w) else w) for w in words)


def _command(run: Run) -> str:
    parts = ["cfbench reproduce", run.label, f"--study {run.study}"]
    parts += [f"-p {k} {json.dumps(v) if not isinstance(v, str) else v}" for k, v in run.overrides]
    return " ".join(parts)


def cache_state() -> dict[str, Any]:
    """Which response cache the run uses and how many replies it held before (0: it started empty)."""
    from ...judges.cache import ResponseCache, default_cache_path

    path = default_cache_path()
    shown = "$CFBENCH_CACHE_DIR/" + path.name if os.environ.get("CFBENCH_CACHE_DIR") else \
        str(path).replace(str(Path.home()), "~", 1)
    rows = 0
    if path.is_file():
        cache = ResponseCache(path, read_only=True)
        try:
            rows = len(cache)
        finally:
            cache.close()
    return {"file": shown, "replies_before": rows, "started_empty": rows == 0}


def git_commit(root: Path) -> dict[str, Any] | None:
    """The checkout's commit and whether tracked files had uncommitted changes (None outside git).

    ``results/`` is left out of that check: it holds what runs write (a run of several studies replaces
    the committed results of the first before the second starts), not the code that produced them.
    """
    import subprocess

    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=20, check=True).stdout.strip()
        if not top or Path(top).resolve() != root.resolve():  # an installed copy inside some other repository
            return None
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=20, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":(exclude)results"],
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"sha": sha, "dirty": bool(dirty)} if sha else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _server_line(srv: Mapping[str, Any]) -> str:
    """One provenance line for a judge server (see :mod:`cfbench.judges.server_info`)."""
    def code(value: Any) -> str:  # server-supplied text inside a code span: no backtick, no line break
        return "`" + " ".join(str(value).replace("`", "'").split()) + "`"

    if srv.get("error"):
        return f"{code(srv.get('judge'))} could not be asked: {code(srv['error'])}"
    served = ", ".join(code(m) for m in srv.get("served_models") or ()) or "none listed"
    extra = "".join(f"; {k} {code(srv[k])}" for k in ("server", "version") if srv.get(k))
    return (f"{code(srv.get('base_url'))} (model {code(srv.get('model'))}; serves {served}{extra}; "
            f"client {code(srv.get('client'))})")


def run_note() -> str:
    """``$CFBENCH_RUN_NOTE`` (how the run was set up, in the runner's words: "fresh clone, empty cache"),
    one line, scrubbed of credentials, at most 1,000 characters (a longer one is cut at a word and ends
    in " [...]", so a reader sees it was cut); "" when unset."""
    note = scrub(" ".join(os.environ.get("CFBENCH_RUN_NOTE", "").split()))
    if len(note) <= NOTE_MAX:
        return note
    return note[:NOTE_MAX].rsplit(" ", 1)[0] + " [...]"


#: longest run note kept (characters)
NOTE_MAX = 1000


def run_info(run: Run, *, root: Path, mode: str, params: Mapping[str, Any], wall: float, started: str,
             cache: Mapping[str, Any], command: str | None) -> dict[str, Any]:
    """The run's record (``run_info.json``, and the provenance cell made from it) of a finished run:
    what ran, where, on which machine and commit, how long, from which cache, by which command."""
    cache = dict(cache)
    if "replies_before" in cache:  # replies this run added: 0 means every reply came from the cache
        cache["replies_added"] = max(0, cache_state()["replies_before"] - int(cache["replies_before"]))
    info = {
        "study": run.study, "config": run.config, "wall_s": round(wall, 1),
        "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "replay": mode == "replay",
        "mode": mode, "config_source": run.label, "overrides": dict(run.overrides),
        "commit": git_commit(root), "cpu_model": _cpu_model(), "started": started, "finished": utc_now(),
        "cache": cache, "command": _portable_command(command) if command else _command(run),
        "plugins": _plugin_packages(),
        "note": run_note(),
    }
    if mode == "live":  # which server answered (a replay or a plan asks none)
        from ...judges.server_info import server_provenance, server_specs

        info["servers"] = server_provenance(server_specs(params))
        if _uses_embedded_judge(params):
            from ...judges.llama_cpu import cpu_backend_summary

            # the llama.cpp CPU module the embedded judge loads here (the notebook's kernel makes the same
            # choice: same machine, same environment); replies can differ between modules (docs/local_judge.md 3b)
            info["cpu_backend"] = cpu_backend_summary()
    return info


def _uses_embedded_judge(params: Any) -> bool:
    """Whether any parameter (or item of a list parameter) is a ``local:`` judge spec."""
    values = params.values() if isinstance(params, Mapping) else ()
    return any(isinstance(item, str) and item.startswith("local:")
               for v in values for item in (v if isinstance(v, (list, tuple)) else [v]))


def _backend_line(backend: str, added: Any) -> str:
    """The CPU-module line. Replies can differ between modules (docs/local_judge.md 3b), and a cached reply
    came from the module of the run that asked for it, so the line says which replies this module gave."""
    line = f"- CPU backend of the embedded judge (llama.cpp): {md_text(backend)}"
    if added is None:
        return line
    if not int(added):
        return line + ("; no reply of this run came from it (every reply was read from the cache, made by "
                       "whichever module answered when it was asked)")
    return line + f"; it gave the {int(added):,} replies this run added, the cached ones came from earlier runs"


def provenance_markdown(info: Mapping[str, Any]) -> str:
    """The provenance cell of an executed notebook, from its ``run_info.json`` fields."""
    mode = info.get("mode", "replay" if info.get("replay") else "live")
    what = {"live": "**live run**: every judge call was made by this run, except replies already in the cache "
                    "below",
            "replay": "**replay**: every judge reply was read from the response cache below; no model was called "
                      "by this run, so its wall time says nothing of a live run",
            "plan": "**plan only**: no model was called; uncached requests were recorded for a Batch-API export"}
    commit = info.get("commit")
    commit_txt = (f"`{commit['sha'][:12]}`" + (" with uncommitted changes to tracked files" if commit["dirty"]
                                                 else " (clean)")) if commit else "unknown (not a git checkout)"
    cache = info.get("cache") or {}
    cache_txt = (f"{md_code(cache.get('file'))}, " + ("empty at the start" if cache.get("started_empty") else
                                               f"{cache.get('replies_before', 0):,} replies in it at the start"))
    if cache.get("replies_added") is not None and mode == "live":
        added = int(cache["replies_added"])
        cache_txt += (f"; {added:,} replies added by this run" if added else
                      "; no reply added by this run: every reply was read from the cache, so the wall time "
                      "says nothing of a live run")
    overrides = info.get("overrides") or {}
    over_txt = ", ".join(md_code(f"{k} = {v!r}") for k, v in overrides.items()) or "none"
    wall = float(info.get("wall_s") or 0)
    folder = f"{info.get('study')}/{info.get('config')}"
    lines = [
        "### How this notebook was produced",
        "",
        f"- {what.get(mode, mode)}",
        f"- command: {md_code(info.get('command', ''))}; results folder {md_code(folder)}",
        f"- config: {md_text(info.get('config_source', ''))}; overrides: {over_txt}",
        f"- commit: {commit_txt}",
        f"- machine: {md_text(info.get('cpu_model') or '?')}, {info.get('cpus')} cores, {info.get('machine')}, "
        f"Python {info.get('python')}",
        f"- wall time: {wall:,.0f} s ({wall / 60:.1f} min), {info.get('started')} to {info.get('finished')}",
        f"- response cache: {cache_txt}",
        *([_backend_line(info["cpu_backend"], cache.get("replies_added"))] if info.get("cpu_backend") else []),
        *[f"- judge server: {_server_line(srv)}" for srv in info.get("servers") or ()],
        *([f"- note: {md_text(info['note'])}"] if info.get("note") else []),
        "",
        "_Written by `cfbench reproduce` after the notebook ran; `run_info.json` beside it holds the same._",
    ]
    return md_safe("\n".join(lines))  # names from outside (config files, overrides) hold no live markup


def write_provenance(notebook: Path, info: Mapping[str, Any]) -> None:
    """Insert the provenance cell right after the title cell of the executed notebook."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    cells[:] = [c for c in cells if "provenance" not in c.get("metadata", {}).get("tags", [])]
    at = 1 if cells and cells[0].get("cell_type") == "markdown" else 0
    cell = {"cell_type": "markdown", "id": "cfbench-provenance", "metadata": {"tags": ["provenance"]},
            "source": provenance_markdown(info).splitlines(keepends=True)}
    cells.insert(at, cell)
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
