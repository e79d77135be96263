"""What every page handler shares: the memory service, the guard, and rendering a page.

Pages are Jinja2 templates with autoescaping on for every template: memory text is untrusted (it may
hold HTML or script) and is only ever inserted as escaped text. Nothing is marked safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from mcp_memory import __version__
from mcp_memory.errors import MemoryServerError
from mcp_memory.learning import Learning
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.security.principals import ADMIN, READ, WRITE
from mcp_memory.security.spaces import Access
from mcp_memory.service.audit_trail import Viewer, ledger_for
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.ui.guard import CSRF_COOKIE, CSRF_FIELD, Guard, Refused, Visitor

_templates = jinja2.Environment(
    loader=jinja2.PackageLoader("mcp_memory.ui", "templates"),
    autoescape=True,  # every template, whatever its name
    undefined=jinja2.StrictUndefined,  # a misspelt name is an error, not an empty string
    trim_blocks=True,
    lstrip_blocks=True,
)
LIST_EXCERPT_CHARS = 2000  # of a memory's text in a list; its own page shows it whole


def excerpt(text: str) -> str:
    """A memory's text as a list shows it: a pasted file of a million characters is not drawn whole."""
    if len(text) <= LIST_EXCERPT_CHARS:
        return text
    return (
        f"{text[:LIST_EXCERPT_CHARS].rstrip()}… ({len(text):,} characters in all: open it to read it whole)"
    )


_templates.filters["excerpt"] = excerpt


@dataclass(frozen=True)
class Explorer:
    host: ServiceHost
    guard: Guard

    @property
    def service(self) -> MemoryService:
        return self.host.service

    def access(self, visitor: Visitor) -> Access:
        """The visitor's memories: their own and the shared spaces they are a member of (security/spaces.py)."""
        principal = visitor.principal
        return Access.of(self.guard.settings, principal.user_id, principal.groups)

    def viewer(self, visitor: Visitor) -> Viewer:
        """Who reads an audit trail, as for MCP (mcp/tools/dependencies.py viewer_of): the principal,
        its spaces' roles, and whether it holds the admin scope."""
        principal = visitor.principal
        return Viewer(principal.user_id, self.access(visitor).roles, admin=principal.may(ADMIN))

    def may_audit(self, visitor: Visitor, space: str | None) -> bool:
        """Whether the visitor reads this trail (service/audit_trail.py): a link to it is worth showing."""
        try:
            ledger_for(self.viewer(visitor), space)
        except MemoryServerError:  # refused, or not a space name at all
            return False
        return True

    @property
    def learning(self) -> Learning | None:
        found = self.host.service.learning
        return found if isinstance(found, Learning) else None

    def page(
        self,
        request: Request,
        visitor: Visitor,
        template: str,
        *,
        nav: str = "",
        status: int = 200,
        **context: Any,
    ) -> Response:
        html = _templates.get_template(template).render(
            base=base_path(request),
            nav=nav,
            visitor=visitor,
            csrf_field=CSRF_FIELD,
            may_write=visitor.may(WRITE),
            may_read=visitor.may(READ),
            is_admin=visitor.principal.authenticated and visitor.may(ADMIN),
            needs_login=self.guard.needs_login,
            version=__version__,
            **context,
        )
        return with_csrf_cookie(HTMLResponse(html, status_code=status), request, visitor)

    def redirect(self, request: Request, path: str) -> Response:
        """After a POST: see the result with a GET (303), so a reload never repeats the change."""
        return RedirectResponse(base_path(request) + path, status_code=303)

    def refused(self, request: Request, visitor: Visitor | None, refusal: Refused) -> Response:
        if refusal.login:
            return RedirectResponse(base_path(request) + "/login", status_code=303)
        response = self.error(request, visitor, str(refusal), refusal.status)
        response.headers.update(refusal.headers)
        return response

    def error(self, request: Request, visitor: Visitor | None, message: str, status: int) -> Response:
        if visitor is None:  # refused before we knew who asked: a bare page, no navigation
            html = _templates.get_template("refused.html").render(base=base_path(request), message=message)
            return HTMLResponse(html, status_code=status)
        return self.page(request, visitor, "error.html", status=status, message=message)


def base_path(request: Request) -> str:
    """Where the explorer is mounted (/ui): links are built from it, never from the Host header."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def with_csrf_cookie(response: Response, request: Request, visitor: Visitor) -> Response:
    if visitor.new_csrf:
        response.set_cookie(
            CSRF_COOKIE,
            visitor.csrf,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path=base_path(request) or "/",  # the same path as the token cookie (ui/editing.py)
        )
    return response
