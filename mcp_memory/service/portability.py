"""Export and import: a user's memories as JSON Lines, so they can leave or move.

Format `mcp-memory-export`, version 1, one JSON object a line, each with a `kind`:

    {"kind": "header", "format": "mcp-memory-export", "version": 1, "user_id": "ann",
     "exported_at": "2026-...Z", "counts": {"memory": 12, "revision": 3, "thread": 2}}
    {"kind": "memory", "id": "turn_...", "type": "turn", "thread_id": "t1", "role": "user",
     "content": "...", "metadata": {...}, "created_at": "...", "updated_at": null,
     "superseded_by": null, "supersede_reason": null, "superseded_at": null,
     "provenance": {"written_by": "user", "thread_id": "t1", "written_at": "...", "origin": "mcp-memory"}}
    {"kind": "revision", "memory_id": "fact_...", "seq": 1, "action": "create", "cause": "extraction",
     "content": "...", "created_at": "...", ...}
    {"kind": "thread", "thread_id": "t1", "context_window": 8000, "data": {...}}
    {"kind": "graph", "entities": [{"name", "entityType", "observations"}], "relations": [{"from", "to",
     "relationType"}]}   (the knowledge graph, as the reference memory server shapes it; at most one)

Observations travel inside the graph line, not as memory lines: an observation's memory id is derived
from its owner, entity and words, so the importing user's graph gives them their own.

Superseded memories and revisions are included: history travels with the user. Vectors are not (they
belong to one embedding model); import embeds again. Import writes everything to the importing
user, whatever `user_id` the header names, keeps memory ids (so importing twice stores once), and
re-checks content flags, since the file is untrusted input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_memory import redaction, safety
from mcp_memory import validation as check
from mcp_memory.errors import InvalidInputError, shown
from mcp_memory.models import AnyRole, Memory, MemoryType, WorkingMemory, author_of, summary_id, utcnow
from mcp_memory.views import EntityView, GraphResult, RelationView

FORMAT, VERSION = "mcp-memory-export", 1
EXPORT_FORMAT = f"{FORMAT}/{VERSION}"
MAX_IMPORT_LINES = 200_000


class Provenance(BaseModel):
    written_by: str = Field(description="Who or what wrote it: user, assistant, tool, system, or a process.")
    thread_id: str | None
    written_at: datetime
    origin: str = Field(description='"mcp-memory", or where an imported memory came from.')


class ExportHeader(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: Literal["header"] = "header"
    format: Literal["mcp-memory-export"] = "mcp-memory-export"
    version: Literal[1] = 1
    user_id: str
    exported_at: datetime
    counts: dict[str, int] = Field(default_factory=dict)


class MemoryLine(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: Literal["memory"] = "memory"
    id: str = Field(min_length=1, max_length=256)
    type: MemoryType
    thread_id: str | None = None
    role: AnyRole | None = None
    content: str = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime | None = None
    superseded_by: str | None = None
    supersede_reason: str | None = None
    superseded_at: datetime | None = None
    provenance: Provenance | None = None
    # Who wrote it (a space's member, or the owner of personal memory). Information only: an import is
    # written by whoever imports it, so no file can put words in someone else's name.
    author: str | None = None


class RevisionLine(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: Literal["revision"] = "revision"
    memory_id: str
    seq: int = 0
    action: str
    cause: str
    content: str
    memory_type: MemoryType
    thread_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    superseded_by: str | None = None
    supersede_reason: str | None = None
    source_text: str | None = None
    created_at: datetime


class ThreadLine(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: Literal["thread"] = "thread"
    thread_id: str
    context_window: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)


def provenance_of(memory: Memory) -> Provenance:
    imported = memory.metadata.get("imported_from")
    writer: str
    if memory.role is not None:
        writer = memory.role
    elif memory.type == "summary":
        writer = f"summarizer ({memory.metadata.get('summarizer', 'unknown')})"
    else:
        writer = str(memory.metadata.get("source") or memory.type)
    return Provenance(
        written_by=writer,
        thread_id=memory.thread_id,
        written_at=memory.created_at,
        origin=f"import of {imported}" if isinstance(imported, str) else "mcp-memory",
    )


def export_lines(
    user_id: str,
    memories: Sequence[Memory],
    revisions: Sequence[BaseModel],
    threads: Sequence[WorkingMemory],
    graph: GraphResult | None = None,
) -> list[str]:
    body: list[BaseModel] = [
        MemoryLine(
            id=m.id,
            type=m.type,
            thread_id=m.thread_id,
            role=m.role,
            content=m.content,
            metadata=m.metadata,
            created_at=m.created_at,
            updated_at=m.updated_at,
            superseded_by=m.superseded_by,
            supersede_reason=m.supersede_reason,
            superseded_at=m.superseded_at,
            provenance=provenance_of(m),
            author=m.written_by,
        )
        for m in memories
        if m.content  # an empty memory (a profile before any fact) carries nothing to move
    ]
    body += [RevisionLine.model_validate(r.model_dump()) for r in revisions]
    body += [ThreadLine(thread_id=t.thread_id, context_window=t.context_window, data=t.data) for t in threads]
    counts = {"memory": len(memories), "revision": len(revisions), "thread": len(threads)}
    if graph is not None and (graph.entities or graph.relations):
        body.append(GraphLine(entities=graph.entities, relations=graph.relations))
        counts |= {"entity": len(graph.entities), "relation": len(graph.relations)}
    header = ExportHeader(user_id=user_id, exported_at=utcnow(), counts=counts)
    return [line.model_dump_json() for line in [header, *body]]


class GraphLine(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: Literal["graph"] = "graph"
    entities: list[EntityView] = Field(default_factory=list)
    relations: list[RelationView] = Field(default_factory=list)


class ParsedImport(BaseModel):
    header: ExportHeader
    memories: list[MemoryLine]
    revisions: list[RevisionLine]
    threads: list[ThreadLine]
    graph: GraphLine | None = None


def parse(jsonl: str) -> ParsedImport:
    """Read and check the whole file before anything is written: one bad line rejects the import."""
    lines = [(n, line) for n, line in enumerate(jsonl.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InvalidInputError("the import is empty: give the JSONL text that export_memories produced")
    if len(lines) > MAX_IMPORT_LINES:
        raise InvalidInputError(f"the import has {len(lines):,} lines; the limit is {MAX_IMPORT_LINES:,}")
    parsed: dict[str, list[Any]] = {"header": [], "memory": [], "revision": [], "thread": [], "graph": []}
    models: dict[str, type[BaseModel]] = {
        "header": ExportHeader,
        "memory": MemoryLine,
        "revision": RevisionLine,
        "thread": ThreadLine,
        "graph": GraphLine,
    }
    for index, (number, line) in enumerate(lines):
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"import line {number} is not JSON: {e.msg}") from e
        kind = raw.get("kind") if isinstance(raw, dict) else None
        if kind not in models:
            raise InvalidInputError(
                f"import line {number} has kind {shown(kind)}: expected header, memory, revision, thread or graph"
            )
        if (kind == "header") != (index == 0):
            raise InvalidInputError(
                f"import line {number}: the first line, and only it, must be the {FORMAT} header"
            )
        try:
            parsed[kind].append(models[kind].model_validate(raw))
        except ValidationError as e:
            problem = e.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise InvalidInputError(f"import line {number} ({kind}): {where}: {problem['msg']}") from e
    for memory in parsed["memory"]:
        if memory.thread_id is not None:
            check.thread_id(memory.thread_id, "thread_id of imported memory " + memory.id)
    for thread in parsed["thread"]:
        check.thread_id(thread.thread_id)
    return ParsedImport(
        header=parsed["header"][0],
        memories=parsed["memory"],
        revisions=parsed["revision"],
        threads=parsed["thread"],
        graph=GraphLine(
            entities=[e for g in parsed["graph"] for e in g.entities],
            relations=[r for g in parsed["graph"] for r in g.relations],
        )
        if parsed["graph"]
        else None,
    )


def redacted(parsed: ParsedImport) -> ParsedImport:
    """The import with credentials and <private> spans replaced (redaction/) in what it would store:
    memories' and revisions' text and metadata, threads' data. The graph's names and observations are
    redacted by the graph's own checks (service/graph/checks.py)."""
    memories = []
    for line in parsed.memories:
        content, metadata = redaction.redact_memory(line.content, line.metadata)
        memories.append(line.model_copy(update={"content": content, "metadata": metadata}))
    revisions = []
    for revision in parsed.revisions:
        content, metadata = redaction.redact_memory(revision.content, revision.metadata)
        source = redaction.redact(revision.source_text).text if revision.source_text else revision.source_text
        revisions.append(
            revision.model_copy(update={"content": content, "metadata": metadata, "source_text": source})
        )
    threads = [t.model_copy(update={"data": redaction.redact_values(t.data)}) for t in parsed.threads]
    return parsed.model_copy(update={"memories": memories, "revisions": revisions, "threads": threads})


def to_memories(user_id: str, parsed: ParsedImport, max_chars: int) -> list[Memory]:
    """The memories to write for `user_id`: owner rewritten, summary ids re-derived, flags re-checked."""
    source = f"{parsed.header.user_id}@{parsed.header.exported_at.isoformat()}"
    renamed = {
        m.id: summary_id(user_id, m.thread_id) for m in parsed.memories if m.type == "summary" and m.thread_id
    }
    memories = []
    for line in parsed.memories:
        try:
            content = check.content(line.content, max_chars)
        except InvalidInputError as e:
            raise InvalidInputError(f"imported memory {line.id}: {e}") from e
        metadata = safety.stamp(check.metadata(line.metadata), content)
        metadata.setdefault("imported_from", source)
        memories.append(
            Memory(
                id=renamed.get(line.id, line.id),
                user_id=user_id,
                thread_id=line.thread_id,
                role=line.role,
                type=line.type,
                content=content,
                metadata=metadata,
                created_at=line.created_at,
                updated_at=line.updated_at,
                superseded_by=renamed.get(line.superseded_by or "", line.superseded_by),
                supersede_reason=line.supersede_reason,
                superseded_at=line.superseded_at,
                author=author_of(user_id),  # imported into a space: by whoever imported it
            )
        )
    return memories


async def revisions_of(store: Any, user_id: str, memories: Sequence[Memory]) -> list[BaseModel]:
    """Every revision of the user's memories, oldest first per memory; [] without a revision store."""
    if store is None:
        return []
    found: list[BaseModel] = []
    for memory in memories:
        found += await store.history(user_id, memory.id)
    return found


async def pending_revisions(
    store: Any, user_id: str, parsed: ParsedImport, memories: Sequence[Memory]
) -> list[Any]:
    """The imported history to append: that of each memory with none here yet (so importing twice adds
    none), in order, as Revisions of `user_id`."""
    if store is None or not parsed.revisions:
        return []
    from mcp_memory.models import Revision

    renamed = {line.id: memory.id for line, memory in zip(parsed.memories, memories, strict=True)}
    pending: list[Any] = []
    for memory_id in dict.fromkeys(r.memory_id for r in parsed.revisions):
        target = renamed.get(memory_id, memory_id)
        if await store.history(user_id, target):
            continue
        for line in sorted((r for r in parsed.revisions if r.memory_id == memory_id), key=lambda r: r.seq):
            pending.append(
                Revision.model_validate(
                    line.model_dump(exclude={"kind", "seq"}) | {"user_id": user_id, "memory_id": target}
                )
            )
    return pending
