"""The bench's latency proxy (tests/services/latency_proxy.py) forwards real HTTP requests and answers
unchanged, on one kept-alive connection, and counts the requests; also as a process of its own."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from tests.services.latency_proxy import LatencyProxy, latency_proxy_process

pytestmark = pytest.mark.anyio


async def _answer_each_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A minimal HTTP/1.1 server: echoes each request's method, path and body; keeps the connection."""
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:  # the client has closed the connection
            break
        lines = head.decode().split("\r\n")
        length = next((int(x.split(":")[1]) for x in lines if x.lower().startswith("content-length")), 0)
        body = await reader.readexactly(length)
        method, path, _ = lines[0].split(" ")
        answer = f"{method} {path} {body.decode()}".encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
        await writer.drain()
    writer.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_proxy_forwards_requests_and_answers_and_counts_them() -> None:
    upstream = await asyncio.start_server(_answer_each_request, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    async with (
        upstream,
        LatencyProxy("127.0.0.1", port, 4.0) as proxy,
        httpx2.AsyncClient(base_url=proxy.url, timeout=10) as http,
    ):
        first = await http.post("/dbs/one", content=b'{"id": "a"}')
        second = await http.get("/dbs/two")
    assert (first.status_code, first.text) == (200, 'POST /dbs/one {"id": "a"}')
    assert (second.status_code, second.text) == (200, "GET /dbs/two ")
    assert (proxy.counts.connections, proxy.counts.requests) == (1, 2)
    assert proxy.counts.bytes_down > len(first.text) + len(second.text)


async def test_the_proxy_as_a_process_reports_its_counts() -> None:
    upstream = await asyncio.start_server(_answer_each_request, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    async with upstream:
        with latency_proxy_process("127.0.0.1", port, 1.0) as proxy:
            async with httpx2.AsyncClient(base_url=proxy.url, timeout=10) as http:
                answer = await http.put("/colls/c", content=b"x")
            counts = proxy.counts()
    assert answer.text == "PUT /colls/c x"
    assert counts.requests == 1
