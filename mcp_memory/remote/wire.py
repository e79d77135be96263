"""One JSON request to a memory server's hooks routes (`/hooks/recall`, `/hooks/capture`), standard library
only: the hook (a process per event) asks for recall with it, the courier delivers the outbox with it.

The deadline covers the whole request: the name's lookup, the connection, TLS, sending, and the whole
answer. The system resolver cannot be given a timeout, so the request runs in a daemon thread the caller
stops waiting for at the deadline (a hook's process then exits with it). HTTPS is checked against the
system's certificate store (OpenSSL's default paths: SSL_CERT_FILE and SSL_CERT_DIR are honoured).
"""

from __future__ import annotations

import json
import threading
from typing import Any, NamedTuple
from urllib.parse import urlsplit

ANSWER_LIMIT = 8_000_000  # bytes of an answer read at most


class Unreachable(Exception):
    """No answer: the name does not resolve, the connection is refused, TLS fails, or the deadline passed."""


class Answer(NamedTuple):
    status: int
    body: dict[str, Any] | None  # the JSON object answered (None: not a JSON object)
    retry_after: float | None  # seconds, when the server said (503, 429)
    authenticate: str  # WWW-Authenticate, on a 401 or 403


def post(url: str, route: str, body: dict[str, Any], token: str | None, timeout: float) -> Answer:
    """POST `body` as JSON to `url` + `route`, with the bearer `token`; the answer, whatever its status.
    Unreachable when there is none within `timeout` seconds."""
    outcome: list[Answer | BaseException] = []

    def ask() -> None:
        import http.client  # only a team-mode hook pays for it

        try:
            outcome.append(_post(url, route, body, token, timeout))
        except TimeoutError:  # a socket's own timeout: the same deadline
            outcome.append(Unreachable(f"no answer within {timeout:g} s"))
        except (OSError, ValueError, http.client.HTTPException) as e:  # refused, DNS, TLS, reset, cut
            outcome.append(Unreachable(_described(e)))
        except BaseException as e:  # anything else is a bug: raised in the caller's thread
            outcome.append(e)

    worker = threading.Thread(target=ask, name="mcp-memory-post", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise Unreachable(f"no answer within {timeout:g} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _post(url: str, route: str, body: dict[str, Any], token: str | None, timeout: float) -> Answer:
    import http.client

    parts = urlsplit(url)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        import ssl

        connection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    headers = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "close"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request("POST", parts.path.rstrip("/") + route, json.dumps(body).encode(), headers)
        response = connection.getresponse()
        raw = response.read(ANSWER_LIMIT)
        status = response.status
        retry_after = _seconds(response.getheader("Retry-After"))
        authenticate = response.getheader("WWW-Authenticate") or ""
    finally:
        connection.close()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return Answer(status, parsed if isinstance(parsed, dict) else None, retry_after, authenticate)


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: the caller's own backoff applies


def _described(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."
