"""A stand-in for the OpenAI Chat Completions API, so OpenCode and GitHub Copilot CLI run in the tests with
no network.

`with ChatCompletionsAPI.running(replies=["Noted."]) as api:` serves on 127.0.0.1 from a background thread
(stdlib http.server); point the client at `api.base_url` (which ends in /v1). Every request is recorded
(tests/services/model_api.py) so a test can assert on what reached the model.

Endpoints: POST /v1/chat/completions answers with the next scripted turn, streamed as server-sent events
when the request asks for `stream` (both clients do), else as one JSON completion; GET /v1/models lists one
model; anything else is a 404. A turn is text (the reply) or a `ToolCall` (the model asks for a tool;
the client runs it and asks again, which takes the next turn). Requests a client makes for itself (a
session title) carry no tools; they get a short fixed answer and never take a scripted turn.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.services.model_api import Exchange, ModelAPI, RecordedRequest

MODEL = "stand-in-model"


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


class ChatCompletionsAPI(ModelAPI[Turn]):
    """The Chat Completions API's wire format on ModelAPI (tests/services/model_api.py)."""

    base_path: ClassVar[str] = "/v1"

    def answer_get(self, exchange: Exchange, request: RecordedRequest) -> None:
        if request.route.endswith("/models"):
            exchange.json(
                200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}
            )
        else:
            exchange.json(404, self.not_found)

    def answer(self, exchange: Exchange, request: RecordedRequest) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        if not request.route.endswith("/chat/completions"):
            exchange.json(404, self.not_found)
            return
        turn = self.next_reply(body) if is_conversation(request) else "Notes"
        if body.get("stream"):
            chunks = [json.dumps(chunk) for chunk in _chunks(body, turn)]
            exchange.events("".join(f"data: {chunk}\n\n" for chunk in [*chunks, "[DONE]"]))
        else:
            exchange.json(200, _completion(body, turn))


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
