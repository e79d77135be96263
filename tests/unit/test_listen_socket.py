"""The HTTP transports' listening socket: its connections must not wait on Nagle's algorithm.

asyncio sets TCP_NODELAY only on connections whose socket says it is TCP (proto IPPROTO_TCP); a
socket made with proto 0 left Nagle on, and every streamable-HTTP response ended ~40 ms late.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from mcp_memory.mcp.transports import listen_socket

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the event loop uvicorn serves on


async def test_accepted_connections_have_nagle_off() -> None:
    listener = listen_socket("127.0.0.1", 0)
    accepted: asyncio.Queue[socket.socket] = asyncio.Queue()

    def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.put_nowait(writer.get_extra_info("socket"))

    server = await asyncio.start_server(on_connection, sock=listener)
    try:
        port = listener.getsockname()[1]
        _, client = await asyncio.open_connection("127.0.0.1", port)
        connection = await asyncio.wait_for(accepted.get(), timeout=10)
        assert connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        client.close()
    finally:
        server.close()
        await server.wait_closed()


def test_the_listener_says_it_is_tcp() -> None:
    listener = listen_socket("127.0.0.1", 0)
    try:
        assert listener.proto == socket.IPPROTO_TCP
    finally:
        listener.close()
