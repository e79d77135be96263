"""MCP sampling: the connected client's own model as a ChatModel (no API key needed).

Two ways to reach it, because the protocol eras differ:

- Background work (fact extraction after a turn, reconciliation) sends `sampling/createMessage` on
  the connection's standalone channel. Handshake-era connections (protocol <= 2025-11-25: stdio and
  SSE clients today) allow that at any time while connected. `SamplingSessions` is server
  middleware that remembers, per user, the newest such session whose client declared `sampling`;
  when that connection has closed, the call fails and the session is dropped.
- Connections on 2026-07-28 or later have no back-channel outside a request. There, sampling only
  happens inside a tool call (the SDK's `Sample` resolver: an `InputRequiredResult` round trip), so
  the on-demand tools (extract_memories, reconcile_memories) use `sample_request()` below, and the
  background work for such clients waits for them (its turns stay pending; nothing is lost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.resolve import Sample
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_memory.errors import BackendUnavailableError

log = logging.getLogger(__name__)

LABEL = "the client's model (MCP sampling)"
# The client picks the model; these say what we value (a cheap, quick one is fine for extraction).
_PREFERENCES = types.ModelPreferences(cost_priority=0.6, speed_priority=0.6, intelligence_priority=0.4)
_JSON_HINT = "\n\nAnswer with one JSON object only: no prose, no code fences."


def supports_sampling(capabilities: types.ClientCapabilities | None) -> bool:
    return capabilities is not None and capabilities.sampling is not None


def sample_request(system: str, user: str, *, max_tokens: int, json_mode: bool = False) -> Sample:
    """The marker a tool's resolver returns to have the SDK sample the client within that call."""
    return Sample(
        [
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=_user_text(user, json_mode))
            )
        ],
        max_tokens=max_tokens,
        system_prompt=system or None,
        model_preferences=_PREFERENCES,
        temperature=0.0,
    )


def answer_text(result: types.CreateMessageResult) -> str:
    """The text of a sampling result; BackendUnavailableError when the client sent none."""
    content = result.content
    if isinstance(content, types.TextContent) and content.text.strip():
        return content.text
    raise BackendUnavailableError(
        f"{LABEL} answered without any text (stop reason {result.stop_reason})", backend="sampling"
    )


def _user_text(user: str, json_mode: bool) -> str:
    # Sampling has no JSON mode: say it in words; the parser is tolerant of what comes back anyway.
    return user + _JSON_HINT if json_mode else user


class SamplingChatModel:
    """A ChatModel that asks the client over one live (handshake-era) session's standalone channel."""

    def __init__(
        self,
        session: ServerSession,
        *,
        timeout_seconds: float,
        max_tokens: int,
        on_closed: Callable[[], None],
    ) -> None:
        self._session = session
        self._timeout = timeout_seconds
        self._max_tokens = max_tokens
        self._on_closed = on_closed

    @property
    def name(self) -> str:
        return "sampling"

    async def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        request = types.CreateMessageRequest(
            params=sample_request(
                system, user, max_tokens=max_tokens or self._max_tokens, json_mode=json_mode
            ).params
        )
        try:
            with anyio.fail_after(self._timeout):
                result = await self._session.send_request(request, types.CreateMessageResult)
        except TimeoutError as e:
            raise BackendUnavailableError(
                f"{LABEL} did not answer within {self._timeout:g}s", backend="sampling"
            ) from e
        except NoBackChannelError as e:
            self._on_closed()
            raise BackendUnavailableError(
                f"{LABEL} cannot be asked outside a tool call on this connection; call extract_memories",
                backend="sampling",
            ) from e
        except MCPError as e:
            if "closed" in e.error.message.lower():
                self._on_closed()
                raise BackendUnavailableError(
                    f"{LABEL} is gone: the client disconnected", backend="sampling"
                ) from e
            raise BackendUnavailableError(
                f"{LABEL} refused or failed the request (code {e.error.code})", backend="sampling"
            ) from e
        return answer_text(result)


class SamplingSessions:
    """Server middleware remembering, per user, the newest live session that can be sampled."""

    def __init__(
        self,
        user_of: Callable[[ServerRequestContext[Any, Any]], str | None],
        *,
        timeout_seconds: float,
        max_tokens: int,
    ) -> None:
        self._user_of = user_of
        self._timeout = timeout_seconds
        self._max_tokens = max_tokens
        self._sessions: dict[str, ServerSession] = {}

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is not None and ctx.method not in ("initialize", "server/discover"):
            self._see(ctx)
        return await call_next(ctx)

    def _see(self, ctx: ServerRequestContext[Any, Any]) -> None:
        session = ctx.session
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS or not supports_sampling(
            session.client_capabilities
        ):
            return
        user_id = self._user_of(ctx)
        if user_id is not None:
            self._sessions[user_id] = session

    def chat_for(self, user_id: str) -> SamplingChatModel | None:
        """A chat model on the user's newest samplable session, or None when there is none."""
        session = self._sessions.get(user_id)
        if session is None:
            return None

        def closed() -> None:
            if self._sessions.get(user_id) is session:
                del self._sessions[user_id]
                log.info(
                    "sampling session of user %s closed; background extraction waits for the next", user_id
                )

        return SamplingChatModel(
            session, timeout_seconds=self._timeout, max_tokens=self._max_tokens, on_closed=closed
        )
