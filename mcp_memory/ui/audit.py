"""The explorer's audit page: who changed or read which memories, when and through which client.

`GET /audit` shows one trail, newest first, by the rules of service/audit_trail.py, the same as
memory://audit and memory://spaces/{space}/audit: without `space` the visitor's own personal memory's,
a space's for its owners, any space's (and "*", every trail at once) for an admin. Anyone else gets a
403 with PermissionDeniedError's words; asking for "*" without the admin scope is a missing scope, so
that 403 carries the RFC 6750 challenge, as every other scope refusal of the explorer does.

Records hold ids and counts, never memory text, and so does the page: each id of a memory links to
that memory's own page, where the explorer's usual rules decide whether the visitor may read it.

`POST /audit/verify` (admin, with the CSRF value of every form) walks the whole chain, as
`mcp-memory audit verify` does, and counts the verification in the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from mcp_memory.audit import AuditRecord, Verification
from mcp_memory.errors import BackendUnavailableError, PermissionDeniedError
from mcp_memory.models import space_of
from mcp_memory.security.principals import ADMIN
from mcp_memory.security.spaces import SPACES_FILE
from mcp_memory.service.audit_trail import EVERY_LEDGER, AuditPage, read_page
from mcp_memory.ui.editing import posted
from mcp_memory.ui.explorer import Explorer
from mcp_memory.ui.guard import Refused, Visitor

FILTERS = ("actor", "action", "thread_id", "since", "until")
ACTIONS = tuple("add update rollback import forget forget_user graph summarize learn read membership".split())
DEFAULT_LIMIT = "50"
# Ids of long-term memories, which have a page of their own (/memories/{id}); revisions do not.
MEMORY_ID_PREFIXES = ("turn_", "fact_", "summary_", "user_summary_", "obs_")


@dataclass(frozen=True)
class Row:
    """One record as the table shows it."""

    record: AuditRecord
    space: str | None  # the space whose trail it is; None: a user's personal memory's
    ids: list[tuple[str, bool]]  # each memory id, and whether the explorer has a page for it
    touched: int  # ids listed and ids only counted
    counts: str


async def audit_page(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    return await _trail(ex, request, visitor, request.query_params)


async def verify(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    """Admin only: walk the whole chain; the result above every trail's newest records."""
    await posted(ex, request, visitor, ADMIN, "verifying the audit trail")
    if not visitor.principal.authenticated:
        raise Refused(403, "verifying the audit trail needs an admin token")
    log = ex.service.audit.log
    if log is None:
        raise BackendUnavailableError("the audit trail is off on this server (setting audit.enabled)")
    found = await log.verify()
    ex.service.metrics.audit_verified(found.ok)
    return await _trail(ex, request, visitor, {"space": EVERY_LEDGER}, verification=found)


async def _trail(
    ex: Explorer,
    request: Request,
    visitor: Visitor,
    params: Mapping[str, str],
    *,
    verification: Verification | None = None,
) -> Response:
    space = params.get("space", "").strip() or None
    filters = {name: params.get(name, "").strip() for name in FILTERS}
    limit = params.get("limit", "").strip() or DEFAULT_LIMIT
    page = await _read(ex, visitor, space, filters, params.get("before", "").strip(), limit)
    chosen = {"space": space or "", **filters, "limit": limit if limit != DEFAULT_LIMIT else ""}
    next_link = None
    if page.next_cursor is not None:
        next_link = "?" + urlencode([*((k, v) for k, v in chosen.items() if v), ("before", page.next_cursor)])
    return ex.page(
        request,
        visitor,
        "audit.html",
        nav="audit",
        page=page,
        rows=[_row(record) for record in page.records],
        space=space or "",
        filters=filters,
        limit=limit,
        actions=ACTIONS,
        spaces=_spaces(ex, visitor, space),
        next_link=next_link,
        verification=verification,
    )


async def _read(
    ex: Explorer,
    visitor: Visitor,
    space: str | None,
    filters: dict[str, str],
    before: str,
    limit: str,
) -> AuditPage:
    try:
        return await read_page(
            ex.service.audit,
            ex.viewer(visitor),
            space,
            before=before or None,
            limit=limit,
            **{name: value or None for name, value in filters.items()},
        )
    except PermissionDeniedError as e:
        if space == EVERY_LEDGER:  # a token without the admin scope: the explorer's scope refusal
            raise ex.guard.lacking(ADMIN, str(e)) from e
        raise  # a role in a space too low (or none): 403 with the same words


def _row(record: AuditRecord) -> Row:
    counts = ", ".join(f"{n} {kind}" for kind, n in record.counts.items())
    return Row(
        record=record,
        space=space_of(record.ledger),
        ids=[(memory_id, memory_id.startswith(MEMORY_ID_PREFIXES)) for memory_id in record.memory_ids],
        touched=len(record.memory_ids) + record.more_ids,
        counts=counts,
    )


def _spaces(ex: Explorer, visitor: Visitor, space: str | None) -> list[str]:
    """The trails the filter offers besides the visitor's own: the spaces they own, every configured
    space for an admin (and the one asked for, so the form shows it)."""
    viewer = ex.viewer(visitor)
    if viewer.admin:
        names = {s.name for s in SPACES_FILE.spaces(ex.guard.settings.security)}
    else:
        names = {name for name, role in viewer.roles.items() if role == "owner"}
    if space and space != EVERY_LEDGER:
        names.add(space)
    return sorted(names)
