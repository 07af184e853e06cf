"""Helpers shared by the benchmark scripts (not part of the cfbench package).

``ServerProcess`` runs :class:`cfbench.judges.fakeserver.FakeOpenAIServer` in a
child process, so the server's event loop does not compete with the client for
the GIL: the client-side numbers then measure cfbench, not a shared
interpreter. The child answers two commands over a pipe: ``count`` (requests
received so far) and ``stop``. It stops by itself after ``lifetime_s``.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python benchmarks/<name>.py` from a checkout
    sys.path.insert(0, str(REPO))


def _serve(conn, latency_s: float, lifetime_s: float, reply: str | None) -> None:
    from cfbench.judges.fakeserver import FakeOpenAIServer

    srv = FakeOpenAIServer(latency_s=latency_s, lifetime_s=lifetime_s, reply=reply).start()
    conn.send(srv.port)
    deadline = time.monotonic() + lifetime_s
    try:
        while time.monotonic() < deadline:
            if not conn.poll(0.2):
                continue
            cmd = conn.recv()
            if cmd == "count":
                conn.send(srv.requests)
            elif cmd == "stop":
                break
    finally:
        srv.close()


class ServerProcess:
    """A fixed-latency OpenAI-compatible server on 127.0.0.1 in a child process."""

    def __init__(self, *, latency_s: float, lifetime_s: float = 600.0, reply: str | None = "Yes"):
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, latency_s, lifetime_s, reply), daemon=True)
        self.latency_s = latency_s

    def __enter__(self) -> "ServerProcess":
        self._proc.start()
        if not self._conn.poll(30):
            raise RuntimeError("fake server process did not start")
        self.port = self._conn.recv()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        """Requests the server has received so far (its own counter)."""
        self._conn.send("count")
        return self._conn.recv()

    def __exit__(self, *exc: object) -> None:
        try:
            self._conn.send("stop")
        except (BrokenPipeError, OSError):
            pass
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.terminate()


def machine() -> str:
    """One line describing the machine and its load right now."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        kb = int(next(l for l in Path("/proc/meminfo").read_text().splitlines()
                      if l.startswith("MemTotal")).split()[1])
        ram = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return (f"{os.cpu_count()} CPUs ({cpu}){ram}; Python {platform.python_version()}; "
            f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def write_docs_block(lines: list[str], start: str, end: str, doc: str = "docs/statistics.md") -> Path:
    """Replace what stands between the markers ``start`` and ``end`` in ``doc`` (from the repository root) with
    ``lines``, keeping the markers; returns the file's path."""
    path = REPO / doc
    text = path.read_text(encoding="utf-8")
    i, j = text.index(start) + len(start), text.index(end)
    path.write_text(text[:i] + "\n" + "\n".join(lines) + "\n" + text[j:], encoding="utf-8")
    return path


def publish(lines: list[str], start: str, end: str, *, write_docs: bool, partial: str | None = None) -> None:
    """With ``write_docs``, put ``lines`` between the markers of docs/statistics.md; a partial run (``partial``
    names the options that made it so, e.g. ``"--quick"``) is refused, so the docs only ever hold a full run."""
    if not write_docs:
        return
    if partial:
        raise SystemExit(f"--write-docs needs the full run (no {partial})")
    print(f"wrote {write_docs_block(lines, start, end)}")


def coverage_cell(r: dict) -> str:
    """One table cell of a coverage summary (``cfbench.stats.coverage._summary``): coverage % (miss of the lower
    / upper bound %) x mean width over the sampling spread, ``n/a`` for the width where the estimate never varies."""
    width = f"x{r['width_ratio']:.2f}" if math.isfinite(r.get("width_ratio", math.nan)) else "n/a"
    return f"{100 * r['coverage']:.1f} ({100 * r['miss_low']:.1f} / {100 * r['miss_high']:.1f}) {width}"


def audits_main(doc: str, run: "Callable[[int], list[str]]", start: str, end: str, *, audits: int) -> None:
    """The command line of a bench whose only size is ``--audits`` (default ``audits``): run it, print its first
    line (the table's rows were printed as they came), and with ``--write-docs`` put its lines in the docs."""
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--audits", type=int, default=audits)
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    lines = run(a.audits)
    print(lines[0])
    publish(lines, start, end, write_docs=a.write_docs)


def header(title: str) -> None:
    print(f"== {title}")
    print(f"   machine: {machine()}")
    print(f"   time: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")


def contact_center_plan(judge: str, *, n_items: int | None = None, qa_mode: str = "compact",
                        questions: tuple[str, ...] = ("issue_resolution", "work_avoidance"),
                        repeats: int = 3, fairness: bool = True, coaching: bool = True,
                        dimensions: list[str] | None = None, seed: int = 0):
    """The contact-center study's plan on the shipped synthetic transcripts, all table dimensions.

    Returns ``(plan, transcripts, variants)``; nothing is called.
    """
    from cfbench.studies.contact_center_qa.items import select_items
    from cfbench.studies.contact_center_qa.requests import plan_evaluation
    from cfbench.io.transcripts import load_transcripts
    from cfbench.judges import GenerationConfig
    from cfbench.perturb import DIMENSIONS, TABLE_DIMENSIONS, make_variants
    from cfbench.studies.contact_center_qa.synth import shipped_transcripts_path
    from cfbench.studies.contact_center_qa.qa import load_rubric

    transcripts = load_transcripts(shipped_transcripts_path())
    if n_items is not None:
        transcripts = select_items(transcripts, n_items, require_agent_name=True,
                                     balance_label="issue_resolution")
    dims = list(dimensions or TABLE_DIMENSIONS)
    variants = make_variants(transcripts, dimensions=dims, seed=seed)
    plan = plan_evaluation(
        variants, judges=[judge], questions=list(questions), rubric=load_rubric(), qa_mode=qa_mode,
        config=GenerationConfig(temperature=0.0, max_tokens=8, seed=seed),
        compared={d: DIMENSIONS[d].compared for d in dims}, repeats=repeats, fairness=fairness,
        coaching=coaching)
    return plan, transcripts, variants
