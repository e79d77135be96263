"""What a backend stores for the knowledge graph (service/graph/): entities with their observations,
relations between entity names, and links from an entity to the memories (turns, facts) that mention it.

Each observation is also a long-term memory (type "observation", id models.observation_id) so that
search_memory finds it; the graph store keeps which entity it belongs to and in what order. Every write
here is all or nothing, and adding what is already there (an entity name, a relation, an observation's
words) is skipped rather than refused, as the reference server does; two writers adding at once lose
nothing and duplicate nothing.

Order is the order of creation: (created_at, name) for entities, (created_at, content) for an entity's
observations, (created_at, from, to, type) for relations. Writers give the items of one call increasing
created_at, so an imported file comes back in its own order.

SQLite implements it in storage/sqlite/graph.py, Cosmos DB in storage/cosmos/graph.py; both pass
tests/contract/test_graph_contract.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from mcp_memory.models import GraphEntity, GraphObservation, GraphRelation

# A page of entities starts strictly after this (created_at, name).
EntityKey = tuple[datetime, str]


class GraphStore(Protocol):
    async def create_entities(self, owner: str, entities: Sequence[GraphEntity]) -> list[GraphEntity]:
        """Store each entity whose name the owner's graph lacks, with its observations; return those
        stored, in order. An entity whose name exists is skipped (its observations too)."""
        ...

    async def add_observations(
        self, owner: str, additions: Sequence[tuple[str, Sequence[GraphObservation]]]
    ) -> list[list[GraphObservation]]:
        """Give each named entity the observations whose words it does not hold yet; return, per
        addition, those added. All or nothing: a name with no entity raises NotFoundError naming it,
        and nothing is written."""
        ...

    async def create_relations(self, owner: str, relations: Sequence[GraphRelation]) -> list[GraphRelation]:
        """Store each relation the graph lacks (same from, to and type); return those stored, in order."""
        ...

    async def delete_entities(self, owner: str, names: Sequence[str]) -> list[str]:
        """Delete these entities, their observations, the relations from or to them and their links;
        return the memory ids of the observations deleted. Unknown names are ignored."""
        ...

    async def delete_observations(
        self, owner: str, deletions: Sequence[tuple[str, Sequence[str]]]
    ) -> list[str]:
        """Delete these observations (entity name, exact words); return their memory ids. What is not
        there is ignored."""
        ...

    async def delete_relations(self, owner: str, relations: Sequence[tuple[str, str, str]]) -> int:
        """Delete the relations with these (from, to, type); return how many were there."""
        ...

    async def entities(
        self,
        owner: str,
        *,
        names: Sequence[str] | None = None,
        after: EntityKey | None = None,
        limit: int | None = None,
    ) -> list[GraphEntity]:
        """The owner's entities with their observations, in order: all of them, or those named; with
        `after` and `limit`, one page of them."""
        ...

    async def relations(self, owner: str, *, touching: Sequence[str] | None = None) -> list[GraphRelation]:
        """The owner's relations in order: all, or those from or to one of the names `touching`."""
        ...

    async def names(self, owner: str) -> list[str]:
        """The names of the owner's entities, without their observations (add_turn links by them)."""
        ...

    async def entity_of(self, owner: str, memory_id: str) -> str | None:
        """The entity an observation memory belongs to, or None."""
        ...

    async def link(self, owner: str, links: Sequence[tuple[str, str, str | None]]) -> int:
        """Record that these memories mention these entities ((entity name, memory id, the memory's thread
        id) triples); return how many links are new."""
        ...

    async def linked(self, owner: str, names: Sequence[str]) -> list[tuple[str, str]]:
        """(entity name, memory id) of every link of these entities."""
        ...

    async def forget_memory(self, owner: str, memory_id: str, *, dry_run: bool = False) -> int:
        """A memory was forgotten: delete (or count) the observation it is and the links to it."""
        ...

    async def forget_thread(self, owner: str, thread_id: str, *, dry_run: bool = False) -> int:
        """A thread was forgotten: delete (or count) the links to its memories (the names they hold came
        from its words)."""
        ...

    async def forget(self, owner: str, *, dry_run: bool = False) -> int:
        """Delete (or count) everything of the owner's graph: entities, observations, relations, links."""
        ...
