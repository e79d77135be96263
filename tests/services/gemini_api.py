"""A stand-in for the Gemini API, so the real Gemini CLI runs in the tests with no network.

`with GeminiAPI.running(replies=[...]) as api:` serves on 127.0.0.1 from a background thread (stdlib
http.server); point the CLI at it with GOOGLE_GEMINI_BASE_URL=api.base_url and any GEMINI_API_KEY. Every
request is recorded (method, path, raw body, parsed JSON) so a test can assert on what reached the model.

Endpoints (`/v1beta/models/<model>:<method>`):
- `:streamGenerateContent?alt=sse`: a turn of the conversation (the request carries the agent's tools)
  answers with the next reply: a text, sent in several server-sent chunks cut mid-word (as the real API
  streams), or a `ToolCall`, sent as a functionCall part so the CLI runs that tool and comes back with its
  result. A request without tools (a side call the CLI makes for itself) gets a short fixed text;
- `:generateContent`: the CLI's own side calls (routing, next-speaker and loop checks), which ask for
  JSON: one object that answers each of them ("the user speaks next", "flash");
- `:countTokens`: a rough count.
Replies are a list used in order (the last one repeats once the list runs out).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNKS = 3  # how many server-sent events a text reply is cut into
# Answers every JSON side call Gemini CLI makes: the model routers' (classifier, numerical classifier), the
# next-speaker check's.
_SIDE_JSON = {
    "reasoning": "stand-in",
    "next_speaker": "user",
    "model_choice": "flash",
    "complexity_reasoning": "stand-in",
    "complexity_score": 10,
}
_NOT_FOUND = {"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}}


@dataclass(frozen=True)
class ToolCall:
    """A reply that asks the CLI to run a tool (a functionCall part)."""

    name: str
    args: dict[str, Any]


Reply = str | ToolCall


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    text: str  # the raw body, decoded
    body: Any  # the parsed JSON body, or None

    def contains(self, text: str) -> bool:
        """Whether `text` is in one of the body's JSON strings (unescaped), or in the raw body."""
        return text in self.text or any(text in value for value in _strings(self.body))

    @property
    def is_conversation(self) -> bool:
        """A turn of the conversation itself: streamed, carrying the agent's tools."""
        return ":streamGenerateContent" in self.path and _is_conversation(self.body)

    def user_texts(self) -> list[str]:
        """The text parts of the request's user contents, in order."""
        contents = self.body.get("contents") if isinstance(self.body, dict) else None
        texts: list[str] = []
        for content in contents if isinstance(contents, list) else []:
            if isinstance(content, dict) and content.get("role") == "user":
                for part in content.get("parts") or []:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        texts.append(part["text"])
        return texts


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
    return isinstance(body, dict) and bool(body.get("tools"))


@dataclass
class GeminiAPI:
    """The stand-in's state; safe to change from the test thread while requests are served."""

    replies: Sequence[Reply] = ("Noted.",)
    host: str = "127.0.0.1"
    port: int = 0
    _requests: list[RecordedRequest] = field(default_factory=list)
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    @contextmanager
    def running(cls, replies: Sequence[Reply] = ("Noted.",)) -> Iterator[GeminiAPI]:
        api = cls(replies=replies)
        server = ThreadingHTTPServer((api.host, api.port), _handler_for(api))
        server.daemon_threads = True
        api.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, name="gemini-api", daemon=True)
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

    def reply_with(self, replies: Sequence[Reply]) -> None:
        """Answer the following conversation turns with these replies, in order."""
        with self._lock:
            self.replies, self._used = replies, 0

    # ---- used by the handler ----
    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_reply(self) -> Reply:
        with self._lock:
            replies = list(self.replies) or ["Noted."]
            reply = replies[min(self._used, len(replies) - 1)]
            self._used += 1
            return reply


def chunks(text: str, count: int = CHUNKS) -> list[str]:
    """`text` cut into `count` pieces at even character offsets (mid-word, as the real stream cuts)."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(body: Any, text: str) -> dict[str, int]:
    prompt = max(1, len(json.dumps(body)) // 4)
    output = max(1, len(text) // 4)
    return {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}


def _candidate(parts: list[dict[str, Any]], finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return candidate


def _handler_for(api: GeminiAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the recording is the log
            pass

        def do_GET(self) -> None:
            self._record(b"")
            self._json(404, _NOT_FOUND)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = self._record(raw)
            body = request.body if isinstance(request.body, dict) else {}
            method = self.path.split("?")[0].rpartition(":")[2]
            if method == "countTokens":
                self._json(200, {"totalTokens": max(1, len(request.text) // 4)})
            elif method == "generateContent":
                text = json.dumps(_SIDE_JSON)
                self._json(
                    200,
                    {"candidates": [_candidate([{"text": text}], True)], "usageMetadata": _usage(body, text)},
                )
            elif method == "streamGenerateContent":
                reply = api.next_reply() if _is_conversation(body) else "Notes"
                self._stream(body, reply)
            else:
                self._json(404, _NOT_FOUND)

        def _record(self, raw: bytes) -> RecordedRequest:
            text = raw.decode("utf-8", errors="replace")
            try:
                parsed = json.loads(text) if text else None
            except json.JSONDecodeError:
                parsed = None
            request = RecordedRequest(self.command, self.path, text, parsed)
            api.record(request)
            return request

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, body: dict[str, Any], reply: Reply) -> None:
            events: list[dict[str, Any]] = []
            if isinstance(reply, ToolCall):
                call = {"functionCall": {"name": reply.name, "args": reply.args}}
                events.append({"candidates": [_candidate([call], True)], "usageMetadata": _usage(body, "")})
            else:
                pieces = chunks(reply)
                for i, piece in enumerate(pieces):
                    last = i == len(pieces) - 1
                    event: dict[str, Any] = {"candidates": [_candidate([{"text": piece}], last)]}
                    if last:
                        event["usageMetadata"] = _usage(body, reply)
                    events.append(event)
            data = "".join(f"data: {json.dumps(event)}\r\n\r\n" for event in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
