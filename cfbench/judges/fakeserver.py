"""A small OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

It answers ``POST /v1/chat/completions`` after a fixed latency, and can be
told to misbehave for the next requests (see :meth:`FakeOpenAIServer.script`).
It counts every request it receives, keeps the bodies and headers of the last
``history`` ones, binds only to the loopback address, and shuts itself down
after ``lifetime_s`` at the latest.

>>> with FakeOpenAIServer(latency_s=0.0) as srv:       # doctest: +SKIP
...     srv.script(["429:0", "ok"])                    # first call rate-limited, then fine
...     judge = get_judge(f"openai:fake@{srv.base_url}")
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from typing import Iterable

__all__ = ["FakeOpenAIServer"]


class FakeOpenAIServer:
    def __init__(self, *, latency_s: float = 0.0, lifetime_s: float = 600.0, reply: str | None = None,
                 history: int = 256):
        self.latency_s = latency_s
        self.lifetime_s = lifetime_s
        self.reply = reply
        self.requests = 0
        self.bodies: deque[dict] = deque(maxlen=history)
        self.headers: deque[dict] = deque(maxlen=history)
        self._actions: deque[str] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.port: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, actions: Iterable[str]) -> None:
        """Queue behaviours for the next requests, one each:

        ``ok``; ``429:<retry_after>`` (``429`` alone sends no Retry-After); any other
        status code ``<code>`` (e.g. ``400``, ``408``, ``500``) with an OpenAI-style JSON
        error body; ``text:<code>`` with a plain-text body instead; ``echo-key``, a 401
        whose message repeats the Authorization header (a careless server);
        ``hang:<seconds>``; ``garbage`` (a 200 that is not JSON); ``no-choices`` (a 200
        with an empty ``choices``); ``null-content`` (a 200 whose message content is null,
        finish_reason ``content_filter``)."""
        with self._lock:
            self._actions.extend(actions)

    async def _handle(self, request):
        from aiohttp import web

        with self._lock:
            self.requests += 1
            action = self._actions.popleft() if self._actions else "ok"
        body = await request.json()
        self.bodies.append(body)
        self.headers.append(dict(request.headers))
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        kind, _, arg = action.partition(":")
        if kind == "429":
            return web.json_response({"error": {"message": "slow down", "type": "rate_limit"}}, status=429,
                                     headers={"Retry-After": arg} if arg else None)
        if kind.isdigit():
            return web.json_response({"error": {"message": f"fake error {kind}", "type": "fake"}}, status=int(kind))
        if kind == "text":
            return web.Response(text=f"<html>fake error {arg}</html>", status=int(arg), content_type="text/html")
        if kind == "echo-key":
            auth = request.headers.get("Authorization", "")
            return web.json_response({"error": {"message": f"Incorrect API key provided: {auth}"}}, status=401)
        if kind == "hang":
            await asyncio.sleep(float(arg or 30))
        if kind == "garbage":
            return web.Response(text="<html>definitely not json", content_type="application/json")
        if kind == "no-choices":
            return web.json_response({"id": "chatcmpl-fake", "object": "chat.completion", "choices": []})
        user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        text = self.reply if self.reply is not None else f"echo: {user}"
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        if kind == "null-content":
            choice = {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": "Yes", "logprob": -0.1, "bytes": None, "top_logprobs": [
                {"token": "Yes", "logprob": -0.1, "bytes": None}, {"token": "No", "logprob": -2.4, "bytes": None}]}]}
        return web.json_response({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"), "choices": [choice],
            "usage": {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split()),
                      "total_tokens": len(user.split()) + len(text.split())},
        })

    async def _serve(self) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._stop = asyncio.Event()
        self._ready.set()
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=self.lifetime_s)
        except asyncio.TimeoutError:
            pass
        finally:
            await runner.cleanup()

    def start(self) -> "FakeOpenAIServer":
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._serve())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def close(self) -> None:
        if self._loop is not None and self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def last_body(self) -> dict:
        return json.loads(json.dumps(self.bodies[-1]))
