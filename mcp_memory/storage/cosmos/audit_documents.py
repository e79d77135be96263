"""The audit trail's documents and queries on Azure Cosmos DB (storage/cosmos/audit.py keeps the log):
what a record, the head and the key look like in the learning container, and the pure SQL builders
(caller values only as parameters)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from mcp_memory.audit.log import AuditQuery
from mcp_memory.audit.records import AuditRecord
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.queries import CosmosQuery

AUDIT_PARTITION = "~audit"  # both partition-key levels; never a memory id, so never a memory's history
RECORD_TYPE, HEAD_TYPE, KEY_TYPE = "audit_record", "audit_head", "audit_key"
HEAD_ID, KEY_ID = "audit-head", "audit-key"
RECORD_FIELDS = tuple(AuditRecord.model_fields)
PARTITION_KEY = [AUDIT_PARTITION, AUDIT_PARTITION]
BOOKKEEPING = ("id", "user_id", "group_id", "type")

HeadChange = Callable[[dict[str, Any]], dict[str, Any] | None]


def record_id(seq: int) -> str:
    return f"audit-{seq:012d}"


def record_document(fields: dict[str, Any]) -> dict[str, Any]:
    return {**bookkeeping(record_id(fields["seq"]), RECORD_TYPE), **fields}


def record_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored record document without its bookkeeping and Cosmos DB's system properties (_etag, ...)."""
    return {k: v for k, v in doc.items() if k not in BOOKKEEPING and not k.startswith("_")}


def checked(doc: dict[str, Any]) -> dict[str, Any]:
    """What verify walks: the record, or, when a field was added, removed or mistyped or the id does not
    name its seq, a stand-in whose hash cannot match (the record was changed)."""
    record = record_of(doc)
    if (
        set(record) == set(RECORD_FIELDS)
        and doc.get("id") == record_id(record["seq"])
        and isinstance(record["ledger"], str)
        and isinstance(record["actor"], str)
        and isinstance(record["memory_ids"], list)
    ):
        return record
    return {
        "seq": doc.get("seq"),
        "prev_hash": record.get("prev_hash", ""),
        "hash": "",
        "ledger": "",
        "actor": "",
        "memory_ids": [],
    }


# -- SQL (pure builders; caller values only as parameters) ---------------------------------------------


def bookkeeping(doc_id: str, kind: str) -> dict[str, Any]:
    return {"id": doc_id, "user_id": AUDIT_PARTITION, "group_id": AUDIT_PARTITION, "type": kind}


def audit_query(select: str, clauses: list[str], params: list[dict[str, Any]], tail: str = "") -> CosmosQuery:
    where = " AND ".join(["c.user_id = @partition", "c.group_id = @partition", *clauses])
    return CosmosQuery(
        f"SELECT {select} FROM c WHERE {where}{tail}",
        [{"name": "@partition", "value": AUDIT_PARTITION}, *params],
        PARTITION_KEY,
    )


def document_query(doc_id: str) -> CosmosQuery:
    """One document by id. A query, not a point read: the local test server answers a point read of a
    missing item with 500."""
    return audit_query("*", ["c.id = @id"], [{"name": "@id", "value": doc_id}])


def records_query(query: AuditQuery, *, after: int | None = None, page: int | None = None) -> CosmosQuery:
    """Records matching the filters: newest first (page), or oldest first after a seq (export, verify)."""
    clauses = ["c.type = @type"]
    params: list[dict[str, Any]] = [{"name": "@type", "value": RECORD_TYPE}]
    for clause, name, value in (
        ("c.ledger = @ledger", "@ledger", query.ledger),
        ("c.actor = @actor", "@actor", query.actor),
        ("c.action = @action", "@action", query.action),
        ("c.thread_id = @thread_id", "@thread_id", query.thread_id),
        ("c.at >= @since", "@since", timestamp(query.since) if query.since else None),
        ("c.at < @until", "@until", timestamp(query.until) if query.until else None),
        ("c.seq < @before", "@before", query.before),
        ("c.seq > @after", "@after", after),
    ):
        if value is not None:
            clauses.append(clause)
            params.append({"name": name, "value": value})
    params.append({"name": "@limit", "value": query.limit if page is None else page})
    order = "DESC" if after is None else "ASC"
    return audit_query("TOP @limit *", clauses, params, f" ORDER BY c.seq {order}")


def newest_before_query(before: datetime) -> CosmosQuery:
    """prune(): the newest record written before `before` (everything up to it goes)."""
    return audit_query(
        "TOP 1 c.seq, c.hash",
        ["c.type = @type", "c.at < @before"],
        [{"name": "@type", "value": RECORD_TYPE}, {"name": "@before", "value": timestamp(before)}],
        " ORDER BY c.seq DESC",
    )


def through_query(seq: int) -> CosmosQuery:
    """prune(): the ids of every record up to `seq`."""
    return audit_query(
        "c.id",
        ["c.type = @type", "c.seq <= @seq"],
        [{"name": "@type", "value": RECORD_TYPE}, {"name": "@seq", "value": seq}],
    )


def of_user_query(user_id: str, *, own_trail_only: bool = False) -> CosmosQuery:
    """pseudonymize(): the records the user made or whose ledger is theirs, and membership records (the
    caller keeps those that name the user)."""
    return audit_query(
        "*",
        [
            "c.type = @type",
            "c.ledger = @user"
            if own_trail_only
            else "(c.actor = @user OR c.ledger = @user OR c.action = @membership)",
        ],
        [
            {"name": "@type", "value": RECORD_TYPE},
            {"name": "@user", "value": user_id},
            {"name": "@membership", "value": "membership"},
        ],
    )
