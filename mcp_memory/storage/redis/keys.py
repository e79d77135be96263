"""Every Redis key name working memory uses, built here and nowhere else.

Layout (prefix `mm`, user `ann`, thread `t1`):

    mm:{ann:t1}:meta       hash: summary, summary_tokens, summary_version, context_window, data,
                           tokens (summary + messages), updated_at, and `id:<message id>` = 1 for
                           each message in the list (append skips an id the thread holds)
    mm:{ann:t1}:messages   list: one Message JSON per element, oldest first
    mm:{ann:t1}:lease      string: the summarization lease's owner, with its own PX expiry
    mm:{ann}:threads       sorted set: the user's thread ids, scored by last write (for list_threads)
    mm:{ann}:learning:<key>  hash: one learning trigger counter (n = number, mark = the mark), with
                           its own PX expiry when it is a rate window (redis/counters.py)
    mm:events              pub/sub channel of resource-change events (redis/relay.py)
    mm:answers             pub/sub channel of clients' answers to server requests, for the replica
                           that asked (redis/answers.py)
    mm:rate:<digest>       hash: one principal's request bucket, shared by replicas (redis/rate.py);
                           named by a digest of the user id, and expiring once idle
    mm:session:<id>        hash: one 2025-protocol MCP session, for every replica (redis/sessions.py):
                           state, sub:<uri> per subscription, ended once deleted; expiring once idle

The braces are a Redis Cluster hash tag: every key of one thread hashes to the same slot, so one Lua
script can update them all atomically. The user's index and learning counters live in the user's own
slot (so forgetting a user's counters is one multi-key UNLINK even on a cluster).

User and thread ids are percent-encoded outside [A-Za-z0-9._-]: ids may contain ':' (user `a`,
thread `b:c` must not collide with user `a:b`, thread `c`), and an encoded id never holds a brace
(which would move the hash tag) or a glob character (which would widen a SCAN pattern).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from mcp_memory.errors import ConfigError

_SAFE = "._-"  # with quote()'s always-safe letters and digits
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def _encode(part: str) -> str:
    return quote(part, safe=_SAFE)


@dataclass(frozen=True)
class ThreadKeys:
    """The keys of one thread, all in one hash slot. Scripts take them in this order."""

    meta: str
    messages: str
    lease: str

    @property
    def data_keys(self) -> list[str]:
        """The keys that hold the thread itself (the lease has its own life)."""
        return [self.meta, self.messages]

    @property
    def all(self) -> list[str]:
        return [self.meta, self.messages, self.lease]


class RedisKeys:
    """Key names for one deployment prefix."""

    def __init__(self, prefix: str) -> None:
        if not prefix or "{" in prefix or "}" in prefix:
            raise ConfigError(
                f"working.key_prefix {prefix!r} must be non-empty, without braces (Redis hash tags)"
            )
        self.prefix = prefix
        self._glob_prefix = _GLOB_SPECIAL.sub(r"\\\1", prefix)

    def thread(self, user_id: str, thread_id: str) -> ThreadKeys:
        base = f"{self.prefix}:{{{_encode(user_id)}:{_encode(thread_id)}}}"
        return ThreadKeys(meta=f"{base}:meta", messages=f"{base}:messages", lease=f"{base}:lease")

    def user_threads(self, user_id: str) -> str:
        return f"{self.prefix}:{{{_encode(user_id)}}}:threads"

    def user_thread_pattern(self, user_id: str) -> str:
        """SCAN pattern matching every thread key of the user, and no other user's."""
        return f"{self._glob_prefix}:{{{_encode(user_id)}:*"

    def thread_id_of(self, user_id: str, key: str) -> str | None:
        """The thread id in a key that `user_thread_pattern` matched (None if it is not a thread key)."""
        head = f"{self.prefix}:{{{_encode(user_id)}:"
        if not key.startswith(head):
            return None
        encoded, brace, _ = key[len(head) :].partition("}")
        return unquote(encoded) if brace and encoded else None

    def learning_counter(self, user_id: str, key: str) -> str:
        return f"{self.prefix}:{{{_encode(user_id)}}}:learning:{_encode(key)}"

    def learning_counter_pattern(self, user_id: str, key_prefix: str = "") -> str:
        """SCAN pattern of the user's learning counters whose key starts with key_prefix. Encoding works
        character by character, so encoded(prefix) starts encoded(key) exactly when prefix starts key;
        an encoded part holds no glob character."""
        return f"{self._glob_prefix}:{{{_encode(user_id)}}}:learning:{_encode(key_prefix)}*"

    def request_bucket(self, user_id: str) -> str:
        """A digest, not the id: the bucket outlives a forgotten user by a few seconds, their id need not."""
        return f"{self.prefix}:rate:{hashlib.sha256(user_id.encode()).hexdigest()[:32]}"

    def session(self, session_id: str) -> str:
        """The id is the client's header, encoded like any id (it cannot widen a pattern or move a slot)."""
        return f"{self.prefix}:session:{_encode(session_id)}"

    def everything_pattern(self) -> str:
        """SCAN pattern of every key under this prefix (tests clean up with it)."""
        return f"{self._glob_prefix}:*"

    @property
    def events_channel(self) -> str:
        return f"{self.prefix}:events"

    @property
    def answers_channel(self) -> str:
        return f"{self.prefix}:answers"

    @property
    def streams_channel(self) -> str:
        return f"{self.prefix}:streams"
