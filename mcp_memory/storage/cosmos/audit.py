"""The audit trail on Azure Cosmos DB (AuditLog, audit/log.py): one hash-chained log shared by every
replica, in the learning container (cosmos/setup.py, partitioned /user_id, /group_id).

Everything lives in one logical partition of its own, [AUDIT_PARTITION, AUDIT_PARTITION] ("~audit" is
outside the memory-id alphabet of revisions' group ids, as "~counters" and "~graph" are), so every read
is a single-partition query:
- one document per record, id `audit-<seq, 12 digits>`, holding exactly the record's fields;
- the head ("audit-head"): the tip's seq and hash, and the retention anchor (the seq and hash of the
  last record prune removed, GENESIS before any), from which verify walks;
- the pseudonym key ("audit-key"): 32 random bytes, hex, created once (create refuses a second).

Concurrency, without a transactional batch (the local test server has none for hierarchical keys): an
append reads the head and *first* creates the record with id = head.seq + 1. Cosmos DB refuses a second
item with an id in one partition (409), so among any number of writers exactly one stores each seq; a
loser moves the head onto the winner's record if the winner has not yet (a writer that stopped between
its two writes never blocks the chain), then reads the head again. The winner then moves the head onto
its record under the head's ETag (If-Match, 412 on a rival's change: read again). A record is only
ever chained onto the head it was built from, and the head only moves one seq forward onto a record
that follows it, so the chain has no gap and no fork. Each instance also appends one record at a time,
so only replicas race each other.

Prune moves the anchor first, then deletes: a prune that stops half-way leaves records below the
anchor, which verify skips and the next prune deletes.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import AsyncIterator
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

import anyio
from azure.core import MatchConditions
from azure.cosmos.aio import ContainerProxy
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from mcp_memory.audit.context import Draft
from mcp_memory.audit.log import AuditQuery
from mcp_memory.audit.records import (
    GENESIS,
    AuditRecord,
    Pseudonyms,
    Verification,
    digest,
    pseudonymized,
    verify,
)
from mcp_memory.errors import ConflictError
from mcp_memory.storage.cosmos.audit_documents import (
    BOOKKEEPING,
    HEAD_ID,
    HEAD_TYPE,
    KEY_ID,
    KEY_TYPE,
    PARTITION_KEY,
    HeadChange,
    bookkeeping,
    checked,
    document_query,
    newest_before_query,
    of_user_query,
    record_document,
    record_id,
    record_of,
    records_query,
    through_query,
)
from mcp_memory.storage.cosmos.calls import each_concurrently, query_all
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery

# Each retry follows a rival's successful write; this many in a row means a storm, not bad luck.
_ATTEMPTS = 32
_BACKOFF_CAP_SECONDS = 0.05
_CONCURRENCY = 16
_PAGE = 1000  # records read at a time by verify and export
_VERIFY_PASSES = 3  # a prune moving the anchor during a walk: walk again from the new anchor


class CosmosAuditLog:
    def __init__(self, container: ContainerProxy, *, timeout_seconds: float) -> None:
        self._container = container
        self._timeout = timeout_seconds
        self._names: Pseudonyms | None = None
        self._appending = anyio.Lock()  # this instance's appends one at a time: only replicas race
        self._limiter = anyio.CapacityLimiter(_CONCURRENCY)

    # ---- writing -------------------------------------------------------------------------------

    async def append(self, draft: Draft) -> AuditRecord:
        names = await self._pseudonyms()
        async with self._appending:
            return await self._append(draft, names)

    async def _append(self, draft: Draft, names: Pseudonyms) -> AuditRecord:
        for attempt in range(_ATTEMPTS):
            head = await self._head()
            fields: dict[str, Any] = {
                "seq": int(head["seq"]) + 1,
                "at": timestamp(datetime.now(UTC)),
                **draft.fields(),
                "prev_hash": head["hash"],
            }
            fields["hash"] = digest(fields, names)
            try:
                with cosmos_errors("recording an audit record", self._timeout):
                    created = await self._container.create_item(record_document(fields))
            except ConflictError:  # another writer took this seq: help its head along, then read again
                await self._help(head)
                await _backoff(attempt)
                continue
            if await self._link(fields, created):
                return AuditRecord.model_validate(fields)
            await _backoff(attempt)
        raise ConflictError(
            f"the audit trail kept moving under us ({_ATTEMPTS} attempts); the change's record was not "
            "written, try again"
        )

    async def _help(self, head: dict[str, Any]) -> None:
        """Move the head onto the record that follows it, if one does (its writer may have stopped)."""
        following = await self._document(record_id(int(head["seq"]) + 1), "reading the audit trail")
        if following is not None:
            await self._move_head(_onto(following["seq"], following["prev_hash"], following["hash"]))

    async def _link(self, fields: dict[str, Any], created: dict[str, Any]) -> bool:
        """Move the head onto the record just created. False: the record does not follow the chain (its
        seq was pruned and taken again meanwhile), so it is removed and the append starts over."""
        seq, mine = fields["seq"], fields["hash"]
        head = await self._move_head(_onto(seq, fields["prev_hash"], mine))
        if head["seq"] == seq and head["hash"] == mine:
            return True
        if head["seq"] > seq:
            following = await self._document(record_id(seq + 1), "reading the audit trail")
            if following is not None and following["prev_hash"] == mine:
                return True
        with (
            cosmos_errors("removing an unchained audit record", self._timeout),
            suppress(CosmosResourceNotFoundError, ConflictError),
        ):
            await self._container.delete_item(
                record_id(seq),
                partition_key=PARTITION_KEY,
                etag=created.get("_etag"),
                match_condition=MatchConditions.IfNotModified,
            )
        return False

    async def _move_head(self, change: HeadChange) -> dict[str, Any]:
        """Apply `change` to the head (None = leave it) under its ETag, retrying when another writer
        moved it in between. Returns the head as written, or as found when left alone."""
        for attempt in range(_ATTEMPTS):
            head = await self._head()
            wanted = change(head)
            if wanted is None:
                return head
            body = {k: v for k, v in wanted.items() if not k.startswith("_")}
            try:
                with cosmos_errors("moving the audit trail's head", self._timeout):
                    return dict(
                        await self._container.replace_item(
                            HEAD_ID, body, etag=head["_etag"], match_condition=MatchConditions.IfNotModified
                        )
                    )
            except ConflictError:  # 412: another writer moved it first
                await _backoff(attempt)
        raise ConflictError(
            f"the audit trail's head kept changing under us ({_ATTEMPTS} attempts); try again"
        )

    # ---- reading -------------------------------------------------------------------------------

    async def page(self, query: AuditQuery) -> list[AuditRecord]:
        docs = await self._query(records_query(query), "reading the audit trail")
        return [AuditRecord.model_validate(record_of(d)) for d in docs]

    async def since(self, ledger: str | None, since: datetime | None) -> AsyncIterator[AuditRecord]:
        wanted, after = AuditQuery(ledger=ledger, since=since), 0
        while True:
            docs = await self._query(
                records_query(wanted, after=after, page=_PAGE), "exporting the audit trail"
            )
            for doc in docs:
                yield AuditRecord.model_validate(record_of(doc))
            if len(docs) < _PAGE:
                return
            after = docs[-1]["seq"]

    async def verify(self) -> Verification:
        names = await self._pseudonyms()
        result = Verification()
        for _ in range(_VERIFY_PASSES):
            head = await self._head()
            result = await self._walk(head, names)
            if result.ok or (await self._head())["anchor_seq"] == head["anchor_seq"]:
                return result
        return result

    async def _walk(self, head: dict[str, Any], names: Pseudonyms) -> Verification:
        """The chain from the head's anchor, a page at a time; then that nothing is missing up to the head."""
        total = Verification()
        previous, after = head["anchor_hash"], int(head["anchor_seq"])
        while True:
            docs = await self._query(
                records_query(AuditQuery(), after=after, page=_PAGE), "verifying the audit trail"
            )
            part = verify([checked(d) for d in docs], previous, names)
            total.checked += part.checked
            if not part.ok:
                total.first_bad, total.problem = part.first_bad, part.problem
                return total
            if docs:
                previous, after = docs[-1]["hash"], int(docs[-1]["seq"])
            if len(docs) < _PAGE:
                break
        if after < int(head["seq"]):
            total.first_bad, total.problem = after + 1, f"is missing (the chain's head is at {head['seq']})"
        return total

    # ---- retention and forgetting --------------------------------------------------------------

    async def prune(self, before: datetime) -> int:
        newest = await self._query(newest_before_query(before), "finding audit records past their retention")
        if not newest:
            return 0
        seq, last = int(newest[0]["seq"]), newest[0]["hash"]
        await self._move_head(
            lambda head: (
                {**head, "anchor_seq": seq, "anchor_hash": last} if head["anchor_seq"] < seq else None
            )
        )
        doomed = await self._query(through_query(seq), "finding audit records past their retention")

        async def delete(doc_id: str) -> None:
            with (
                cosmos_errors("deleting audit records past their retention", self._timeout),
                suppress(CosmosResourceNotFoundError),
            ):
                await self._container.delete_item(doc_id, partition_key=PARTITION_KEY)

        await each_concurrently([lambda i=d["id"]: delete(i) for d in doomed], self._limiter)  # type: ignore[misc]
        return len(doomed)

    async def pseudonymize(self, user_id: str, *, own_trail_only: bool = False) -> int:
        names = await self._pseudonyms()
        found = await self._query(
            of_user_query(user_id, own_trail_only=own_trail_only), "finding a user's audit records"
        )
        docs = [d for d in found if pseudonymized(record_of(d), user_id, names) != record_of(d)]

        async def rewrite(doc: dict[str, Any] | None) -> None:
            for attempt in range(_ATTEMPTS):
                if doc is None:
                    return  # pruned meanwhile
                body = {**{k: doc[k] for k in BOOKKEEPING}, **pseudonymized(record_of(doc), user_id, names)}
                try:
                    with cosmos_errors("pseudonymizing an audit record", self._timeout):
                        await self._container.replace_item(
                            doc["id"], body, etag=doc["_etag"], match_condition=MatchConditions.IfNotModified
                        )
                    return
                except ConflictError:  # 412: rewritten meanwhile (another user's pseudonym): again
                    await _backoff(attempt)
                    doc = await self._document(doc["id"], "reading an audit record")
            raise ConflictError("an audit record kept changing while it was pseudonymized; try again")

        await each_concurrently([lambda d=d: rewrite(d) for d in docs], self._limiter)  # type: ignore[misc]
        return len(docs)

    # ---- the head and the key ------------------------------------------------------------------

    async def _head(self) -> dict[str, Any]:
        """The head, created on first use (from the newest record, if one is stored without a head)."""
        head = await self._document(HEAD_ID, "reading the audit trail's head")
        if head is not None:
            return head
        newest = await self._query(records_query(AuditQuery(limit=1)), "reading the audit trail")
        fresh = {
            **bookkeeping(HEAD_ID, HEAD_TYPE),
            "seq": int(newest[0]["seq"]) if newest else 0,
            "hash": newest[0]["hash"] if newest else GENESIS,
            "anchor_seq": 0,
            "anchor_hash": GENESIS,
        }
        return await self._create_once(fresh, "starting the audit trail")

    async def _pseudonyms(self) -> Pseudonyms:
        if self._names is None:
            key = await self._document(KEY_ID, "reading the audit trail's pseudonym key")
            if key is None:
                fresh = {**bookkeeping(KEY_ID, KEY_TYPE), "key": secrets.token_hex(32)}
                key = await self._create_once(fresh, "creating the audit trail's pseudonym key")
            self._names = Pseudonyms(bytes.fromhex(key["key"]))
        return self._names

    async def _create_once(self, doc: dict[str, Any], what: str) -> dict[str, Any]:
        """Create the document, or read the one a concurrent first use created (409)."""
        try:
            with cosmos_errors(what, self._timeout):
                return dict(await self._container.create_item(doc))
        except ConflictError:
            found = await self._document(doc["id"], what)
            if found is None:
                raise
            return found

    async def _document(self, doc_id: str, what: str) -> dict[str, Any] | None:
        docs = await self._query(document_query(doc_id), what)
        return docs[0] if docs else None

    async def _query(self, query: CosmosQuery, what: str) -> list[dict[str, Any]]:
        return await query_all(self._container, query, what, self._timeout)


def _onto(seq: int, prev_hash: str, hash_: str) -> HeadChange:
    """The head moved one seq forward onto the record (seq, hash_), if that record follows it."""

    def change(head: dict[str, Any]) -> dict[str, Any] | None:
        if head["seq"] == seq - 1 and head["hash"] == prev_hash:
            return {**head, "seq": seq, "hash": hash_}
        return None

    return change


async def _backoff(attempt: int) -> None:
    """Jittered, growing pause between retries, so rivals stop colliding."""
    await anyio.sleep(random.uniform(0, min(_BACKOFF_CAP_SECONDS, 0.002 * 2**attempt)))
