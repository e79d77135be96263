"""The user's own sessions, where their coding agents keep them, read as the hooks read them.

- Claude Code: `~/.claude/projects/<project dir>/<session id>.jsonl` (hooks/transcripts.py); a subagent's
  transcript (`agent-*.jsonl`, or under `<session>/subagents/`) is part of its session, not a session;
- Gemini CLI: `~/.gemini/tmp/<project>/chats/session-*.json` and `.jsonl` (hooks/gemini.py);
- Codex CLI: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (codex.py): the typed prompts, final replies,
  shell commands and patches, under the keys its hooks give them; a subagent's rollout is not a session.

A session's project is worked out from the directory its transcript recorded, as the hook does from its
working directory (hooks/projects.py), without git when that directory is not on this machine (then from
the remote Codex records with it). Projects the hooks exclude (hooks.exclude) are left out, as the hooks
never captured them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from mcp_memory.hooks import gemini, transcripts
from mcp_memory.hooks.projects import Project, excluded, recorded_project
from mcp_memory.hooks.transcripts import Captured
from mcp_memory.service.self_eval import codex

Client = Literal["claude-code", "gemini", "codex"]
_WORKSPACE = re.compile(r"Workspace Directories:\*\*\\n\s*- ((?:[^\"\\]|\\.)+?)\\n")
HEAD_LINES = 50  # lines of a Claude Code transcript looked through for the directory it recorded


@dataclass(frozen=True)
class RecordedSession:
    """One session of a coding agent, as its transcript holds it."""

    client: Client
    session_id: str
    path: Path
    cwd: str
    project: Project
    items: tuple[Captured, ...]  # what the hooks keep of it, in order (hooks/transcripts.py)
    started: datetime

    @property
    def first_prompt(self) -> Captured | None:
        """The first prompt the person typed (never a tool's result, a notification or a command)."""
        return next((item for item in self.items if item.kind == "prompt"), None)


def recorded_sessions(home: Path, exclude: list[str] | None = None) -> list[RecordedSession]:
    """Every session found under `home`, oldest first."""
    found = [*_claude_sessions(home), *_gemini_sessions(home), *_codex_sessions(home)]
    return sorted(
        (s for s in found if not excluded(s.project, exclude or [])), key=lambda s: (s.started, s.path)
    )


def matches(session: RecordedSession, needle: str) -> bool:
    """Whether --project names this session's project: a part of its id (remote or directory), its key,
    the directory the session ran in, or the client's folder for it."""
    needle = needle.casefold()
    names = (session.project.id, session.project.key, session.cwd, session.path.parent.name)
    return any(needle in name.casefold() for name in names)


def _claude_sessions(home: Path) -> list[RecordedSession]:
    sessions = []
    for path in sorted((home / ".claude" / "projects").glob("*/*.jsonl")):
        if path.name.startswith("agent-"):
            continue
        items = tuple(transcripts.read_transcript(path, complete=True))
        cwd = _claude_cwd(path)
        session = _session("claude-code", path.stem, path, cwd, items)
        if session is not None:
            sessions.append(session)
    return sessions


def _gemini_sessions(home: Path) -> list[RecordedSession]:
    sessions = []
    for path in sorted((home / ".gemini" / "tmp").glob("*/chats/session-*.json*")):
        if path.suffix not in (".json", ".jsonl"):
            continue
        read = gemini.read_transcript(path, complete=True)
        session_id, cwd = _gemini_meta(path)
        session = _session("gemini", session_id or path.stem, path, cwd, tuple(read or ()))
        if session is not None:
            sessions.append(session)
    return sessions


def _codex_sessions(home: Path) -> list[RecordedSession]:
    sessions = []
    for path in sorted((home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl")):
        read = codex.read_rollout(path)
        if read is None:
            continue
        session = _session("codex", read.session_id, path, read.cwd, read.items, read.project)
        if session is not None:
            sessions.append(session)
    return sessions


def _session(
    client: Client,
    session_id: str,
    path: Path,
    cwd: str | None,
    items: tuple[Captured, ...],
    project: Project | None = None,
) -> RecordedSession | None:
    times = [t for t in (moment(item.time) for item in items) if t is not None]
    if not items or not times:
        return None
    directory = cwd or str(path.parent)
    project = project or recorded_project(directory)
    return RecordedSession(client, session_id, path, directory, project, items, started=min(times))


def _claude_cwd(path: Path) -> str | None:
    """The working directory a Claude Code transcript recorded (every message entry carries it)."""
    try:
        with path.open("rb") as handle:
            for _, line in zip(range(HEAD_LINES), handle, strict=False):
                try:
                    entry = json.loads(line)
                except (ValueError, UnicodeDecodeError):
                    continue
                cwd = entry.get("cwd") if isinstance(entry, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except OSError:
        return None
    return None


def _gemini_meta(path: Path) -> tuple[str | None, str | None]:
    """A Gemini session's id (its metadata's sessionId) and its workspace directory: the first one its
    session context lists, else the one Gemini notes beside its chats (`.project_root`)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, None
    session_id = None
    first = text.lstrip().split("\n", 1)[0]
    try:
        meta = json.loads(first if path.suffix == ".jsonl" else text)
    except ValueError:
        meta = None
    if isinstance(meta, dict) and isinstance(meta.get("sessionId"), str):
        session_id = meta["sessionId"]
    workspace = _WORKSPACE.search(text)
    if workspace is not None:
        try:
            return session_id, str(json.loads(f'"{workspace.group(1)}"')).strip()
        except ValueError:
            pass
    try:
        return session_id, (path.parent.parent / ".project_root").read_text(encoding="utf-8").strip() or None
    except OSError:
        return session_id, None


def moment(stamp: str | None) -> datetime | None:
    """A transcript's timestamp as an aware datetime (UTC when it names no zone); None when unreadable."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
