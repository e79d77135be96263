"""The conversation exports people already have, read as threads of turns with their original times.

ChatGPT (Settings > Data controls > Export: conversations.json): a list of conversations, each a tree of
messages in `mapping`; the conversation as last shown is the path from `current_node` up to the root.
Claude (Settings > Privacy > Export data: conversations.json): a list of conversations, each with its
`chat_messages` in order, `sender` human or assistant.

Each conversation becomes the thread `chatgpt-<id>` or `claude-<uuid>`; each message keeps its id in
metadata.source_id, so importing the same export again (or a later one of the same account) adds only
the messages not imported before (MemoryService.import_conversations).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from mcp_memory.errors import InvalidInputError
from mcp_memory.models import Role

ChatFormat = Literal["chatgpt", "claude"]
CHAT_FORMATS: tuple[ChatFormat, ...] = ("chatgpt", "claude")
_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]")


@dataclass
class ChatMessage:
    source_id: str
    role: Role
    content: str
    created_at: datetime | None


@dataclass
class Conversation:
    thread_id: str
    title: str
    created_at: datetime | None
    messages: list[ChatMessage] = field(default_factory=list)


def parse_conversations(text: str, source: ChatFormat) -> list[Conversation]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(
            f"the {source} export is not JSON ({e.msg} at line {e.lineno}); nothing was imported"
        ) from e
    if not isinstance(data, list):
        raise InvalidInputError(
            f"the {source} export should be a list of conversations (its conversations.json); nothing was imported"
        )
    parse = _chatgpt if source == "chatgpt" else _claude
    conversations = []
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise InvalidInputError(f"conversation {number} of the {source} export is not an object")
        try:
            conversations.append(parse(item))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise InvalidInputError(
                f"conversation {number} of the {source} export is not in the shape expected ({e!r}); "
                "nothing was imported"
            ) from e
    return conversations


def _thread_id(prefix: str, source_id: object) -> str:
    return f"{prefix}-{_UNSAFE.sub('_', str(source_id))}"[:128]


def _epoch(value: object) -> datetime | None:
    return datetime.fromtimestamp(float(value), UTC) if isinstance(value, int | float) else None


def _iso(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _chatgpt(item: dict[str, Any]) -> Conversation:
    source_id = item.get("conversation_id") or item.get("id")
    mapping: dict[str, Any] = item["mapping"]
    conversation = Conversation(
        thread_id=_thread_id("chatgpt", source_id),
        title=str(item.get("title") or ""),
        created_at=_epoch(item.get("create_time")),
    )
    path: list[dict[str, Any]] = []
    node_id = item.get("current_node")
    seen: set[str] = set()
    while node_id is not None and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if node.get("message"):
            path.append(node["message"])
        node_id = node.get("parent")
    for message in reversed(path):
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        if role not in ("user", "assistant", "tool") or metadata.get("is_visually_hidden_from_conversation"):
            continue
        text = _chatgpt_text(message.get("content") or {})
        if text.strip():
            conversation.messages.append(
                ChatMessage(str(message["id"]), role, text, _epoch(message.get("create_time")))
            )
    return conversation


def _chatgpt_text(content: dict[str, Any]) -> str:
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        return "\n".join(p for p in content.get("parts") or [] if isinstance(p, str))
    if kind == "code":
        return str(content.get("text") or "")
    return ""  # images, browsing results, custom-instruction context: not turns of the conversation


def _claude(item: dict[str, Any]) -> Conversation:
    conversation = Conversation(
        thread_id=_thread_id("claude", item["uuid"]),
        title=str(item.get("name") or ""),
        created_at=_iso(item.get("created_at")),
    )
    for message in item.get("chat_messages") or []:
        role: Role = "user" if message.get("sender") == "human" else "assistant"
        text = message.get("text") or "\n".join(
            block.get("text", "") for block in message.get("content") or [] if block.get("type") == "text"
        )
        if text.strip():
            conversation.messages.append(
                ChatMessage(str(message["uuid"]), role, text, _iso(message.get("created_at")))
            )
    return conversation
