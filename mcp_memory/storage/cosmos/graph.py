"""The knowledge graph on Azure Cosmos DB (GraphStore, storage/graph_base.py).

It lives in the learning container (cosmos/setup.py, partitioned /user_id, /group_id) with group_id
"~graph": an owner's whole graph is one logical partition, so every read is a single-partition query
and, as a user's search does, a space's graph stays inside its own partition-key prefix.

One document per entity, observation, relation and link, each with an id derived from what it is
(a digest of the entity name; of the name and the observation's words; of from, to and type), so
Cosmos DB's refusal of a second item with an id in one partition (409) is what skips a duplicate:
among any number of writers adding the same thing, exactly one stores it and none loses anything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from mcp_memory.errors import ConflictError, NotFoundError
from mcp_memory.models import GraphEntity, GraphObservation, GraphRelation
from mcp_memory.storage.cosmos.calls import each_concurrently, query_all
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery
from mcp_memory.storage.graph_base import EntityKey

GRAPH_GROUP = "~graph"  # outside the memory-id alphabet of revisions' group ids: never a memory's history
ENTITY, OBSERVATION, RELATION, LINK = "graph_entity", "graph_observation", "graph_relation", "graph_link"
_CONCURRENCY = 16


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:40]


class CosmosGraphStore:
    def __init__(self, container: ContainerProxy, *, timeout_seconds: float) -> None:
        self._container = container
        self._timeout = timeout_seconds

    # ---- writes ------------------------------------------------------------------------------------

    async def create_entities(self, owner: str, entities: Sequence[GraphEntity]) -> list[GraphEntity]:
        created = []
        for entity in entities:
            document = {
                "id": f"ge:{_digest(entity.name)}",
                "type": ENTITY,
                "name": entity.name,
                "entity_type": entity.entity_type,
                "author": entity.author,
                "created_at": timestamp(entity.created_at),
            }
            if await self._create(owner, document, "creating an entity"):
                await self._observe(owner, entity.name, entity.observations)
                created.append(entity)
        return created

    async def add_observations(
        self, owner: str, additions: Sequence[tuple[str, Sequence[GraphObservation]]]
    ) -> list[list[GraphObservation]]:
        held = {d["name"] for d in await self._docs(owner, ENTITY, "name", [n for n, _ in additions])}
        for name, _ in additions:
            if name not in held:
                raise NotFoundError(f"Entity with name {name} not found")
        return [await self._observe(owner, name, observations) for name, observations in additions]

    async def create_relations(self, owner: str, relations: Sequence[GraphRelation]) -> list[GraphRelation]:
        created = []
        for r in relations:
            document = {
                "id": f"gr:{_digest(r.source, r.target, r.relation_type)}",
                "type": RELATION,
                "source": r.source,
                "target": r.target,
                "relation_type": r.relation_type,
                "author": r.author,
                "created_at": timestamp(r.created_at),
            }
            if await self._create(owner, document, "creating a relation"):
                created.append(r)
        return created

    async def delete_entities(self, owner: str, names: Sequence[str]) -> list[str]:
        wanted = list(dict.fromkeys(names))
        observations = await self._docs(owner, OBSERVATION, "entity", wanted)
        doomed = [
            *observations,
            *await self._docs(owner, LINK, "entity", wanted),
            *await self._docs(owner, RELATION, "source", wanted),
            *await self._docs(owner, RELATION, "target", wanted),
            *await self._docs(owner, ENTITY, "name", wanted),
        ]
        await self._delete(owner, doomed)
        return [d["memory_id"] for d in observations]

    async def delete_observations(
        self, owner: str, deletions: Sequence[tuple[str, Sequence[str]]]
    ) -> list[str]:
        ids = {f"go:{_digest(name, content)}" for name, contents in deletions for content in contents}
        names = list(dict.fromkeys(name for name, _ in deletions))
        doomed = [d for d in await self._docs(owner, OBSERVATION, "entity", names) if d["id"] in ids]
        await self._delete(owner, doomed)
        return [d["memory_id"] for d in doomed]

    async def delete_relations(self, owner: str, relations: Sequence[tuple[str, str, str]]) -> int:
        ids = {f"gr:{_digest(*key)}" for key in relations}
        sources = list(dict.fromkeys(source for source, _, _ in relations))
        doomed = [d for d in await self._docs(owner, RELATION, "source", sources) if d["id"] in ids]
        await self._delete(owner, doomed)
        return len(doomed)

    async def link(self, owner: str, links: Sequence[tuple[str, str, str | None]]) -> int:
        new = 0
        for name, memory_id, thread_id in links:
            document = {
                "id": f"gl:{_digest(name, memory_id)}",
                "type": LINK,
                "entity": name,
                "memory_id": memory_id,
                "thread_id": thread_id,
            }
            new += await self._create(owner, document, "linking an entity to a memory")
        return new

    async def forget_thread(self, owner: str, thread_id: str, *, dry_run: bool = False) -> int:
        doomed = await self._docs(owner, LINK, "thread_id", [thread_id])
        if not dry_run:
            await self._delete(owner, doomed)
        return len(doomed)

    async def forget_memory(self, owner: str, memory_id: str, *, dry_run: bool = False) -> int:
        doomed = [
            d for kind in (OBSERVATION, LINK) for d in await self._docs(owner, kind, "memory_id", [memory_id])
        ]
        if not dry_run:
            await self._delete(owner, doomed)
        return len(doomed)

    async def forget(self, owner: str, *, dry_run: bool = False) -> int:
        doomed = await self._query(
            owner,
            "SELECT c.id FROM c WHERE c.user_id = @owner AND c.group_id = @group",
            [],
            "reading a graph",
        )
        if not dry_run:
            await self._delete(owner, doomed)
        return len(doomed)

    # ---- reads -------------------------------------------------------------------------------------

    async def entities(
        self,
        owner: str,
        *,
        names: Sequence[str] | None = None,
        after: EntityKey | None = None,
        limit: int | None = None,
    ) -> list[GraphEntity]:
        if names is not None:
            docs = await self._docs(owner, ENTITY, "name", list(dict.fromkeys(names)))
        else:
            docs = await self._entity_page(owner, after, limit)
        docs.sort(key=lambda d: (d["created_at"], d["name"]))
        found = [
            GraphEntity(
                name=d["name"],
                entity_type=d["entity_type"],
                author=d.get("author"),
                created_at=d["created_at"],
            )
            for d in docs
        ]
        by_name = {e.name: e for e in found}
        observations = await self._docs(owner, OBSERVATION, "entity", list(by_name))
        for d in sorted(observations, key=lambda d: (d["created_at"], d["content"])):
            by_name[d["entity"]].observations.append(
                GraphObservation(
                    content=d["content"],
                    memory_id=d["memory_id"],
                    author=d.get("author"),
                    created_at=d["created_at"],
                )
            )
        return found

    async def _entity_page(
        self, owner: str, after: EntityKey | None, limit: int | None
    ) -> list[dict[str, Any]]:
        """Entities in (created_at, name) order after `after`. Ordered by created_at alone (a range index
        every container has; two fields would need a composite index), so the entities sharing a
        created_at at either edge of the page (the cursor's, the page's last) are read whole and ordered
        by name here: a page never skips or repeats one."""
        where = "c.user_id = @owner AND c.group_id = @group AND c.type = @type"
        kind = [{"name": "@type", "value": ENTITY}]

        async def at_time(moment: str) -> list[dict[str, Any]]:
            params = [*kind, {"name": "@at", "value": moment}]
            return await self._query(
                owner, f"SELECT * FROM c WHERE {where} AND c.created_at = @at", params, "reading entities"
            )

        params = list(kind)
        docs: list[dict[str, Any]] = []
        if after is not None:
            at = timestamp(after[0])
            docs = [d for d in await at_time(at) if d["name"] > after[1]]
            where_after, params = (
                f"{where} AND c.created_at > @after",
                [*kind, {"name": "@after", "value": at}],
            )
        else:
            where_after = where
        top = f"TOP {int(limit)} " if limit is not None else ""
        page = await self._query(
            owner,
            f"SELECT {top}* FROM c WHERE {where_after} ORDER BY c.created_at",
            params,
            "reading entities",
        )
        if limit is not None and page:
            page += await at_time(page[-1]["created_at"])
        docs = sorted({d["id"]: d for d in docs + page}.values(), key=lambda d: (d["created_at"], d["name"]))
        return docs[:limit] if limit is not None else docs

    async def relations(self, owner: str, *, touching: Sequence[str] | None = None) -> list[GraphRelation]:
        if touching is None:
            docs = await self._docs(owner, RELATION)
        else:
            wanted = list(dict.fromkeys(touching))
            both = await self._docs(owner, RELATION, "source", wanted) + await self._docs(
                owner, RELATION, "target", wanted
            )
            docs = list({d["id"]: d for d in both}.values())
        docs.sort(key=lambda d: (d["created_at"], d["source"], d["target"], d["relation_type"]))
        return [
            GraphRelation(
                source=d["source"],
                target=d["target"],
                relation_type=d["relation_type"],
                author=d.get("author"),
                created_at=d["created_at"],
            )
            for d in docs
        ]

    async def names(self, owner: str) -> list[str]:
        found = await self._query(
            owner,
            "SELECT c.name FROM c WHERE c.user_id = @owner AND c.group_id = @group AND c.type = @type",
            [{"name": "@type", "value": ENTITY}],
            "reading entity names",
        )
        return [str(d["name"]) for d in found]

    async def entity_of(self, owner: str, memory_id: str) -> str | None:
        found = await self._docs(owner, OBSERVATION, "memory_id", [memory_id])
        return str(found[0]["entity"]) if found else None

    async def linked(self, owner: str, names: Sequence[str]) -> list[tuple[str, str]]:
        return [(d["entity"], d["memory_id"]) for d in await self._docs(owner, LINK, "entity", list(names))]

    # ---- calls -------------------------------------------------------------------------------------

    async def _create(self, owner: str, document: dict[str, Any], what: str) -> bool:
        """Create the document; False when one with its id is there already (nothing is changed)."""
        try:
            with cosmos_errors(what, self._timeout):
                await self._container.create_item({**document, "user_id": owner, "group_id": GRAPH_GROUP})
        except ConflictError:
            return False
        return True

    async def _observe(
        self, owner: str, name: str, observations: Sequence[GraphObservation]
    ) -> list[GraphObservation]:
        added = []
        for o in observations:
            document = {
                "id": f"go:{_digest(name, o.content)}",
                "type": OBSERVATION,
                "entity": name,
                "content": o.content,
                "memory_id": o.memory_id,
                "author": o.author,
                "created_at": timestamp(o.created_at),
            }
            if await self._create(owner, document, "adding an observation"):
                added.append(o)
        return added

    async def _docs(
        self, owner: str, kind: str, field: str | None = None, values: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The owner's graph documents of one kind, all or those whose `field` is one of `values`."""
        if values is not None and not values:
            return []
        where, params = "", list[dict[str, Any]]([{"name": "@type", "value": kind}])
        if field is not None:
            where = f" AND ARRAY_CONTAINS(@values, c.{field})"
            params.append({"name": "@values", "value": list(values or [])})
        return await self._query(
            owner,
            f"SELECT * FROM c WHERE c.user_id = @owner AND c.group_id = @group AND c.type = @type{where}",
            params,
            "reading the knowledge graph",
        )

    async def _query(
        self, owner: str, sql: str, params: list[dict[str, Any]], what: str
    ) -> list[dict[str, Any]]:
        parameters = [{"name": "@owner", "value": owner}, {"name": "@group", "value": GRAPH_GROUP}, *params]
        return await query_all(
            self._container, CosmosQuery(sql, parameters, [owner, GRAPH_GROUP]), what, self._timeout
        )

    async def _delete(self, owner: str, docs: Sequence[dict[str, Any]]) -> None:
        async def delete(doc_id: str) -> None:
            with (
                cosmos_errors("deleting from the knowledge graph", self._timeout),
                suppress(CosmosResourceNotFoundError),
            ):
                await self._container.delete_item(doc_id, partition_key=[owner, GRAPH_GROUP])

        ids = list(dict.fromkeys(d["id"] for d in docs))
        await each_concurrently([lambda i=i: delete(i) for i in ids], _CONCURRENCY)  # type: ignore[misc]
