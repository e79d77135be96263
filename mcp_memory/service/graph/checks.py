"""What the graph accepts from a call: lists no longer than graph.max_items_per_call, names of one line
within graph.max_name_chars, observations within max_content_chars, and the fields each item needs.
Bad input is refused whole, with a message naming it; nothing is stored. With `redact`, what passes
comes back with its credentials replaced by markers (redaction/): the same words give the same
result, so an observation or a name is found again by the words it was written with."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_memory import redaction
from mcp_memory.config import GraphSettings
from mcp_memory.errors import InvalidInputError, shown

_CONTROL_OK_IN_TEXT = frozenset("\n\r\t")


@dataclass(frozen=True)
class Checks:
    settings: GraphSettings
    max_content_chars: int
    redact: bool = False  # security.redact_secrets

    def batch(self, value: Any, name: str, limited: bool = True) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise InvalidInputError(f"{name} must be a list")
        self.count(len(value), name, limited)
        return list(value)

    def count(self, count: int, name: str, limited: bool = True) -> None:
        limit = self.settings.max_items_per_call
        if limited and count > limit:
            raise InvalidInputError(
                f"{name}: {count:,} items in one call; the limit is {limit:,} (graph.max_items_per_call). "
                "Nothing was stored: send them in smaller calls, or load a file with mcp-memory import"
            )

    def name(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
        if not value.strip():
            raise InvalidInputError(f"{what} is empty: name it with some text")
        if len(value) > self.settings.max_name_chars:
            raise InvalidInputError(
                f"{what} is {len(value):,} characters; the limit is {self.settings.max_name_chars:,}"
            )
        if any(unicodedata.category(c) == "Cc" for c in value):
            raise InvalidInputError(
                f"{what} {shown(value)} holds a control character; names are one line of text"
            )
        return self.redacted(value)

    def observation(self, value: str) -> str:
        if not value.strip():
            raise InvalidInputError("an observation is empty: say something about the entity")
        if len(value) > self.max_content_chars:
            raise InvalidInputError(
                f"an observation is {len(value):,} characters; the limit is {self.max_content_chars:,}"
            )
        if any(unicodedata.category(c) == "Cc" and c not in _CONTROL_OK_IN_TEXT for c in value):
            raise InvalidInputError(f"observation {shown(value)} holds a control character")
        return self.redacted(value)

    def redacted(self, value: str) -> str:
        return redaction.redact(value).text if self.redact else value

    def relation(self, value: Any) -> tuple[str, str, str]:
        return (
            self.name(field_of(value, "from", "relations"), "from"),
            self.name(field_of(value, "to", "relations"), "to"),
            self.name(field_of(value, "relationType", "relations"), "relationType"),
        )


def field_of(item: Any, name: str, within: str) -> Any:
    if isinstance(item, dict):
        if name not in item:
            raise InvalidInputError(f"each of {within} needs {shown(name)}")
        return item[name]
    if hasattr(item, "model_dump"):  # a parsed argument model of the MCP layer
        return item.model_dump(by_alias=True)[name]
    raise InvalidInputError(f"each of {within} must be an object")


def strings(value: Any, name: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"{name} must be a list of strings")
    return list(value)


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def first_by(key_of: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """The first of each name (entities) or key (relations) in one call: a repeat is the same item."""
    seen: set[Any] = set()
    kept = []
    for item in items:
        key = key_of(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
