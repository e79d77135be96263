"""The knowledge graph: entities, their observations and the relations between them, with the rules and
results of the reference MCP memory server (@modelcontextprotocol/server-memory, dist/index.js), so its
users move here unchanged.

What the reference does, and so do we: an entity whose name exists, a relation that exists (same from,
to and type) and an observation an entity already holds are skipped and not returned; add_observations
naming a missing entity fails whole ("Entity with name X not found"); deleting an entity deletes its
relations; deleting what is not there is not an error; open_nodes and search_nodes return the relations
touching any entity they return; a relation may name entities that do not exist, or the same one twice.

Where we differ, on purpose: repeats inside one call are stored once (the reference stores a name twice
when one call repeats it); a call is all or nothing and two writers never lose each other's work (the
reference rewrites its whole file per call); bad input (control characters, over-long names, more than
graph.max_items_per_call items) is refused whole with a message naming it; search_nodes adds the
entities whose observations the hybrid search finds, after the substring matches; read_graph,
search_nodes and open_nodes page when asked (limit, cursor, max_tokens).

Each observation is also a long-term memory (type "observation") that search_memory finds, with a
revision per change like facts; each entity links to the turns and facts that name it (graph/links).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import math
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from mcp_memory.config import GraphSettings
from mcp_memory.errors import InvalidInputError, NotFoundError
from mcp_memory.learning.entities import EntityMatcher, key, mentions
from mcp_memory.learning.parsing import ExtractedEntity, ExtractedRelation
from mcp_memory.learning.writer import revision_of
from mcp_memory.llm.embedder import Embedder, embed_passages, memory_vectors
from mcp_memory.llm.tokens import OFF_LOOP_CHARS, TokenCounter
from mcp_memory.models import (
    GraphEntity,
    GraphObservation,
    GraphRelation,
    Hit,
    Memory,
    Scope,
    SearchQuery,
    author_of,
    observation_id,
    space_of,
    utcnow,
)
from mcp_memory.service.graph_files import parse_memory_jsonl, render_memory_jsonl
from mcp_memory.service.results import signals_of
from mcp_memory.storage.base import LongTermStore
from mcp_memory.storage.graph_base import EntityKey, GraphStore
from mcp_memory.storage.learning_base import RevisionStore, TriggerCounters
from mcp_memory.views import (
    AddedObservations,
    EntityDetail,
    EntityView,
    GraphResult,
    ObservationDetail,
    RelationView,
)

log = logging.getLogger(__name__)

# Called after an owner's graph changed.
GraphListener = Callable[[str], Awaitable[None]]
# Observations the hybrid side of search_nodes looks at, beyond the substring matches.
_HYBRID_HITS = 20
_CONTROL_OK_IN_TEXT = frozenset("\n\r\t")
# How long this process trusts its list of an owner's entity names (another process may add some).
_NAMES_SECONDS = 30.0
# Memories a new entity is linked to right away: those its name finds in a text search.
_BACKLINKS = 200
# Creating more entities than this in one call (an import) leaves older memories unlinked.
_BACKLINK_ENTITIES = 100


@dataclass
class Page:
    """Which part of a result to return: everything (the reference), or a page."""

    limit: int | None = None
    cursor: str | None = None
    max_tokens: int | None = None

    @property
    def paged(self) -> bool:
        return self.limit is not None or self.cursor is not None or self.max_tokens is not None


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
    # Per owner: a matcher of its entities' names and when it was read (link_memory).
    _names: dict[str, tuple[float, EntityMatcher]] = field(default_factory=dict, repr=False)

    # ---- the reference's writes ------------------------------------------------------------------

    async def create_entities(
        self, owner: str, entities: Sequence[Any], *, limited: bool = True
    ) -> list[EntityView]:
        parsed = [
            (
                self._name(_field(e, "name", "entities"), "name"),
                self._name(_field(e, "entityType", "entities"), "entityType"),
                [
                    self._observation(o)
                    for o in _strings(_field(e, "observations", "entities"), "observations")
                ],
            )
            for e in self._batch(entities, "entities", limited)
        ]
        wanted = _first_by(lambda item: item[0], parsed)
        self._count(sum(len(obs) for _, _, obs in wanted), "observations", limited)
        existing = {e.name for e in await self.store.entities(owner, names=[name for name, _, _ in wanted])}
        times = self._times(len(wanted) + sum(len(obs) for _, _, obs in wanted))
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
                    observations=[
                        self._observed(owner, name, text, next(times)) for text in _unique(observations)
                    ],
                )
            )
        memories = await self._memories(owner, [(e, o) for e in new for o in e.observations])
        await self.long_term.put(memories)  # first: refused over quota, nothing is in the graph
        created = await self.store.create_entities(owner, new)
        if len(created) < len(new):  # another writer created some of these names first
            await self._drop_unheld(owner, [e for e in new if e not in created])
        await self._revisions(memories, {o.memory_id for e in created for o in e.observations})
        await self._changed(owner, bool(created))
        await self._link_back(owner, [e.name for e in created])
        return [
            EntityView(
                name=e.name, entityType=e.entity_type, observations=[o.content for o in e.observations]
            )
            for e in created
        ]

    async def create_relations(
        self, owner: str, relations: Sequence[Any], *, limited: bool = True
    ) -> list[RelationView]:
        wanted = _first_by(
            lambda key: key, (self._relation(r) for r in self._batch(relations, "relations", limited))
        )
        times = self._times(len(wanted))
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
        return [_relation_view(r) for r in created]

    async def add_observations(self, owner: str, additions: Sequence[Any]) -> list[AddedObservations]:
        wanted = [
            (
                self._name(_field(a, "entityName", "observations"), "entityName"),
                [self._observation(o) for o in _strings(_field(a, "contents", "observations"), "contents")],
            )
            for a in self._batch(additions, "observations")
        ]
        self._count(sum(len(c) for _, c in wanted), "contents")
        found = {e.name: e for e in await self.store.entities(owner, names=[n for n, _ in wanted])}
        for name, _ in wanted:
            if name not in found:
                raise NotFoundError(f"Entity with name {name} not found")
        times = self._times(sum(len(c) for _, c in wanted))
        held = {name: {o.content for o in entity.observations} for name, entity in found.items()}
        batches: list[tuple[str, list[GraphObservation]]] = []
        for name, contents in wanted:
            fresh = [c for c in _unique(contents) if c not in held[name]]
            held[name].update(fresh)  # the same entity twice in one call: the second adds only what is new
            batches.append((name, [self._observed(owner, name, c, next(times)) for c in fresh]))
        pairs = [(found[name], o) for name, added in batches for o in added]
        memories = await self._memories(owner, pairs)
        await self.long_term.put(memories)
        try:
            added = await self.store.add_observations(owner, batches)
        except NotFoundError:  # an entity was deleted meanwhile: nothing was added
            await self._forget_memories(owner, [o.memory_id for _, o in pairs], revisions=False)
            raise
        stored = {o.memory_id for batch in added for o in batch}
        await self._revisions(memories, stored)
        await self._changed(owner, bool(stored))
        return [
            AddedObservations(entityName=name, addedObservations=[o.content for o in batch])
            for (name, _), batch in zip(batches, added, strict=True)
        ]

    async def delete_entities(self, owner: str, names: Sequence[Any]) -> None:
        wanted = [self._name(n, "entityNames") for n in self._batch(names, "entityNames")]
        memory_ids = await self.store.delete_entities(owner, wanted)
        await self._forget_memories(owner, memory_ids)
        await self._changed(owner, True)

    async def delete_observations(self, owner: str, deletions: Sequence[Any]) -> None:
        wanted = [
            (
                self._name(_field(d, "entityName", "deletions"), "entityName"),
                _strings(_field(d, "observations", "deletions"), "observations"),
            )
            for d in self._batch(deletions, "deletions")
        ]
        self._count(sum(len(o) for _, o in wanted), "observations")
        memory_ids = await self.store.delete_observations(owner, wanted)
        await self._forget_memories(owner, memory_ids)
        await self._changed(owner, True)

    async def delete_relations(self, owner: str, relations: Sequence[Any]) -> None:
        wanted = [self._relation(r) for r in self._batch(relations, "relations")]
        await self.store.delete_relations(owner, wanted)
        await self._changed(owner, True)

    # ---- the reference's reads -------------------------------------------------------------------

    async def read_graph(self, owner: str, page: Page | None = None) -> GraphResult:
        page = page or Page()
        if not page.paged:
            return _graph(await self.store.entities(owner), await self.store.relations(owner))
        limit = self._limit(page)
        after = _entity_key(page.cursor)
        entities = await self.store.entities(owner, after=after, limit=limit + 1)
        more = len(entities) > limit
        entities = entities[:limit]
        relations = await self.store.relations(owner, touching=[e.name for e in entities])
        shown, relations, cut = self._fit(entities, relations, page.max_tokens)
        cursor = None
        if (cut or more) and shown:
            cursor = _encode({"after": [shown[-1].created_at.isoformat(), shown[-1].name]})
        return _graph(shown, relations, cursor)

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
            matched += await self._hybrid(owner, query, entities, {e.name for e in matched})
        return await self._page_of(owner, matched, page or Page())

    async def open_nodes(self, owner: str, names: Sequence[Any], page: Page | None = None) -> GraphResult:
        wanted = [n for n in self._batch(names, "names") if isinstance(n, str)]
        if len(wanted) != len(names):
            raise InvalidInputError("names must be a list of entity names (strings)")
        return await self._page_of(owner, await self.store.entities(owner, names=wanted), page or Page())

    # ---- moving in and out: the reference's memory.jsonl (service/graph_files.py) ------------------

    async def import_file(self, owner: str, text: str, *, dry_run: bool = False) -> dict[str, int]:
        """Load a reference memory.jsonl into the owner's graph, in its order: what the graph holds
        already is skipped, so importing twice stores it once. Counts what the file holds and what was
        new. Every line is checked before anything is written."""
        parsed = parse_memory_jsonl(text)
        counts = {"entities": len(parsed.entities), "relations": len(parsed.relations)}
        if dry_run:
            return counts | {"new_entities": 0, "new_relations": 0}
        # Checked whole first (names, control characters, sizes), so a bad line stores nothing.
        for entity in parsed.entities:
            self._name(entity["name"], "name")
            self._name(entity["entityType"], "entityType")
            for text_ in entity["observations"]:
                self._observation(text_)
        for relation in parsed.relations:
            self._relation(relation)
        created = await self.create_entities(owner, parsed.entities, limited=False)
        related = await self.create_relations(owner, parsed.relations, limited=False)
        return counts | {"new_entities": len(created), "new_relations": len(related)}

    async def adopt_reference_file(
        self, owner: str, path: Path, counters: TriggerCounters
    ) -> dict[str, int] | None:
        """A client configured for the reference server keeps its MEMORY_FILE_PATH when only the command
        changes: that file is imported into the owner's graph, once (a mark keyed by the file's path
        remembers it, so a graph emptied later is not filled again). None when there was nothing to do."""
        file = anyio.Path(path)
        mark = f"graph-adopted:{hashlib.sha256(str(await file.resolve()).encode()).hexdigest()[:32]}"
        if not await file.is_file() or await counters.read(owner, mark) is not None:
            return None
        counts = await self.import_file(owner, await file.read_text(encoding="utf-8"))
        await counters.compare_and_set(owner, mark, None, utcnow().isoformat())
        log.info(
            "imported the reference memory server's file %s into %s's knowledge graph: %s",
            path,
            owner,
            counts,
        )
        return counts

    async def export_file(self, owner: str) -> str:
        return render_memory_jsonl(await self.read_graph(owner))

    # ---- our own views ---------------------------------------------------------------------------

    async def entity(self, owner: str, name: str) -> EntityDetail:
        found = await self.store.entities(owner, names=[name])
        if not found:
            raise NotFoundError(f"no entity named {name!r}")
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
            relations=[_relation_view(r) for r in relations],
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
                        "name": self._name(e.name, "name"),
                        "entityType": self._name(e.type, "entityType"),
                        "observations": [],
                    }
                )
        ties = []
        for r in relations:
            with contextlib.suppress(InvalidInputError):
                ties.append(self._relation({"from": r.source, "to": r.target, "relationType": r.type}))
        if kept:
            await self.create_entities(owner, kept, limited=False)
        if ties:
            await self.create_relations(
                owner, [{"from": s, "to": t, "relationType": k} for s, t, k in ties], limited=False
            )

    # ---- links: which memories name which entities -----------------------------------------------

    async def link_memory(self, memory: Memory) -> int:
        """Link a new turn or fact to the entities it names: the graph's entities (their names, any
        case) and the names, places and titles the offline extractor finds (learning/entities.py),
        which need not be entities of the graph yet. Returns how many links are new."""
        if not self.settings.link_memories or memory.type not in ("turn", "fact"):
            return 0
        names = await self.linked_names(memory.user_id, memory.content)
        links = [(name, memory.id, memory.thread_id) for name in names]
        return await self.store.link(memory.user_id, links) if links else 0

    async def linked_names(self, owner: str, text: str) -> list[str]:
        """The names a text links to: the graph's own spelling of an entity it names, else as written."""
        matcher = await self._matcher(owner)
        if len(text) <= OFF_LOOP_CHARS:
            return _names_in(matcher, text)
        return await anyio.to_thread.run_sync(_names_in, matcher, text)

    async def _matcher(self, owner: str) -> EntityMatcher:
        cached = self._names.get(owner)
        if cached is not None and time.monotonic() - cached[0] < _NAMES_SECONDS:
            return cached[1]
        matcher = EntityMatcher(await self.store.names(owner))
        self._names[owner] = (time.monotonic(), matcher)
        return matcher

    async def follow_links(
        self, owner: str, query: str, hits: list[Hit], limit: int, weight: float
    ) -> list[Hit]:
        """Search's ranking, moved by links (graph.follow_links): a hit linked to an entity the query
        names gains, and one linked to a neighbour of it (a relation's other end) gains half as much;
        an entity linked to many memories says less about each, so its gain is divided by how many."""
        named = await self.linked_names(owner, query)
        if not named or not hits:
            return hits[:limit]
        weights = dict.fromkeys(named, 1.0)
        for relation in await self.store.relations(owner, touching=named):
            for end in (relation.source, relation.target):
                weights.setdefault(end, 0.5)
        linked: dict[str, set[str]] = {}
        for name, memory_id in await self.store.linked(owner, list(weights)):
            linked.setdefault(name, set()).add(memory_id)
        gain: dict[str, float] = {}
        for name, memory_ids in linked.items():
            share = weights[name] / math.log2(2 + len(memory_ids))
            for memory_id in memory_ids:
                gain[memory_id] = gain.get(memory_id, 0.0) + share
        moved = [
            h.model_copy(update={"score": h.score * (1 + weight * gain.get(h.memory.id, 0.0))}) for h in hits
        ]
        return sorted(moved, key=lambda h: h.score, reverse=True)[:limit]

    async def _link_back(self, owner: str, names: Sequence[str]) -> None:
        """Link new entities to the turns and facts already in memory that name them."""
        if not self.settings.link_memories or not names or len(names) > _BACKLINK_ENTITIES:
            return
        for name in names:
            matcher = EntityMatcher([name])
            hits = await self.long_term.search(
                SearchQuery(user_id=owner, text=name, mode="text", types=["turn", "fact"], limit=_BACKLINKS),
                None,
            )
            links = [(name, h.memory.id, h.memory.thread_id) for h in hits if matcher.find(h.memory.content)]
            if links:
                await self.store.link(owner, links)

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

    # ---- helpers ---------------------------------------------------------------------------------

    def _batch(self, value: Any, name: str, limited: bool = True) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise InvalidInputError(f"{name} must be a list")
        self._count(len(value), name, limited)
        return list(value)

    def _count(self, count: int, name: str, limited: bool = True) -> None:
        limit = self.settings.max_items_per_call
        if limited and count > limit:
            raise InvalidInputError(
                f"{name}: {count:,} items in one call; the limit is {limit:,} (graph.max_items_per_call). "
                "Nothing was stored: send them in smaller calls, or load a file with mcp-memory import"
            )

    def _name(self, value: Any, what: str) -> str:
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
                f"{what} {value[:80]!r} holds a control character; names are one line of text"
            )
        return value

    def _observation(self, value: str) -> str:
        if not value.strip():
            raise InvalidInputError("an observation is empty: say something about the entity")
        if len(value) > self.max_content_chars:
            raise InvalidInputError(
                f"an observation is {len(value):,} characters; the limit is {self.max_content_chars:,}"
            )
        if any(unicodedata.category(c) == "Cc" and c not in _CONTROL_OK_IN_TEXT for c in value):
            raise InvalidInputError(f"observation {value[:80]!r} holds a control character")
        return value

    def _relation(self, value: Any) -> tuple[str, str, str]:
        return (
            self._name(_field(value, "from", "relations"), "from"),
            self._name(_field(value, "to", "relations"), "to"),
            self._name(_field(value, "relationType", "relations"), "relationType"),
        )

    def _limit(self, page: Page) -> int:
        if page.limit is None:
            return 10**9 if page.max_tokens is not None else 100
        if isinstance(page.limit, bool) or not isinstance(page.limit, int) or page.limit < 1:
            raise InvalidInputError(f"limit {page.limit!r} is out of range: give a whole number from 1")
        return page.limit

    def _times(self, count: int) -> Iterator[datetime]:
        """Increasing times for the items of one call, so they keep the call's order."""
        start = utcnow()
        return iter([start + timedelta(microseconds=i) for i in range(count)])

    def _observed(self, owner: str, name: str, text: str, at: datetime) -> GraphObservation:
        return GraphObservation(
            content=text, memory_id=observation_id(owner, name, text), created_at=at, author=author_of(owner)
        )

    async def _memories(
        self, owner: str, pairs: Sequence[tuple[GraphEntity, GraphObservation]]
    ) -> list[Memory]:
        if not pairs:
            return []
        vectors = [
            memory_vectors(v) for v in await embed_passages(self.embedder, [o.content for _, o in pairs])
        ]
        return [
            Memory(
                id=o.memory_id,
                user_id=owner,
                type="observation",
                content=o.content,
                embedding=vector,
                passage_embeddings=passage_vectors,
                # Found by the entity's name too: "what do I know about Alice" reaches her observations.
                index_context=f"{entity.name} ({entity.entity_type})",
                metadata={"entity": entity.name, "entity_type": entity.entity_type},
                created_at=o.created_at,
                token_count=self.tokens.count(o.content),
                author=o.author,
            )
            for (entity, o), (vector, passage_vectors) in zip(pairs, vectors, strict=True)
        ]

    async def _revisions(self, memories: Sequence[Memory], stored: set[str]) -> None:
        """One revision for each observation this call stored (not those another writer stored first)."""
        if self.revisions is None:
            return
        for memory in memories:
            if memory.id in stored:
                shown = memory.model_copy(update={"embedding": None})
                await self.revisions.append(
                    revision_of(shown, "create", "graph", source_text=memory.metadata["entity"])
                )

    async def _drop_unheld(self, owner: str, lost: Sequence[GraphEntity]) -> None:
        """Memories written for entities another writer created first, whose words the graph does not hold."""
        held = {
            o.memory_id
            for e in await self.store.entities(owner, names=[e.name for e in lost])
            for o in e.observations
        }
        await self._forget_memories(
            owner,
            [o.memory_id for e in lost for o in e.observations if o.memory_id not in held],
            revisions=False,
        )

    async def _forget_memories(
        self, owner: str, memory_ids: Sequence[str], *, revisions: bool = True
    ) -> None:
        for memory_id in memory_ids:
            await self.long_term.forget(Scope(user_id=owner, memory_id=memory_id))
            if revisions and self.revisions is not None:
                await self.revisions.forget(Scope(user_id=owner, memory_id=memory_id))

    async def _hybrid(
        self, owner: str, query: str, entities: Sequence[GraphEntity], matched: set[str]
    ) -> list[GraphEntity]:
        """Entities whose observations the hybrid search finds (by meaning as well as words), best first,
        after the substring matches."""
        vector = [float(x) for x in (await self.embedder.embed([query]))[0]]
        hits = await self.long_term.search(
            SearchQuery(user_id=owner, text=query, types=["observation"], limit=_HYBRID_HITS), vector
        )
        # Close enough in meaning: the recall prompt's cosine floor for this embedder (service/recall.py).
        signals = await signals_of(self.long_term, owner, query, vector, hits)
        by_name = {e.name: e for e in entities}
        found: list[GraphEntity] = []
        for hit, signal in zip(hits, signals, strict=True):
            name = hit.memory.metadata.get("entity")
            near = signal.cosine is not None and signal.cosine >= self.similarity_floor
            if near and name in by_name and name not in matched:
                matched.add(name)
                found.append(by_name[name])
        return found

    async def _page_of(self, owner: str, entities: list[GraphEntity], page: Page) -> GraphResult:
        if not page.paged:
            return _graph(entities, await self.store.relations(owner, touching=[e.name for e in entities]))
        offset = _offset(page.cursor)
        limit = self._limit(page)
        window = entities[offset : offset + limit]
        relations = await self.store.relations(owner, touching=[e.name for e in window])
        shown, relations, _ = self._fit(window, relations, page.max_tokens)
        end = offset + len(shown)
        return _graph(shown, relations, _encode({"offset": end}) if end < len(entities) and shown else None)

    def _fit(
        self, entities: list[GraphEntity], relations: list[GraphRelation], max_tokens: int | None
    ) -> tuple[list[GraphEntity], list[GraphRelation], bool]:
        """The entities (in order) and their relations that fit max_tokens of JSON; always at least one
        entity, so paging moves on. True when some were cut."""
        if max_tokens is None:
            return entities, relations, False
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(f"max_tokens {max_tokens!r} is out of range: give a whole number from 1")
        shown: list[GraphEntity] = []
        kept: list[GraphRelation] = []
        seen: set[tuple[str, str, str]] = set()
        used = 0
        for entity in entities:
            names = {entity.name}
            mine = [r for r in relations if (r.source in names or r.target in names) and r.key not in seen]
            cost = self.tokens.count(_json(_entity_view(entity).model_dump())) + sum(
                self.tokens.count(_json(_relation_view(r).model_dump(by_alias=True))) for r in mine
            )
            if shown and used + cost > max_tokens:
                return shown, kept, True
            shown.append(entity)
            kept += mine
            seen.update(r.key for r in mine)
            used += cost
        return shown, kept, False

    async def _changed(self, owner: str, changed: bool) -> None:
        if not changed:
            return
        self._names.pop(owner, None)
        if self.on_change is not None:
            await self.on_change(owner)


# ---- shapes and small parsers --------------------------------------------------------------------


def _field(item: Any, name: str, within: str) -> Any:
    if isinstance(item, dict):
        if name not in item:
            raise InvalidInputError(f"each of {within} needs {name!r}")
        return item[name]
    if hasattr(item, "model_dump"):  # a parsed argument model of the MCP layer
        return item.model_dump(by_alias=True)[name]
    raise InvalidInputError(f"each of {within} must be an object")


def _strings(value: Any, name: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"{name} must be a list of strings")
    return list(value)


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _first_by(key_of: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """The first of each name (entities) or key (relations) in one call: a repeat is the same item."""
    seen: set[Any] = set()
    kept = []
    for item in items:
        key = key_of(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _entity_view(entity: GraphEntity) -> EntityView:
    return EntityView(
        name=entity.name, entityType=entity.entity_type, observations=[o.content for o in entity.observations]
    )


def _relation_view(relation: GraphRelation) -> RelationView:
    return RelationView(source=relation.source, to=relation.target, relationType=relation.relation_type)


def _graph(
    entities: Sequence[GraphEntity], relations: Sequence[GraphRelation], cursor: str | None = None
) -> GraphResult:
    return GraphResult(
        entities=[_entity_view(e) for e in entities],
        relations=[_relation_view(r) for r in relations],
        nextCursor=cursor,
    )


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
            f"cursor {cursor[:40]!r} is not one this server gave: start again without it"
        ) from e
    if not isinstance(value, dict):
        raise InvalidInputError(f"cursor {cursor[:40]!r} is not one this server gave: start again without it")
    return value


def _entity_key(cursor: str | None) -> EntityKey | None:
    if cursor is None:
        return None
    after = _decode(cursor).get("after")
    try:
        return (datetime.fromisoformat(after[0]), str(after[1])) if after else None
    except (TypeError, ValueError, IndexError) as e:
        raise InvalidInputError(f"cursor {cursor[:40]!r} is not a read_graph cursor") from e


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    offset = _decode(cursor).get("offset")
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"cursor {cursor[:40]!r} is not a search_nodes or open_nodes cursor")
    return offset


def _names_in(matcher: EntityMatcher, text: str) -> list[str]:
    """The graph's names the text holds (in the graph's spelling), then the names it mentions anew."""
    found = matcher.find(text)
    known = {key(name) for name in found}
    return found + [m.name for m in mentions(text) if key(m.name) not in known]
