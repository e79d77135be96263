"""What the coding agents' hooks spooled, stored exactly once as turns of the session's thread.

A session is a thread, `<project key>.<session id>` (hooks/projects.py), in the user's memory, or in the
project's shared space when the user is a writer there (`project_owner`): the same memory the MCP tools,
the explorer and search see.
Each stored message gets an id derived from its thread and its key in the source (the transcript
entry's uuid, the tool call's id, the spooled event's id), so whatever the order and repetition of
events (Stop after every reply, resumed sessions, a compaction, a spool file stored twice by two
servers) a message is stored once: a derived id that exists already is skipped.

Turns keep the transcript's times, never the time of capture: the Stop event's reply, when the transcript
does not hold it yet (Claude Code may run the hook before it writes the reply), is first looked for again
for a few seconds, then stored with the transcript's latest time under the key the transcript's copy will
have. A time earlier than the thread's latest (entries written out of order) is moved up to it, since a
thread's turns are in order.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.errors import (
    BackendUnavailableError,
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
)
from mcp_memory.hooks import captured, spool
from mcp_memory.hooks.projects import Project
from mcp_memory.hooks.transcripts import Captured
from mcp_memory.models import AUTHOR_NAME, Owner, SpaceRole, utcnow
from mcp_memory.security.spaces import Access
from mcp_memory.service.memory_service import MemoryService

log = logging.getLogger(__name__)

KNOWN_THREADS = 10_000  # threads whose stored ids are remembered, at most


def project_from(entry: dict[str, Any]) -> Project:
    """The project a spooled event or a recall request names (the hook worked it out)."""
    named = entry.get("project")
    project: dict[str, Any] = named if isinstance(named, dict) else {}
    key = str(project.get("key") or "")
    check.thread_id(key + ".x", "project key")  # it becomes part of thread ids
    space = project.get("space")
    return Project(
        id=str(project.get("id") or key),
        root=Path(str(entry.get("cwd") or "/")),
        key=key,
        space=check.space(space) if space is not None else None,
    )


def project_owner(settings: Settings, access: Access, project: Project, need: SpaceRole) -> Owner:
    """Whose memory a project's sessions are in. The space the project names (its committed
    .mcp-memory.toml), else the one hooks.spaces names for it, when the user's role there is at least
    `need` (a writer to capture, a reader to recall); otherwise, and without a space, the user's own
    memory: a reader's or a non-member's sessions stay personal, and they recall nothing of the space."""
    space = project.space or settings.hooks.spaces.get(project.id)
    role = access.roles.get(space) if space is not None else None
    if space is None or role is None:
        return Owner(access.user_id)
    owner = Owner(access.user_id, space, role)
    return owner if owner.may(need) else Owner(access.user_id)


def derived_id(thread_id: str, key: str) -> str:
    return "turn_" + hashlib.sha256(f"{thread_id}\x00{key}".encode()).hexdigest()[:32]


@dataclass
class HookCapture:
    service: MemoryService
    user_id: str
    # Ids this process stored or found stored, per thread: re-reading a transcript skips them without
    # a read of the store.
    _known: dict[str, set[str]] = field(default_factory=dict)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _again: bool = False
    on_thread: Any = None  # called with the owner and thread id when a new session thread appears

    async def drain(self, directory: Path) -> int:
        """Store everything the spool holds, oldest first; how many messages were stored. A call while
        a drain runs makes that drain look again once it is done."""
        if self._lock.locked():
            self._again = True
            return 0
        stored = 0
        async with self._lock:
            self._again = True
            while self._again:
                self._again = False
                entries = await anyio.to_thread.run_sync(lambda: list(spool.pending(directory)))
                for path, entry in entries:
                    try:
                        stored += await self.store(entry)
                    except (BackendUnavailableError, LimitExceededError, OSError) as e:
                        # Kept in the spool: stored by a later drain (the next event, or the next start).
                        log.warning("hooks: spooled event %s kept for later: %s", entry.get("id"), e)
                        return stored
                    except InvalidInputError as e:
                        log.warning("hooks: spooled event %s cannot be stored: %s", entry.get("id"), e)
                    spool.done(path)
        return stored

    async def store(self, entry: dict[str, Any]) -> int:
        """Store one spooled event's messages; how many were new."""
        _session_of(entry)  # a bad event fails before its transcript is read
        return await self.store_items(entry, await anyio.to_thread.run_sync(lambda: captured.items_of(entry)))

    async def store_items(
        self,
        entry: dict[str, Any],
        items: Sequence[Captured],
        access: Access | None = None,
        author_name: str | None = None,
    ) -> int:
        """Store what was read for one event (its project, session, client and cwd named by `entry`)
        under the ids and times the hooks give them; how many were new. `access`: whose event it is (a
        memory server's verified principal; default: this server's configured user), `author_name`: how
        teammates see them, kept with what goes into a shared space. `mcp-memory eval` stores a
        transcript read up to a moment this way."""
        project, session = _session_of(entry)
        thread_id = check.thread_id(project.thread_id(session))
        settings = self.service.settings
        access = access or Access.of(settings, self.user_id)
        owner = project_owner(settings, access, project, "writer")
        if not items:
            return 0
        metadata = {
            "source": f"hook:{entry.get('client')}",
            "project": project.id,
            "session": session,
        }
        if owner.space is not None:
            metadata[AUTHOR_NAME] = author_name or access.user_id
        if entry.get("cwd"):
            metadata["cwd"] = str(entry["cwd"])[:500]
        if len(self._known) > KNOWN_THREADS:  # a long-running server meets many sessions
            self._known.clear()
        known = self._known.setdefault(f"{owner}/{thread_id}", set())
        latest: datetime | None = None
        new_thread = not known
        stored = 0
        for item in items:
            turn_id = derived_id(thread_id, item.key)
            if turn_id in known or not item.content.strip():
                continue
            try:
                existing = await self.service.stores.long_term.get(owner, turn_id)
            except NotFoundError:
                existing = None
            if existing is not None:
                known.add(turn_id)
                latest = max(latest or existing.created_at, existing.created_at)
                continue
            if latest is None:
                recent = await self.service.stores.long_term.recent(owner, thread_id, limit=1)
                latest = recent[-1].created_at if recent else None
            said = _time(item.time)
            if said is not None and latest is not None and said < latest:
                said = latest
            extra = {"captured": item.kind} | ({"paths": list(item.paths[:20])} if item.paths else {})
            result = await self.service.add_turn(
                owner,
                thread_id,
                item.role,
                item.content[: self.service.settings.max_content_chars],
                metadata | extra,
                created_at=said,
                turn_id=turn_id,
            )
            known.add(turn_id)
            latest = result.turn.created_at
            stored += 1
        if stored and new_thread and self.on_thread is not None:
            self.on_thread(owner, thread_id)
        return stored


def _session_of(entry: dict[str, Any]) -> tuple[Project, str]:
    """The project and session an event names; InvalidInputError when it names none."""
    project = project_from(entry)
    session = str(entry.get("session_id") or "")
    if not session:
        raise InvalidInputError("the event names no session")
    return project, session


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = check.timestamp(value, "time")
    except InvalidInputError:
        return None
    if moment is None:
        return None
    return min(moment, utcnow())
