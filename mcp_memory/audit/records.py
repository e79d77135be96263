"""One audit record, its hash and the chain every record joins; pseudonyms for forgotten users.

A record says who (the verified user id and the token's name or the identity provider's client id) did
what (the tool or command, the action), to whose memory (its ledger: a user id or "@" + a space), when,
to which memories (ids and counts, never text), and with what outcome. Every record carries the hash of
the record before it, so editing, removing or reordering one breaks the chain at that record
(`verify`).

Identities enter the hash as pseudonyms, HMAC-SHA256 of the id under the ledger's own key: when
forget_user replaces a user's id by that pseudonym, the hash is unchanged and the chain still verifies,
while replacing an id by anyone else's is still detected.

Each ledger has a chain of its own (`chain_of`), so changes to different users' and spaces' memories
never wait for each other: `seq` counts within the ledger's chain. A deployment that kept one chain for
every ledger (before chains per ledger) keeps it as its archive: those records keep their seqs, up to the
archive's tip (`Split`), and every ledger's chain goes on from there, at the archive tip's seq + 1 and
hash, so one ledger's records still read in seq order, the archived ones first.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from mcp_memory.models import SPACE_MARK

GENESIS = "0" * 64  # the prev_hash of the first record ever written
PSEUDONYM_MARK = "anon-"
MAX_IDS = 500  # ids kept in one record; beyond, `more_ids` counts the rest (a forget of everything)


class AuditRecord(BaseModel):
    """One entry of the trail. `seq` is its place in the chain; `hash` covers everything else."""

    seq: int
    at: datetime
    ledger: str = Field(description='Whose memory: a user id (or its pseudonym) or "@" + a space.')
    actor: str = Field(description="The verified user id who acted (or its pseudonym), or cli:<name>.")
    client: str | None = Field(default=None, description="The token's name or the IdP client id.")
    action: str = Field(description="add, update, rollback, import, forget, forget_user, graph, read, ...")
    tool: str | None = Field(default=None, description="The tool, resource or command.")
    thread_id: str | None = None
    memory_ids: list[str] = Field(default_factory=list)
    more_ids: int = Field(default=0, description="Ids beyond the first 500, counted only.")
    counts: dict[str, int] = Field(default_factory=dict)
    members: dict[str, str] = Field(
        default_factory=dict, description="A membership record: the space's members and roles, as now seen."
    )
    outcome: str = Field(default="ok", description='"ok", or "refused: <why>" for a change not made.')
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class Pseudonyms:
    """The ledger's keyed pseudonyms: stable for one user, unlinkable without the key."""

    key: bytes
    _known: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def of(self, user_id: str) -> str:
        known = self._known.get(user_id)
        if known is not None:
            return known
        if is_pseudonym(user_id) or user_id.startswith((SPACE_MARK, "cli:", "group:")):
            alias = user_id
        else:
            alias = PSEUDONYM_MARK + hmac.new(self.key, user_id.encode(), hashlib.sha256).hexdigest()[:20]
        if len(self._known) < 10_000:  # the same few actors, clients and ledgers, record after record
            self._known[user_id] = alias
        return alias


def is_pseudonym(value: str) -> bool:
    return value.startswith(PSEUDONYM_MARK)


def hashed_view(record: dict[str, Any], names: Pseudonyms) -> dict[str, Any]:
    """What the hash covers: the record without its own hash, identities as pseudonyms, and a summary's
    id (which embeds its owner's key) with the owner replaced by "~". The client (a credential's name,
    often naming its user) is hashed as a pseudonym too, so forget_user may replace it."""
    view = {k: v for k, v in record.items() if k not in CHAIN_FIELDS}
    ledger = record["ledger"]
    view["actor"] = names.of(record["actor"])
    view["client"] = names.of(record["client"]) if record.get("client") else record.get("client")
    view["ledger"] = names.of(ledger)
    view["memory_ids"] = [_without_owner(i, ledger) for i in record["memory_ids"]]
    view["members"] = {names.of(member): role for member, role in record.get("members", {}).items()}
    return view


CHAIN_FIELDS = ("seq", "prev_hash", "hash")  # a record's place in the chain; the rest is its body


def body_digest(record: dict[str, Any], names: Pseudonyms) -> str:
    """The hash of what the record says (its hashed_view), apart from where it stands in the chain."""
    body = json.dumps(hashed_view(record, names), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def chained(seq: int, prev_hash: str, body: str) -> str:
    """A record's hash: its place (seq), the hash before it and its body's hash, so a record can be
    prepared before the transaction that finds its place, which then only hashes this short line."""
    return hashlib.sha256(f"{seq}:{prev_hash}:{body}".encode()).hexdigest()


def digest(record: dict[str, Any], names: Pseudonyms) -> str:
    return chained(record["seq"], record["prev_hash"], body_digest(record, names))


def pseudonymized(record: dict[str, Any], user_id: str, names: Pseudonyms) -> dict[str, Any]:
    """The record with `user_id` replaced by its pseudonym wherever it stands; the hash still matches."""
    alias = names.of(user_id)
    changed = dict(record)
    if record["actor"] == user_id:
        changed["actor"] = alias
        if record.get("client"):  # their credential's name (often theirs too, e.g. "ann-laptop")
            changed["client"] = names.of(record["client"])
    if user_id in record.get("members", {}):
        changed["members"] = {alias if m == user_id else m: r for m, r in record["members"].items()}
    if record["ledger"] == user_id:
        changed["ledger"] = alias
        changed["memory_ids"] = [_owner_replaced(i, user_id, alias) for i in record["memory_ids"]]
    return changed


# Ids that embed their owner's key: a thread's summary (models.summary_id) and the user profile
# (learning/profile.py).
_OWNER_IDS = ("summary_{}_", "user_summary_{}")


def _owner_replaced(memory_id: str, owner: str, by: str) -> str:
    for template in _OWNER_IDS:
        prefix = template.format(owner)
        if memory_id.startswith(prefix):
            return template.format(by) + memory_id[len(prefix) :]
    return memory_id


def _without_owner(memory_id: str, ledger: str) -> str:
    return _owner_replaced(memory_id, ledger, "~")


ARCHIVE = ""  # the chain of records written before chains per ledger: the deployment's single chain


def chain_of(ledger: str, names: Pseudonyms) -> str:
    """The chain a ledger's records join, named by the ledger's pseudonym (a space by its own name): the
    key a store keeps the chain under never names a user, so forgetting one leaves no trace of them."""
    return names.of(ledger)


@dataclass(frozen=True)
class Split:
    """Where every ledger's chain starts: the archive's tip (seq 0 and GENESIS on a deployment that
    never had the single chain)."""

    seq: int = 0
    hash: str = GENESIS


@dataclass
class Verification:
    """What `verify` found: how many records and chains it checked and the first record that does not
    match, with its ledger."""

    checked: int = 0
    first_bad: int | None = None
    problem: str | None = None
    ledger: str | None = None
    chains: int = 0

    def add(self, part: Verification, ledger: str) -> None:
        """A chain's walk added to the whole: its counts, and its break if it is the first."""
        self.checked += part.checked
        self.chains += 1
        if self.first_bad is None and part.first_bad is not None:
            self.first_bad, self.problem, self.ledger = part.first_bad, part.problem, ledger

    @property
    def ok(self) -> bool:
        return self.first_bad is None


def verify(records: Iterable[dict[str, Any]], anchor: str, names: Pseudonyms) -> Verification:
    """Walk the chain from `anchor` (GENESIS, or the hash of the last record retention removed)."""
    result = Verification()
    previous = anchor
    for record in records:
        result.checked += 1
        if record["prev_hash"] != previous:
            result.first_bad, result.problem = record["seq"], "does not follow the record before it"
            return result
        if digest(record, names) != record["hash"]:
            result.first_bad, result.problem = record["seq"], "was changed after it was written"
            return result
        previous = record["hash"]
    return result
