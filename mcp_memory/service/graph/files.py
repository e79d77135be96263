"""The reference memory server's file, memory.jsonl, read and written byte for byte as it writes it.

One JSON object a line, joined by "\\n" with no newline at the end: first every entity
{"type":"entity","name":...,"entityType":...,"observations":[...]} in creation order, then every relation
{"type":"relation","from":...,"to":...,"relationType":...}; keys in that order, compact, non-ASCII as
itself (JavaScript's JSON.stringify). Its legacy name memory.json holds the same lines. Lines of another
type are skipped, as the reference skips them.

A file exports back unchanged after an import, unless one of its calls repeated an entity's name or an
observation (the reference then keeps both; we keep one: service/graph/operations.py).

Importing checks every line before anything is written, then adds the file as create_entities and
create_relations would (what the graph holds already is skipped). A client configured for the reference
server keeps its MEMORY_FILE_PATH: that file is adopted into the owner's graph once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from mcp_memory.errors import InvalidInputError
from mcp_memory.models import utcnow
from mcp_memory.service.graph.checks import Checks
from mcp_memory.storage.learning_base import TriggerCounters
from mcp_memory.views import EntityView, GraphResult, RelationView

log = logging.getLogger(__name__)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class GraphFile:
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)


class _Graph(Protocol):
    """What a file is imported into: the knowledge graph's two creating calls."""

    async def create_entities(
        self, owner: str, entities: Sequence[Any], *, limited: bool = True
    ) -> list[EntityView]: ...

    async def create_relations(
        self, owner: str, relations: Sequence[Any], *, limited: bool = True
    ) -> list[RelationView]: ...


async def import_file(
    graph: _Graph, checks: Checks, owner: str, text: str, *, dry_run: bool = False
) -> dict[str, int]:
    """Load a reference memory.jsonl into the owner's graph, in its order: what the graph holds
    already is skipped, so importing twice stores it once. Counts what the file holds and what was
    new. Every line is checked before anything is written."""
    parsed = parse_memory_jsonl(text)
    counts = {"entities": len(parsed.entities), "relations": len(parsed.relations)}
    if dry_run:
        return counts | {"new_entities": 0, "new_relations": 0}
    # Checked whole first (names, control characters, sizes), so a bad line stores nothing.
    for entity in parsed.entities:
        checks.name(entity["name"], "name")
        checks.name(entity["entityType"], "entityType")
        for text_ in entity["observations"]:
            checks.observation(text_)
    for relation in parsed.relations:
        checks.relation(relation)
    created = await graph.create_entities(owner, parsed.entities, limited=False)
    related = await graph.create_relations(owner, parsed.relations, limited=False)
    return counts | {"new_entities": len(created), "new_relations": len(related)}


async def adopt_reference_file(
    graph: _Graph, checks: Checks, owner: str, path: Path, counters: TriggerCounters
) -> dict[str, int] | None:
    """Import the reference server's file at `path` into the owner's graph, once (a mark keyed by the
    file's path remembers it, so a graph emptied later is not filled again). None when there was
    nothing to do."""
    file = anyio.Path(path)
    mark = f"graph-adopted:{hashlib.sha256(str(await file.resolve()).encode()).hexdigest()[:32]}"
    if not await file.is_file() or await counters.read(owner, mark) is not None:
        return None
    counts = await import_file(graph, checks, owner, await file.read_text(encoding="utf-8"))
    await counters.compare_and_set(owner, mark, None, utcnow().isoformat())
    log.info(
        "imported the reference memory server's file %s into %s's knowledge graph: %s",
        path,
        owner,
        counts,
    )
    return counts


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
