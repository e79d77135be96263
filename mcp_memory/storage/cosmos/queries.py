"""The Cosmos DB SQL the long-term store sends. Pure builders: text + parameters + partition key, no I/O.

Rules every query here follows:
- caller text only ever travels as a parameter (@name), never inside the SQL string;
- the partition key fields are filtered in WHERE; the full key is also passed as `partition_key` when
  both levels are known (a single-partition query). With only the user known the query names no
  partition key and the WHERE prefix routes it: "Queries by prefix are efficiently routed to the subset
  of partitions that hold the data" (https://learn.microsoft.com/azure/cosmos-db/hierarchical-partition-keys);
- superseded memories are excluded from every read except get(), a listing that asks for them, and
  reads as of a moment before their supersession (`_current`).

Search syntax follows the documented forms. A hybrid search runs its two sides as two queries, fused in
the server by search/ranking.py (as on every backend), not by Cosmos DB's RANK RRF, so that
search.fusion and rrf_k apply and a long memory ranks by its best passage:
- full text: FullTextScore(<path>, <term1>, <term2>, ...) only inside ORDER BY RANK or RRF, never projected;
  FullTextContainsAny(<path>, <term1>, ...) in WHERE
  https://learn.microsoft.com/azure/cosmos-db/nosql/query/fulltextscore
  https://learn.microsoft.com/azure/cosmos-db/nosql/query/fulltextcontainsany
- vector: ORDER BY VectorDistance(c.embedding, @vector) (most similar first for cosine), projectable as score
  https://learn.microsoft.com/azure/cosmos-db/nosql/query/vectordistance
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from mcp_memory.models import ListQuery
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.terms import MAX_KEYWORDS
from mcp_memory.storage.cosmos.documents import MEMORY_FIELDS, SYSTEM_USER, THREAD_ENTRY_TYPE, timestamp
from mcp_memory.storage.cosmos.passages import PASSAGE_TYPE, PASSAGES_PER_HIT

# FullTextScore rejects 31 or more terms.
MAX_TERMS = MAX_KEYWORDS

LIVE = "(NOT IS_DEFINED(c.superseded_by) OR IS_NULL(c.superseded_by))"
FIELDS = ", ".join(f"c.{name}" for name in MEMORY_FIELDS)

SearchPlan = Literal["hybrid", "vector", "text", "phrases", "none"]


@dataclass(frozen=True)
class CosmosQuery:
    sql: str
    parameters: list[dict[str, Any]] = field(default_factory=list)
    # The full hierarchical key [user_id, thread_id] when known; None = routed by the WHERE prefix.
    partition_key: list[str] | None = None

    def kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"query": self.sql, "parameters": self.parameters}
        if self.partition_key is not None:
            kw["partition_key"] = self.partition_key
        return kw


class _Where:
    """WHERE clauses and their parameters, built together so a name is never reused."""

    def __init__(self, user_id: str, thread_id: str | None) -> None:
        self.clauses = ["c.user_id = @user_id"]
        self.parameters: list[dict[str, Any]] = [{"name": "@user_id", "value": user_id}]
        self.partition_key = None if thread_id is None else [user_id, thread_id]
        if thread_id is not None:
            self.add("c.thread_id = @thread_id", "@thread_id", thread_id)

    def add(self, clause: str, name: str | None = None, value: Any = None) -> None:
        self.clauses.append(clause)
        if name is not None:
            self.parameters.append({"name": name, "value": value})

    def param(self, name: str, value: Any) -> str:
        self.parameters.append({"name": name, "value": value})
        return name

    @property
    def sql(self) -> str:
        return " AND ".join(self.clauses)


def recent(user_id: str, thread_id: str, types: Sequence[str], limit: int) -> CosmosQuery:
    w = _Where(user_id, thread_id)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    w.add(LIVE)
    w.param("@limit", limit)
    sql = f"SELECT TOP @limit {FIELDS} FROM c WHERE {w.sql} ORDER BY c.created_at DESC"
    return CosmosQuery(sql, w.parameters, w.partition_key)


def by_id(user_id: str, memory_id: str, types: Sequence[str]) -> CosmosQuery:
    """get(): the whole document, vector included, superseded or not. A query, not a point read: the
    thread (second key level) is not known, and the user prefix keeps it to the user's partitions."""
    w = _Where(user_id, None)
    w.add("c.id = @id", "@id", memory_id)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    return CosmosQuery(f"SELECT * FROM c WHERE {w.sql}", w.parameters)


def existing(user_id: str, ids: Sequence[str]) -> CosmosQuery:
    """What put() needs to skip unchanged documents and replace changed ones under their ETag."""
    w = _Where(user_id, None)
    w.add("ARRAY_CONTAINS(@ids, c.id)", "@ids", list(ids))
    fields = "c.id, c.thread_id, c.type, c.doc_hash, c._etag, c.content, c.content_hash, c.created_at"
    fields += ", c.superseded_by, c.superseded_at, c.passage_spans, c.passage_version"
    return CosmosQuery(f"SELECT {fields} FROM c WHERE {w.sql}", w.parameters)


def documents(user_id: str, ids: Sequence[str], types: Sequence[str]) -> CosmosQuery:
    """set_index_contexts(): these memories whole (the document hash covers the vector), with their ETag."""
    w = _Where(user_id, None)
    w.add("ARRAY_CONTAINS(@ids, c.id)", "@ids", list(ids))
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    return CosmosQuery(f"SELECT * FROM c WHERE {w.sql}", w.parameters)


def position(user_id: str, memory_id: str, types: Sequence[str]) -> CosmosQuery:
    """turns_around(): where a memory sits, superseded or not: its thread and time."""
    w = _Where(user_id, None)
    w.add("c.id = @id", "@id", memory_id)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    return CosmosQuery(f"SELECT c.thread_id, c.created_at FROM c WHERE {w.sql}", w.parameters)


def thread_turns(
    user_id: str,
    thread_id: str,
    created_at: str,
    side: Literal["before", "at", "after"],
    limit: int = 0,
) -> CosmosQuery:
    """turns_around(): a thread's active turns created before (newest first), at (unordered, all of
    them) or after (oldest first) a time, at most `limit` of them before or after. Ordered by
    created_at alone, as recent() and listing(): the store reads a cut's last time whole and orders
    ties by id itself."""
    w = _Where(user_id, thread_id)
    w.add("c.type = @type", "@type", "turn")
    w.add(LIVE)
    op = {"before": "<", "at": "=", "after": ">"}[side]
    w.add(f"c.created_at {op} @created_at", "@created_at", created_at)
    if side == "at":
        return CosmosQuery(f"SELECT {FIELDS} FROM c WHERE {w.sql}", w.parameters, w.partition_key)
    w.param("@limit", limit)
    direction = "DESC" if side == "before" else "ASC"
    sql = f"SELECT TOP @limit {FIELDS} FROM c WHERE {w.sql} ORDER BY c.created_at {direction}"
    return CosmosQuery(sql, w.parameters, w.partition_key)


def scope(user_id: str, *, thread_id: str | None = None, memory_id: str | None = None) -> CosmosQuery:
    """forget(): every document the scope names (superseded ones too), a memory's passage items with it,
    with what a delete needs and the content whose bytes it gives back to the user's stored-bytes count."""
    w = _Where(user_id, thread_id)
    if memory_id is not None:
        w.add("(c.id = @id OR c.memory_id = @id)", "@id", memory_id)
    return CosmosQuery(
        f"SELECT c.id, c.thread_id, c.type, c.content FROM c WHERE {w.sql}", w.parameters, w.partition_key
    )


def user_documents(user_id: str) -> CosmosQuery:
    """memories_of(): every document of the user but passage items (the store's own thread entries are
    filtered after)."""
    w = _Where(user_id, None)
    w.add("c.type != @passage", "@passage", PASSAGE_TYPE)
    return CosmosQuery(f"SELECT * FROM c WHERE {w.sql}", w.parameters)


def thread_entries(user_id: str) -> CosmosQuery:
    w = _Where(user_id, None)
    w.add("c.type = @type", "@type", THREAD_ENTRY_TYPE)
    return CosmosQuery(f"SELECT c.thread_id FROM c WHERE {w.sql}", w.parameters)


def thread_turn_stats(user_id: str, thread_id: str) -> CosmosQuery:
    """Aggregates inside one logical partition (cheap); GROUP BY across a user's threads would be one
    query on Azure, but single-partition aggregates keep list_threads exact without a counter to drift."""
    w = _Where(user_id, thread_id)
    w.add("c.type = @type", "@type", "turn")
    w.add(LIVE)
    sql = (
        "SELECT COUNT(1) AS message_count, SUM(c.token_count) AS token_count,"
        f" MAX(c.created_at) AS updated_at FROM c WHERE {w.sql}"
    )
    return CosmosQuery(sql, w.parameters, w.partition_key)


def thread_last_memory(user_id: str, thread_id: str, types: Sequence[str]) -> CosmosQuery:
    w = _Where(user_id, thread_id)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    w.add(LIVE)
    return CosmosQuery(f"SELECT VALUE MAX(c.created_at) FROM c WHERE {w.sql}", w.parameters, w.partition_key)


def embedding_spec() -> CosmosQuery:
    w = _Where(SYSTEM_USER, SYSTEM_USER)
    w.add("c.id = @id", "@id", "embedding_spec")
    return CosmosQuery(f"SELECT * FROM c WHERE {w.sql}", w.parameters, w.partition_key)


# -- learning: write-time dedup, reconciliation, the user profile ----------------------------------------


def by_hash(user_id: str, content_hash: str, types: Sequence[str]) -> CosmosQuery:
    """find_by_hash(): the user's active memories of these types with this content hash, oldest first."""
    w = _Where(user_id, None)
    w.add("c.content_hash = @content_hash", "@content_hash", content_hash)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    w.add(LIVE)
    return CosmosQuery(f"SELECT {FIELDS} FROM c WHERE {w.sql} ORDER BY c.created_at", w.parameters)


def similar(user_id: str, vector: Sequence[float], types: Sequence[str], limit: int) -> CosmosQuery:
    """similar(): the `limit` active memories nearest to the vector, with their cosine similarity as score
    (the containers' distance function is cosine: -1 least to +1 most similar, most similar first). The
    similarity floor is applied to these rows by the store, which gives the same answer as filtering
    first: the rows at or above the floor are a prefix of this order."""
    w = _Where(user_id, None)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    w.add(LIVE)
    w.param("@limit", limit)
    w.param("@vector", list(vector))
    sql = (
        f"SELECT TOP @limit {FIELDS}, VectorDistance(c.embedding, @vector) AS score FROM c WHERE {w.sql}"
        " ORDER BY VectorDistance(c.embedding, @vector)"
    )
    return CosmosQuery(sql, w.parameters)


def active(user_id: str, types: Sequence[str], limit: int, changed_since: datetime | None) -> CosmosQuery:
    """list_active(): the user's active memories of these types across threads, most recently changed
    first (changed_at = updated_at, else created_at; see cosmos/documents.py)."""
    w = _Where(user_id, None)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    w.add(LIVE)
    if changed_since is not None:
        w.add("c.changed_at > @changed_since", "@changed_since", timestamp(changed_since))
    w.param("@limit", limit)
    sql = f"SELECT TOP @limit {FIELDS}, c.changed_at FROM c WHERE {w.sql} ORDER BY c.changed_at DESC"
    return CosmosQuery(sql, w.parameters)


def search_terms(query: SearchQuery) -> list[str]:
    """The query's keywords, at most MAX_TERMS (computed once with the query: SearchQuery.terms)."""
    return list(query.terms.keywords)


def search_plan(query: SearchQuery, vector: Sequence[float] | None) -> SearchPlan:
    """Which search runs. No keywords left (an all-stopword query) falls back to vector-only; a text
    query of quoted phrases only filters on them, newest first."""
    terms = search_terms(query)
    use_text = (
        query.mode in ("hybrid", "text") and bool(terms) and (query.mode == "text" or query.text_weight > 0)
    )
    use_vector = (
        query.mode in ("hybrid", "vector")
        and vector is not None
        and (query.mode == "vector" or query.vector_weight > 0)
    )
    if use_text and use_vector:
        return "hybrid"
    if use_vector:
        return "vector"
    if use_text:
        return "text"
    if query.phrases and query.mode in ("hybrid", "text"):
        return "phrases"
    return "none"


def _search_where(
    user_id: str, query: SearchQuery, type_clause: str, types: Sequence[str], *, phrases: bool
) -> _Where:
    """A search of the user's memory's filters: thread (or threads), `type_clause` on `types`, current at
    as_of, time range and, with `phrases`, the quoted phrases (on the content, which only memory items
    hold). One thread, named either way, is a single-partition query."""
    thread = query.thread_id
    if thread is None and query.threads is not None and len(query.threads) == 1:
        thread = query.threads[0]  # one thread: a single-partition query
    w = _Where(user_id, thread)
    if query.threads is not None and thread not in query.threads:
        # Several threads (or a thread_id outside them: nothing). A memory without a thread is in none:
        # its partition value (documents.USER_THREAD) is no valid thread id.
        w.add("ARRAY_CONTAINS(@threads, c.thread_id)", "@threads", list(query.threads))
    w.add(type_clause, "@types", list(types))
    _current(w, query.as_of)
    if query.since is not None:
        w.add("c.created_at >= @since", "@since", timestamp(query.since))
    if query.until is not None:
        w.add("c.created_at <= @until", "@until", timestamp(query.until))
    for i, phrase in enumerate(query.phrases if phrases else ()):
        # LOWER on both sides: the phrase is matched case-insensitively and verbatim (no stemming).
        w.add(f"CONTAINS(LOWER(c.content), @phrase{i})", f"@phrase{i}", phrase.lower())
    return w


def search(
    user_id: str, query: SearchQuery, vector: Sequence[float] | None, types: Sequence[str], plan: SearchPlan
) -> CosmosQuery:
    """One container's search of the user's memory for `plan` ("vector", "text" or "phrases"; a hybrid
    search sends the first two), restricted to `types`."""
    w = _search_where(user_id, query, "ARRAY_CONTAINS(@types, c.type)", types, phrases=True)
    w.param("@limit", query.per_owner)
    names: list[str] = []
    if plan == "text":
        names = [w.param(f"@term{i}", term) for i, term in enumerate(search_terms(query))]
    full_text_score = f"FullTextScore(c.index_text, {', '.join(names)})"
    if plan == "vector":
        w.param("@vector", list(vector or []))

    # With each item's vector: a memory found by its words gets its cosine to the query from it
    # (search.py), in the same response.
    select = f"SELECT TOP @limit {FIELDS}, c.embedding"
    match plan:
        case "vector":
            sql = (
                f"{select}, VectorDistance(c.embedding, @vector) AS score FROM c WHERE {w.sql}"
                " ORDER BY VectorDistance(c.embedding, @vector)"
            )
        case "text":
            w.add(f"FullTextContainsAny(c.index_text, {', '.join(names)})")
            sql = f"{select} FROM c WHERE {w.sql} ORDER BY RANK {full_text_score}"
        case "phrases":
            sql = f"{select} FROM c WHERE {w.sql} ORDER BY c.created_at DESC"
        case _:
            raise ValueError(f"no query for search plan {plan!r}")
    return CosmosQuery(sql, w.parameters, w.partition_key)


def passage_search(
    user_id: str, query: SearchQuery, vector: Sequence[float], types: Sequence[str]
) -> CosmosQuery:
    """The vector side over passage items (a long memory's passages after its first): the nearest
    PASSAGES_PER_HIT x query.per_owner, by the copies of their memory's type, time and supersession.
    Phrases are checked on the memories these passages name (search_memories), which hold the content."""
    w = _search_where(
        user_id, query, "c.type = @passage AND ARRAY_CONTAINS(@types, c.memory_type)", types, phrases=False
    )
    w.parameters.append({"name": "@passage", "value": PASSAGE_TYPE})
    w.param("@limit", query.per_owner * PASSAGES_PER_HIT)
    w.param("@vector", list(vector))
    sql = (
        "SELECT TOP @limit c.memory_id, c.passage_version, c.span,"
        f" VectorDistance(c.embedding, @vector) AS score FROM c WHERE {w.sql}"
        " ORDER BY VectorDistance(c.embedding, @vector)"
    )
    return CosmosQuery(sql, w.parameters, w.partition_key)


def passages_of(user_id: str, thread_id: str, memory_id: str, version: str) -> CosmosQuery:
    """get(): a memory's passage items of its current content, in its own logical partition."""
    w = _Where(user_id, thread_id)
    w.add("c.memory_id = @memory_id", "@memory_id", memory_id)
    w.add("c.passage_version = @version", "@version", version)
    w.add("c.type = @passage", "@passage", PASSAGE_TYPE)
    return CosmosQuery(f"SELECT c.position, c.embedding FROM c WHERE {w.sql}", w.parameters, w.partition_key)


def search_memories(
    user_id: str, query: SearchQuery, ids: Sequence[str], types: Sequence[str]
) -> CosmosQuery:
    """The memories passages were found for, if they pass every filter of the search (phrases too)."""
    w = _search_where(user_id, query, "ARRAY_CONTAINS(@types, c.type)", types, phrases=True)
    w.add("ARRAY_CONTAINS(@ids, c.id)", "@ids", list(ids))
    return CosmosQuery(f"SELECT {FIELDS}, c.embedding FROM c WHERE {w.sql}", w.parameters, w.partition_key)


def listing(query: ListQuery, types: Sequence[str], *, created_at: str | None = None) -> CosmosQuery:
    """list_memories(): one container's next page, ordered by created_at alone (ordering by two fields
    needs a composite index the containers do not have). With `created_at`, instead every memory of
    the page created at exactly that time, unordered: the store reads a full page's last time whole and
    orders its ties by id itself, so the (created_at, id) keyset holds."""
    w = _Where(query.user_id, query.thread_id)
    w.add("ARRAY_CONTAINS(@types, c.type)", "@types", list(types))
    if query.kind is not None:
        w.add("c.metadata.fact_type = @kind", "@kind", query.kind)
    if query.since is not None:
        w.add("c.created_at >= @since", "@since", timestamp(query.since))
    if query.until is not None:
        w.add("c.created_at <= @until", "@until", timestamp(query.until))
    if not query.include_superseded:
        _current(w, query.as_of)
    elif query.as_of is not None:
        w.add("c.created_at <= @as_of", "@as_of", timestamp(query.as_of))
    op = "<" if query.order == "newest" else ">"
    if query.after is not None:
        at, after_id = w.param("@after_at", timestamp(query.after[0])), w.param("@after_id", query.after[1])
        w.add(f"(c.created_at {op} {at} OR (c.created_at = {at} AND c.id {op} {after_id}))")
    if created_at is not None:
        w.add("c.created_at = @created_at", "@created_at", created_at)
        return CosmosQuery(f"SELECT {FIELDS} FROM c WHERE {w.sql}", w.parameters, w.partition_key)
    w.param("@limit", query.limit)
    direction = "DESC" if query.order == "newest" else "ASC"
    sql = f"SELECT TOP @limit {FIELDS} FROM c WHERE {w.sql} ORDER BY c.created_at {direction}"
    return CosmosQuery(sql, w.parameters, w.partition_key)


def _current(w: _Where, as_of: datetime | None) -> None:
    """Only current memories: not superseded; or, as of a moment, created by then and superseded (if
    ever) after it. A missing or null superseded_at compares as undefined, which the OR leaves false."""
    if as_of is None:
        w.add(LIVE)
        return
    at = w.param("@as_of", timestamp(as_of))
    w.add(f"c.created_at <= {at}")
    w.add(f"({LIVE} OR c.superseded_at > {at})")
