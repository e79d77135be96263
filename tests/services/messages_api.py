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
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.services import model_api
from tests.services.model_api import Exchange, ModelAPI

ReplyFunction = Callable[[dict[str, Any]], str]
MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class RecordedRequest(model_api.RecordedRequest):
    @property
    def is_conversation(self) -> bool:
        """A turn of the conversation itself (not a count or a side call Claude Code makes for itself)."""
        return self.route == "/v1/messages" and _is_conversation(self.body)


def _is_conversation(body: Any) -> bool:
    # The agent's own turns carry its tools; side calls (titles, topic checks) carry none.
    return isinstance(body, dict) and bool(body.get("tools"))


class MessagesAPI(ModelAPI[str]):
    """The Messages API's wire format on ModelAPI (tests/services/model_api.py)."""

    recorded: ClassVar[type[model_api.RecordedRequest]] = RecordedRequest
    not_found: ClassVar[dict[str, Any]] = {
        "type": "error",
        "error": {"type": "not_found_error", "message": "not here"},
    }

    def answer(self, exchange: Exchange, request: RecordedRequest) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        if request.route == "/v1/messages/count_tokens":
            exchange.json(200, {"input_tokens": max(1, len(request.text) // 4)})
        elif request.route == "/v1/messages":
            text = self.next_reply(body) if _is_conversation(body) else "Notes"
            if body.get("stream"):
                exchange.events(_stream(body, text))
            else:
                exchange.json(200, _message(body, text))
        else:
            exchange.json(404, self.not_found)


def _stream(body: dict[str, Any], text: str) -> str:
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
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
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
    return "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events)


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
