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
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.services import model_api
from tests.services.model_api import Exchange, ModelAPI


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool: a function (`arguments`, JSON) or a custom tool (`custom=True`, raw `input`)."""

    name: str
    arguments: dict[str, Any] | str
    custom: bool = False
    namespace: str | None = None  # a tool of a namespace (Codex's multi_agent_v1.spawn_agent)


Reply = str | ToolCall
ReplyFunction = Callable[[dict[str, Any]], Reply]  # the request's body -> the reply


@dataclass(frozen=True)
class RecordedRequest(model_api.RecordedRequest):
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


class ResponsesAPI(ModelAPI[Reply]):
    """The Responses API's wire format on ModelAPI (tests/services/model_api.py)."""

    recorded: ClassVar[type[model_api.RecordedRequest]] = RecordedRequest
    base_path: ClassVar[str] = "/v1"

    def decode(self, content_encoding: str | None, raw: bytes) -> str:
        if content_encoding == "zstd":  # Codex may compress; we ask it not to
            return "(zstd body)"
        return super().decode(content_encoding, raw)

    def answer_get(self, exchange: Exchange, request: RecordedRequest) -> None:
        if request.route.endswith("/models"):
            exchange.json(200, {"object": "list", "data": [], "models": []})
        else:
            exchange.json(404, self.not_found)

    def answer(self, exchange: Exchange, request: RecordedRequest) -> None:
        if not request.is_turn:
            exchange.json(404, self.not_found)
            return
        body = request.body if isinstance(request.body, dict) else {}
        events = events_for(self.next_reply(body), str(body.get("model") or "stand-in"))
        exchange.events("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events))


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
