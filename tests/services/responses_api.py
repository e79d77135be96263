"""A stand-in for the OpenAI Responses API, so the real Codex CLI runs in the tests with no network.

`with ResponsesAPI.running(["Noted."]) as api:` serves on 127.0.0.1 from a background thread (stdlib
http.server); point Codex at it with a custom model provider whose base_url is `api.base_url`
(tests/services/codex_cli.py does). Every request is recorded (method, path, headers, raw body, parsed
JSON) so a test can assert on what reached the model, e.g. the context a hook injected.

POST /v1/responses answers with the next scripted reply as server-sent events, the way Codex's own tests
mock it (codex-rs/core/tests/common/responses.rs: response.created, response.output_item.done,
response.completed). A reply is a text (an assistant message, which ends the turn) or a `ToolCall` (a
function call, or a custom tool call such as apply_patch's freeform grammar), after which Codex runs the
tool and asks again with its output: a turn that runs a command is `[ToolCall(...), "final words"]`.
The last reply repeats once the list runs out. GET /v1/models answers an empty list; anything else is 404.
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


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool: a function (`arguments`, JSON) or a custom tool (`custom=True`, raw `input`)."""

    name: str
    arguments: dict[str, Any] | str
    custom: bool = False
    namespace: str | None = None  # a tool of a namespace (Codex's multi_agent_v1.spawn_agent)


Reply = str | ToolCall
ReplyFunction = Callable[[dict[str, Any]], Reply]  # the request's body -> the reply
_NOT_FOUND = {"error": {"type": "not_found", "message": "not here"}}


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
    def is_turn(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0].endswith("/responses")

    def input_texts(self, role: str) -> list[str]:
        """The texts of the input messages of `role` (user, developer, assistant), in order."""
        items = self.body.get("input") if isinstance(self.body, dict) else None
        texts: list[str] = []
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == role:
                for part in item.get("content") or []:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        texts.append(part["text"])
        return texts

    def tool_outputs(self) -> list[str]:
        """The outputs of the tool calls this request reports back (function_call_output and the like)."""
        items = self.body.get("input") if isinstance(self.body, dict) else None
        outputs: list[str] = []
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_output"):
                outputs.append(json.dumps(item.get("output")))
        return outputs

    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [str(t.get("name")) for t in tools or [] if isinstance(t, dict) and t.get("name")]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass
class ResponsesAPI:
    """The stand-in's state; safe to change from the test thread while requests are served."""

    replies: Sequence[Reply] | ReplyFunction = ("Noted.",)
    host: str = "127.0.0.1"
    port: int = 0
    _requests: list[RecordedRequest] = field(default_factory=list)
    _used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    @contextmanager
    def running(cls, replies: Sequence[Reply] | ReplyFunction = ("Noted.",)) -> Iterator[ResponsesAPI]:
        api = cls(replies=replies)
        server = ThreadingHTTPServer((api.host, api.port), _handler_for(api))
        server.daemon_threads = True
        api.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, name="responses-api", daemon=True)
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

    def reply_with(self, replies: Sequence[Reply] | ReplyFunction) -> None:
        """Answer the following model requests with these replies, in order (or with this function of
        the request's body, when requests may come in any order: a subagent's beside its parent's)."""
        with self._lock:
            self.replies, self._used = replies, 0

    # ---- used by the handler ----
    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if callable(self.replies):
                reply_function = self.replies
            else:
                replies = list(self.replies) or ["Noted."]
                reply = replies[min(self._used, len(replies) - 1)]
                self._used += 1
                return reply
        return reply_function(body)


def events_for(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The server-sent events of one model response."""
    response_id = f"resp_{uuid.uuid4().hex[:16]}"
    if isinstance(reply, ToolCall):
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        if reply.custom:
            raw = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
            item: dict[str, Any] = {
                "type": "custom_tool_call",
                "call_id": call_id,
                "name": reply.name,
                "input": raw,
            }
        else:
            arguments = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
            item = {"type": "function_call", "call_id": call_id, "name": reply.name, "arguments": arguments}
            if reply.namespace:
                item["namespace"] = reply.namespace
        output_tokens = max(1, len(json.dumps(item)) // 4)
    else:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "content": [{"type": "output_text", "text": reply}],
        }
        output_tokens = max(1, len(reply) // 4)
    usage = {
        "input_tokens": 100,
        "input_tokens_details": None,
        "output_tokens": output_tokens,
        "output_tokens_details": None,
        "total_tokens": 100 + output_tokens,
    }
    return [
        {"type": "response.created", "response": {"id": response_id, "model": model}},
        {"type": "response.output_item.done", "item": item},
        {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
    ]


def _handler_for(api: ResponsesAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the recording is the log
            pass

        def do_GET(self) -> None:
            self._record(b"")
            if self.path.split("?")[0].endswith("/models"):
                self._json(200, {"object": "list", "data": [], "models": []})
            else:
                self._json(404, _NOT_FOUND)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = self._record(raw)
            if not request.is_turn:
                self._json(404, _NOT_FOUND)
                return
            body = request.body if isinstance(request.body, dict) else {}
            events = events_for(api.next_reply(body), str(body.get("model") or "stand-in"))
            data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self, raw: bytes) -> RecordedRequest:
            if self.headers.get("Content-Encoding") == "zstd":  # Codex may compress; we ask it not to
                text = "(zstd body)"
            else:
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

    return Handler
