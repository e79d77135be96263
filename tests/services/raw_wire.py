"""Malformed messages sent as raw bytes to the real server process, over stdio, SSE and streamable HTTP,
and the answer each gets (or None: no answer within the wait).

No MCP client library here: a client library refuses to send what these send (lines that are not JSON,
lone surrogates, bytes that are not UTF-8). Each wire speaks the transport by hand with the standard
library, one message at a time, and reads the JSON-RPC answer with the message's id (or `id: null`).
Used by tests/e2e/test_every_message_answered.py and bench/unanswered.py.
"""

from __future__ import annotations

import http.client
import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

ANSWER_SECONDS = 60.0  # a generous wait: a loaded machine is slow, not silent
PROTOCOL = "2025-06-18"


@dataclass(frozen=True)
class Case:
    """One malformed message: its bytes, and the id its answer must carry (None: `id: null`)."""

    name: str
    data: bytes
    answer_id: str | None


def _request(ident: str, method: str, params: str = "{}") -> bytes:
    return f'{{"jsonrpc":"2.0","id":"{ident}","method":"{method}","params":{params}}}'.encode()


def _add_turn(ident: str, thread: str, content: str) -> bytes:
    arguments = f'{{"thread_id":"{thread}","role":"user","content":"{content}"}}'
    return _request(ident, "tools/call", f'{{"name":"add_turn","arguments":{arguments}}}')


# Every add_turn below writes to this thread, and every one must be refused: it must stay empty.
REFUSED_THREAD = "malformed-never-stored"

CORPUS: tuple[Case, ...] = (
    Case("not JSON", b"hello, server", None),
    Case("empty line", b"", None),
    Case("whitespace", b"   \t ", None),
    Case("truncated JSON", b'{"jsonrpc":"2.0","id":"t1","method":"tools/list"', None),
    Case("JSON array of garbage", b'[1, "two", {"three": 3}, null, [[]]]', None),
    Case("JSON scalar", b"42", None),
    Case("object that is not JSON-RPC", b'{"hello": "world"}', None),
    Case("request without jsonrpc", b'{"id":"v1","method":"ping"}', "v1"),
    Case("byte order mark", "\ufeff".encode() + _request("bom", "ping"), None),
    Case("NUL byte", b'{"jsonrpc":"2.0","id":"n1","method":"ping"\x00}', None),
    Case("NUL inside a string", _request("n2", "ping", '{"x":"a\x00b"}'), None),
    Case("invalid escape", b'{"jsonrpc":"2.0","id":"e1","method":"p\\xing"}', None),
    Case("nested too deeply", b"[" * 100_000, None),
    Case("huge line", b"x" * 3_000_000, None),
    Case("lone surrogate in method", _request("s1", "tools/\\ud800list"), "s1"),
    Case("lone surrogate in params", _request("s2", "ping", '{"note":"\\udc00"}'), "s2"),
    Case(
        "lone high surrogate in an argument", _add_turn("s3", REFUSED_THREAD, "a sliced emoji \\ud83d"), "s3"
    ),
    Case(
        "lone low surrogate in an argument", _add_turn("s4", REFUSED_THREAD, "\\ude00 the other half"), "s4"
    ),
    Case(
        "lone surrogate in a key",
        _request("s5", "tools/call", '{"name":"add_turn","arguments":{"\\ud800":1}}'),
        "s5",
    ),
    Case("lone surrogate in the id", b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', None),
    Case(
        "Latin-1 in an argument", _add_turn("u1", REFUSED_THREAD, "cafe").replace(b"cafe", b"caf\xe9"), "u1"
    ),
    Case(
        "invalid UTF-8 bytes",
        _add_turn("u2", REFUSED_THREAD, "bytes").replace(b"bytes", b"\xff\xfe\xc0\xaf"),
        "u2",
    ),
    Case("NUL escaped in an argument", _add_turn("z1", REFUSED_THREAD, "a\\u0000b"), "z1"),
    Case("huge argument", _add_turn("h1", "t" * 100_000, "a long thread id"), "h1"),
)


class Wire(Protocol):
    """One connection to the server: send raw bytes as one message, read the answer with an id."""

    transport: str

    def send(self, data: bytes) -> dict[str, Any] | None:
        """Send; the answer the transport gave right away (HTTP's response), else None."""

    def answer(self, ident: str | None, already: dict[str, Any] | None) -> dict[str, Any] | None:
        """The JSON-RPC answer with this id (None: `id: null`), or None after the wait."""


def answers(wire: Wire, corpus: tuple[Case, ...] = CORPUS) -> list[tuple[Case, dict[str, Any] | None]]:
    """Each case of the corpus sent in turn, with the answer that carries its id (None: no answer)."""
    return [(case, wire.answer(case.answer_id, wire.send(case.data))) for case in corpus]


def unanswered(wire: Wire, corpus: tuple[Case, ...] = CORPUS) -> list[str]:
    """The cases of the corpus that got no answer with their id, in order."""
    return [case.name for case, found in answers(wire, corpus) if found is None]


def call(wire: Wire, ident: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """A well-formed request on the wire and its answer (the session still works)."""
    data = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode()
    return wire.answer(ident, wire.send(data))


def initialize(wire: Wire) -> dict[str, Any] | None:
    params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    answer = call(wire, "init", "initialize", params)
    wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return answer


def _matches(message: dict[str, Any], ident: str | None) -> bool:
    return (
        "method" not in message and ("result" in message or "error" in message) and message.get("id") == ident
    )


# ---- stdio ----------------------------------------------------------------------------------------------


class StdioWire:
    """The stdio command's stdin and stdout: one line per message."""

    transport = "stdio"

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process, self._stdin = process, process.stdin
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stdout: Any) -> None:
        for line in iter(stdout.readline, b""):
            self._lines.put(line)

    def send(self, data: bytes) -> None:
        try:
            self._stdin.write(data + b"\n")
            self._stdin.flush()
        except BrokenPipeError:  # the process died: what is sent from now on gets no answer
            pass

    def answer(self, ident: str | None, already: dict[str, Any] | None) -> dict[str, Any] | None:
        deadline = time.monotonic() + ANSWER_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            message = json.loads(line)
            if isinstance(message, dict) and _matches(message, ident):
                return message
        return None


@contextmanager
def stdio_wire(command: list[str], env: dict[str, str], cwd: str, stderr: Any) -> Iterator[StdioWire]:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd
    )
    try:
        yield StdioWire(process)
    finally:
        assert process.stdin is not None
        with suppress(BrokenPipeError):
            process.stdin.close()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---- SSE ------------------------------------------------------------------------------------------------


class SseWire:
    """GET /sse for the answers, POST to the endpoint it names for the messages."""

    transport = "sse"

    def __init__(self, base_url: str) -> None:
        where = urlsplit(base_url)
        self._host, self._port = where.hostname or "127.0.0.1", where.port or 80
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._stream = http.client.HTTPConnection(self._host, self._port, timeout=ANSWER_SECONDS * 4)
        self._stream.request("GET", "/sse", headers={"Accept": "text/event-stream"})
        response = self._stream.getresponse()
        assert response.status == 200, f"GET /sse answered {response.status}"
        endpoint: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(response, endpoint), daemon=True).start()
        self._endpoint = endpoint.get(timeout=ANSWER_SECONDS)

    def _read(self, response: http.client.HTTPResponse, endpoint: queue.Queue[str]) -> None:
        event = ""
        try:
            for raw in iter(response.readline, b""):
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    event = line.removeprefix("event:").strip()
                elif line.startswith("data:"):
                    data = line.removeprefix("data:").strip()
                    if event == "endpoint":
                        endpoint.put(data)
                    else:
                        self._events.put(json.loads(data))
        except (OSError, ValueError, AttributeError):  # the stream closed (http.client drops its file)
            return

    def send(self, data: bytes) -> dict[str, Any] | None:
        post = http.client.HTTPConnection(self._host, self._port, timeout=ANSWER_SECONDS)
        try:
            post.request("POST", self._endpoint, body=data, headers={"Content-Type": "application/json"})
            response = post.getresponse()
            response.read()
            # 413: refused before the session could see it; the HTTP answer is the answer.
            return {"id": None, "error": {"http": 413}} if response.status == 413 else None
        finally:
            post.close()

    def answer(self, ident: str | None, already: dict[str, Any] | None) -> dict[str, Any] | None:
        if already is not None:
            return already
        deadline = time.monotonic() + ANSWER_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self._events.get(timeout=left)
            except queue.Empty:
                break
            if _matches(message, ident):
                return message
        return None

    def close(self) -> None:
        self._stream.close()


# ---- streamable HTTP ------------------------------------------------------------------------------------


class HttpWire:
    """POST /mcp, the session's id in its header: the answer is the response (JSON or an event stream)."""

    transport = "http"

    def __init__(self, base_url: str) -> None:
        where = urlsplit(base_url)
        self._host, self._port = where.hostname or "127.0.0.1", where.port or 80
        self._session: str | None = None

    def send(self, data: bytes) -> dict[str, Any] | None:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }
        if self._session is not None:
            headers["Mcp-Session-Id"] = self._session
        post = http.client.HTTPConnection(self._host, self._port, timeout=ANSWER_SECONDS)
        try:
            post.request("POST", "/mcp", body=data, headers=headers)
            response = post.getresponse()
            body = response.read()
            self._session = response.getheader("mcp-session-id") or self._session
            if response.status == 413:
                return {"id": None, "error": {"http": 413}}
            if response.status == 202 or not body:
                return {}
            if (response.getheader("content-type") or "").startswith("text/event-stream"):
                events = [line[5:].strip() for line in body.decode().splitlines() if line.startswith("data:")]
                messages = [json.loads(e) for e in events if e]
                answers = [m for m in messages if "method" not in m]
                return answers[-1] if answers else {}
            try:
                found: dict[str, Any] = json.loads(body)
            except ValueError:  # e.g. a plain-text 500: no JSON-RPC answer
                return {}
            return found
        finally:
            post.close()

    def answer(self, ident: str | None, already: dict[str, Any] | None) -> dict[str, Any] | None:
        if not already:
            return None  # 202 Accepted, or nothing
        if already.get("error", {}).get("http") == 413:
            return already
        return already if already.get("id") == ident and ("error" in already or "result" in already) else None
