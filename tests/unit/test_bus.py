"""ReplicaBus on one replica: each listen stream and each 2025-protocol session hears the changes of
its own principal, once; events that are no one's in particular reach everyone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.connection import Connection
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent, ToolsListChanged
from mcp_types import SubscribeRequestParams, UnsubscribeRequestParams

from mcp_memory.config import Settings
from mcp_memory.mcp.subscriptions import ReplicaBus

pytestmark = pytest.mark.anyio

URI = "memory://threads/default"


@contextmanager
def as_principal(user_id: str) -> Iterator[None]:
    """Code run inside this block sees the bearer token of `user_id`, as an HTTP request handler does."""
    token = AccessToken(token="t", client_id=user_id, subject=user_id, scopes=["read", "write"])
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


class LegacySession:
    """A 2025-protocol client session as LegacySubscriptions sees it: it can be sent resource updates."""

    def __init__(self, heard: list[ServerEvent]) -> None:
        self.heard = heard
        self.ctx: Any = SimpleNamespace(session=self)
        # Its own connection, as the SDK's per-request session proxies carry (subscriptions key by it); its
        # channel is never used, this fake's send_resource_updated is.
        self._connection = Connection(outbound=None, protocol_version="2025-11-25")  # type: ignore[arg-type]

    async def send_resource_updated(self, uri: str) -> None:
        self.heard.append(ResourceUpdated(uri=uri))


async def subscribed(bus: ReplicaBus, user: str) -> tuple[list[ServerEvent], list[ServerEvent]]:
    """(what user's listen stream hears, what user's 2025 session subscribed to URI hears)."""
    listen: list[ServerEvent] = []
    legacy: list[ServerEvent] = []
    with as_principal(user):
        bus.subscribe(listen.append)
        await bus.legacy.subscribe(LegacySession(legacy).ctx, SubscribeRequestParams(uri=URI))
    return listen, legacy


async def test_each_subscriber_hears_its_own_users_changes_once(settings: Settings) -> None:
    bus = ReplicaBus(settings)
    ann_listen, ann_legacy = await subscribed(bus, "ann")
    bob_listen, bob_legacy = await subscribed(bus, "bob")

    await bus.publish_for("ann", ResourceUpdated(uri=URI))
    await bus.publish_for("ann", ResourceUpdated(uri="memory://threads/other"))
    await bus.publish_for("ann", ResourcesListChanged())

    assert ann_listen == [
        ResourceUpdated(uri=URI),
        ResourceUpdated(uri="memory://threads/other"),  # the listen filter is the SDK's, per stream
        ResourcesListChanged(),
    ]
    assert ann_legacy == [ResourceUpdated(uri=URI)]
    assert bob_listen == [] and bob_legacy == []


async def test_an_event_of_no_user_reaches_everyone(settings: Settings) -> None:
    bus = ReplicaBus(settings)
    ann_listen, ann_legacy = await subscribed(bus, "ann")
    bob_listen, bob_legacy = await subscribed(bus, "bob")

    await bus.publish_for(None, ToolsListChanged())
    await bus.publish_for(None, ResourceUpdated(uri=URI))

    assert ann_listen == bob_listen == [ToolsListChanged(), ResourceUpdated(uri=URI)]
    assert ann_legacy == bob_legacy == [ResourceUpdated(uri=URI)]


async def test_a_resource_event_the_sdk_publishes_belongs_to_the_requests_principal(
    settings: Settings,
) -> None:
    bus = ReplicaBus(settings)
    ann_listen, _ = await subscribed(bus, "ann")
    bob_listen, _ = await subscribed(bus, "bob")

    with as_principal("bob"):
        await bus.publish(ResourceUpdated(uri=URI))  # what ctx.notify_resource_updated does
        await bus.publish(ToolsListChanged())

    assert bob_listen == [ResourceUpdated(uri=URI), ToolsListChanged()]
    assert ann_listen == [ToolsListChanged()]


async def test_on_stdio_every_subscriber_is_the_configured_user(settings: Settings) -> None:
    bus = ReplicaBus(settings)
    listen: list[ServerEvent] = []
    bus.subscribe(listen.append)  # no token: the configured single user

    await bus.publish_for(settings.user_id, ResourceUpdated(uri=URI))
    await bus.publish_for("someone-else", ResourceUpdated(uri=URI))

    assert listen == [ResourceUpdated(uri=URI)]


async def test_unsubscribing_stops_notifications_for_that_principal_only(settings: Settings) -> None:
    bus = ReplicaBus(settings)
    ann_legacy: list[ServerEvent] = []
    bob_legacy: list[ServerEvent] = []
    ann, bob = LegacySession(ann_legacy), LegacySession(bob_legacy)
    with as_principal("ann"):
        await bus.legacy.subscribe(ann.ctx, SubscribeRequestParams(uri=URI))
    with as_principal("bob"):
        await bus.legacy.subscribe(bob.ctx, SubscribeRequestParams(uri=URI))
        await bus.legacy.unsubscribe(ann.ctx, UnsubscribeRequestParams(uri=URI))  # not bob's to end

    await bus.publish_for("ann", ResourceUpdated(uri=URI))
    with as_principal("ann"):
        await bus.legacy.unsubscribe(ann.ctx, UnsubscribeRequestParams(uri=URI))
    await bus.publish_for("ann", ResourceUpdated(uri=URI))
    await bus.publish_for("bob", ResourceUpdated(uri=URI))

    assert ann_legacy == [ResourceUpdated(uri=URI)]
    assert bob_legacy == [ResourceUpdated(uri=URI)]
