"""The audit trail on Azure Cosmos DB (AuditLog, audit/log.py): a hash chain per ledger, shared by every
replica, in the learning container (cosmos/setup.py, partitioned /user_id, /group_id). Where each
document lives: storage/cosmos/audit_documents.py.

An append is one request in the steady state: create the record with id = the chain's tip seq + 1 in
the chain's partition. Cosmos DB refuses a second item with an id in one partition (409), so among any
number of writers exactly one stores each seq, and a record is only ever built on the record before it,
so the chain has no fork and no gap. The tip is the chain's newest record: a writer keeps the tip it
last wrote for TIP_SECONDS and builds on it (one user's chain is written by one replica at a time, so
the kept tip is right); on a 409 (another replica wrote first) it reads the tip and tries again
(counted: `on_retry`), and for TIP_SECONDS after that it reads the tip before each append to that
chain (a space written through several replicas: two requests an append, instead of a create that is
refused most of the time, a read and a create). Appends to one chain take turns within a process (a lock per
chain), so only replicas race, and appends to different chains never touch the same document: no lock
or document is shared by every change of a deployment.

A deployment that kept the single chain (its head and records in the deployment's partition) is moved on
first use: the split is written from the head (the archive's tip and anchor), then each record is moved,
as it is, into its ledger's partition, then the head is removed; replicas doing this at once do the
same writes, and a move that stops is taken up by the next start.

Prune moves an anchor first, then deletes: a prune that stops half-way leaves records below the anchor,
which verify skips and the next prune deletes.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import AsyncIterator, Callable
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
    Split,
    Verification,
    chain_of,
    digest,
    pseudonymized,
    verify,
)
from mcp_memory.errors import ConflictError
from mcp_memory.storage.cosmos.audit_documents import (
    ANCHOR_ID,
    ANCHOR_TYPE,
    AUDIT_PARTITION,
    BOOKKEEPING,
    DEPLOYMENT,
    HEAD_ID,
    KEY_ID,
    KEY_TYPE,
    SPLIT_ID,
    SPLIT_TYPE,
    archive_query,
    bookkeeping,
    chain_query,
    chains_query,
    checked,
    document_query,
    moving_query,
    of_user_query,
    older_query,
    page_query,
    partition_of,
    record_document,
    record_of,
    through_query,
    tip_query,
)
from mcp_memory.storage.cosmos.calls import each_concurrently, query_all
from mcp_memory.storage.cosmos.documents import timestamp
from mcp_memory.storage.cosmos.errors import cosmos_errors
from mcp_memory.storage.cosmos.queries import CosmosQuery

# Each retry follows a rival's successful write; this many in a row means a storm, not bad luck.
_ATTEMPTS = 32
_BACKOFF_CAP_SECONDS = 0.05
_CONCURRENCY = 16
_PAGE = 1000  # records read at a time by verify, export and the move
# How long a tip this process wrote is built on without reading it again. Far shorter than any retention
# (a record another replica wrote after it must not be pruned and its seq taken again within it).
TIP_SECONDS = 30.0
_LOCKS_KEPT = 10_000  # idle chain locks beyond this many are dropped


class CosmosAuditLog:
    def __init__(
        self,
        container: ContainerProxy,
        *,
        timeout_seconds: float,
        on_retry: Callable[[], None] | None = None,
    ) -> None:
        self._container = container
        self._timeout = timeout_seconds
        self._names: Pseudonyms | None = None
        self._split: Split | None = None
        self._tips: dict[str, tuple[int, str, float]] = {}  # chain -> (seq, hash, when known)
        self._contended: dict[str, float] = {}  # chain -> when another replica last wrote first
        self._locks: dict[str, anyio.Lock] = {}  # a chain's appends one at a time: only replicas race
        self._starting = anyio.Lock()
        self._limiter = anyio.CapacityLimiter(_CONCURRENCY)
        self._on_retry = on_retry or (lambda: None)

    # ---- writing -------------------------------------------------------------------------------

    async def append(self, draft: Draft) -> AuditRecord:
        names, split = await self._start()
        chain = chain_of(draft.ledger, names)
        async with self._lock(chain):
            for attempt in range(_ATTEMPTS):
                seq, prev = await self._tip(chain, split)
                fields: dict[str, Any] = {
                    "seq": seq + 1,
                    "at": timestamp(datetime.now(UTC)),
                    **draft.fields(),
                    "prev_hash": prev,
                }
                fields["hash"] = digest(fields, names)
                try:
                    with cosmos_errors("recording an audit record", self._timeout):
                        await self._container.create_item(record_document(chain, fields), no_response=True)
                except ConflictError:  # another replica took this seq: read the tip, then again
                    self._tips.pop(chain, None)
                    self._contended[chain] = time.monotonic()
                    self._on_retry()
                    await _backoff(attempt)
                    continue
                self._tips[chain] = (fields["seq"], fields["hash"], time.monotonic())
                return AuditRecord.model_validate(fields)
        raise ConflictError(
            f"the audit trail kept moving under us ({_ATTEMPTS} attempts); the change's record was not "
            "written, try again"
        )

    def _lock(self, chain: str) -> anyio.Lock:
        lock = self._locks.get(chain)
        if lock is None:
            if len(self._locks) >= _LOCKS_KEPT:
                self._locks = {c: held for c, held in self._locks.items() if held.locked()}
                self._contended = {c: self._contended[c] for c in self._locks if c in self._contended}
                self._tips = {c: self._tips[c] for c in self._locks if c in self._tips}
            lock = self._locks[chain] = anyio.Lock()
        return lock

    async def _tip(self, chain: str, split: Split) -> tuple[int, str]:
        """The seq and hash the chain's next record follows: the newest record (kept from this
        process's last append for TIP_SECONDS), else the chain's anchor, else where every chain starts."""
        known, now = self._tips.get(chain), time.monotonic()
        if (
            known is not None
            and now - known[2] < TIP_SECONDS
            and now - self._contended.get(chain, -TIP_SECONDS) >= TIP_SECONDS
        ):
            return known[0], known[1]
        newest = await self._query(tip_query(chain, split.seq), "reading the audit trail")
        if newest:
            return int(newest[0]["seq"]), str(newest[0]["hash"])
        anchor = await self._document(chain, ANCHOR_ID, "reading the audit trail")
        if anchor is not None:
            return int(anchor["seq"]), str(anchor["hash"])
        return split.seq, split.hash

    # ---- reading -------------------------------------------------------------------------------

    async def page(self, query: AuditQuery) -> list[AuditRecord]:
        names, _ = await self._start()
        chain = chain_of(query.ledger, names) if query.ledger is not None else None
        docs = await self._query(page_query(chain, query), "reading the audit trail")
        return [AuditRecord.model_validate(record_of(d)) for d in docs]

    async def since(self, ledger: str | None, since: datetime | None) -> AsyncIterator[AuditRecord]:
        names, split = await self._start()
        if ledger is not None:
            chains = [chain_of(ledger, names)]
        else:
            chains = await self._chains(split)
            async for doc in self._archive(0, split.seq):
                if since is None or doc["at"] >= timestamp(since):
                    yield AuditRecord.model_validate(record_of(doc))
        wanted = AuditQuery(ledger=ledger, since=since)
        for chain in chains:
            low = 0 if ledger is not None else split.seq  # a ledger's own archived records come first
            async for doc in self._walk(chain, wanted, low):
                yield AuditRecord.model_validate(record_of(doc))

    async def verify(self, ledger: str | None = None) -> Verification:
        names, split = await self._start()
        total = Verification()
        if ledger is None:
            archive = await self._document(AUDIT_PARTITION, SPLIT_ID, "reading the audit trail")
            start = (int(archive["anchor_seq"]), str(archive["anchor_hash"])) if archive else (0, GENESIS)
            docs = [checked(d, None) async for d in self._archive(start[0], split.seq)]
            part = verify(docs, start[1], names)
            if part.ok and (docs[-1]["seq"] if docs else start[0]) != split.seq:
                part.first_bad, part.problem = split.seq, "is missing (the archive's tip)"
            if docs or split.seq:
                total.add(part, "the archive (the single chain kept before chains per ledger)")
        chains = [chain_of(ledger, names)] if ledger is not None else await self._chains(split)
        for chain in chains:
            anchor = await self._document(chain, ANCHOR_ID, "reading the audit trail")
            seq, previous = (int(anchor["seq"]), str(anchor["hash"])) if anchor else (split.seq, split.hash)
            stored = [d async for d in self._walk(chain, AuditQuery(), seq)]
            part = verify([checked(d, chain) for d in stored], previous, names)
            said = next((d.get("ledger") for d in stored if d.get("seq") == part.first_bad), None)
            total.add(part, ledger or (said if isinstance(said, str) and said else chain))
        return total

    async def _walk(self, chain: str, query: AuditQuery, after: int) -> AsyncIterator[dict[str, Any]]:
        while True:
            docs = await self._query(
                chain_query(chain, query, after=after, page=_PAGE), "reading the audit trail"
            )
            for doc in docs:
                yield doc
            if len(docs) < _PAGE:
                return
            after = int(docs[-1]["seq"])

    async def _archive(self, after: int, through: int) -> AsyncIterator[dict[str, Any]]:
        while after < through:
            docs = await self._query(
                archive_query(after=after, through=through, page=_PAGE), "reading the audit trail's archive"
            )
            for doc in docs:
                yield doc
            if len(docs) < _PAGE:
                return
            after = int(docs[-1]["seq"])

    async def _chains(self, split: Split) -> list[str]:
        found = await self._query(chains_query(split.seq), "listing the audit trail's ledgers")
        return sorted({str(d["user_id"]) for d in found})

    # ---- retention and forgetting --------------------------------------------------------------

    async def prune(self, before: datetime) -> int:
        _, split = await self._start()
        cuts: dict[str, tuple[int, str]] = {}
        for doc in await self._query(older_query(before), "finding audit records past their retention"):
            chain = AUDIT_PARTITION if doc["seq"] <= split.seq else str(doc["user_id"])
            if doc["seq"] > cuts.get(chain, (-1, ""))[0]:
                cuts[chain] = (int(doc["seq"]), str(doc["hash"]))
        self._tips.clear()
        removed = 0
        for chain, (seq, last) in cuts.items():
            archive = chain == AUDIT_PARTITION
            await self._move_anchor(chain, SPLIT_ID if archive else ANCHOR_ID, seq, last)
            low = 0 if archive else split.seq
            doomed = await self._query(
                through_query(None if archive else chain, low, seq),
                "finding audit records past their retention",
            )
            await each_concurrently(
                [lambda d=d: self._delete(partition_of(d["user_id"]), d["id"]) for d in doomed],  # type: ignore[misc]
                self._limiter,
            )
            removed += len(doomed)
        return removed

    async def _move_anchor(self, chain: str, doc_id: str, seq: int, last: str) -> None:
        """Move a chain's anchor (the archive's: the split's) forward onto (seq, last), under its ETag."""
        for attempt in range(_ATTEMPTS):
            anchor = await self._document(chain, doc_id, "reading the audit trail's anchor")
            if anchor is None:
                fresh = {**bookkeeping(chain, doc_id, ANCHOR_TYPE), "seq": seq, "hash": last}
                await self._create_once(fresh, "moving the audit trail's anchor")
                continue
            key = ("anchor_seq", "anchor_hash") if doc_id == SPLIT_ID else ("seq", "hash")
            if int(anchor[key[0]]) >= seq:
                return
            body = {k: v for k, v in anchor.items() if not k.startswith("_")} | {key[0]: seq, key[1]: last}
            try:
                with cosmos_errors("moving the audit trail's anchor", self._timeout):
                    await self._container.replace_item(
                        doc_id, body, etag=anchor["_etag"], match_condition=MatchConditions.IfNotModified
                    )
                return
            except ConflictError:  # 412: another prune moved it first
                await _backoff(attempt)
        raise ConflictError("the audit trail's anchor kept changing under us; try again")

    async def pseudonymize(self, user_id: str, *, own_trail_only: bool = False) -> int:
        names, _ = await self._start()
        query = of_user_query(user_id, chain_of(user_id, names), own_trail_only=own_trail_only)
        found = await self._query(query, "finding a user's audit records")
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
                    doc = await self._document(doc["user_id"], doc["id"], "reading an audit record")
            raise ConflictError("an audit record kept changing while it was pseudonymized; try again")

        await each_concurrently([lambda d=d: rewrite(d) for d in docs], self._limiter)  # type: ignore[misc]
        return len(docs)

    # ---- the key, the split and the single chain's move ----------------------------------------

    async def _start(self) -> tuple[Pseudonyms, Split]:
        """The pseudonym key and the split, read (or made) once per process."""
        if self._names is None or self._split is None:
            async with self._starting:
                if self._names is None:
                    self._names = await self._pseudonyms()
                if self._split is None:
                    self._split = await self._make_split(self._names)
        return self._names, self._split

    async def _pseudonyms(self) -> Pseudonyms:
        key = await self._document(AUDIT_PARTITION, KEY_ID, "reading the audit trail's pseudonym key")
        if key is None:
            fresh = {**bookkeeping(AUDIT_PARTITION, KEY_ID, KEY_TYPE), "key": secrets.token_hex(32)}
            key = await self._create_once(fresh, "creating the audit trail's pseudonym key")
        return Pseudonyms(bytes.fromhex(key["key"]))

    async def _make_split(self, names: Pseudonyms) -> Split:
        """The split: made from the single chain's head (and that chain moved), or 0 and GENESIS."""
        split = await self._document(AUDIT_PARTITION, SPLIT_ID, "reading the audit trail")
        if split is None:
            head = await self._document(AUDIT_PARTITION, HEAD_ID, "reading the audit trail's head")
            old = head or {"seq": 0, "hash": GENESIS, "anchor_seq": 0, "anchor_hash": GENESIS}
            fresh = {
                **bookkeeping(AUDIT_PARTITION, SPLIT_ID, SPLIT_TYPE),
                **{k: old[k] for k in ("seq", "hash", "anchor_seq", "anchor_hash")},
            }
            split = await self._create_once(fresh, "starting the audit trail's chains per ledger")
        if split["seq"]:
            await self._move_single_chain(names)
        return Split(int(split["seq"]), str(split["hash"]))

    async def _move_single_chain(self, names: Pseudonyms) -> None:
        """Each record of the single chain, as it is, into its ledger's partition; then its head goes."""
        while docs := await self._query(moving_query(_PAGE), "moving the audit trail into its ledgers"):

            async def move(doc: dict[str, Any]) -> None:
                chain = chain_of(str(doc["ledger"]), names)
                body = {k: v for k, v in doc.items() if not k.startswith("_")} | {"user_id": chain}
                with cosmos_errors("moving the audit trail into its ledgers", self._timeout):
                    await self._container.upsert_item(body)
                await self._delete(DEPLOYMENT, doc["id"])

            await each_concurrently([lambda d=d: move(d) for d in docs], self._limiter)  # type: ignore[misc]
        await self._delete(DEPLOYMENT, HEAD_ID)

    async def _delete(self, partition: list[str], doc_id: str) -> None:
        with (
            cosmos_errors("removing an audit document", self._timeout),
            suppress(CosmosResourceNotFoundError),
        ):
            await self._container.delete_item(doc_id, partition_key=partition)

    async def _create_once(self, doc: dict[str, Any], what: str) -> dict[str, Any]:
        """Create the document, or read the one a concurrent first use created (409)."""
        try:
            with cosmos_errors(what, self._timeout):
                return dict(await self._container.create_item(doc))
        except ConflictError:
            found = await self._document(doc["user_id"], doc["id"], what)
            if found is None:
                raise
            return found

    async def _document(self, chain: str, doc_id: str, what: str) -> dict[str, Any] | None:
        docs = await self._query(document_query(chain, doc_id), what)
        return docs[0] if docs else None

    async def _query(self, query: CosmosQuery, what: str) -> list[dict[str, Any]]:
        return await query_all(self._container, query, what, self._timeout)


async def _backoff(attempt: int) -> None:
    """Jittered, growing pause between retries, so rivals stop colliding."""
    await anyio.sleep(random.uniform(0, min(_BACKOFF_CAP_SECONDS, 0.002 * 2**attempt)))
