"""A stand-in for the Gemini API, so the real Gemini CLI runs in the tests with no network.

`with GeminiAPI.running(replies=[...]) as api:` serves on 127.0.0.1 from a background thread (stdlib
http.server); point the CLI at it with GOOGLE_GEMINI_BASE_URL=api.base_url and any GEMINI_API_KEY. Every
request is recorded (tests/services/model_api.py) so a test can assert on what reached the model.

Endpoints (`/v1beta/models/<model>:<method>`):
- `:streamGenerateContent?alt=sse`: a turn of the conversation (the request carries the agent's tools)
  answers with the next reply: a text, sent in several server-sent chunks cut mid-word (as the real API
  streams), or a `ToolCall`, sent as a functionCall part so the CLI runs that tool and comes back with its
  result. A request without tools (a side call the CLI makes for itself) gets a short fixed text;
- `:generateContent`: the CLI's own side calls (routing, next-speaker and loop checks), which ask for
  JSON: one object that answers each of them ("the user speaks next", "flash");
- `:countTokens`: a rough count.
Replies are a list used in order (the last one repeats once the list runs out), or a function of the body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.services import model_api
from tests.services.model_api import Exchange, ModelAPI

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
class RecordedRequest(model_api.RecordedRequest):
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


def _is_conversation(body: Any) -> bool:
    return isinstance(body, dict) and bool(body.get("tools"))


class GeminiAPI(ModelAPI[Reply]):
    """The Gemini API's wire format on ModelAPI (tests/services/model_api.py)."""

    recorded: ClassVar[type[model_api.RecordedRequest]] = RecordedRequest
    not_found: ClassVar[dict[str, Any]] = _NOT_FOUND

    def answer(self, exchange: Exchange, request: RecordedRequest) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        method = request.route.rpartition(":")[2]
        if method == "countTokens":
            exchange.json(200, {"totalTokens": max(1, len(request.text) // 4)})
        elif method == "generateContent":
            text = json.dumps(_SIDE_JSON)
            exchange.json(
                200, {"candidates": [_candidate([{"text": text}], True)], "usageMetadata": _usage(body, text)}
            )
        elif method == "streamGenerateContent":
            reply = self.next_reply(body) if _is_conversation(body) else "Notes"
            exchange.events(_stream(body, reply))
        else:
            exchange.json(404, _NOT_FOUND)


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


def _stream(body: dict[str, Any], reply: Reply) -> str:
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
    return "".join(f"data: {json.dumps(event)}\r\n\r\n" for event in events)
