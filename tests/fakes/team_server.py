"""A memory server's hooks routes as the wire protocol says (docs/team.md), on a real HTTP port in a thread:
`POST /hooks/capture` stores each event's items once by derived id and answers per event, `POST
/hooks/recall` answers a context; both need a bearer token it accepts. It records every request, so a test
can see what reached the server and how often; it can be stopped and started again on the same port
(an outage mid-session), answer 503, answer late, or reject chosen events.

For the client's tests until the real routes land; the real server is what the lead's end-to-end runs.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def derived_id(entry: dict[str, Any], key: str) -> str:
    """As service/capture.py derives a turn's id: its thread (project key . session) and its key."""
    thread = f"{entry['project']['key']}.{entry['session_id']}"
    return "turn_" + hashlib.sha256(f"{thread}\x00{key}".encode()).hexdigest()[:32]


@dataclass
class TeamServer:
    tokens: set[str] = field(default_factory=lambda: {"team-token"})
    context: str = ""  # what /hooks/recall answers
    recall_delay: float = 0.0
    outage: bool = False  # 503 with Retry-After: 1 on every capture
    reject_containing: str | None = None  # an event with an item holding this is rejected
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)  # derived id -> item
    captures: list[dict[str, Any]] = field(default_factory=list)  # every /hooks/capture body accepted
    recalls: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # every answer's status, in order
    port: int = 0
    _http: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not self.port:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, answer, extra = server.answer(self.path, dict(self.headers.items()), body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            found = self._answer(path, {k.lower(): v for k, v in headers.items()}, body)
            self.statuses.append(found[0])
        return found

    def _answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        token = headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.tokens:
            return 401, {"error": "invalid_token"}, {"WWW-Authenticate": 'Bearer error="invalid_token"'}
        if path == "/hooks/recall":
            self.recalls.append((headers, body))
            if self.recall_delay:
                self._lock.release()  # other requests go on while this one is late
                try:
                    time.sleep(self.recall_delay)
                finally:
                    self._lock.acquire()
            return 200, {"context": self.context}, {}
        if path != "/hooks/capture":
            return 404, {"error": "not found"}, {}
        if self.outage:
            return 503, {"error": "the store is unavailable"}, {"Retry-After": "1"}
        self.captures.append(body)
        results: list[dict[str, Any]] = []
        for event in body["events"]:
            items = event["items"]
            if self.reject_containing and any(self.reject_containing in i["content"] for i in items):
                results.append({"id": event["id"], "rejected": "the event names no usable project"})
                continue
            new = 0
            for item in items:
                turn = derived_id(event["entry"], item["key"])
                if turn not in self.stored:
                    self.stored[turn] = item | {"event": event["id"]}
                    new += 1
            results.append({"id": event["id"], "stored": new})
        return 200, {"results": results}, {}

    def delivered_events(self) -> list[str]:
        """Every event id acknowledged as stored, in the order delivered (repeats included)."""
        return [e["id"] for body in self.captures for e in body["events"]]

    def item_deliveries(self) -> list[str]:
        """Every item's derived id as sent, repeats included."""
        return [
            derived_id(e["entry"], i["key"])
            for body in self.captures
            for e in body["events"]
            for i in e["items"]
        ]
