"""The explorer's pages that only read: threads, a thread's working memory, search, the memories
browser, one memory with its revisions, the profile, activity. Each calls the service function the
matching MCP tool or resource calls, with the visitor's user; nothing reads a store directly. What a
page shows from a shared space is in that space's audit trail, as the tool's read would be.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from mcp_memory.learning.editing import EDITABLE_TYPES
from mcp_memory.learning.parsing import FACT_KINDS
from mcp_memory.models import MEMORY_TYPES, Owner, space_key
from mcp_memory.search.query import SearchQuery
from mcp_memory.ui import charts, signin
from mcp_memory.ui.diff import word_diff
from mcp_memory.ui.explorer import Explorer
from mcp_memory.ui.guard import Visitor
from mcp_memory.views import WorkingMemoryView

SEARCH_MODES = ("hybrid", "text", "vector")
PERSONAL = "personal"  # the space filter's value for the visitor's own memory only
SEARCH_LIMIT = 20


async def threads(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    found = await ex.service.list_threads(ex.access(visitor).readable())
    return ex.page(request, visitor, "threads.html", nav="threads", threads=found)


async def thread(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    thread_id = request.path_params["thread_id"]
    space = request.query_params.get("space") or None  # a shared space's thread, or the visitor's own
    owner = ex.access(visitor).owner(space)
    view = await ex.service.get_working_memory(owner, thread_id)
    summary = {"summary": 1} if view.summary else None  # as get_working_memory records it
    await ex.service.audit.read(owner, [m.id for m in view.messages], counts=summary)
    return ex.page(
        request,
        visitor,
        "thread.html",
        nav="threads",
        view=view,
        gauge=gauge(view),
        space=space,
        trail=trail_link(ex, visitor, space, thread_id=thread_id),
    )


def trail_link(ex: Explorer, visitor: Visitor, space: str | None, **more: str) -> str | None:
    """The audit page's query for a space's trail (None: the visitor's own), if the visitor may read it
    (a space's owners and admins: service/audit_trail.py); None when they may not."""
    if not ex.may_audit(visitor, space):
        return None
    query = urlencode({k: v for k, v in {"space": space or "", **more}.items() if v})
    return f"?{query}" if query else ""


def chosen(ex: Explorer, visitor: Visitor, space: str) -> list[Owner]:
    """What a page's space filter shows: "" every memory the visitor reads, "personal" their own only,
    a space's name that space (not found, as for no space at all, when they are not a member)."""
    access = ex.access(visitor)
    if space == PERSONAL:
        return [access.owner(None)]
    return access.readable(space or None)


class Shown(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def space(self) -> str | None: ...


async def recorded(ex: Explorer, shown: Iterable[Shown]) -> None:
    """What a page showed from each space, by id, in that space's audit trail (as the tools' reads,
    mcp/tools/dependencies.py audit_read); the visitor's own memory's reads are not recorded."""
    by_space: dict[str, list[str]] = {}
    for item in shown:
        if item.space is not None:
            by_space.setdefault(space_key(item.space), []).append(item.id)
    for ledger, ids in by_space.items():
        await ex.service.audit.read(ledger, ids)


def gauge(view: WorkingMemoryView) -> dict[str, float]:
    """Where the used tokens and the summarization threshold fall on a 600-wide bar of the window."""
    window = max(1, int(view.context_window))
    width = 600.0
    return {
        "width": width,
        "used": round(min(1.0, view.token_count / window) * width, 1),
        "threshold": round(min(1.0, view.threshold_tokens / window) * width, 1),
        "over": view.token_count > view.threshold_tokens,
    }


async def search(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    params = request.query_params
    query = params.get("q", "").strip()
    mode = params.get("mode", "hybrid")
    types = [t for t in params.getlist("types") if t]
    space = params.get("space", "")
    owners = chosen(ex, visitor, space)
    result = None
    if query:
        asked = SearchQuery.of(
            owners, query, types=types or None, limit=SEARCH_LIMIT, mode=mode, settings=ex.service.settings
        )
        result = await ex.service.search(asked)
        await recorded(ex, result.results)
    return ex.page(
        request,
        visitor,
        "search.html",
        nav="search",
        query=query,
        mode=mode,
        modes=SEARCH_MODES,
        types=types,
        all_types=MEMORY_TYPES,
        result=result,
        space=space,
        spaces=sorted(ex.access(visitor).roles),
    )


async def memories(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    params = request.query_params
    filters: dict[str, Any] = {
        "types": [t for t in params.getlist("types") if t] or None,
        "thread_id": params.get("thread_id") or None,
        "kind": params.get("kind") or None,
        "since": params.get("since") or None,
        "until": params.get("until") or None,
        "include_superseded": params.get("include_superseded") == "on",
        "order": params.get("order") or "newest",
        "as_of": params.get("as_of") or None,
    }
    space = params.get("space", "")
    limit = params.get("limit") or "20"
    page = await ex.service.list_memories(
        chosen(ex, visitor, space),
        # A plain number becomes one; anything else goes on as text, for the service to refuse by name.
        limit=int(limit) if limit.isascii() and limit.isdecimal() and len(limit) <= 6 else limit,
        cursor=params.get("cursor") or None,
        **filters,
    )
    await recorded(ex, page.memories)
    next_link = None
    if page.next_cursor is not None:
        kept = [(k, v) for k, v in params.multi_items() if k != "cursor" and v]
        next_link = "?" + urlencode([*kept, ("cursor", page.next_cursor)])
    return ex.page(
        request,
        visitor,
        "memories.html",
        nav="memories",
        page=page,
        filters=filters,
        limit=limit,
        all_types=MEMORY_TYPES,
        kinds=FACT_KINDS,
        next_link=next_link,
        space=space,
        spaces=sorted(ex.access(visitor).roles),
        trail=trail_link(ex, visitor, None if space == PERSONAL else space) if space else None,
    )


async def memory(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    memory_id = request.path_params["memory_id"]
    access = ex.access(visitor)
    found = await ex.service.get_memory(access.readable(), memory_id)
    await recorded(ex, [found])
    revisions: list[dict[str, Any]] = []
    learning = ex.learning
    if learning is not None:
        history = await learning.editor.history(access.owner(found.space), memory_id)
        previous = ""
        for revision in history.revisions:
            revisions.append({"revision": revision, "diff": word_diff(previous, revision.content)})
            previous = revision.content
    return ex.page(
        request,
        visitor,
        "memory.html",
        nav="memories",
        memory=found,
        revisions=revisions,
        editable_history=learning is not None and found.type in EDITABLE_TYPES,
        editable=learning is not None and found.type in EDITABLE_TYPES and found.superseded_by is None,
    )


async def profile(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    user_id = visitor.principal.user_id
    text = ""
    learning = ex.learning
    if learning is not None:  # as memory://profile: the offline profile when none was built yet
        current = await learning.profiles.current(user_id)
        if current is None:
            current = await learning.profiles.rebuild_offline(user_id)
        text = current.content if current else ""
    facts = await ex.service.list_memories(user_id, types=["fact"], limit=100)
    return ex.page(request, visitor, "profile.html", nav="profile", profile=text, facts=facts)


async def activity_page(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    user_id = visitor.principal.user_id
    daily = await ex.service.memories_per_day(user_id)
    summarized = await ex.service.summarizations_per_thread(user_id)
    return ex.page(
        request,
        visitor,
        "activity.html",
        nav="activity",
        daily=daily,
        per_day=charts.stacked_daily_bars(daily.days, daily.counts),
        summarized=summarized,
        per_thread=charts.horizontal_bars([(s.thread_id, s.count) for s in summarized]),
    )


async def forget_form(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    params = request.query_params
    return forget_page(
        ex,
        request,
        visitor,
        thread_id=params.get("thread_id", ""),
        memory_id=params.get("memory_id", ""),
        space=params.get("space", ""),
    )


def forget_page(ex: Explorer, request: Request, visitor: Visitor, **shown: Any) -> Response:
    """The forget page: empty forms, or what `shown` fills in (the fields, a receipt)."""
    page: dict[str, Any] = {
        "thread_id": "",
        "memory_id": "",
        "everything": False,
        "receipt": None,
        "admin_receipt": None,
        "target_user": "",
        "space": "",
    }
    return ex.page(request, visitor, "forget.html", nav="forget", **(page | shown))


async def login_form(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    if not ex.guard.needs_login:
        return ex.redirect(request, "/threads")
    return ex.page(request, visitor, "login.html", nav="login", message=None, sign_in=signin.offered(ex))
