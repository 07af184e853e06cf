"""The overall ETA of ``cfbench reproduce`` over its studies, one printed line at a time."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .config import Run

__all__ = ["estimate_seconds", "Overall"]


def estimate_seconds(root: Path, results_dir: Path, run: Run, cached: bool) -> float | None:
    """Expected wall time of one study: the study's own dry-run estimate (``estimate_seconds(params)``),
    else the last live run of the same study and config (``run_info.json``), else unknown."""
    if cached:
        return 30.0
    from ...studies import load

    estimate = getattr(load(run.study), "estimate_seconds", None)
    if estimate is not None:
        try:
            return float(estimate(run.params))
        except Exception:  # an estimate must never stop a run
            pass
    info = results_dir.resolve() / run.study / run.config / "run_info.json"
    if info.is_file():
        last = json.loads(info.read_text(encoding="utf-8"))
        if last.get("replay") or "live_run" in last:  # a replay's seconds say nothing of a live run
            last = last.get("live_run") or {}
        return float(last.get("wall_s") or 0) or None
    return None


class Overall:
    """One overall progress line over the studies, printed (not redrawn) so it never fights the
    judge's own progress bar on the terminal: at each study's start and end and every minute."""

    def __init__(self, estimates: list[float | None]):
        import threading

        self.estimates = estimates
        self.total = sum(e or 0 for e in estimates)
        self.known = all(e is not None for e in estimates)
        self.done_s = 0.0
        self.current: tuple[int, str, float] | None = None
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _line(self) -> str:
        from tqdm import tqdm

        n_done = sum(e or 0 for e in self.estimates[: self.current[0]]) if self.current else self.total
        if self.current:
            k, _, started = self.current
            n_done += min(time.monotonic() - started, 0.99 * (self.estimates[k] or 0))
        elapsed = time.monotonic() - self.t0
        if not self.known or self.total <= 0:
            return f"[cfbench] overall: {elapsed / 60:.1f} min elapsed (no estimate for every study)"
        meter = tqdm.format_meter(round(n_done), round(self.total), elapsed, ncols=80, unit="s",
                                  prefix="[cfbench] overall")
        eta = time.strftime("%H:%M", time.localtime(time.time() + max(self.total - n_done, 0)))
        return f"{meter} (estimate; ETA {eta})"

    def _tick(self) -> None:
        while not self._stop.wait(60):
            if self.current:
                print(self._line(), file=sys.stderr, flush=True)

    def study(self, k: int, name: str):
        import contextlib

        @contextlib.contextmanager
        def running():
            est = self.estimates[k]
            print(f"[cfbench] study {k + 1}/{len(self.estimates)}: {name}, expected "
                  f"{'%.0f min' % (est / 60) if est else 'unknown time'}", file=sys.stderr, flush=True)
            self.current = (k, name, time.monotonic())
            print(self._line(), file=sys.stderr, flush=True)
            try:
                yield
            finally:
                self.current = (k + 1, name, time.monotonic()) if k + 1 < len(self.estimates) else None

        return running()

    def close(self) -> None:
        self._stop.set()
