"""The knowledge graph's calls: the reference memory server's nine (create_entities, create_relations,
add_observations, delete_entities, delete_observations, delete_relations, read_graph, search_nodes,
open_nodes) with its rules and results (@modelcontextprotocol/server-memory, dist/index.js), so its
users move here unchanged; and ours: the file import and export, an entity's detail, what learning
extracted, links, and what forget() removed.

What the reference does, and so do we: an entity whose name exists, a relation that exists (same from,
to and type) and an observation an entity already holds are skipped and not returned; add_observations
naming a missing entity fails whole ("Entity with name X not found"); deleting an entity deletes its
relations; deleting what is not there is not an error; open_nodes and search_nodes return the relations
touching any entity they return; a relation may name entities that do not exist, or the same one twice.

Where we differ, on purpose: repeats inside one call are stored once (the reference stores a name twice
when one call repeats it); a call is all or nothing and two writers never lose each other's work (the
reference rewrites its whole file per call); bad input (control characters, over-long names, more than
graph.max_items_per_call items) is refused whole with a message naming it (checks.py); search_nodes
adds the entities whose observations the hybrid search finds, after the substring matches
(observations.py); read_graph, search_nodes and open_nodes page when asked (pages.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mcp_memory.config import GraphSettings
from mcp_memory.errors import InvalidInputError, NotFoundError, shown
from mcp_memory.learning.parsing import ExtractedEntity, ExtractedRelation
from mcp_memory.llm.embedder import Embedder
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import (
    GraphEntity,
    GraphObservation,
    GraphRelation,
    Hit,
    Memory,
    Scope,
    author_of,
    space_of,
    utcnow,
)
from mcp_memory.service.graph import files
from mcp_memory.service.graph.checks import Checks, field_of, first_by, strings, unique
from mcp_memory.service.graph.links import EntityLinks
from mcp_memory.service.graph.observations import ObservationMemories, observed
from mcp_memory.service.graph.pages import Page, Pager, relation_view
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.graph_base import GraphStore
from mcp_memory.storage.learning_base import RevisionStore, TriggerCounters
from mcp_memory.views import (
    AddedObservations,
    EntityDetail,
    EntityView,
    GraphResult,
    ObservationDetail,
    RelationView,
)

# Called after an owner's graph changed.
GraphListener = Callable[[str], Awaitable[None]]


@dataclass
class KnowledgeGraph:
    settings: GraphSettings
    store: GraphStore
    long_term: LongTermStore
    embedder: Embedder
    tokens: TokenCounter
    max_content_chars: int
    revisions: RevisionStore | None = None
    on_change: GraphListener | None = None
    # search_nodes adds an entity whose observation is at least this close to the query (cosine).
    similarity_floor: float = 0.25
    # Names and observations have credentials replaced before they are stored (security.redact_secrets).
    redact_secrets: bool = True
    # Its parts, one a job (the modules of this package).
    _checks: Checks = field(init=False, repr=False)
    _pages: Pager = field(init=False, repr=False)
    _memories: ObservationMemories = field(init=False, repr=False)
    _links: EntityLinks = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._checks = Checks(self.settings, self.max_content_chars, self.redact_secrets)
        self._pages = Pager(self.store, self.tokens)
        self._memories = ObservationMemories(
            self.store, self.long_term, self.embedder, self.tokens, self.revisions
        )
        self._links = EntityLinks(self.settings, self.store, self.long_term)

    # ---- the reference's writes ------------------------------------------------------------------

    async def create_entities(
        self, owner: str, entities: Sequence[Any], *, limited: bool = True
    ) -> list[EntityView]:
        check = self._checks
        parsed = [
            (
                check.name(field_of(e, "name", "entities"), "name"),
                check.name(field_of(e, "entityType", "entities"), "entityType"),
                [
                    check.observation(o)
                    for o in strings(field_of(e, "observations", "entities"), "observations")
                ],
            )
            for e in check.batch(entities, "entities", limited)
        ]
        wanted = first_by(lambda item: item[0], parsed)
        check.count(sum(len(obs) for _, _, obs in wanted), "observations", limited)
        existing = {e.name for e in await self.store.entities(owner, names=[name for name, _, _ in wanted])}
        times = _times(len(wanted) + sum(len(obs) for _, _, obs in wanted))
        new = []
        for name, entity_type, observations in wanted:
            if name in existing:
                continue
            created_at = next(times)
            new.append(
                GraphEntity(
                    name=name,
                    entity_type=entity_type,
                    created_at=created_at,
                    author=author_of(owner),
                    observations=[observed(owner, name, text, next(times)) for text in unique(observations)],
                )
            )
        memories = await self._memories.memories(owner, [(e, o) for e in new for o in e.observations])
        await self.long_term.put(memories)  # first: refused over quota, nothing is in the graph
        created = await self.store.create_entities(owner, new)
        if len(created) < len(new):  # another writer created some of these names first
            await self._memories.drop_unheld(owner, [e for e in new if e not in created])
        await self._memories.record(memories, {o.memory_id for e in created for o in e.observations})
        await self._changed(owner, bool(created))
        await self._links.link_back(owner, [e.name for e in created])
        return [
            EntityView(
                name=e.name, entityType=e.entity_type, observations=[o.content for o in e.observations]
            )
            for e in created
        ]

    async def create_relations(
        self, owner: str, relations: Sequence[Any], *, limited: bool = True
    ) -> list[RelationView]:
        wanted = first_by(
            lambda key: key,
            (self._checks.relation(r) for r in self._checks.batch(relations, "relations", limited)),
        )
        times = _times(len(wanted))
        created = await self.store.create_relations(
            owner,
            [
                GraphRelation(
                    source=s, target=t, relation_type=k, created_at=next(times), author=author_of(owner)
                )
                for s, t, k in wanted
            ],
        )
        await self._changed(owner, bool(created))
        return [relation_view(r) for r in created]

    async def add_observations(self, owner: str, additions: Sequence[Any]) -> list[AddedObservations]:
        check = self._checks
        wanted = [
            (
                check.name(field_of(a, "entityName", "observations"), "entityName"),
                [check.observation(o) for o in strings(field_of(a, "contents", "observations"), "contents")],
            )
            for a in check.batch(additions, "observations")
        ]
        check.count(sum(len(c) for _, c in wanted), "contents")
        found = {e.name: e for e in await self.store.entities(owner, names=[n for n, _ in wanted])}
        for name, _ in wanted:
            if name not in found:
                raise NotFoundError(f"Entity with name {name} not found")
        batches = _fresh_observations(owner, wanted, found)
        pairs = [(found[name], o) for name, added in batches for o in added]
        memories = await self._memories.memories(owner, pairs)
        await self.long_term.put(memories)
        try:
            added = await self.store.add_observations(owner, batches)
        except NotFoundError:  # an entity was deleted meanwhile: nothing was added
            await self._memories.forget(owner, [o.memory_id for _, o in pairs], revisions=False)
            raise
        stored = {o.memory_id for batch in added for o in batch}
        await self._memories.record(memories, stored)
        await self._changed(owner, bool(stored))
        return [
            AddedObservations(entityName=name, addedObservations=[o.content for o in batch])
            for (name, _), batch in zip(batches, added, strict=True)
        ]

    async def delete_entities(self, owner: str, names: Sequence[Any]) -> None:
        wanted = [self._checks.name(n, "entityNames") for n in self._checks.batch(names, "entityNames")]
        memory_ids = await self.store.delete_entities(owner, wanted)
        await self._memories.forget(owner, memory_ids)
        await self._changed(owner, True)

    async def delete_observations(self, owner: str, deletions: Sequence[Any]) -> None:
        wanted = [
            (
                self._checks.name(field_of(d, "entityName", "deletions"), "entityName"),
                # As they were stored: redacted the same way.
                [
                    self._checks.redacted(o)
                    for o in strings(field_of(d, "observations", "deletions"), "observations")
                ],
            )
            for d in self._checks.batch(deletions, "deletions")
        ]
        self._checks.count(sum(len(o) for _, o in wanted), "observations")
        memory_ids = await self.store.delete_observations(owner, wanted)
        await self._memories.forget(owner, memory_ids)
        await self._changed(owner, True)

    async def delete_relations(self, owner: str, relations: Sequence[Any]) -> None:
        wanted = [self._checks.relation(r) for r in self._checks.batch(relations, "relations")]
        await self.store.delete_relations(owner, wanted)
        await self._changed(owner, True)

    # ---- the reference's reads (paging: pages.py) ------------------------------------------------

    async def read_graph(self, owner: str, page: Page | None = None) -> GraphResult:
        return await self._pages.read(owner, page or Page())

    async def search_nodes(self, owner: str, query: Any, page: Page | None = None) -> GraphResult:
        if not isinstance(query, str):
            raise InvalidInputError(
                "query must be a string: the words to find in names, types and observations"
            )
        entities = await self.store.entities(owner)
        needle = query.lower()
        matched = [
            e
            for e in entities
            if needle in e.name.lower()
            or needle in e.entity_type.lower()
            or any(needle in o.content.lower() for o in e.observations)
        ]
        if query.strip():
            matched += await self._memories.entities_found(
                owner, query, entities, {e.name for e in matched}, self.similarity_floor
            )
        return await self._pages.of(owner, matched, page or Page())

    async def open_nodes(self, owner: str, names: Sequence[Any], page: Page | None = None) -> GraphResult:
        wanted = [n for n in self._checks.batch(names, "names") if isinstance(n, str)]
        if len(wanted) != len(names):
            raise InvalidInputError("names must be a list of entity names (strings)")
        wanted = [self._checks.redacted(n) for n in wanted]  # as they were stored
        return await self._pages.of(owner, await self.store.entities(owner, names=wanted), page or Page())

    # ---- moving in and out: the reference's memory.jsonl (files.py) ------------------------------

    async def import_file(self, owner: str, text: str, *, dry_run: bool = False) -> dict[str, int]:
        """Load a reference memory.jsonl into the owner's graph, in its order: what the graph holds
        already is skipped, so importing twice stores it once. Counts what the file holds and what was
        new. Every line is checked before anything is written."""
        return await files.import_file(self, self._checks, owner, text, dry_run=dry_run)

    async def adopt_reference_file(
        self, owner: str, path: Path, counters: TriggerCounters
    ) -> dict[str, int] | None:
        """A client configured for the reference server keeps its MEMORY_FILE_PATH when only the command
        changes: that file is imported into the owner's graph, once (a mark keyed by the file's path
        remembers it, so a graph emptied later is not filled again). None when there was nothing to do."""
        return await files.adopt_reference_file(self, self._checks, owner, path, counters)

    async def export_file(self, owner: str) -> str:
        return files.render_memory_jsonl(await self.read_graph(owner))

    # ---- our own views ---------------------------------------------------------------------------

    async def entity(self, owner: str, name: str) -> EntityDetail:
        found = await self.store.entities(owner, names=[name])
        if not found:
            raise NotFoundError(f"no entity named {shown(name)}")
        entity = found[0]
        relations = await self.store.relations(owner, touching=[name])
        links = await self.store.linked(owner, [name])
        return EntityDetail(
            name=entity.name,
            entityType=entity.entity_type,
            created_at=entity.created_at,
            space=space_of(owner),
            observations=[
                ObservationDetail(
                    content=o.content, created_at=o.created_at, memory_id=o.memory_id, author=o.author
                )
                for o in entity.observations
            ],
            relations=[relation_view(r) for r in relations],
            linked_memories=sorted({memory_id for _, memory_id in links}),
        )

    # ---- learned from conversation ----------------------------------------------------------------

    async def learn(
        self, owner: str, entities: Sequence[ExtractedEntity], relations: Sequence[ExtractedRelation]
    ) -> None:
        """Entities and relations a model extracted from the owner's turns (with the facts), added as a
        client's create_entities and create_relations would add them: what exists is kept as it is. An
        item the graph would refuse (a control character, an over-long name) is left out, alone."""
        kept = []
        for e in entities:
            with contextlib.suppress(InvalidInputError):
                kept.append(
                    {
                        "name": self._checks.name(e.name, "name"),
                        "entityType": self._checks.name(e.type, "entityType"),
                        "observations": [],
                    }
                )
        ties = []
        for r in relations:
            with contextlib.suppress(InvalidInputError):
                ties.append(self._checks.relation({"from": r.source, "to": r.target, "relationType": r.type}))
        if kept:
            await self.create_entities(owner, kept, limited=False)
        if ties:
            await self.create_relations(
                owner, [{"from": s, "to": t, "relationType": k} for s, t, k in ties], limited=False
            )

    # ---- links: which memories name which entities (links.py) ------------------------------------

    async def link_memory(self, memory: Memory) -> int:
        """Link a new turn or fact to the entities it names (links.py). Returns how many links are new."""
        return await self._links.link_memory(memory)

    async def linked_names(self, owner: str, text: str) -> list[str]:
        """The names a text links to: the graph's own spelling of an entity it names, else as written."""
        return await self._links.linked_names(owner, text)

    async def follow_links(
        self, owner: str, query: str, hits: list[Hit], limit: int, weight: float
    ) -> list[Hit]:
        """Search's ranking, moved by links (graph.follow_links; links.py)."""
        return await self._links.follow_links(owner, query, hits, limit, weight)

    # ---- what the rest of the service tells the graph --------------------------------------------

    async def forgotten(self, scope: Scope, *, dry_run: bool) -> int:
        """After forget(): an observation forgotten by its memory id leaves its entity; links to a
        forgotten memory, or to the memories of a forgotten thread, go (the names they hold came from
        its words); forgetting everything takes the whole graph."""
        if scope.everything:
            count = await self.store.forget(scope.user_id, dry_run=dry_run)
        elif scope.memory_id is not None:
            count = await self.store.forget_memory(scope.user_id, scope.memory_id, dry_run=dry_run)
        elif scope.thread_id is not None:
            count = await self.store.forget_thread(scope.user_id, scope.thread_id, dry_run=dry_run)
        else:
            return 0
        if count and not dry_run:
            await self._changed(scope.user_id, True)
        return count

    async def _changed(self, owner: str, changed: bool) -> None:
        if not changed:
            return
        self._links.changed(owner)
        if self.on_change is not None:
            await self.on_change(owner)


def _times(count: int) -> Iterator[datetime]:
    """Increasing times for the items of one call, so they keep the call's order."""
    start = utcnow()
    return iter([start + timedelta(microseconds=i) for i in range(count)])


def _fresh_observations(
    owner: str, wanted: Sequence[tuple[str, list[str]]], found: dict[str, GraphEntity]
) -> list[tuple[str, list[GraphObservation]]]:
    """add_observations' batches: per entity named, the observations it does not hold yet."""
    times = _times(sum(len(c) for _, c in wanted))
    held = {name: {o.content for o in entity.observations} for name, entity in found.items()}
    batches: list[tuple[str, list[GraphObservation]]] = []
    for name, contents in wanted:
        fresh = [c for c in unique(contents) if c not in held[name]]
        held[name].update(fresh)  # the same entity twice in one call: the second adds only what is new
        batches.append((name, [observed(owner, name, c, next(times)) for c in fresh]))
    return batches
