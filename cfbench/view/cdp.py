"""A tiny headless-Chromium driver over the DevTools protocol (for the view page's tests and benchmark).

Starts ``chromium --headless --remote-debugging-port=0`` with a throw-away profile, talks to
its one page over a loopback WebSocket (aiohttp), and offers ``open(url)`` (navigate and
wait until the page says it is ready, returning the seconds it took), ``eval(js)`` and the
console / log / exception events it saw. Nothing here is imported by the page itself.

>>> with Chromium() as b:                                   # doctest: +SKIP
...     seconds = b.open("file:///tmp/view.html")
...     b.eval("document.getElementById('count').textContent")
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any

__all__ = ["Chromium", "chromium_path", "BrowserError"]

_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


class BrowserError(RuntimeError):
    """The browser could not be started or did not answer."""


def chromium_path() -> str | None:
    """The Chromium binary (``$CFBENCH_CHROMIUM`` first), or None when none is installed."""
    env = os.environ.get("CFBENCH_CHROMIUM")
    for p in ((env,) if env else ()) + _CANDIDATES:
        if p and os.path.exists(p) and os.access(p, os.X_OK):
            return p
    return shutil.which("chromium")


class Chromium:
    """One headless Chromium with one page; use as a context manager (the process is ended on exit)."""

    def __init__(self, binary: str | None = None, *, timeout: float = 30.0, width: int = 1280, height: int = 900):
        self.binary = binary or chromium_path()
        if not self.binary:
            raise BrowserError("no Chromium found (set CFBENCH_CHROMIUM)")
        self.timeout = timeout
        self.size = (width, height)
        self.events: list[dict[str, Any]] = []
        self._id = 0
        self.loop = asyncio.new_event_loop()
        self.proc: subprocess.Popen | None = None
        self.profile = tempfile.mkdtemp(prefix="cfbench-cdp-")

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> "Chromium":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        args = [self.binary, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}", f"--window-size={self.size[0]},{self.size[1]}", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + self.timeout
        ws = None
        assert self.proc.stderr is not None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                ws = m.group(1)
                break
        if not ws:
            self.close()
            raise BrowserError("Chromium did not report its DevTools address")
        port = int(re.search(r":(\d+)/", ws).group(1))
        self.loop.run_until_complete(self._connect(port))
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Log.enable")

    async def _connect(self, port: int) -> None:
        import aiohttp

        self.session = aiohttp.ClientSession()
        deadline = time.time() + self.timeout
        while True:
            try:
                async with self.session.get(f"http://127.0.0.1:{port}/json/list") as r:
                    targets = await r.json(content_type=None)
                pages = [t for t in targets if t.get("type") == "page"]
                if pages:
                    break
            except aiohttp.ClientError:
                pass
            if time.time() > deadline:
                raise BrowserError("Chromium lists no page")
            await asyncio.sleep(0.05)
        self.ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.loop.run_until_complete(self.ws.close())
            if getattr(self, "session", None) is not None:
                self.loop.run_until_complete(self.session.close())
        except Exception:
            pass
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None
        if not self.loop.is_closed():
            self.loop.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- protocol -------------------------------------------------------------------------------
    async def _call(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        self._id += 1
        mine = self._id
        await self.ws.send_str(json.dumps({"id": mine, "method": method, "params": params or {}}))
        while True:
            msg = await asyncio.wait_for(self.ws.receive(), self.timeout)
            if msg.type != 1:  # aiohttp.WSMsgType.TEXT
                raise BrowserError(f"DevTools connection closed ({msg.type})")
            data = json.loads(msg.data)
            if data.get("id") == mine:
                if "error" in data:
                    raise BrowserError(f"{method}: {data['error']}")
                return data.get("result", {})
            if "method" in data:
                self.events.append(data)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.loop.run_until_complete(self._call(method, params))

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise BrowserError(f"page threw: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r.get("result", {}).get("value")

    def open(self, url: str, *, ready: str = "document.getElementById('app') && "
                                        "document.getElementById('app').dataset.state") -> float:
        """Navigate to ``url`` and wait until ``ready`` is ``"ready"`` (or ``"error"``); seconds taken."""
        t0 = time.perf_counter()
        self.call("Page.navigate", {"url": url})
        deadline = t0 + self.timeout
        while True:
            state = self.eval(ready)
            if state in ("ready", "error"):
                break
            if time.perf_counter() > deadline:
                raise BrowserError(f"page not ready after {self.timeout:.0f} s (state {state!r})")
            time.sleep(0.01)
        return time.perf_counter() - t0

    def messages(self) -> list[str]:
        """Console messages, log entries (CSP violations land here) and uncaught exceptions so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Log.entryAdded":
                out.append(f"log {p['entry'].get('level')}: {p['entry'].get('text')}")
            elif m == "Runtime.consoleAPICalled":
                out.append(f"console {p.get('type')}: " + " ".join(str(a.get("value", a.get("description")))
                                                                for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}")
        return out
