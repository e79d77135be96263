"""The explorer's actions that change memory: edit a fact, roll it back, summarize a thread, forget,
and (admin) forget a user. Each is a form post, checked against cross-site requests and the visitor's
scopes before it runs, and each calls the same service method as the matching MCP tool. Each is in
the audit trail as the tool's change would be, done by the visitor (ui/app.py sets who acts).

Forgetting always shows a dry-run receipt first: the real deletion only runs from that receipt's
confirm button, which posts `confirm=1`.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from mcp_memory import validation as check
from mcp_memory.learning.editing import MemoryEditor
from mcp_memory.models import Owner
from mcp_memory.security.principals import ADMIN, WRITE
from mcp_memory.ui import signin
from mcp_memory.ui.explorer import Explorer, base_path
from mcp_memory.ui.guard import CSRF_FIELD, TOKEN_COOKIE, Guard, Refused, Visitor
from mcp_memory.ui.reading import forget_page

MAX_FORM_BYTES = 1_000_000  # a form field never needs more (one memory's content is far less)


async def posted(ex: Explorer, request: Request, visitor: Visitor, scope: str, what: str) -> FormData:
    """The form of a POST that passed the cross-site checks and whose visitor holds `scope`."""
    form = await request.form(max_files=0, max_fields=20, max_part_size=MAX_FORM_BYTES)
    Guard.check_form(request, visitor, form.get(CSRF_FIELD))
    ex.guard.require(visitor, scope, what)
    return form


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def _editor(ex: Explorer) -> MemoryEditor:
    if ex.learning is None:
        raise Refused(409, "memories cannot be changed here: the long-term store does not keep revisions")
    return ex.learning.editor


async def edit_memory(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    form = await posted(ex, request, visitor, WRITE, "editing a memory")
    memory_id = request.path_params["memory_id"]
    content = form.get("content")
    owner = await _writer_of(ex, visitor, memory_id, "update_memory")
    async with ex.service.audit.change(owner, "update") as record:  # as the update_memory tool
        record.note([memory_id])
        await _editor(ex).update(owner, memory_id, content if isinstance(content, str) else "")
    return ex.redirect(request, f"/memories/{memory_id}")


async def rollback_memory(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    form = await posted(ex, request, visitor, WRITE, "rolling a memory back")
    memory_id = request.path_params["memory_id"]
    owner = await _writer_of(ex, visitor, memory_id, "rollback_memory")
    async with ex.service.audit.change(owner, "rollback") as record:  # as the rollback_memory tool
        record.note([memory_id])
        await _editor(ex).rollback(owner, memory_id, _text(form, "revision_id"))
    return ex.redirect(request, f"/memories/{memory_id}")


async def summarize_thread(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    form = await posted(ex, request, visitor, WRITE, "summarizing a thread")
    thread_id = request.path_params["thread_id"]
    space = _text(form, "space") or None
    await ex.service.summarize_thread(
        ex.access(visitor).owner(space, "writer", doing="summarize_thread"), thread_id
    )
    return ex.redirect(
        request, f"/threads/{thread_id}" + (f"?{urlencode({'space': space})}" if space else "")
    )


async def forget(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    form = await posted(ex, request, visitor, WRITE, "forgetting")
    thread_id, memory_id = _text(form, "thread_id"), _text(form, "memory_id")
    everything = form.get("everything") in ("on", "1", "true")
    confirmed = form.get("confirm") == "1"
    space = _text(form, "space") or None
    if memory_id and not space:  # a memory is forgotten where it is: the visitor's own memory or a space
        space = (await ex.service.get_memory(ex.access(visitor).readable(), memory_id)).space
    receipt = await ex.service.forget(
        ex.access(visitor).owner(space, "writer", doing="forget"),
        memory_id=memory_id or None,
        thread_id=thread_id or None,
        everything=everything,
        dry_run=not confirmed,
    )
    return forget_page(
        ex,
        request,
        visitor,
        thread_id=thread_id,
        memory_id=memory_id,
        everything=everything,
        receipt=receipt,
        space=space or "",
    )


async def forget_user(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    """Admin only, as the forget_user tool: every memory of another user, dry run first."""
    form = await posted(ex, request, visitor, ADMIN, "forgetting a user")
    if not visitor.principal.authenticated:
        raise Refused(403, "forgetting a user needs an admin token")
    target = check.thread_id(_text(form, "user_id"), "user_id")  # same alphabet as thread ids
    receipt = await ex.service.forget_user(target, dry_run=form.get("confirm") != "1")
    return forget_page(ex, request, visitor, admin_receipt=receipt, target_user=target)


async def _writer_of(ex: Explorer, visitor: Visitor, memory_id: str, doing: str) -> Owner:
    """Where a memory the visitor changes lives, if they may write there: their own memory, or its space."""
    access = ex.access(visitor)
    found = await ex.service.get_memory(access.readable(), memory_id)
    return access.owner(found.space, "writer", doing=doing)


async def login(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    form = await request.form(max_files=0, max_fields=5, max_part_size=10_000)
    Guard.check_form(request, visitor, form.get(CSRF_FIELD))
    token = _text(form, "token")
    principal = await ex.guard.token_principal(token)
    if principal is None:
        return ex.page(
            request,
            visitor,
            "login.html",
            nav="login",
            status=401,
            message="That token matches no configured token, or it has expired.",
            sign_in=signin.offered(ex),
        )
    response = ex.redirect(request, "/threads")
    Guard.keep_session(response, request, token)
    return response


async def logout(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    form = await request.form(max_files=0, max_fields=5, max_part_size=10_000)
    Guard.check_form(request, visitor, form.get(CSRF_FIELD))
    response = ex.redirect(request, "/login")
    response.delete_cookie(TOKEN_COOKIE, path=_cookie_path(request))
    return response


def _cookie_path(request: Request) -> str:
    return base_path(request) or "/"
