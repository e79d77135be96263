"""Who may read which audit trail, and a page of it (the rules behind memory://.../audit, the explorer's
audit page and `mcp-memory audit`).

- A user reads the trail of their own personal memory.
- A space's owners read the space's trail; its writers and readers may not.
- An admin (a token with the admin scope, or the operator at the command line) reads every trail, and
  all of them at once.
Anyone else is refused with PermissionDeniedError (a 403 on HTTP), with the same words whether the space
exists or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

from mcp_memory import validation as check
from mcp_memory.audit import Auditor, AuditQuery, AuditRecord
from mcp_memory.errors import BackendUnavailableError, InvalidInputError, PermissionDeniedError, shown
from mcp_memory.models import SpaceRole, space_key

MAX_PAGE = 500
EVERY_LEDGER = "*"  # what an admin asks for to read every trail at once


@dataclass(frozen=True)
class Viewer:
    """Who is reading: their user id, their role in each space, and whether they are an admin."""

    user_id: str
    roles: Mapping[str, SpaceRole]
    admin: bool = False


class AuditPage(BaseModel):
    """A page of an audit trail, newest first."""

    ledger: str = Field(description='Whose trail: a user id, "@" + a space, or "*" (every one).')
    records: list[AuditRecord]
    next_cursor: str | None = Field(
        description="Pass as `before` for the next (older) page (one ledger's: a seq; every ledger's: a "
        "time); null: no more."
    )


def ledger_for(viewer: Viewer, space: str | None) -> str | None:
    """The ledger the viewer may read: their own (space None), a space they own, any for an admin, or
    None for every ledger (space "*", admins only)."""
    if space is None:
        return viewer.user_id
    if space == EVERY_LEDGER:
        if viewer.admin:
            return None
        raise PermissionDeniedError("reading every audit trail needs the admin scope")
    name = check.space(space)
    if viewer.admin or viewer.roles.get(name) == "owner":
        return space_key(name)
    raise PermissionDeniedError(f"reading the audit trail of space {shown(name)} needs its owner role")


async def read_page(  # noqa: PLR0913 - the trail's filters, each one optional
    auditor: Auditor,
    viewer: Viewer,
    space: str | None = None,
    *,
    actor: str | None = None,
    action: str | None = None,
    thread_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
    before: str | int | None = None,
    limit: str | int = 50,
) -> AuditPage:
    ledger = ledger_for(viewer, space)
    if auditor.log is None:
        raise BackendUnavailableError("the audit trail is off on this server (setting audit.enabled)")
    start, end = check.time_range(since, until)
    query = AuditQuery(
        ledger=ledger,
        actor=actor or None,
        action=action or None,
        thread_id=check.thread_id(thread_id) if thread_id else None,
        since=start,
        until=end,
        limit=check.count(_whole(limit, "limit"), "limit", low=1, high=MAX_PAGE),
    )
    if before not in (None, ""):  # one ledger's pages go by seq, every ledger's by time
        if ledger is None:
            query.before_at = check.timestamp(str(before), "before")
        else:
            query.before = _whole(before, "before")
    records = await auditor.log.page(query)
    cursor = None
    if len(records) == query.limit:
        cursor = str(records[-1].seq) if ledger is not None else records[-1].at.isoformat()
    return AuditPage(ledger=ledger or EVERY_LEDGER, records=records, next_cursor=cursor)


def _whole(value: object, name: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise InvalidInputError(f"{name} {shown(value)} must be a whole number") from None
