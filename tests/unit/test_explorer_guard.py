"""The explorer's Guard on hand-built requests: who is served without tokens (loopback clients under a
loopback Host name only), how a token is found (bearer header, then the login cookie), and which form
posts count as coming from the explorer's own pages (CSRF double submit, Sec-Fetch-Site, Origin)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from starlette.requests import Request

from mcp_memory.config import Settings, TokenEntry
from mcp_memory.security.oauth.tokens import build_verifier
from mcp_memory.security.principals import Principal
from mcp_memory.security.static_tokens import hash_token
from mcp_memory.ui.guard import CSRF_COOKIE, TOKEN_COOKIE, Guard, Refused, Visitor

pytestmark = pytest.mark.anyio

ANN_TOKEN = "mmt_ann-token-for-the-guard-tests"
EXPIRED_TOKEN = "mmt_expired-token-for-the-guard-tests"
CSRF = "c" * 43  # as long as secrets.token_urlsafe(32)


def request(
    method: str = "GET",
    *,
    client: tuple[str, int] = ("127.0.0.1", 50000),
    host: str | None = "127.0.0.1:8765",
    headers: dict[str, str] | None = None,
    cookies: dict[str, str] | None = None,
) -> Request:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    if host is not None:
        raw.append((b"host", host.encode("latin-1")))
    if cookies:
        raw.append((b"cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()).encode("latin-1")))
    return Request(
        {
            "type": "http",
            "method": method,
            "scheme": "http",
            "path": "/ui/threads",
            "root_path": "/ui",
            "query_string": b"",
            "headers": raw,
            "client": client,
            "server": ("127.0.0.1", 8765),
        }
    )


@pytest.fixture
def open_guard(settings: Settings) -> Guard:
    """No tokens configured."""
    return Guard(settings, build_verifier(settings))


@pytest.fixture
def token_guard(settings: Settings) -> Guard:
    entries = [
        TokenEntry(sha256=hash_token(ANN_TOKEN), user_id="ann", name="ann", scopes=["read", "write"]),
        TokenEntry(
            sha256=hash_token(EXPIRED_TOKEN),
            user_id="ann",
            name="old",
            expires_at=datetime.now(UTC) - timedelta(days=1),
        ),
    ]
    with_tokens = settings.model_copy(
        update={"security": settings.security.model_copy(update={"tokens": entries})}
    )
    return Guard(with_tokens, build_verifier(with_tokens))


def visitor(*, by_header: bool = False) -> Visitor:
    principal = Principal(user_id="ann", scopes=frozenset({"read", "write"}), name="ann")
    return Visitor(principal, CSRF, new_csrf=False, by_header=by_header)


# ---- without tokens: this machine only ------------------------------------------------------------


@pytest.mark.parametrize("client", ["127.0.0.1", "127.8.9.10", "::1"])
@pytest.mark.parametrize(
    "host", ["127.0.0.1:8765", "127.0.0.1", "localhost:8765", "localhost", "[::1]:8765", "[::1]"]
)
async def test_without_tokens_a_loopback_client_under_a_loopback_name_is_the_configured_user(
    open_guard: Guard, client: str, host: str
) -> None:
    found = await open_guard.visitor(request(client=(client, 1), host=host))
    assert found.principal.user_id == "tester"
    assert not found.principal.authenticated and not found.may("admin")


@pytest.mark.parametrize("client", ["203.0.113.9", "10.0.0.2", "192.168.1.5", "::ffff:203.0.113.9", ""])
async def test_without_tokens_another_machine_is_refused(open_guard: Guard, client: str) -> None:
    with pytest.raises(Refused) as refused:
        await open_guard.visitor(request(client=(client, 1)))
    assert refused.value.status == 403


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost.evil.example:8765", "", None],
)
async def test_without_tokens_a_foreign_host_name_is_refused(open_guard: Guard, host: str | None) -> None:
    with pytest.raises(Refused) as refused:
        await open_guard.visitor(request(host=host))
    assert refused.value.status == 400


async def test_a_short_or_missing_csrf_cookie_is_replaced_and_a_good_one_kept(open_guard: Guard) -> None:
    fresh = await open_guard.visitor(request())
    assert fresh.new_csrf and len(fresh.csrf) >= 32
    other = await open_guard.visitor(request())
    assert other.csrf != fresh.csrf, "two visitors got the same CSRF value"
    short = await open_guard.visitor(request(cookies={CSRF_COOKIE: "abc"}))
    assert short.new_csrf and short.csrf != "abc"
    kept = await open_guard.visitor(request(cookies={CSRF_COOKIE: CSRF}))
    assert not kept.new_csrf and kept.csrf == CSRF


# ---- with tokens ----------------------------------------------------------------------------------


async def test_a_token_in_the_header_or_the_cookie_names_the_principal(token_guard: Guard) -> None:
    by_header = await token_guard.visitor(request(headers={"Authorization": f"Bearer {ANN_TOKEN}"}))
    assert by_header.principal.user_id == "ann" and by_header.by_header
    by_cookie = await token_guard.visitor(request(cookies={TOKEN_COOKIE: ANN_TOKEN}))
    assert by_cookie.principal.user_id == "ann" and not by_cookie.by_header
    # Any address may ask once tokens are configured: the token is the check.
    remote = await token_guard.visitor(
        request(client=("203.0.113.9", 1), host="memory.example", cookies={TOKEN_COOKIE: ANN_TOKEN})
    )
    assert remote.principal.user_id == "ann"


@pytest.mark.parametrize("token", ["", "mmt_unknown", EXPIRED_TOKEN, ANN_TOKEN + "x", hash_token(ANN_TOKEN)])
async def test_a_missing_unknown_or_expired_token_is_refused(token_guard: Guard, token: str) -> None:
    with pytest.raises(Refused) as get:
        await token_guard.visitor(request(cookies={TOKEN_COOKIE: token} if token else None))
    assert get.value.status == 401 and get.value.login, "a page view should go to the login page"
    with pytest.raises(Refused) as post:
        await token_guard.visitor(request("POST", cookies={TOKEN_COOKIE: token} if token else None))
    assert post.value.status == 401 and not post.value.login
    if token:
        with pytest.raises(Refused) as header:
            await token_guard.visitor(request(headers={"Authorization": f"Bearer {token}"}))
        assert header.value.status == 401 and not header.value.login
    anonymous = await token_guard.visitor(request(), anonymous=True)
    assert not anonymous.principal.authenticated and not anonymous.principal.scopes
    assert anonymous.principal.user_id == ""


async def test_a_bad_bearer_header_is_not_rescued_by_a_good_cookie(token_guard: Guard) -> None:
    with pytest.raises(Refused) as refused:
        await token_guard.visitor(
            request(headers={"Authorization": "Bearer mmt_unknown"}, cookies={TOKEN_COOKIE: ANN_TOKEN})
        )
    assert refused.value.status == 401


async def test_a_pasted_token_is_looked_up_by_its_hash(token_guard: Guard, open_guard: Guard) -> None:
    found = await token_guard.token_principal(f"  {ANN_TOKEN}\n")
    assert found is not None and found.user_id == "ann"
    for token in ("", "mmt_unknown", EXPIRED_TOKEN, hash_token(ANN_TOKEN)):
        assert await token_guard.token_principal(token) is None, token
    assert await open_guard.token_principal(ANN_TOKEN) is None


# ---- form posts -----------------------------------------------------------------------------------


def post(headers: dict[str, str] | None = None, *, csrf_cookie: str | None = CSRF) -> Request:
    return request("POST", headers=headers, cookies={CSRF_COOKIE: csrf_cookie} if csrf_cookie else None)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}, {"Origin": "http://127.0.0.1:8765"}],
)
def test_a_form_of_this_site_with_its_csrf_value_passes(headers: dict[str, str]) -> None:
    Guard.check_form(post(headers), visitor(), CSRF)


@pytest.mark.parametrize(
    ("headers", "field", "cookie"),
    [
        ({}, None, CSRF),  # no field
        ({}, "", CSRF),
        ({}, CSRF[:-1] + "d", CSRF),  # another value
        ({}, CSRF, None),  # no cookie to compare with
        ({"Sec-Fetch-Site": "cross-site"}, CSRF, CSRF),
        ({"Sec-Fetch-Site": "same-site"}, CSRF, CSRF),  # a sibling subdomain is another origin
        ({"Origin": "http://evil.example"}, CSRF, CSRF),
        ({"Origin": "null"}, CSRF, CSRF),  # sandboxed frames, data: URLs
        ({"Origin": "http://127.0.0.1:9999"}, CSRF, CSRF),
        ({"Origin": "https://127.0.0.1:8765"}, CSRF, CSRF),
    ],
)
def test_a_form_another_site_could_have_sent_is_refused(
    headers: dict[str, str], field: str | None, cookie: str | None
) -> None:
    with pytest.raises(Refused) as refused:
        Guard.check_form(post(headers, csrf_cookie=cookie), visitor(), field)
    assert refused.value.status == 403


def test_a_bearer_header_post_needs_no_csrf_value() -> None:
    Guard.check_form(post({"Sec-Fetch-Site": "cross-site"}, csrf_cookie=None), visitor(by_header=True), None)


def test_scopes_are_required(settings: Settings) -> None:
    guard = Guard(settings, None)
    read_only = Visitor(Principal("ann", frozenset({"read"}), "ro"), CSRF, new_csrf=False, by_header=True)
    guard.require(read_only, "read", "seeing memories")
    with pytest.raises(Refused, match="write scope") as refused:
        guard.require(read_only, "write", "editing a memory")
    assert refused.value.status == 403
    # The same step-up challenge the MCP endpoint gives.
    assert refused.value.headers["WWW-Authenticate"].startswith('Bearer error="insufficient_scope"')
    assert 'scope="read write"' in refused.value.headers["WWW-Authenticate"]
    admin = Visitor(Principal("root", frozenset({"admin"}), "root"), CSRF, new_csrf=False, by_header=True)
    for scope in ("read", "write", "admin"):
        guard.require(admin, scope, "anything")
