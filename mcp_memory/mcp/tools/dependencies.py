"""What a tool needs besides its arguments, taken from its request rather than from globals.

- `server_of(ctx)`: the `MemoryServer` serving the request, hence its service, settings and host.
- The owner whose memory a tool works on, resolved once by the SDK's `Resolve` before the tool runs,
  from the request's principal (security: who is calling) and the tool's `space` argument:
  `Annotated[Owner, writer("add_turn")]` (the writer role in the space, or the caller's own memory),
  `Member` (any role), `Readable` (the caller's memory plus every space it reads, or the one named).
A refusal is raised through the tool error boundary, as any other product error.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Protocol

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve

from mcp_memory.audit import Draft
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.learning import Learning
from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.errors import resolver
from mcp_memory.models import Owner, SpaceRole, space_key
from mcp_memory.security.principals import ADMIN, current_principal
from mcp_memory.security.spaces import Access, current_access
from mcp_memory.service.audit_trail import Viewer
from mcp_memory.service.graph import KnowledgeGraph
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.views import WorkingMemoryView


def server_of(ctx: Context[Any, Any]) -> MemoryServer:
    server = ctx.mcp_server
    assert isinstance(server, MemoryServer), "mcp-memory's tools run on a MemoryServer"
    return server


def service_of(ctx: Context[Any, Any]) -> MemoryService:
    return server_of(ctx).service


def learning_of(server: MemoryServer) -> Learning:
    found = server.service.learning
    if not isinstance(found, Learning):
        raise BackendUnavailableError(
            "learning is off: the long-term store does not support it (see the server log)"
        )
    return found


def graph_of(server: MemoryServer) -> KnowledgeGraph:
    found = server.service.graph
    if found is None:
        raise BackendUnavailableError("the knowledge graph is not available on this server (see its log)")
    return found


def access_of(server: MemoryServer) -> Access:
    """The calling principal's memberships (its own memory and its spaces' roles)."""
    return current_access(server.config)


def viewer_of(server: MemoryServer) -> Viewer:
    """Who reads an audit trail: the principal, its spaces' roles, and whether it holds the admin scope."""
    principal = current_principal(server.config)
    access = Access.of(server.config, principal.user_id, principal.groups)
    return Viewer(principal.user_id, access.roles, admin=principal.may(ADMIN))


def user_of(server: MemoryServer) -> str:
    """The authenticated principal on SSE/HTTP, the configured user on stdio; never a tool argument."""
    return current_principal(server.config).user_id


def owner_of(
    ctx: Context[Any, Any], space: str | None, need: SpaceRole = "reader", doing: str = "this"
) -> Owner:
    """The owner resolved in a tool's body (the knowledge-graph tools, whose errors are results)."""
    return access_of(server_of(ctx)).owner(space, need, doing=doing)


@functools.cache  # one marker per (role, tool), however often the tool's annotations are evaluated
def _role(need: SpaceRole, doing: str) -> Resolve:
    @resolver
    def owner(ctx: Context[Any, Any], space: str | None = None) -> Owner:
        return access_of(server_of(ctx)).owner(space, need, doing=doing)

    owner.__name__ = owner.__qualname__ = f"{need}_for_{doing}"
    return Resolve(owner)


def writer(doing: str) -> Resolve:
    """The memory a write goes to: the caller's own, or a space where it holds the writer role."""
    return _role("writer", doing)


def reader(doing: str) -> Resolve:
    """One owner's memory to read, named in refusals by what the tool does."""
    return _role("reader", doing)


@resolver
def _readable(ctx: Context[Any, Any], space: str | None = None) -> list[Owner]:
    return access_of(server_of(ctx)).readable(space)


Member = Annotated[Owner, _role("reader", "this")]
"""One owner's memory to read: the caller's own, or a space it is a member of."""
Readable = Annotated[list[Owner], Resolve(_readable)]
"""What a read sees: the caller's memory and every space it reads, or the one space named."""


@asynccontextmanager
async def audited(
    ctx: Context[Any, Any],
    owner: str,
    action: str,
    *,
    ids: Iterable[str] = (),
    counts: dict[str, int] | None = None,
    at_end: bool = False,
) -> AsyncIterator[Draft]:
    """The audit record of a change a tool makes to `owner`'s memory (audit/log.py: Auditor.change),
    with the ids and counts the tool knows before it starts; the stores add what they touch."""
    async with service_of(ctx).audit.change(owner, action, at_end=at_end) as record:
        record.note(ids, counts)
        yield record


class Shown(Protocol):
    id: str
    space: str | None


async def audit_read(ctx: Context[Any, Any], shown: Iterable[Shown]) -> None:
    """The memories a tool or resource returned from each space, by id, in that space's audit trail
    (a read of one's personal memory is not recorded)."""
    by_space: dict[str, list[str]] = {}
    for item in shown:
        if item.space is not None:
            by_space.setdefault(space_key(item.space), []).append(item.id)
    for ledger, ids in by_space.items():
        await service_of(ctx).audit.read(ledger, ids)


async def audit_thread_read(ctx: Context[Any, Any], owner: str, view: WorkingMemoryView) -> WorkingMemoryView:
    """A space's working memory read: its messages' ids (and whether its summary was), in the trail."""
    counts = {"summary": 1} if view.summary else None
    await service_of(ctx).audit.read(owner, [m.id for m in view.messages], counts=counts)
    return view


def progress_of(ctx: Context[Any, Any]) -> Callable[[float, float | None, str | None], Any]:
    async def report(done: float, total: float | None, message: str | None) -> None:
        await ctx.report_progress(done, total, message)

    return report
