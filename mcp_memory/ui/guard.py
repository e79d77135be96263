"""Who may see the explorer, and what they may do: the same tokens and scopes as the MCP endpoint.

A browser cannot send a bearer header on a link, so it logs in once: the token goes into an HttpOnly,
SameSite=Strict cookie that only /ui receives, and is checked against the configured hashes on every
request, exactly like a bearer header (which scripts such as curl may send instead). Nothing about a
session is kept on the server, so any replica answers any page.

Cross-site requests: every form carries a random value that must equal the `mm_csrf` cookie
(double submit), and a POST whose browser says it came from another site (Sec-Fetch-Site, Origin)
is refused before the value is even compared. Requests with a bearer header need neither: a browser
never adds that header by itself.

With no token configured the explorer serves the configured user to loopback clients only, and only
under a loopback Host name, so a web page cannot reach it by DNS rebinding.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.security.exposure import is_loopback
from mcp_memory.security.oauth.bearer import Challenges
from mcp_memory.security.oauth.claims import BASIC_SCOPES, covering
from mcp_memory.security.oauth.tokens import TokenVerifier
from mcp_memory.security.principals import Principal, principal_of

TOKEN_COOKIE = "mm_token"
CSRF_COOKIE = "mm_csrf"
CSRF_FIELD = "csrf"


class Refused(Exception):
    """A request the explorer will not serve: its status and a message for the page."""

    def __init__(
        self, status: int, message: str, *, login: bool = False, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.login = login  # an HTML GET without credentials: send the browser to the login page
        self.headers = headers or {}  # WWW-Authenticate on a 401 or 403, as the MCP endpoint answers


@dataclass(frozen=True)
class Visitor:
    """One request's caller: whose memories, which scopes, and the CSRF value its forms carry."""

    principal: Principal
    csrf: str
    new_csrf: bool  # the cookie must be set on this response
    by_header: bool  # authenticated with an Authorization header, not the browser's cookie

    def may(self, scope: str) -> bool:
        return self.principal.may(scope)


class Guard:
    def __init__(self, settings: Settings, verifier: TokenVerifier | None) -> None:
        self.settings = settings
        self.verifier = verifier
        self.challenges = Challenges(settings)

    @property
    def needs_login(self) -> bool:
        return self.verifier is not None

    async def visitor(self, request: Request, *, anonymous: bool = False) -> Visitor:
        """The caller of this request, or Refused. `anonymous`: the login page, served to anyone."""
        if self.verifier is None:
            self._loopback_only(request)
        csrf = request.cookies.get(CSRF_COOKIE) or ""
        new_csrf = len(csrf) < 32
        if new_csrf:
            csrf = secrets.token_urlsafe(32)
        principal, by_header = await self._principal(request, anonymous)
        return Visitor(principal, csrf, new_csrf, by_header)

    async def token_principal(self, token: str) -> Principal | None:
        """The principal of a pasted token, or None when it matches no configured (unexpired) one."""
        if self.verifier is None or not token:
            return None
        verified = await self.verifier.verify_token(token.strip())
        if verified is None:
            return None
        try:
            return principal_of(verified, self.settings)
        except MemoryServerError:  # a token that names no user
            return None

    async def _principal(self, request: Request, anonymous: bool) -> tuple[Principal, bool]:
        if self.verifier is None:
            return principal_of(None, self.settings), False
        header = request.headers.get("authorization", "")
        by_header = header.lower().startswith("bearer ")
        token = header[7:] if by_header else request.cookies.get(TOKEN_COOKIE, "")
        principal = await self.token_principal(token)
        if principal is not None:
            return principal, by_header
        if anonymous:
            return Principal(user_id="", scopes=frozenset(), name="anonymous", authenticated=False), False
        if by_header:
            reason = "the bearer token is not valid (unknown, expired, or not issued for this server)"
            challenge = self.challenges.header(BASIC_SCOPES, "invalid_token", reason)
            raise Refused(401, reason, headers={"WWW-Authenticate": challenge})
        challenge = self.challenges.header(BASIC_SCOPES)
        raise Refused(
            401,
            "log in with a token to see memories",
            login=request.method == "GET",
            headers={"WWW-Authenticate": challenge},
        )

    def _loopback_only(self, request: Request) -> None:
        client = request.client.host if request.client else ""
        if not is_loopback(client):
            raise Refused(403, "without configured tokens the explorer answers this machine only")
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if not is_loopback(name):
            raise Refused(400, f"unexpected Host {host!r}: open the explorer at http://127.0.0.1")

    @staticmethod
    def keep_session(response: Response, request: Request, token: str) -> None:
        """Set the session cookie: the token itself, HttpOnly and SameSite=Strict, for the explorer only."""
        response.set_cookie(
            TOKEN_COOKIE,
            token,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path=str(request.scope.get("root_path", "")).rstrip("/") or "/",
        )

    @staticmethod
    def check_form(request: Request, visitor: Visitor, form_value: object) -> None:
        """Refuse a browser POST that another site could have made; a bearer-header POST passes."""
        if visitor.by_header:
            return
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            raise Refused(403, "refused a form sent from another site")
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            raise Refused(403, "refused a form sent from another origin")
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not isinstance(form_value, str) or not cookie or not hmac.compare_digest(form_value, cookie):
            raise Refused(403, "the form has expired or was not sent by this page: reload the page and retry")

    def require(self, visitor: Visitor, scope: str, what: str) -> None:
        if not visitor.may(scope):
            raise self.lacking(scope, f"{what} needs the {scope} scope; this token does not have it")

    def lacking(self, scope: str, reason: str) -> Refused:
        """A 403 for a token without `scope`, with the RFC 6750 insufficient_scope challenge."""
        challenge = self.challenges.header(covering(scope), "insufficient_scope", reason)
        return Refused(403, reason, headers={"WWW-Authenticate": challenge})
