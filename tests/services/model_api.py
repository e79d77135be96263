"""What the suite's stand-in model APIs share: a recording HTTP server on 127.0.0.1 with scripted replies.

`ModelAPI` serves from a background thread (stdlib http.server) inside `with SomeAPI.running(replies):`,
records every request (`RecordedRequest`: method, path, headers, raw body, parsed JSON) and hands out the
scripted replies in order (the last one repeats once the list runs out), or asks a function of the
request's body. Each API (messages_api.py, responses_api.py, gemini_api.py, chat_completions.py)
subclasses it with only its own wire format: `answer(exchange, request)` for a POST, `answer_get` for a GET.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Self, TypeVar

R = TypeVar("R")  # a reply: a text, or an API's own tool call


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    text: str  # the raw body, decoded
    body: Any  # the parsed JSON body, or None

    @property
    def route(self) -> str:
        """The path without its query."""
        return self.path.split("?")[0]

    def contains(self, text: str) -> bool:
        """Whether `text` is in the body: in one of its JSON strings (unescaped), or in the raw body."""
        return text in self.text or any(text in value for value in _strings(self.body))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class Exchange(BaseHTTPRequestHandler):
    """One request's answering side, handed to the API's `answer`."""

    protocol_version = "HTTP/1.1"
    api: ClassVar[ModelAPI[Any]]

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the recording is the log
        pass

    def do_GET(self) -> None:
        self.api.answer_get(self, self._record(b""))

    def do_HEAD(self) -> None:
        self._record(b"")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.api.answer(self, self._record(raw))

    def _record(self, raw: bytes) -> Any:
        text = self.api.decode(self.headers.get("Content-Encoding"), raw)
        try:
            parsed = json.loads(text) if text else None
        except json.JSONDecodeError:
            parsed = None
        request = self.api.recorded(self.command, self.path, dict(self.headers.items()), text, parsed)
        self.api.record(request)
        return request

    def json(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, "application/json", json.dumps(payload).encode())

    def events(self, stream: str) -> None:
        """A whole server-sent event stream, already framed."""
        self._send(200, "text/event-stream", stream.encode())

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@dataclass
class ModelAPI(Generic[R]):
    """The stand-in's state; safe to change from the test thread while requests are served."""

    replies: Sequence[R] | Callable[[dict[str, Any]], R] = ("Noted.",)  # type: ignore[assignment]
    host: str = "127.0.0.1"
    port: int = 0
    _requests: list[Any] = field(default_factory=list)
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    recorded: ClassVar[type[RecordedRequest]] = RecordedRequest  # the API's own RecordedRequest
    base_path: ClassVar[str] = ""  # what base_url ends in, e.g. /v1
    not_found: ClassVar[dict[str, Any]] = {"error": {"type": "not_found", "message": "not here"}}

    @classmethod
    @contextmanager
    def running(cls, replies: Sequence[R] | Callable[[dict[str, Any]], R] = ("Noted.",)) -> Iterator[Self]:  # type: ignore[assignment]
        api = cls(replies=replies)
        handler = type("Handler", (Exchange,), {"api": api})
        server = ThreadingHTTPServer((api.host, api.port), handler)
        server.daemon_threads = True
        api.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, name=cls.__name__, daemon=True)
        thread.start()
        try:
            yield api
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{self.base_path}"

    @property
    def requests(self) -> list[Any]:
        with self._lock:
            return list(self._requests)

    def reply_with(self, replies: Sequence[R] | Callable[[dict[str, Any]], R]) -> None:
        """Answer the following model turns with these replies, in order (or with this function of the
        request's body, when requests may come in any order: a subagent's beside its parent's)."""
        with self._lock:
            self.replies, self._used = replies, 0

    # ---- used by the handler ----
    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_reply(self, body: dict[str, Any]) -> R:
        with self._lock:
            if callable(self.replies):
                reply_function = self.replies
            else:
                replies: list[Any] = list(self.replies) or ["Noted."]
                reply: R = replies[min(self._used, len(replies) - 1)]
                self._used += 1
                return reply
        return reply_function(body)

    def decode(self, content_encoding: str | None, raw: bytes) -> str:
        return raw.decode("utf-8", errors="replace")

    def answer_get(self, exchange: Exchange, request: Any) -> None:
        exchange.json(404, self.not_found)

    def answer(self, exchange: Exchange, request: Any) -> None:
        raise NotImplementedError
