"""The hooks' two routes on the resident server (`mcp-memory serve --socket PATH`), beside /mcp:

- POST /hooks/capture: the spool has something (mcp_memory/hooks/spool.py): it is stored after the
  answer, so the hook that said so is never kept waiting;
- POST /hooks/recall: what to inject for a session start or a prompt ({"context": "..."}, "" for nothing).

Here on the Unix socket in the user's own data directory: whoever can open it is the user, whose id is
the server's configured one (as over stdio). The routes rely on the service the server opened. A memory
server (`serve --transport http|sse`) answers the same paths for its verified principals, with events
delivered whole by a courier instead of spooled (mcp/team_hooks.py); recall's answer is this one's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory.audit import Actor, acting
from mcp_memory.config import HooksSettings
from mcp_memory.errors import InvalidInputError, MemoryServerError
from mcp_memory.hooks import clients, spool
from mcp_memory.hooks.gemini import without_injected
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.security.spaces import Access
from mcp_memory.service.capture import HookCapture, project_from
from mcp_memory.service.hook_recall import HookRecall

log = logging.getLogger(__name__)

SPOOL_LOOK_SECONDS = 2.0
DEFAULT_CAP_CHARS = 10_000
MAX_CAP_CHARS = 1_000_000


@dataclass
class HookEndpoints:
    host: ServiceHost
    last_request: float = field(default_factory=time.monotonic)
    _capture: HookCapture | None = None
    _recall: HookRecall | None = None

    @property
    def user_id(self) -> str:
        return self.host.settings.user_id

    @property
    def spool_dir(self) -> Path:
        return spool.spool_dir(self.host.settings.data_dir)

    def capture(self) -> HookCapture:
        if self._capture is None:
            self._capture = HookCapture(self.host.service, self.user_id, on_thread=self.recall().thread_added)
        return self._capture

    def recall(self) -> HookRecall:
        if self._recall is None:
            self._recall = HookRecall(self.host.service, self.user_id)
        return self._recall

    def busy(self) -> bool:
        return self._capture is not None and self._capture._lock.locked()

    async def drain(self) -> None:
        with acting(Actor(self.user_id, client="hooks")):
            try:
                await self.capture().drain(self.spool_dir)
            except MemoryServerError as e:  # logged here, retried on the next event
                log.warning("hooks: the spool could not be stored now: %s", e)

    async def watch_spool(self) -> None:
        """Store the spool now and then every SPOOL_LOOK_SECONDS: a hook only notes that it spooled
        something and does not wait, so a note can be lost (the server busy, or just starting)."""
        while True:
            if spool.count(self.spool_dir) and not self.busy():
                await self.drain()
            await anyio.sleep(SPOOL_LOOK_SECONDS)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/hooks/capture", self._on_capture, methods=["POST"]),
            Route("/hooks/recall", self._on_recall, methods=["POST"]),
        ]

    async def _on_capture(self, _: Request) -> JSONResponse:
        return JSONResponse({"spooled": spool.count(self.spool_dir)}, background=BackgroundTask(self.drain))

    async def _on_recall(self, request: Request) -> JSONResponse:
        return await recall_answer(request, self.recall(), self.host.settings.hooks)


async def recall_answer(
    request: Request,
    recall: HookRecall,
    settings: HooksSettings,
    access: Access | None = None,
    actor: Actor | None = None,
) -> JSONResponse:
    """POST /hooks/recall's answer: {"context": "..."} ("" for nothing, with "error" when the request
    was bad or a backend failed: a hook then injects nothing). `access`: whose recall (a memory server's
    verified principal; None: the resident server's user), `actor`: whom the audit trail names."""
    try:
        body: Any = await request.json()
        if not isinstance(body, dict):
            raise InvalidInputError("the body is not a JSON object")
        who = actor or Actor(recall.user_id, client=f"hooks:{body.get('client')}")
        with acting(who):
            context = await _context(recall, settings, body, access)
    except (ValueError, MemoryServerError) as e:
        log.warning("hooks: recall failed: %s", e)
        return JSONResponse({"context": "", "error": str(e)[:300]})
    return JSONResponse({"context": context})


async def _context(
    recall: HookRecall, settings: HooksSettings, body: dict[str, Any], access: Access | None
) -> str:
    project = project_from(body)
    cap = _cap(body.get("cap_chars"))
    session = str(body.get("session_id") or "")
    if body.get("kind") == "session_start":
        return await recall.session_start(
            project,
            session,
            settings.budget_tokens,
            cap,
            source=str(body.get("source") or "startup"),
            prompt_follows=clients.injects_at_prompt(str(body.get("client") or "")),
            access=access,
        )
    if body.get("kind") == "prompt":
        prompt = without_injected(str(body.get("prompt") or ""))
        return await recall.prompt(project, session, prompt, settings.budget_tokens, cap, access=access)
    return ""


def _cap(value: object) -> int:
    """The client's cap on injected characters (10,000 when it names none)."""
    if value is None or value == "":
        return DEFAULT_CAP_CHARS
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidInputError("cap_chars is not a number")
    try:
        return max(0, min(int(value), MAX_CAP_CHARS))
    except ValueError:
        raise InvalidInputError("cap_chars is not a number") from None


class Activity:
    """ASGI middleware: when the last request came (the resident server exits when idle)."""

    def __init__(self, app: ASGIApp, endpoints: HookEndpoints) -> None:
        self.app = app
        self.endpoints = endpoints

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.endpoints.last_request = time.monotonic()
        await self.app(scope, receive, send)
