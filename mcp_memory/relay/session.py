"""The relay: one client's stdio session carried to the resident server and back (relay/upstream.py),
so that the model and the indexes are loaded once per user, not once per client session.

Lines pass unchanged. The relay reads each only to keep what a new server session needs when the
resident server goes away mid-session (it is started again and the session opened again on it):
- each client request sent and not answered yet: answered with an error when its server goes away;
- the opening request (initialize, or server/discover), `notifications/initialized`, the log level
  (logging/setLevel) and the resource subscriptions: sent again to the new server session with the
  relay's own ids, whose answers the client never sees;
- the server's requests (sampling, elicitation, roots): a client's answer to one whose server went
  away is dropped.
Lines that come while no server is there wait, in order, and go when one is. The opening request may be
answered at once from the answers kept in the data directory (relay/handshakes.py): the client then
does not wait for a resident server that is still starting.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Hashable
from typing import Any, BinaryIO

from mcp_memory.relay.handshakes import OPENING_METHODS, Handshakes, opening_key
from mcp_memory.relay.upstream import Upstream

GONE_CODE = -32603  # JSON-RPC internal error: the request may have run or not
GONE = "the memory server stopped before answering (it is being started again): send the request again"
PRIVATE_ID = "mcp-memory-relay:"  # the ids of the relay's own requests (never a client's)
EXIT_WAIT = 5.0  # seconds the server has, once stdin closed, to send what it still has to say
CONNECT_WAIT = 40.0  # at most, for a server to be there (relay/resident.py waits 30 s, then starts a child)


class Relay:
    def __init__(
        self,
        out: BinaryIO,
        connect: Callable[[], Upstream],
        upstream: Upstream | None,
        handshakes: Handshakes | None,
        log: Callable[[str], None],
    ) -> None:
        self._out, self._out_lock = out, threading.Lock()
        self._connect, self._handshakes, self._log = connect, handshakes, log
        self._lock = threading.Lock()  # everything below
        self._upstream = upstream  # None while (re)connecting
        self._ready = upstream is not None  # False: lines wait in the queue
        self._generation = 1
        self._queue: list[bytes] = []
        self._pending: dict[Hashable, int] = {}  # client request id -> the generation it went to
        self._server_requests: set[Hashable] = set()  # the current server session's requests to the client
        self._first_request_seen = False
        self._opening: dict[str, Any] | None = None  # the client's initialize / server/discover
        self._opening_delivered = False
        self._opening_answered = False  # the server's answer to it came (and was kept)
        self._answered_here: dict[str, Any] | None = None  # the kept answer the relay gave the opening
        self._initialized = False  # notifications/initialized delivered
        self._log_level: Any = None  # logging/setLevel's params, delivered
        self._subscriptions: dict[str, Any] = {}  # uri -> resources/subscribe params, delivered
        self._private: dict[str, str] = {}  # the relay's own request ids -> what for
        self._private_count = 0
        self._stdin_closed = False
        self._exit_code = 0

    def run(self, stdin: BinaryIO) -> int:
        """Relay until the client closes stdin and the server has said what it still had to; the exit code
        (a child server's, when one served in the resident server's place)."""
        pump = threading.Thread(target=self._pump, name="relay-upstream", daemon=True)
        pump.start()
        for line in iter(stdin.readline, b""):
            self._from_client(line)
        with self._lock:
            self._stdin_closed = True
            upstream = self._upstream if self._ready else None
        if upstream is not None:
            upstream.end_input()
        # Not ready: the lines that wait are sent once a server is there, then its end is awaited.
        pump.join(timeout=EXIT_WAIT if upstream is not None else CONNECT_WAIT + EXIT_WAIT)
        return self._exit_code

    # ---- client -> server ---------------------------------------------------------------------------

    def _from_client(self, line: bytes) -> None:
        message = _parse(line)
        with self._lock:
            if _is_request(message) and not self._first_request_seen:
                self._first_request_seen = True
                if message["method"] in OPENING_METHODS:
                    self._opening = message
                    if not self._ready and self._answer_opening_here(message):
                        return
            if not self._ready or self._upstream is None:
                self._queue.append(line)
                return
            upstream = self._upstream
            forward = self._note_sent(message, self._generation)
        if forward:
            with contextlib.suppress(
                OSError
            ):  # gone: the upstream thread answers what is pending, reconnects
                upstream.send(line)

    def _answer_opening_here(self, message: dict[str, Any]) -> bool:
        """While no server is there: answer the client's opening request from the kept answers."""
        key = opening_key(message)
        answer = self._handshakes.answer(key) if key is not None and self._handshakes is not None else None
        if answer is None:
            return False
        self._answered_here = answer
        self._write(_dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}))
        return True

    def _note_sent(self, message: Any, generation: int) -> bool:
        """Keep what this line changes of the session; False for a line not to send (an answer to a
        request of a server session that is gone)."""
        if not isinstance(message, dict):
            return True
        method, params = message.get("method"), message.get("params")
        if isinstance(method, str) and "id" in message:
            self._note_request(message, method, params, generation)
        elif method == "notifications/initialized":
            self._initialized = True
        elif method == "notifications/cancelled" and isinstance(params, dict):
            request_id = params.get("requestId")
            if _hashable(request_id):
                self._pending.pop(request_id, None)  # the server need not answer it now
        elif method is None and _hashable(message.get("id")):
            if message.get("id") not in self._server_requests:
                return False
            self._server_requests.discard(message.get("id"))
        return True

    def _note_request(self, message: dict[str, Any], method: str, params: Any, generation: int) -> None:
        if _hashable(message["id"]):
            self._pending[message["id"]] = generation
        if self._is_opening(message):
            self._opening_delivered = True
        if not isinstance(params, dict):
            return
        if method == "resources/subscribe" and isinstance(params.get("uri"), str):
            self._subscriptions[params["uri"]] = params
        elif method == "resources/unsubscribe":
            self._subscriptions.pop(str(params.get("uri")), None)
        elif method == "logging/setLevel":
            self._log_level = params

    def _is_opening(self, message: dict[str, Any]) -> bool:
        opening = self._opening
        return (
            opening is not None
            and message.get("id") == opening["id"]
            and message.get("method") == opening["method"]
        )

    # ---- server -> client ---------------------------------------------------------------------------

    def _pump(self) -> None:
        """The upstream thread: read the server's lines; when it goes away, answer what it left
        unanswered and connect again."""
        upstream = self._upstream
        if upstream is None:
            upstream = self._start(self._connect())
        while True:
            for line in upstream.lines():
                self._from_server(line)
            upstream.close()
            exit_code = upstream.exit_code()
            if exit_code is not None:  # a child served in the resident server's place: its end is ours
                self._exit_code = exit_code
                with self._lock:
                    closed = self._stdin_closed
                if not closed:
                    with self._out_lock:
                        os._exit(exit_code)  # the client sees the server process end, as before
                return
            with self._lock:
                if self._stdin_closed:
                    return
                self._upstream, self._ready = None, False
                lost = [key for key, generation in self._pending.items() if generation == self._generation]
                for key in lost:
                    del self._pending[key]
                self._server_requests.clear()
            self._log(
                f"the resident server went away; {len(lost)} request(s) answered with an error; connecting again"
            )
            for key in lost:
                self._write(
                    _dumps({"jsonrpc": "2.0", "id": key, "error": {"code": GONE_CODE, "message": GONE}})
                )
            upstream = self._start(self._connect())

    def _start(self, upstream: Upstream) -> Upstream:
        """A new server session: what the earlier ones were told, then the lines that waited."""
        with self._lock:
            self._generation += 1
            self._upstream = upstream
            restore = self._restore_lines()
        try:
            for line in restore:
                upstream.send(line)
            while True:
                with self._lock:
                    if not self._queue:
                        self._ready = True
                        closed = self._stdin_closed
                        break
                    waiting, self._queue = self._queue, []
                    lines = [line for line in waiting if self._note_sent(_parse(line), self._generation)]
                for line in lines:
                    upstream.send(line)
        except OSError:
            return upstream  # gone again: its lines() ends at once, and the pump starts over
        if closed:
            upstream.end_input()
        return upstream

    def _restore_lines(self) -> list[bytes]:
        lines = []
        if self._opening is not None and (self._opening_delivered or self._answered_here is not None):
            lines.append(self._private_request("opening", self._opening))
        if self._initialized:
            lines.append(_dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        if self._log_level is not None:
            lines.append(
                self._private_request("restore", {"method": "logging/setLevel", "params": self._log_level})
            )
        for params in self._subscriptions.values():
            lines.append(
                self._private_request("restore", {"method": "resources/subscribe", "params": params})
            )
        return lines

    def _private_request(self, purpose: str, request: dict[str, Any]) -> bytes:
        self._private_count += 1
        request_id = f"{PRIVATE_ID}{self._private_count}"
        self._private[request_id] = purpose
        message = {"jsonrpc": "2.0", "id": request_id, "method": request["method"]}
        if "params" in request:
            message["params"] = request["params"]
        return _dumps(message)

    def _from_server(self, line: bytes) -> None:
        message = _parse(line)
        if isinstance(message, dict) and "method" not in message and _hashable(message.get("id")):
            with self._lock:
                request_id = message.get("id")
                purpose = self._private.pop(request_id, None) if isinstance(request_id, str) else None
                if purpose is None:
                    self._pending.pop(request_id, None)
                opening_answer = purpose == "opening" or (
                    purpose is None
                    and self._opening is not None
                    and request_id == self._opening["id"]
                    and not self._opening_answered
                )
                self._opening_answered = self._opening_answered or opening_answer
            if opening_answer and isinstance(message.get("result"), dict):
                self._keep_opening_answer(message["result"])
            if purpose is not None:
                return
        elif isinstance(message, dict) and "method" in message and _hashable(message.get("id")):
            with self._lock:
                self._server_requests.add(message.get("id"))
        self._write(line)

    def _keep_opening_answer(self, result: dict[str, Any]) -> None:
        key = opening_key(self._opening) if self._opening is not None else None
        if key is None or self._handshakes is None:
            return
        if self._answered_here is not None and self._answered_here != result:
            self._log("the kept answer to the opening request differed from the server's; it is replaced")
            self._answered_here = result
        self._handshakes.record(key, result)

    def _write(self, line: bytes) -> None:
        with self._out_lock:
            try:
                self._out.write(line if line.endswith(b"\n") else line + b"\n")
                self._out.flush()
            except (OSError, ValueError):
                pass  # the client is gone; stdin's end stops the relay


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # not JSON (or nested past Python's stack): passed on as it is;
        return None  # the server answers it as over stdio


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _is_request(message: Any) -> bool:
    return isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)
