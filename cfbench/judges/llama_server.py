"""llama-cpp-python's own OpenAI-compatible server on the embedded model, on loopback.

A real server nobody here wrote (``python -m llama_cpp.server``, the ``[server]`` extra, started through
:mod:`cfbench.judges.llama_serve`, which loads llama.cpp's CPU module first), for the tests
that check cfbench against one (``tests/test_judges_real_server.py``) and the benchmark that measures
the free-text contract through it (``benchmarks/bench_free_mode.py``):

>>> with embedded_server() as srv:                          # doctest: +SKIP
...     run_requests(srv["spec"], requests)                 # doctest: +SKIP

:func:`embedded_server` starts the server on a free port, waits until ``/v1/models`` answers, yields
``{"spec", "base_url", "served", "log"}`` and stops the process on exit. :func:`unavailable` says why it
cannot start here (no ``llama_cpp``, no model, a missing server dependency), or None.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

__all__ = ["SERVER_DEPS", "ServerStartError", "embedded_server", "missing_server_deps", "unavailable"]

#: the modules llama-cpp-python's server imports beyond llama_cpp itself (its ``[server]`` extra)
SERVER_DEPS = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


class ServerStartError(RuntimeError):
    """The server process exited or did not answer within the start-up time; the message ends with its log."""


def missing_server_deps() -> list[str]:
    """The modules of :data:`SERVER_DEPS` that cannot be imported here."""
    return [m for m in SERVER_DEPS if importlib.util.find_spec(m) is None]


def unavailable() -> str | None:
    """Why the embedded server cannot run here (``[local]`` extra or model absent, ``[server]`` extra
    incomplete), or None when it can."""
    from cfbench.judges.local import embedded_model_status

    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'cfbench[local]')"
    ok, why = embedded_model_status()
    if not ok:
        return f"the embedded model is not available: {why}"
    missing = missing_server_deps()
    if missing:
        return f"llama-cpp-python's server needs {', '.join(missing)}: pip install 'cfbench[server]'"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(proc: subprocess.Popen, base: str, log: Path, startup_s: float) -> str:
    """The model id the server reports once ``/models`` answers; :class:`ServerStartError` otherwise."""
    deadline = time.monotonic() + startup_s
    while True:
        try:
            with urllib.request.urlopen(base + "/models", timeout=2) as resp:
                return json.loads(resp.read())["data"][0]["id"]
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise ServerStartError(f"llama.cpp server did not come up on {base} within {startup_s:g} s "
                                       f"(exit code {proc.poll()}): {tail}") from None
            time.sleep(0.5)


@contextlib.contextmanager
def embedded_server(*, n_ctx: int = 4096, n_threads: int = 2, log: "str | Path | None" = None,
                    startup_s: float = 120.0, model_name: str = "qwen2.5-coder-1.5b") -> Iterator[dict]:
    """Serve the embedded GGUF with ``python -m llama_cpp.server`` on 127.0.0.1 (a free port), ``n_ctx``
    context and ``n_threads`` threads; yields ``{"spec": "openai:<model_name>@<base_url>", "base_url",
    "served": the model id /v1/models reports, "log": the server's log file}`` and stops the server on
    exit (terminate, then kill after 15 s). ``log``: where the server's output goes (default: a
    temporary file, removed afterwards). Raises :class:`ServerStartError` when it does not come up."""
    from cfbench.judges.local import ensure_embedded_model

    why = unavailable()
    if why:
        raise ServerStartError(why)
    model = Path(ensure_embedded_model()).resolve()  # the file itself, not a link to it (the served model id)
    port = _free_port()
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cfbench-llama-server-"))) / "server.log"
        log = Path(log)
        with open(log, "wb") as sink:  # a file, not a pipe: the model's load log would fill a pipe
            # llama_cpp.server through cfbench's wrapper: it loads llama.cpp's CPU module for this machine first
            proc = subprocess.Popen([sys.executable, "-m", "cfbench.judges.llama_serve", "--model", str(model), "--host",
                                     "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads",
                                     str(n_threads)], stdout=sink, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}/v1"
        try:
            served = _wait_until_up(proc, base, log, startup_s)
            yield {"spec": f"openai:{model_name}@{base}", "base_url": base, "served": served, "log": log}
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
