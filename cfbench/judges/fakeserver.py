"""A small OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

It answers ``POST /v1/chat/completions`` after a fixed latency, and can be
told to misbehave for the next requests (see :meth:`FakeOpenAIServer.script`).
With ``max_in_flight`` it answers 429 to any call beyond that many at once (a
saturated vLLM), and records the peak it saw. With ``slots`` it serves that many
calls at a time and queues the rest, never refusing one (llama.cpp's server with
one slot): latency grows with the calls in flight.

It also speaks enough of the Batch API for the openai SDK: ``POST /v1/files``
(multipart upload), ``GET /v1/files/{id}/content``, ``POST /v1/batches`` and
``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``. A batch is ``in_progress`` on its
first retrieval and ``completed`` on the next; its output lines are made by the same rules as the
chat endpoint, one :meth:`script_batch` action per line; :meth:`script_batches` makes whole
batches misbehave (refused at creation for a queue limit, rejected whole, expired part way).
``reply`` is the text of every answer (default ``echo: <last user message>``), or a function of the
request body returning it (a test's judge that reads the prompt). A request asking for logprobs gets a first
token "Yes" (logprob -0.1, "No" at -2.4 among its alternatives); with ``logprobs_follow_reply`` a reply whose
first word is "No" gets those two swapped (a judge scored by P(Yes) then scores what it says). It counts every
request it receives,
keeps the bodies and headers of the last
``history`` ones, binds only to the loopback address, and shuts itself down
after ``lifetime_s`` at the latest.

>>> with FakeOpenAIServer(latency_s=0.0) as srv:       # doctest: +SKIP
...     srv.script(["429:0", "ok"])                    # first call rate-limited, then fine
...     judge = get_judge(f"openai:fake@{srv.base_url}")
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bz2
import codecs
import gzip
import json
import threading
import time
import zlib
from collections import deque
from typing import Callable, Iterable

__all__ = ["FakeOpenAIServer"]


def _between(sep: str):
    return lambda key: sep.join(key)


def _named_entities(key: str) -> str:
    """Each character as an HTML named reference whose NFKC reading is that character (``&Ascr;``,
    ``&hyphen;`` has none: ``&#45;``), else a decimal one."""
    import unicodedata
    from html.entities import html5

    names: dict[str, str] = {}
    for name, value in sorted(html5.items()):
        if name.endswith(";") and len(value) == 1 and len(unicodedata.normalize("NFKC", value)) == 1:
            names.setdefault(unicodedata.normalize("NFKC", value), name)
    return "".join(f"&{names[c]}" if c in names else f"&#{ord(c)};" for c in key)


def _chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _uu_lines(key: str) -> str:
    """``key`` uuencoded: its lines of at most 45 bytes each, with no ``begin``/``end`` frame."""
    raw = key.encode()
    return "".join(binascii.b2a_uu(raw[i:i + 45]).decode() for i in range(0, len(raw), 45))


#: Spellings of a key a hostile server may echo and a person or program can read back (issue 36).
KEY_FORMS = {
    "hex": lambda key: key.encode().hex(),
    "HEX": lambda key: key.encode().hex().upper(),
    "hex-0x": lambda key: " ".join(f"0x{b:02x}" for b in key.encode()),
    "hex-colon": lambda key: ":".join(f"{b:02x}" for b in key.encode()),
    "soft-hyphen": _between("\u00ad"),
    "zero-width": _between("\u200b"),
    "zwj-bom": lambda key: "\u200d".join(key[:10]) + "\ufeff".join(key[10:]),
    "nul": _between("\x00"),
    "full-width": lambda key: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key),
    "math-bold": lambda key: "".join(chr(0x1D41A + ord(c) - 97) if "a" <= c <= "z" else
                                     chr(0x1D400 + ord(c) - 65) if "A" <= c <= "Z" else c for c in key),
    "html-decimal": lambda key: "".join(f"&#{ord(c)};" for c in key),
    "html-hex": lambda key: "".join(f"&#x{ord(c):X};" for c in key),
    "html-named": _named_entities,
    "html-shy": lambda key: "&shy;".join(key),
    "full-width-zero-width": lambda key: "\u200c".join(chr(ord(c) + 0xFEE0) for c in key),
    "hex-two-spaces": lambda key: "  ".join(f"{b:02x}" for b in key.encode()),
    "hex-wide": lambda key: ",     ".join(f"0x{b:02x}" for b in key.encode()),  # six separator characters
    "c-array": lambda key: "{" + ", ".join(f"0x{b:02x}" for b in key.encode()) + "}",
    "octal-escapes": lambda key: "".join(f"\\{b:03o}" for b in key.encode()),
    "decimal-list": lambda key: "[" + ", ".join(str(b) for b in key.encode()) + "]",
    "base32": lambda key: base64.b32encode(key.encode()).decode(),
    "base64-of-base64": lambda key: base64.b64encode(base64.b64encode(key.encode())).decode(),
    "base85": lambda key: base64.b85encode(key.encode()).decode(),
    "ascii85": lambda key: base64.a85encode(key.encode(), adobe=True).decode(),
    "unicode-U": lambda key: "".join(f"\\U{ord(c):08x}" for c in key),
    "chars-list": lambda key: str(list(key)),
    "rot13": lambda key: codecs.encode(key, "rot13"),
    "binary": lambda key: " ".join(f"{b:08b}" for b in key.encode()),
    "decimal-numbered": lambda key: ", ".join(f"{b} (n={i})" for i, b in enumerate(key.encode())),
    "decimal-lines": lambda key: "\n".join(f"{i + 1}: {b}" for i, b in enumerate(key.encode())),
    "utf16-hex": lambda key: key.encode("utf-16-le").hex(),
    "utf16be-hex-spaced": lambda key: " ".join(f"{b:02x}" for b in key.encode("utf-16-be")),
    "css-escapes": lambda key: "".join(f"\\{ord(c):x} " for c in key),
    "zlib-base64": lambda key: base64.b64encode(zlib.compress(key.encode())).decode(),
    "gzip-base64": lambda key: base64.b64encode(gzip.compress(key.encode(), mtime=0)).decode(),
    "uuencode": lambda key: "begin 644 key\n" + _uu_lines(key) + "`\nend",
    "percent-u": lambda key: "".join(f"%u{ord(c):04X}" for c in key),
    "quoted-printable": lambda key: "".join(f"={b:02X}" for b in key.encode()),
    "base64-utf16": lambda key: base64.b64encode(key.encode("utf-16-le")).decode(),
    "base64-spaced": lambda key: " ".join(_chunks(base64.b64encode(key.encode()).decode(), 4)),
    "hex-reversed": lambda key: key[::-1].encode().hex(),
    "rot47": lambda key: "".join(chr(33 + (ord(c) - 33 + 47) % 94) if "!" <= c <= "~" else c for c in key),
    "octal-values": lambda key: " ".join(f"{b:o}" for b in key.encode()),
    "octal-0o": lambda key: ", ".join(f"0o{b:o}" for b in key.encode()),
    "utf32-hex": lambda key: key.encode("utf-32-le").hex(),
    "utf32be-hex-spaced": lambda key: " ".join(_chunks(key.encode("utf-32-be").hex(), 8)),
    "base32hex": lambda key: base64.b32hexencode(key.encode()).decode(),
    "tag-chars": lambda key: "".join(chr(0xE0000 + ord(c)) for c in key),  # hidden: shows nothing
    "decimal-dotted": lambda key: ".".join(str(b) for b in key.encode()),
    "big-integer": lambda key: str(int.from_bytes(key.encode(), "big")),
    "decimal-padded": lambda key: " ".join(f"{b:03d}" for b in key.encode()),
    "decimal-slashes": lambda key: "/".join(str(b) for b in key.encode()),
    "decimal-dashes": lambda key: "-".join(str(b) for b in key.encode()),
    "hex-of-base64": lambda key: base64.b64encode(key.encode()).hex(),
    "bz2-base64": lambda key: base64.b64encode(bz2.compress(key.encode())).decode(),
    "hex-digits-spaced": lambda key: " ".join(key.encode().hex()),
    "hex-of-zlib": lambda key: zlib.compress(key.encode()).hex(),
    "decimal-bracketed": lambda key: "".join(f"[{b}]" for b in key.encode()),
    "chr-sum": lambda key: "+".join(f"chr({b})" for b in key.encode()),
    "uu-lines": lambda key: _uu_lines(key).rstrip("\n"),
}


class FakeOpenAIServer:
    def __init__(self, *, latency_s: float = 0.0, lifetime_s: float = 600.0,
                 reply: "str | Callable[[dict], str] | None" = None,
                 history: int = 256, max_in_flight: int | None = None, slots: int | None = None,
                 batch_api: bool = True, logprobs_follow_reply: bool = False):
        self.latency_s = latency_s
        self.logprobs_follow_reply = logprobs_follow_reply
        self.batch_api = batch_api  # False: chat completions only (404 on /v1/files and /v1/batches)
        self.max_in_flight = max_in_flight
        self.slots = slots  # serve at most this many at once, queue the rest (llama.cpp's server)
        self._slots: asyncio.Semaphore | None = None
        self.in_flight = 0
        self.peak_in_flight = 0
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self._batch_actions: deque[str] = deque()
        self._batch_fates: deque[str] = deque()
        self.batch_creates = 0
        self.lifetime_s = lifetime_s
        self.reply = reply
        self.requests = 0
        self.bodies: deque[dict] = deque(maxlen=history)
        self.headers: deque[dict] = deque(maxlen=history)
        self._actions: deque[str] = deque()
        self._by_prompt: dict[str, deque[str]] = {}
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
        finish_reason ``content_filter``).

        Key echoes (the key is the bearer token the request carried): ``echo-key-200`` (a
        200 reply whose text holds the key), ``echo-key-escaped`` (a 200 whose JSON spells
        the key in ``\\u`` escapes), ``echo-key-401:<n>`` (a plain-text 401 body with ``n``
        characters before the key), ``echo-key-redirect`` (a 302 whose Location carries the
        key URL-encoded); ``big:<n>`` (a 200 reply of ``n`` characters)."""
        with self._lock:
            self._actions.extend(actions)

    def script_prompt(self, user: str, actions: Iterable[str]) -> None:
        """Queue behaviours for the next calls whose last user message is ``user``, one per call,
        ahead of :meth:`script`'s queue. A retry of that request draws the next one, whatever other
        requests are in flight: a test can say "this request hangs once" however calls interleave."""
        with self._lock:
            self._by_prompt.setdefault(user, deque()).extend(actions)

    def script_batch(self, actions: Iterable[str]) -> None:
        """Queue behaviours for the next batch output lines: ``ok``, ``null-content``,
        ``error`` (a per-line error object), ``500`` (a line whose response has status 500),
        ``echo-key-200``, ``foreign:<custom_id>`` (the line answers that custom_id instead),
        ``dup-same`` / ``dup-diff`` (the line twice, alike / with a different answer)."""
        with self._lock:
            self._batch_actions.extend(actions)

    def script_batches(self, actions: Iterable[str]) -> None:
        """Queue fates for the next batch creations, one each: ``ok``; ``reject-429`` (the creation
        is refused with a 429 queue-limit error, no batch made); ``reject-400`` (refused as a bad
        request); ``fail:<code>`` (created, then rejected whole: status ``failed`` with that error
        code, no output); ``expire:<n>`` (only the first ``n`` lines answered, status ``expired``)."""
        with self._lock:
            self._batch_fates.extend(actions)

    async def _handle(self, request):
        from aiohttp import web

        body = await request.json()
        user = next((m.get("content") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), None)
        with self._lock:
            self.requests += 1
            mine = self._by_prompt.get(user) if isinstance(user, str) else None
            action = mine.popleft() if mine else self._actions.popleft() if self._actions else "ok"
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            over = self.max_in_flight is not None and self.in_flight > self.max_in_flight
        try:
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            if over:
                await asyncio.sleep(self.latency_s / 10)
                return web.json_response({"error": {"message": "server saturated", "type": "rate_limit"}},
                                         status=429)
            if self.slots is not None:  # queued: latency grows with the calls in flight
                if self._slots is None:
                    self._slots = asyncio.Semaphore(self.slots)
                async with self._slots:
                    await asyncio.sleep(self.latency_s)
            elif self.latency_s:
                await asyncio.sleep(self.latency_s)
            key = request.headers.get("Authorization", "").removeprefix("Bearer ")
            return await self._reply(action, body, key)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _completion(self, action: str, body: dict, key: str) -> tuple[int, dict | str]:
        """(status, JSON body or raw text) for one chat call under ``action``."""
        kind, _, arg = action.partition(":")
        user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
        text = f"echo: {user}" if self.reply is None else self.reply(body) if callable(self.reply) else self.reply
        if kind == "echo-key-200":
            text = f"Sure. Your configuration uses the key {key} as requested."
        if kind == "echo-key-form":  # the key spelled in one of the forms of KEY_FORMS, at offset ``off``
            form, _, off = arg.partition("@")
            text = "x" * int(off or 0) + f" Sure. Your key is {KEY_FORMS[form](key)} as requested."
        if kind == "surrogate":  # a lone surrogate: valid JSON (``"\ud800"``), not encodable as UTF-8
            text = "Yes \ud800 80"
        if kind == "big":
            text = "x" * int(arg)
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        if kind == "null-content":
            choice = {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}
        if body.get("logprobs"):
            said_no = self.logprobs_follow_reply and (text.split() or [""])[0].strip(".,!").lower() == "no"
            first, other = ("No", "Yes") if said_no else ("Yes", "No")
            choice["logprobs"] = {"content": [{"token": first, "logprob": -0.1, "bytes": None, "top_logprobs": [
                {"token": first, "logprob": -0.1, "bytes": None}, {"token": other, "logprob": -2.4, "bytes": None}]}]}
        return 200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"), "choices": [choice],
            "usage": {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split()),
                      "total_tokens": len(user.split()) + len(text.split())},
        }

    async def _reply(self, action: str, body: dict, key: str):
        from aiohttp import web

        kind, _, arg = action.partition(":")
        if kind == "echo-key-escaped":
            status, data = self._completion("ok", body, key)
            raw = json.dumps(data)
            escaped = "".join(f"\\u{ord(c):04x}" for c in key)
            raw = raw.replace('"content": "', f'"content": "key={escaped} ', 1)
            return web.Response(text=raw, content_type="application/json")
        if kind == "echo-key-401":
            return web.Response(text="e" * int(arg or 0) + key + " is not a valid key", status=401,
                                content_type="text/plain")
        if kind == "echo-key-redirect":
            from urllib.parse import quote

            return web.Response(status=302, headers={"Location": f"https://login.example/?k={quote(key, safe='')}"})
        if kind == "429":
            return web.json_response({"error": {"message": "slow down", "type": "rate_limit"}}, status=429,
                                     headers={"Retry-After": arg} if arg else None)
        if kind.isdigit():
            return web.json_response({"error": {"message": f"fake error {kind}", "type": "fake"}}, status=int(kind))
        if kind == "ansi":  # an error body that commands the terminal: title, clear screen, a forged line
            return web.Response(text="boom\x1b]0;owned\x07\x1b[2J\x1b[H\r\n[cfbench] all requests succeeded\x1b[0m",
                                status=int(arg or 500), content_type="text/plain")
        if kind == "text":
            return web.Response(text=f"<html>fake error {arg}</html>", status=int(arg), content_type="text/html")
        if kind == "echo-key":
            return web.json_response({"error": {"message": f"Incorrect API key provided: Bearer {key}"}}, status=401)
        if kind == "hang":
            await asyncio.sleep(float(arg or 30))
        if kind == "garbage":
            return web.Response(text="<html>definitely not json", content_type="application/json")
        if kind == "no-choices":
            return web.json_response({"id": "chatcmpl-fake", "object": "chat.completion", "choices": []})
        status, data = self._completion(action, body, key)
        return web.json_response(data, status=status)

    # -- Batch API -------------------------------------------------------------------------------
    async def _upload(self, request):
        from aiohttp import web

        form = await request.post()
        upload = form["file"]
        data = upload.file.read()
        with self._lock:
            file_id = f"file-{len(self.files) + 1:04d}"
            self.files[file_id] = data
        return web.json_response(self._file_obj(file_id, getattr(upload, "filename", "upload.jsonl"),
                                                form.get("purpose", "batch")))

    def _file_obj(self, file_id: str, filename: str = "f.jsonl", purpose: str = "batch") -> dict:
        return {"id": file_id, "object": "file", "bytes": len(self.files[file_id]), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}

    async def _file_content(self, request):
        from aiohttp import web

        file_id = request.match_info["file_id"]
        if file_id not in self.files:
            return web.json_response({"error": {"message": f"no file {file_id}"}}, status=404)
        return web.Response(body=self.files[file_id], content_type="application/octet-stream")

    async def _create_batch(self, request):
        from aiohttp import web

        body = await request.json()
        with self._lock:
            self.batch_creates += 1
            fate = self._batch_fates.popleft() if self._batch_fates else "ok"
        if fate == "reject-429":
            return web.json_response({"error": {"message": "Enqueued token limit reached for this organization; "
                                                           "try again once some batches complete",
                                                "type": "rate_limit", "code": "batch_queue_limit"}}, status=429)
        if fate == "reject-400":
            return web.json_response({"error": {"message": "endpoint not supported", "type": "invalid_request_error",
                                                "code": "invalid_request"}}, status=400)
        with self._lock:
            batch_id = f"batch-{len(self.batches) + 1:04d}"
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                "input_file_id": body["input_file_id"], "completion_window": body["completion_window"],
                "status": "validating", "output_file_id": None, "error_file_id": None,
                "created_at": int(time.time()), "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": body.get("metadata"), "_polls": 0, "_fate": fate,
                "_key": request.headers.get("Authorization", "").removeprefix("Bearer "),
            }
        return web.json_response(self._public(self.batches[batch_id]))

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    async def _list_batches(self, request):
        """Newest first, one page (the fake never holds more than a test makes)."""
        from aiohttp import web

        with self._lock:
            data = [self._public(b) for b in reversed(list(self.batches.values()))]
        return web.json_response({"object": "list", "data": data, "has_more": False,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    async def _get_batch(self, request):
        from aiohttp import web

        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        batch["_polls"] += 1
        fate, _, arg = batch["_fate"].partition(":")
        if batch["status"] == "validating" and fate == "fail":
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [
                {"code": arg or "token_limit_exceeded", "message": f"fake batch rejected whole ({arg})",
                 "param": None, "line": None}]}
        elif batch["status"] == "validating":
            batch["status"] = "in_progress"
        elif batch["status"] == "in_progress":
            self._finish(batch, limit=int(arg) if fate == "expire" else None)
            if fate == "expire":
                batch["status"] = "expired"
        elif batch["status"] == "cancelling":
            batch["status"] = "cancelled"
        return web.json_response(self._public(batch))

    async def _cancel_batch(self, request):
        from aiohttp import web

        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        if batch["status"] in ("validating", "in_progress"):
            batch["status"] = "cancelling"
        return web.json_response(self._public(batch))

    def _finish(self, batch: dict, limit: int | None = None) -> None:
        """Answer every line of the batch's input file now (the first ``limit`` lines only, when given)."""
        out, err = [], []
        for i, line in enumerate(l for l in self.files[batch["input_file_id"]].decode("utf-8").splitlines()
                                 if l.strip()):
            if limit is not None and i >= limit:
                break
            item = json.loads(line)
            with self._lock:
                action = self._batch_actions.popleft() if self._batch_actions else "ok"
            cid = item["custom_id"]
            if action.startswith("foreign:"):  # a line answering a custom_id this batch never had
                cid = action.partition(":")[2]
                action = "ok"
            if action == "error":
                err.append({"id": f"req-{cid[:8]}", "custom_id": cid, "response": None,
                            "error": {"code": "invalid_request", "message": "fake line error"}})
                continue
            if action == "500":
                err.append({"id": f"req-{cid[:8]}", "custom_id": cid, "error": None,
                            "response": {"status_code": 500, "request_id": "r", "body": {
                                "error": {"message": "fake server error"}}}})
                continue
            _, data = self._completion(action if action not in ("dup-same", "dup-diff") else "ok",
                                       item["body"], batch["_key"])
            out.append({"id": f"req-{cid[:8]}", "custom_id": cid, "error": None,
                        "response": {"status_code": 200, "request_id": "r", "body": data}})
            if action in ("dup-same", "dup-diff"):  # the same custom_id answered twice
                again = json.loads(json.dumps(data))
                if action == "dup-diff":
                    again["choices"][0]["message"]["content"] = "a different answer"
                out.append({"id": f"req2-{cid[:8]}", "custom_id": cid, "error": None,
                            "response": {"status_code": 200, "request_id": "r2", "body": again}})
        with self._lock:
            for kind, rows in (("output_file_id", out), ("error_file_id", err)):
                if rows:
                    file_id = f"file-{len(self.files) + 1:04d}"
                    self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
                    batch[kind] = file_id
        batch["status"] = "completed"
        batch["request_counts"] = {"total": len(out) + len(err), "completed": len(out), "failed": len(err)}

    async def _serve(self) -> None:
        from aiohttp import web

        app = web.Application(client_max_size=1024 ** 3)
        app.router.add_post("/v1/chat/completions", self._handle)
        if self.batch_api:
            app.router.add_post("/v1/files", self._upload)
            app.router.add_get("/v1/files/{file_id}/content", self._file_content)
            app.router.add_post("/v1/batches", self._create_batch)
            app.router.add_get("/v1/batches", self._list_batches)
            app.router.add_get("/v1/batches/{batch_id}", self._get_batch)
            app.router.add_post("/v1/batches/{batch_id}/cancel", self._cancel_batch)
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
