"""A stand-in for the OpenAI Chat Completions API, so OpenCode and GitHub Copilot CLI run in the tests with
no network.

`with ChatCompletionsAPI.running(replies=["Noted."]) as api:` serves on 127.0.0.1 from a background thread
(stdlib http.server); point the client at `api.base_url` (which ends in /v1). Every request is recorded
(tests/services/messages_api.py's RecordedRequest) so a test can assert on what reached the model.

Endpoints: POST /v1/chat/completions answers with the next scripted turn, streamed as server-sent events
when the request asks for `stream` (both clients do), else as one JSON completion; GET /v1/models lists one
model; anything else is a 404. A turn is text (the reply) or a `ToolCall` (the model asks for a tool;
the client runs it and asks again, which takes the next turn). Requests a client makes for itself (a
session title) carry no tools; they get a short fixed answer and never take a scripted turn.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.services.messages_api import RecordedRequest

MODEL = "stand-in-model"
_NOT_FOUND = {"error": {"type": "not_found", "message": "not here"}}


@dataclass(frozen=True)
class ToolCall:
    """A turn in which the model calls a tool, e.g. ToolCall("bash", {"command": "ls"})."""

    name: str
    arguments: dict[str, Any]


Turn = str | ToolCall


def is_conversation(request: RecordedRequest) -> bool:
    """A turn of the agent's own conversation (it offers tools), not a side call such as a title."""
    body = request.body
    return (
        request.path.split("?")[0].endswith("/chat/completions")
        and isinstance(body, dict)
        and bool(body.get("tools"))
    )


@dataclass
class ChatCompletionsAPI:
    """The stand-in's state; safe to change from the test thread while requests are served."""

    turns: Sequence[Turn] = ("Noted.",)
    host: str = "127.0.0.1"
    port: int = 0
    _requests: list[RecordedRequest] = field(default_factory=list)
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    @contextmanager
    def running(cls, turns: Sequence[Turn] = ("Noted.",)) -> Iterator[ChatCompletionsAPI]:
        api = cls(turns=turns)
        server = ThreadingHTTPServer((api.host, api.port), _handler_for(api))
        server.daemon_threads = True
        api.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, name="chat-completions", daemon=True)
        thread.start()
        try:
            yield api
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def reply_with(self, turns: Sequence[Turn]) -> None:
        """Answer the following conversation turns with these, in order (the last one repeats)."""
        with self._lock:
            self.turns, self._used = turns, 0

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_turn(self) -> Turn:
        with self._lock:
            turns = list(self.turns) or ["Noted."]
            turn = turns[min(self._used, len(turns) - 1)]
            self._used += 1
            return turn


def _handler_for(api: ChatCompletionsAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the recording is the log
            pass

        def do_GET(self) -> None:
            self._record(b"")
            if self.path.split("?")[0].endswith("/models"):
                self._json(
                    200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}
                )
            else:
                self._json(404, _NOT_FOUND)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = self._record(raw)
            body = request.body if isinstance(request.body, dict) else {}
            if not request.path.split("?")[0].endswith("/chat/completions"):
                self._json(404, _NOT_FOUND)
                return
            turn = api.next_turn() if is_conversation(request) else "Notes"
            if body.get("stream"):
                self._stream(body, turn)
            else:
                self._json(200, _completion(body, turn))

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

        def _stream(self, body: dict[str, Any], turn: Turn) -> None:
            chunks = [json.dumps(chunk) for chunk in _chunks(body, turn)]
            data = "".join(f"data: {chunk}\n\n" for chunk in [*chunks, "[DONE]"]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _usage(body: dict[str, Any], turn: Turn) -> dict[str, int]:
    prompt = max(1, len(json.dumps(body)) // 4)
    completion = max(1, len(str(turn)) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_call(turn: ToolCall) -> dict[str, Any]:
    return {
        "id": f"call_{uuid.uuid4().hex[:16]}",
        "type": "function",
        "function": {"name": turn.name, "arguments": json.dumps(turn.arguments)},
    }


def _completion(body: dict[str, Any], turn: Turn) -> dict[str, Any]:
    if isinstance(turn, ToolCall):
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [_tool_call(turn)]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": turn}, "stop"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(body, turn),
    }


def _chunks(body: dict[str, Any], turn: Turn) -> list[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model") or MODEL,
    }
    if isinstance(turn, ToolCall):
        delta: dict[str, Any] = {"role": "assistant", "tool_calls": [{"index": 0, **_tool_call(turn)}]}
        finish = "tool_calls"
    else:
        delta, finish = {"role": "assistant", "content": turn}, "stop"
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage(body, turn)})
    return chunks
