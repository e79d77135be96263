"""The one way this server speaks HTTP to the identity provider: discovery, keys, introspection, and the
explorer's code exchange.

Every request is bounded in time (`seconds`, both as the client's timeout and as a deadline around the
whole exchange) and never follows a redirect. Without a client given, each request opens and closes its
own (no connection outlives a request, nor the event loop it ran on); a client given (tests pass one over
`httpx2.MockTransport`) is used as it is and closed by whoever made it. Any failure to get an answer,
connection, timeout or protocol, is `Unreachable`, holding the cause; what an answer means (its status,
its body) is the caller's.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio
import httpx2

FETCH_SECONDS = 10.0


class Unreachable(Exception):
    """No answer: the request failed or ran out of time. `cause` is the original exception."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class Http:
    """GET and POST with a deadline, on a client of their own per request or on an injected one."""

    def __init__(self, client: httpx2.AsyncClient | None = None, *, seconds: float = FETCH_SECONDS) -> None:
        self.client = client
        self.seconds = seconds

    async def get(self, url: str, *, headers: Mapping[str, str] | None = None) -> httpx2.Response:
        return await self._send("GET", url, headers=headers)

    async def post(
        self, url: str, *, data: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> httpx2.Response:
        return await self._send("POST", url, data=data, headers=headers)

    async def _send(
        self,
        method: str,
        url: str,
        *,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        try:
            with anyio.fail_after(self.seconds):
                if self.client is not None:
                    return await self.client.request(
                        method, url, data=data, headers=headers, follow_redirects=False, timeout=self.seconds
                    )
                async with httpx2.AsyncClient(timeout=self.seconds, follow_redirects=False) as http:
                    return await http.request(method, url, data=data, headers=headers)
        except (httpx2.HTTPError, TimeoutError, OSError) as e:
            raise Unreachable(e) from e
