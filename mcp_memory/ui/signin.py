"""The explorer signs in through the identity provider: OpenID Connect authorization code with PKCE.

`GET /ui/auth/login` sends the browser to the issuer's authorization endpoint with a fresh `state` and
PKCE verifier, both kept in a short-lived HttpOnly cookie only `/ui/auth` receives (SameSite=Lax: the
provider's redirect back is a cross-site navigation). `GET /ui/auth/callback` checks the state,
exchanges the code (with the verifier, the resource URL as RFC 8707 `resource`, and the client secret
when one is configured), and verifies the access token exactly as the MCP endpoint would: issuer,
audience, expiry, signature, user and scopes. That token becomes the session cookie, bound to the
verified identity and checked again on every request, so nothing about a session is kept on the server
and any replica answers. When it expires the browser signs in again (the provider's own session makes
that a redirect, not a password prompt).

The redirect URI is built from `security.resource_url`'s origin and the explorer's mount, never from
the request's Host header, and must be registered with the provider as is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from mcp_memory.security.http import Unreachable
from mcp_memory.security.oauth.claims import BASIC_SCOPES, ClaimRules
from mcp_memory.security.oauth.issuer import IssuerMetadata, IssuerUnavailable
from mcp_memory.security.oauth.tokens import resource_of
from mcp_memory.ui.explorer import Explorer, base_path
from mcp_memory.ui.guard import Guard, Refused, Visitor

log = logging.getLogger(__name__)

FLOW_COOKIE = "mm_oidc"
FLOW_SECONDS = 600


def offered(ex: Explorer) -> bool:
    """The explorer offers sign-in through the provider: an issuer and an explorer client are configured."""
    security = ex.guard.settings.security
    verifier = ex.guard.verifier
    return bool(security.explorer_client_id and verifier is not None and verifier.jwt is not None)


def redirect_uri(ex: Explorer, request: Request) -> str:
    resource = resource_of(ex.guard.settings) or ""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{base_path(request)}/auth/callback"


async def sign_in(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    """GET /auth/login: to the provider, with state and a PKCE challenge."""
    if not offered(ex):
        raise Refused(404, "signing in through an identity provider is not configured here")
    metadata = await _metadata(ex)
    if metadata.authorization_endpoint is None:
        raise Refused(502, "the identity provider's metadata names no authorization endpoint")
    security = ex.guard.settings.security
    state, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": security.explorer_client_id or "",
        "redirect_uri": redirect_uri(ex, request),
        "scope": "openid " + ClaimRules.of(security).requested(BASIC_SCOPES),
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": resource_of(ex.guard.settings) or "",
    }
    response = RedirectResponse(f"{metadata.authorization_endpoint}?{urlencode(query)}", status_code=303)
    response.set_cookie(
        FLOW_COOKIE,
        f"{state}.{verifier}",
        max_age=FLOW_SECONDS,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path=base_path(request) + "/auth",
    )
    return response


async def callback(ex: Explorer, request: Request, visitor: Visitor) -> Response:
    """GET /auth/callback: check the state, exchange the code, verify the token, set the session."""
    if not offered(ex):
        raise Refused(404, "signing in through an identity provider is not configured here")
    error = request.query_params.get("error")
    if error:
        raise Refused(403, f"the identity provider refused the sign-in: {error}")
    state, _, verifier = request.cookies.get(FLOW_COOKIE, "").partition(".")
    given = request.query_params.get("state", "")
    if not state or not verifier or not hmac.compare_digest(state, given):
        raise Refused(400, "this sign-in was not started here, or took too long: sign in again")
    code = request.query_params.get("code", "")
    if not code:
        raise Refused(400, "the identity provider sent no authorization code")
    token = await _exchange(ex, request, code, verifier)
    principal = await ex.guard.token_principal(token)
    if principal is None:
        raise Refused(403, "the identity provider's token is not valid for this server (see the server log)")
    log.info("explorer: %s signed in through the identity provider", principal.user_id)
    response = ex.page(request, visitor, "signed_in.html", nav="login", who=principal.user_id)
    Guard.keep_session(response, request, token)
    response.delete_cookie(FLOW_COOKIE, path=base_path(request) + "/auth")
    return response


async def _metadata(ex: Explorer) -> IssuerMetadata:
    verifier = ex.guard.verifier
    assert verifier is not None and verifier.jwt is not None
    try:
        return await verifier.jwt.issuer.metadata()
    except IssuerUnavailable as e:
        raise Refused(502, f"the identity provider cannot be reached: {e}") from e


async def _exchange(ex: Explorer, request: Request, code: str, verifier: str) -> str:
    metadata = await _metadata(ex)
    assert ex.guard.verifier is not None and ex.guard.verifier.jwt is not None  # _metadata checked
    http = ex.guard.verifier.jwt.issuer.http  # the one client for the identity provider
    if metadata.token_endpoint is None:
        raise Refused(502, "the identity provider's metadata names no token endpoint")
    security = ex.guard.settings.security
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri(ex, request),
        "code_verifier": verifier,
        "resource": resource_of(ex.guard.settings) or "",
    }
    headers = {"Accept": "application/json"}
    if security.explorer_client_secret is not None:  # client_secret_basic (RFC 6749 section 2.3.1)
        pair = f"{security.explorer_client_id}:{security.explorer_client_secret.get_secret_value()}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:  # a public client: PKCE is its proof
        form["client_id"] = security.explorer_client_id or ""
    try:
        answer = await http.post(metadata.token_endpoint, data=form, headers=headers)
    except Unreachable as e:
        raise Refused(502, f"the identity provider's token endpoint did not answer: {e.cause}") from e.cause
    try:
        body = answer.json()
    except ValueError:
        body = {}
    token = body.get("access_token") if isinstance(body, dict) else None
    if answer.status_code != 200 or not isinstance(token, str):
        reason = body.get("error_description") or body.get("error") if isinstance(body, dict) else None
        raise Refused(403, f"the identity provider did not issue a token: {reason or answer.status_code}")
    return token
