"""What a new session of a project is told at its start: the project's recent sessions, newest first.

(A first version; the sentence scoring of extractive.py comes next.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SessionTurns:
    thread_id: str
    started_at: datetime
    ended_at: datetime
    summary: str | None
    turns: tuple[tuple[str, str, datetime], ...]  # (role, content, created_at), oldest first


def brief(
    sessions: Sequence[SessionTurns], budget_tokens: int, count_tokens: Callable[[str], int], now: datetime
) -> str:
    lines: list[str] = []
    for session in sessions:
        lines.append(f"Session of {session.ended_at:%Y-%m-%d}:")
        if session.summary:
            lines.append(f"  summary: {' '.join(session.summary.split())[:600]}")
        for role, content, _ in session.turns:
            if role == "user":
                lines.append(f"  asked: {' '.join(content.split())[:300]}")
            elif role == "assistant":
                lines.append(f"  replied: {' '.join(content.split())[:200]}")
    kept: list[str] = []
    for line in lines:
        if count_tokens("\n".join([*kept, line])) > budget_tokens:
            break
        kept.append(line)
    return "\n".join(kept)
