"""The reference memory server's file, memory.jsonl, read and written byte for byte as it writes it.

One JSON object a line, joined by "\\n" with no newline at the end: first every entity
{"type":"entity","name":...,"entityType":...,"observations":[...]} in creation order, then every relation
{"type":"relation","from":...,"to":...,"relationType":...}; keys in that order, compact, non-ASCII as
itself (JavaScript's JSON.stringify). Its legacy name memory.json holds the same lines. Lines of another
type are skipped, as the reference skips them.

A file exports back unchanged after an import, unless one of its calls repeated an entity's name or an
observation (the reference then keeps both; we keep one: service/graph.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcp_memory.errors import InvalidInputError
from mcp_memory.views import EntityView, GraphResult, RelationView

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class GraphFile:
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)


def parse_memory_jsonl(text: str) -> GraphFile:
    """The entities and relations of a memory.jsonl (or legacy memory.json) file, in file order."""
    parsed = GraphFile()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"line {number} is not JSON ({e.msg}); nothing was imported") from e
        if not isinstance(item, dict):
            raise InvalidInputError(f"line {number} is not a JSON object; nothing was imported")
        if item.get("type") == "entity":
            parsed.entities.append(_entity(item, number))
        elif item.get("type") == "relation":
            parsed.relations.append(_relation(item, number))
    return parsed


def render_memory_jsonl(graph: GraphResult) -> str:
    lines = [
        _line({"type": "entity", "name": e.name, "entityType": e.entityType, "observations": e.observations})
        for e in graph.entities
    ] + [
        _line({"type": "relation", "from": r.source, "to": r.to, "relationType": r.relationType})
        for r in graph.relations
    ]
    return "\n".join(lines)


def _line(item: dict[str, Any]) -> str:
    text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    # JSON.stringify writes a lone surrogate as an escape; Python would write the unencodable character.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _entity(item: dict[str, Any], number: int) -> dict[str, Any]:
    try:
        return EntityView.model_validate(item).model_dump()
    except ValueError as e:
        raise InvalidInputError(
            f"line {number}: an entity needs a name, an entityType and a list of observations (strings)"
        ) from e


def _relation(item: dict[str, Any], number: int) -> dict[str, Any]:
    try:
        return RelationView.model_validate(item).model_dump(by_alias=True)
    except ValueError as e:
        raise InvalidInputError(f"line {number}: a relation needs from, to and relationType (strings)") from e
