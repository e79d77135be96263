"""A change notification and the user whose memory changed.

Every principal's memory is private, and so is the news that it changed: the bus, the legacy
subscriptions and the Redis relay carry events in this envelope, and deliver each one only to sessions
of its user. An event about no one's memory in particular (the tool list changed) has no user and
reaches every session.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.shared.subscriptions import ServerEvent


@dataclass(frozen=True)
class UserEvent:
    user_id: str | None  # None: not about one user's memory; every session may hear it
    event: ServerEvent

    def concerns(self, user_id: str) -> bool:
        return self.user_id is None or self.user_id == user_id
