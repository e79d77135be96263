"""Which server messages mcp/client_streams.py passes on to the replica holding a client's stream."""

from __future__ import annotations

from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from mcp_memory.mcp.client_streams import is_standalone

SAMPLING = JSONRPCRequest(jsonrpc="2.0", id=7, method="sampling/createMessage", params={"maxTokens": 10})
LOG = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": 1})
UPDATED = JSONRPCNotification(jsonrpc="2.0", method="notifications/resources/updated", params={"uri": "x"})


def test_requests_and_notifications_outside_a_call_are_passed_on() -> None:
    assert is_standalone(SessionMessage(SAMPLING))
    assert is_standalone(SessionMessage(LOG, ServerMessageMetadata()))


def test_messages_of_a_call_stay_on_its_own_stream() -> None:
    related = ServerMessageMetadata(related_request_id=3)
    assert not is_standalone(SessionMessage(SAMPLING, related))
    assert not is_standalone(SessionMessage(LOG, related))
    assert not is_standalone(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=3, result={})))


def test_change_notifications_are_left_to_the_event_relay() -> None:
    """Every replica hears every change and notifies the stream it holds: passing them on would repeat them."""
    assert not is_standalone(SessionMessage(UPDATED))
    assert not is_standalone(
        SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/tools/list_changed"))
    )
