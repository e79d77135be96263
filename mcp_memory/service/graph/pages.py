"""Paging and token fitting for read_graph, search_nodes and open_nodes, and the result shapes they return.

Without limit, cursor or max_tokens a reader returns everything, as the reference does. With them it
returns a page: read_graph walks the store in creation order (its cursor names the last entity shown);
search_nodes and open_nodes page their list of matches (their cursor is an offset). max_tokens keeps the
entities (in order) and their relations that fit that many tokens of JSON, always at least one entity so
paging moves on. A cursor is opaque: URL-safe base64 of a small JSON object.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_memory.errors import InvalidInputError
from mcp_memory.errors import shown as echoed
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import GraphEntity, GraphRelation
from mcp_memory.storage.graph_base import EntityKey, GraphStore
from mcp_memory.views import EntityView, GraphResult, RelationView


@dataclass
class Page:
    """Which part of a result to return: everything (the reference), or a page."""

    limit: int | None = None
    cursor: str | None = None
    max_tokens: int | None = None

    @property
    def paged(self) -> bool:
        return self.limit is not None or self.cursor is not None or self.max_tokens is not None


@dataclass(frozen=True)
class Pager:
    """The pages of an owner's graph: what the store holds, cut to a page and to max_tokens."""

    store: GraphStore
    tokens: TokenCounter

    async def read(self, owner: str, page: Page) -> GraphResult:
        """read_graph: everything, or a page of entities in creation order."""
        if not page.paged:
            return graph_result(await self.store.entities(owner), await self.store.relations(owner))
        limit = limit_of(page)
        after = _entity_key(page.cursor)
        entities = await self.store.entities(owner, after=after, limit=limit + 1)
        more = len(entities) > limit
        entities = entities[:limit]
        relations = await self.store.relations(owner, touching=[e.name for e in entities])
        shown, relations, cut = self.fit(entities, relations, page.max_tokens)
        cursor = None
        if (cut or more) and shown:
            cursor = _encode({"after": [shown[-1].created_at.isoformat(), shown[-1].name]})
        return graph_result(shown, relations, cursor)

    async def of(self, owner: str, entities: list[GraphEntity], page: Page) -> GraphResult:
        """search_nodes and open_nodes: the entities found, with the relations touching them, or a page."""
        if not page.paged:
            return graph_result(
                entities, await self.store.relations(owner, touching=[e.name for e in entities])
            )
        offset = _offset(page.cursor)
        limit = limit_of(page)
        window = entities[offset : offset + limit]
        relations = await self.store.relations(owner, touching=[e.name for e in window])
        shown, relations, _ = self.fit(window, relations, page.max_tokens)
        end = offset + len(shown)
        return graph_result(
            shown, relations, _encode({"offset": end}) if end < len(entities) and shown else None
        )

    def fit(
        self, entities: list[GraphEntity], relations: list[GraphRelation], max_tokens: int | None
    ) -> tuple[list[GraphEntity], list[GraphRelation], bool]:
        """The entities (in order) and their relations that fit max_tokens of JSON; always at least one
        entity, so paging moves on. True when some were cut."""
        if max_tokens is None:
            return entities, relations, False
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(
                f"max_tokens {echoed(max_tokens)} is out of range: give a whole number from 1"
            )
        shown: list[GraphEntity] = []
        kept: list[GraphRelation] = []
        seen: set[tuple[str, str, str]] = set()
        used = 0
        for entity in entities:
            names = {entity.name}
            mine = [r for r in relations if (r.source in names or r.target in names) and r.key not in seen]
            cost = self.tokens.count(_json(entity_view(entity).model_dump())) + sum(
                self.tokens.count(_json(relation_view(r).model_dump(by_alias=True))) for r in mine
            )
            if shown and used + cost > max_tokens:
                return shown, kept, True
            shown.append(entity)
            kept += mine
            seen.update(r.key for r in mine)
            used += cost
        return shown, kept, False


def limit_of(page: Page) -> int:
    if page.limit is None:
        return 10**9 if page.max_tokens is not None else 100
    if isinstance(page.limit, bool) or not isinstance(page.limit, int) or page.limit < 1:
        raise InvalidInputError(f"limit {echoed(page.limit)} is out of range: give a whole number from 1")
    return page.limit


# ---- shapes ----------------------------------------------------------------------------------------


def entity_view(entity: GraphEntity) -> EntityView:
    return EntityView(
        name=entity.name, entityType=entity.entity_type, observations=[o.content for o in entity.observations]
    )


def relation_view(relation: GraphRelation) -> RelationView:
    return RelationView(source=relation.source, to=relation.target, relationType=relation.relation_type)


def graph_result(
    entities: Sequence[GraphEntity], relations: Sequence[GraphRelation], cursor: str | None = None
) -> GraphResult:
    return GraphResult(
        entities=[entity_view(e) for e in entities],
        relations=[relation_view(r) for r in relations],
        nextCursor=cursor,
    )


# ---- cursors ---------------------------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _encode(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(_json(value).encode()).decode().rstrip("=")


def _decode(cursor: str) -> dict[str, Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError) as e:
        raise InvalidInputError(
            f"cursor {echoed(cursor)} is not one this server gave: start again without it"
        ) from e
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"cursor {echoed(cursor)} is not one this server gave: start again without it"
        )
    return value


def _entity_key(cursor: str | None) -> EntityKey | None:
    if cursor is None:
        return None
    after = _decode(cursor).get("after")
    try:
        return (datetime.fromisoformat(after[0]), str(after[1])) if after else None
    except (TypeError, ValueError, IndexError) as e:
        raise InvalidInputError(f"cursor {echoed(cursor)} is not a read_graph cursor") from e


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    offset = _decode(cursor).get("offset")
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"cursor {echoed(cursor)} is not a search_nodes or open_nodes cursor")
    return offset
