"""Long memories as passages on Cosmos DB: the passage items' layout and how a search ranks memories by
their best passage. Pure functions, no I/O (the SQL is in queries.py, the writes in writes.py).

A memory of 2+ passages (search/passages.py) is stored as its memory item, which keeps the first
passage's vector in `embedding` and the passages' spans in `passage_spans`, plus one item per further
passage in the same logical partition ([user_id, thread_id]):

    {"id": "<memory id>:p:<version>:<i>", "type": "passage", "memory_id", "memory_type",
     "passage_version": <version>, "position": i, "span": [start, end], "embedding", "user_id", "thread_id", "created_at", "superseded_by",
     "superseded_at", "ttl" (a turn's, when turns expire)}

The version is the start of the memory's content hash: a rewrite with other content writes its passages
under new ids before the memory item changes, and deletes the old ones after, so a memory is never
ranked by passages of two contents, nor by half of them. A search only takes a passage whose version
is the memory item's `passage_version`: passages of a write that never reached its memory item (a
crash) and of a content replaced since are never used; forget removes them with the memory (by
`memory_id`). Passage items hold no text (the content is the memory's): they are counted as 0 stored
bytes, and the full-text index never sees them. `created_at`, `superseded_*` and `memory_type` are
copies for the vector query's filters; every hit is still checked against its memory item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_memory.errors import EmbeddingMismatchError, InvalidInputError
from mcp_memory.models import Memory
from mcp_memory.search.passages import passages
from mcp_memory.search.terms import keywords

PASSAGE_TYPE = "passage"
# The memory fields a passage item copies for the search filters (same names, same formats).
COPIED_FIELDS = ("created_at", "superseded_by", "superseded_at")
# The vector side reads this many passages per hit asked for: one memory may hold several of the best.
PASSAGES_PER_HIT = 3

Span = tuple[int, int]


def passage_version(content_hash: str) -> str:
    return content_hash[:16]


def passage_id(memory_id: str, version: str, index: int) -> str:
    """Cosmos DB ids may not hold '/', '\\', '?' or '#'; ':' is allowed."""
    return f"{memory_id}:p:{version}:{index}"


def passage_spans(memory: Memory, dimension: int) -> list[list[int]] | None:
    """The spans to store for a memory written with passage_embeddings (None: none were given), checked
    against its content and the store's vector dimension."""
    vectors = memory.passage_embeddings
    if vectors is None:
        return None
    spans = passages(memory.content)
    if len(vectors) != len(spans):
        raise InvalidInputError(
            f"memory {memory.id} has {len(vectors)} passage vectors for {len(spans)} passages of its content"
        )
    for vector in vectors:
        if len(vector) != dimension:
            raise EmbeddingMismatchError(
                f"memory {memory.id} has a {len(vector)}-dimension passage vector; the store holds {dimension}"
            )
    return [[start, end] for start, end in spans] if len(spans) > 1 else None


def passage_documents(memory: Memory, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of a memory's passages after its first, from its memory item `doc` (to_document)."""
    spans, vectors = doc.get("passage_spans"), memory.passage_embeddings
    if not spans or vectors is None:
        return []
    version = doc["passage_version"]
    items = []
    for index in range(1, len(spans)):
        item = {
            "id": passage_id(memory.id, version, index),
            "user_id": doc["user_id"],
            "thread_id": doc["thread_id"],
            "type": PASSAGE_TYPE,
            "memory_id": memory.id,
            "memory_type": doc["type"],
            "passage_version": version,
            "position": index,
            "span": list(spans[index]),
            "embedding": vectors[index],
            **{name: doc[name] for name in COPIED_FIELDS},
        }
        if "ttl" in doc:
            item["ttl"] = doc["ttl"]
        items.append(item)
    return items


def stored_passage_ids(doc: dict[str, Any] | None) -> list[str]:
    """The passage items a stored memory item (`doc`, read back) names."""
    if doc is None or not doc.get("passage_spans") or not doc.get("passage_version"):
        return []
    count = len(doc["passage_spans"])
    return [passage_id(doc["id"], doc["passage_version"], i) for i in range(1, count)]


def copies_patch(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Patch operations that bring a passage item's copies in line with its memory item `doc`."""
    return [
        *({"op": "set", "path": f"/{name}", "value": doc.get(name)} for name in COPIED_FIELDS),
        {"op": "set", "path": "/memory_type", "value": doc["type"]},
    ]


def copies_differ(doc: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Whether a rewrite of a memory item changes what its passage items copy."""
    return old is None or any(doc.get(k) != old.get(k) for k in (*COPIED_FIELDS, "type"))


def with_passages(memory: Memory, spans: Sequence[Sequence[int]], items: Sequence[dict[str, Any]]) -> Memory:
    """The memory read by get() with its passage vectors, when every passage item of its content is
    there (a forget running meanwhile may have taken some: then only its first vector)."""
    ordered = sorted(items, key=lambda d: int(d["position"]))
    if memory.embedding is None or [int(d["position"]) for d in ordered] != list(range(1, len(spans))):
        return memory
    return memory.model_copy(
        update={
            "passage_embeddings": [
                memory.embedding,
                *([float(x) for x in d["embedding"]] for d in ordered),
            ]
        }
    )


# -- ranking memories by their best passage -----------------------------------------------------------


def first_span(doc: dict[str, Any]) -> Span | None:
    spans = doc.get("passage_spans")
    return (int(spans[0][0]), int(spans[0][1])) if spans else None


def best_passages(
    rows: Sequence[dict[str, Any]], memories: dict[str, dict[str, Any]]
) -> dict[str, tuple[Span, float]]:
    """Each memory's best passage among `rows` (passage query rows: memory_id, passage_version, span,
    score), counting only rows whose memory is in `memories` (passed the search's filters) with that
    passage version."""
    best: dict[str, tuple[Span, float]] = {}
    for row in rows:
        memory = memories.get(row["memory_id"])
        if memory is None or memory.get("passage_version") != row["passage_version"]:
            continue
        score = float(row["score"])
        if row["memory_id"] not in best or score > best[row["memory_id"]][1]:
            best[row["memory_id"]] = ((int(row["span"][0]), int(row["span"][1])), score)
    return best


def vector_ranking(
    memory_rows: Sequence[dict[str, Any]],
    passages_best: dict[str, tuple[Span, float]],
    memories: dict[str, dict[str, Any]],
) -> list[tuple[dict[str, Any], Span | None, float]]:
    """Memories by their best cosine, most similar first: a memory item's own vector (its first
    passage; `score`) or its best further passage, whichever is nearer."""
    found: dict[str, tuple[dict[str, Any], Span | None, float]] = {
        row["id"]: (row, first_span(row), float(row["score"])) for row in memory_rows
    }
    for memory_id, (span, score) in passages_best.items():
        if memory_id not in found or score > found[memory_id][2]:
            found[memory_id] = (memories[memory_id], span, score)
    return sorted(found.values(), key=lambda f: f[2], reverse=True)


def passage_by_terms(doc: dict[str, Any], words: Sequence[str]) -> Span | None:
    """For a long memory found by its words only: the passage holding most of the query's keywords
    (`words`: QueryTerms.words; the first on a tie); None for a memory of one passage."""
    spans = doc.get("passage_spans")
    if not spans:
        return None
    wanted = set(words)
    content = doc["content"]

    def overlap(span: list[int]) -> int:
        return len(wanted & set(keywords(content[span[0] : span[1]], limit=10_000)))

    best = max(spans, key=overlap)
    return int(best[0]), int(best[1])
