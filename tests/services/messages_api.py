"""A stand-in for the Anthropic Messages API, so the real Claude Code CLI runs in the tests with no network.

`with MessagesAPI.running(replies=["Noted."]) as api:` serves on 127.0.0.1 from a background thread
(stdlib http.server); point the client at it with ANTHROPIC_BASE_URL=api.base_url. Every request is
recorded (method, path, headers, raw body, parsed JSON) so a test can assert on what reached the model,
e.g. the context a hook injected.

Endpoints: POST /v1/messages answers with the next canned reply, streamed as server-sent events when the
request asks for `stream` (as Claude Code does), else as one JSON message; POST /v1/messages/count_tokens
answers a rough count; anything else is a 404 (Claude Code treats its optional endpoints as absent).
Replies are a list used in order (the last one repeats once the list runs out) or a function of the
request body. Requests Claude Code makes for itself (a session title, a topic check) have no tools
and a one-block system prompt; they get a short fixed answer and never take a canned reply, so a test
can count its replies by its prompts.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ReplyFunction = Callable[[dict[str, Any]], str]
MODEL = "claude-sonnet-4-5"
_NOT_FOUND = {"type": "error", "error": {"type": "not_found_error", "message": "not here"}}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    text: str  # the raw body, decoded
    body: Any  # the parsed JSON body, or None

    def contains(self, text: str) -> bool:
        """Whether `text` is in the body: in one of its JSON strings (unescaped), or in the raw body."""
        return text in self.text or any(text in value for value in _strings(self.body))

    @property
    def is_conversation(self) -> bool:
        """A turn of the conversation itself (not a count or a side call Claude Code makes for itself)."""
        return self.path.split("?")[0] == "/v1/messages" and _is_conversation(self.body)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _is_conversation(body: Any) -> bool:
    # The agent's own turns carry its tools; side calls (titles, topic checks) carry none.
    return isinstance(body, dict) and bool(body.get("tools"))


@dataclass
class MessagesAPI:
    """The stand-in's state; safe to change from the test thread while requests are served."""

    replies: Sequence[str] | ReplyFunction = ("Noted.",)
    host: str = "127.0.0.1"
    port: int = 0
    _requests: list[RecordedRequest] = field(default_factory=list)
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    @contextmanager
    def running(cls, replies: Sequence[str] | ReplyFunction = ("Noted.",)) -> Iterator[MessagesAPI]:
        api = cls(replies=replies)
        server = ThreadingHTTPServer((api.host, api.port), _handler_for(api))
        server.daemon_threads = True
        api.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, name="messages-api", daemon=True)
        thread.start()
        try:
            yield api
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def reply_with(self, replies: Sequence[str] | ReplyFunction) -> None:
        """Answer the following conversation turns with these replies, in order (or with this function)."""
        with self._lock:
            self.replies, self._used = replies, 0

    # ---- used by the handler ----
    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_reply(self, body: dict[str, Any]) -> str:
        with self._lock:
            if callable(self.replies):
                reply_function = self.replies
            else:
                replies = list(self.replies) or ["Noted."]
                reply = replies[min(self._used, len(replies) - 1)]
                self._used += 1
                return reply
        return reply_function(body)


def _handler_for(api: MessagesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the recording is the log
            pass

        def do_GET(self) -> None:
            self._record(b"")
            self._json(404, _NOT_FOUND)

        def do_HEAD(self) -> None:
            self._record(b"")
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = self._record(raw)
            body = request.body if isinstance(request.body, dict) else {}
            route = self.path.split("?")[0]
            if route == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": max(1, len(request.text) // 4)})
            elif route == "/v1/messages":
                text = api.next_reply(body) if _is_conversation(body) else "Notes"
                if body.get("stream"):
                    self._stream(body, text)
                else:
                    self._json(200, _message(body, text))
            else:
                self._json(404, _NOT_FOUND)

        def _record(self, raw: bytes) -> RecordedRequest:
            text = raw.decode("utf-8", errors="replace")
            try:
                parsed = json.loads(text) if text else None
            except json.JSONDecodeError:
                parsed = None
            request = RecordedRequest(self.command, self.path, dict(self.headers.items()), text, parsed)
            api.record(request)
            return request

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, body: dict[str, Any], text: str) -> None:
            message = _message(body, text)
            start = {
                **message,
                "content": [],
                "stop_reason": None,
                "usage": {**message["usage"], "output_tokens": 1},
            }
            events: list[tuple[str, dict[str, Any]]] = [
                ("message_start", {"type": "message_start", "message": start}),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": text},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": message["usage"]["output_tokens"]},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
            data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _message(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, len(json.dumps(body)) // 4),
            "output_tokens": max(1, len(text) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
