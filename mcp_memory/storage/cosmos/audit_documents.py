"""The audit trail's documents and queries on Azure Cosmos DB (storage/cosmos/audit.py keeps the log):
what a record, a chain's anchor, the split and the key look like in the learning container, and the pure
SQL builders (caller values only as parameters).

Partitions ([user_id, group_id]; "~audit" is outside the memory-id alphabet of revisions' group ids, as
"~counters" and "~graph" are):
- [chain, "~audit"]: one ledger's chain (audit/records.py `chain_of`: the ledger's pseudonym, or the
  space): its records, id `audit-<seq, 12 digits>`, holding exactly the record's fields, and its anchor
  ("audit-anchor": the seq and hash of the last record retention removed), so reading one ledger's
  trail is a single-partition query;
- ["~audit", "~audit"]: the deployment's pseudonym key ("audit-key", created once) and the split
  ("audit-split": where every chain starts, the archive's tip, and the archive's retention anchor).
  Before chains per ledger, this partition also held the single chain and its head; those records are
  moved, as they are, into their ledgers' partitions (the archive: seqs up to the split).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcp_memory.audit.log import AuditQuery
from mcp_memory.audit.records import AuditRecord
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.queries import CosmosQuery

AUDIT_PARTITION = "~audit"  # a chain's second partition-key level; both levels of the deployment's
RECORD_TYPE, HEAD_TYPE, KEY_TYPE = "audit_record", "audit_head", "audit_key"
ANCHOR_TYPE, SPLIT_TYPE = "audit_anchor", "audit_split"
HEAD_ID, KEY_ID, ANCHOR_ID, SPLIT_ID = "audit-head", "audit-key", "audit-anchor", "audit-split"
RECORD_FIELDS = tuple(AuditRecord.model_fields)
DEPLOYMENT = [AUDIT_PARTITION, AUDIT_PARTITION]
BOOKKEEPING = ("id", "user_id", "group_id", "type")


def partition_of(chain: str) -> list[str]:
    return [chain, AUDIT_PARTITION]


def record_id(seq: int) -> str:
    return f"audit-{seq:012d}"


def record_document(chain: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {**bookkeeping(chain, record_id(fields["seq"]), RECORD_TYPE), **fields}


def record_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored record document without its bookkeeping and Cosmos DB's system properties (_etag, ...)."""
    return {k: v for k, v in doc.items() if k not in BOOKKEEPING and not k.startswith("_")}


def checked(doc: dict[str, Any], chain: str | None) -> dict[str, Any]:
    """What verify walks: the record, or, when a field was added, removed or mistyped, the id does not
    name its seq or (chain given) the record's ledger is not its chain's, a stand-in whose hash cannot
    match (the record was changed)."""
    record = record_of(doc)
    if (
        set(record) == set(RECORD_FIELDS)
        and doc.get("id") == record_id(record["seq"])
        and isinstance(record["ledger"], str)
        and isinstance(record["actor"], str)
        and isinstance(record["memory_ids"], list)
        and (chain is None or doc.get("user_id") == chain)
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


def bookkeeping(chain: str, doc_id: str, kind: str) -> dict[str, Any]:
    return {"id": doc_id, "user_id": chain, "group_id": AUDIT_PARTITION, "type": kind}


# -- SQL (pure builders; caller values only as parameters) ---------------------------------------------


def _query(
    chain: str | None, select: str, clauses: list[str], params: list[dict[str, Any]], tail: str = ""
) -> CosmosQuery:
    """Within one chain's partition, or (chain None) across every chain's: the deployment's reads."""
    where = ["c.group_id = @group", *clauses]
    values = [{"name": "@group", "value": AUDIT_PARTITION}, *params]
    if chain is not None:
        where.insert(0, "c.user_id = @chain")
        values.append({"name": "@chain", "value": chain})
    return CosmosQuery(
        f"SELECT {select} FROM c WHERE {' AND '.join(where)}{tail}",
        values,
        partition_of(chain) if chain is not None else None,
    )


def document_query(chain: str, doc_id: str) -> CosmosQuery:
    """One document by id. A query, not a point read: the local test server answers a point read of a
    missing item with 500."""
    return _query(chain, "*", ["c.id = @id"], [{"name": "@id", "value": doc_id}])


def _record_filters(query: AuditQuery) -> tuple[list[str], list[dict[str, Any]]]:
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
        ("c.at < @before_at", "@before_at", timestamp(query.before_at) if query.before_at else None),
    ):
        if value is not None:
            clauses.append(clause)
            params.append({"name": name, "value": value})
    return clauses, params


def page_query(chain: str | None, query: AuditQuery) -> CosmosQuery:
    """A page newest first: one ledger's by seq (its chain's partition), or every ledger's by time."""
    clauses, params = _record_filters(query)
    params.append({"name": "@limit", "value": query.limit})
    order = " ORDER BY c.seq DESC" if chain is not None else " ORDER BY c.at DESC"
    return _query(chain, "TOP @limit *", clauses, params, order)


def chain_query(chain: str, query: AuditQuery, *, after: int, page: int) -> CosmosQuery:
    """One chain's records after a seq, oldest first (export, verify)."""
    clauses, params = _record_filters(query)
    clauses.append("c.seq > @after")
    params += [{"name": "@after", "value": after}, {"name": "@limit", "value": page}]
    return _query(chain, "TOP @limit *", clauses, params, " ORDER BY c.seq ASC")


def archive_query(*, after: int, through: int, page: int) -> CosmosQuery:
    """The archive's records (seqs up to the split, in every chain's partition) after a seq, in order."""
    return _query(
        None,
        "TOP @limit *",
        ["c.type = @type", "c.seq > @after", "c.seq <= @through"],
        [
            {"name": "@type", "value": RECORD_TYPE},
            {"name": "@after", "value": after},
            {"name": "@through", "value": through},
            {"name": "@limit", "value": page},
        ],
        " ORDER BY c.seq ASC",
    )


def tip_query(chain: str, split: int) -> CosmosQuery:
    """A chain's newest record (the archive's, up to the split, are not its)."""
    return _query(
        chain,
        "TOP 1 c.seq, c.hash",
        ["c.type = @type", "c.seq > @split"],
        [{"name": "@type", "value": RECORD_TYPE}, {"name": "@split", "value": split}],
        " ORDER BY c.seq DESC",
    )


def chains_query(split: int) -> CosmosQuery:
    """Which chains hold records (each record names its chain: the caller keeps each chain once)."""
    return _query(
        None,
        "c.user_id",
        ["c.type = @type", "c.seq > @split"],
        [{"name": "@type", "value": RECORD_TYPE}, {"name": "@split", "value": split}],
    )


def older_query(before: datetime) -> CosmosQuery:
    """prune(): every record written before `before`, with its chain (the caller cuts each chain)."""
    return _query(
        None,
        "c.user_id, c.seq, c.hash",
        ["c.type = @type", "c.at < @before"],
        [{"name": "@type", "value": RECORD_TYPE}, {"name": "@before", "value": timestamp(before)}],
    )


def through_query(chain: str | None, low: int, high: int) -> CosmosQuery:
    """prune(): the ids (and chains) of the records with seq in (low, high]."""
    return _query(
        chain,
        "c.id, c.user_id",
        ["c.type = @type", "c.seq > @low", "c.seq <= @high"],
        [
            {"name": "@type", "value": RECORD_TYPE},
            {"name": "@low", "value": low},
            {"name": "@high", "value": high},
        ],
    )


def of_user_query(user_id: str, chain: str, *, own_trail_only: bool = False) -> CosmosQuery:
    """pseudonymize(): the records of the user's own chain, or (everywhere) also those the user made and
    membership records (the caller keeps those that name the user)."""
    if own_trail_only:
        return _query(chain, "*", ["c.type = @type"], [{"name": "@type", "value": RECORD_TYPE}])
    return _query(
        None,
        "*",
        [
            "c.type = @type",
            "(c.user_id = @own OR c.actor = @user OR c.ledger = @user OR c.action = @membership)",
        ],
        [
            {"name": "@type", "value": RECORD_TYPE},
            {"name": "@own", "value": chain},
            {"name": "@user", "value": user_id},
            {"name": "@membership", "value": "membership"},
        ],
    )


def moving_query(page: int) -> CosmosQuery:
    """The single chain's records still in the deployment's partition (moved into their chains)."""
    return _query(
        AUDIT_PARTITION,
        "TOP @limit *",
        ["c.type = @type"],
        [{"name": "@type", "value": RECORD_TYPE}, {"name": "@limit", "value": page}],
    )
