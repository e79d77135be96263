"""Checks on what callers send, each failing with an InvalidInputError that names the argument.

They run before anything is written, so a rejected call changes nothing.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_memory.errors import InvalidInputError, shown
from mcp_memory.models import (
    MEMORY_TYPES,
    ROLES,
    SPACE_NAME_PATTERN,
    THREAD_ID_PATTERN,
    MemoryType,
    Role,
    SearchMode,
)

MAX_METADATA_BYTES = 16_384
MIN_CONTEXT_WINDOW, MAX_CONTEXT_WINDOW = 256, 10_000_000


def thread_id(value: object, name: str = "thread_id") -> str:
    if not isinstance(value, str) or not THREAD_ID_PATTERN.match(value):
        raise InvalidInputError(
            f"{name} {shown(value)} is not valid: use 1-128 characters of letters, digits and . _ : -"
        )
    return value


def space(value: object) -> str:
    if not isinstance(value, str) or not SPACE_NAME_PATTERN.match(value):
        raise InvalidInputError(
            f"space {shown(value)} is not valid: a space name is 1-64 characters of letters, digits and . _ -, "
            "starting with a letter or digit"
        )
    return value


def memory_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise InvalidInputError(
            f"memory_id {shown(value)} is not valid: give the id of a memory (1-256 characters)"
        )
    return value


def content(value: object, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("content is empty: a turn needs some text")
    if len(value) > max_chars:
        raise InvalidInputError(
            f"content is {len(value):,} characters; the limit is {max_chars:,} (setting max_content_chars)"
        )
    text(value, "content")
    return value


# Control characters (C0 but tab, newline and carriage return; DEL; C1) and lone UTF-16 surrogates:
# what binary data decoded as text looks like, and what no store or client can round-trip as text.
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_C0_NAMES = (
    "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI "
    "DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
).split()


def text(value: str, name: str) -> str:
    """value when it is text: InvalidInputError naming the first character that is not, and where."""
    found = _NOT_TEXT.search(value)
    if found is None:
        return value
    char, offset = found.group(), found.start()
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        what = f"an unpaired surrogate U+{code:04X}"
    else:
        label = _C0_NAMES[code] if code < 0x20 else "DEL" if code == 0x7F else "C1 control"
        what = f"control character U+{code:04X} ({label})"
    raise InvalidInputError(
        f"{name} has {what} at offset {offset:,} (0-based, in characters): only text is stored, with "
        "tab, newline and carriage return the only control characters allowed; binary data must be "
        "encoded first (e.g. base64)"
    )


def role(value: object) -> Role:
    if value == "agent":
        return "assistant"
    if value not in ROLES:
        raise InvalidInputError(f"role {shown(value)} is unknown: use one of {', '.join(ROLES)} (or agent)")
    return value


def metadata(value: object, name: str = "metadata") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f'{name} must be a JSON object, e.g. {{"tool_name": "search"}}')
    try:
        size = len(json.dumps(value))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{name} is not JSON-serializable: {e}") from e
    if size > MAX_METADATA_BYTES:
        raise InvalidInputError(f"{name} is {size:,} bytes of JSON; the limit is {MAX_METADATA_BYTES:,}")
    return value


def context_window(value: object) -> int | None:
    if value is None:
        return None
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not MIN_CONTEXT_WINDOW <= value <= MAX_CONTEXT_WINDOW
    ):
        raise InvalidInputError(
            f"context_window {shown(value)} is out of range: give the model's window in tokens, "
            f"{MIN_CONTEXT_WINDOW:,} to {MAX_CONTEXT_WINDOW:,}"
        )
    return value


def count(value: object, name: str, *, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInputError(
            f"{name} {shown(value)} is out of range: use a whole number from {low} to {high}"
        )
    return value


def query(value: object, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("query is empty: say what to look for")
    if len(value) > max_chars:
        raise InvalidInputError(
            f"query is {len(value):,} characters; the limit is {max_chars:,} (setting search.max_query_chars)"
        )
    return value


def mode(value: object) -> SearchMode:
    if value not in ("hybrid", "vector", "text"):
        raise InvalidInputError(f"mode {shown(value)} is unknown: use hybrid, vector or text")
    return value


def types(value: object) -> list[MemoryType] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise InvalidInputError(f"types must be a list drawn from {', '.join(MEMORY_TYPES)}")
    unknown = [t for t in value if t not in MEMORY_TYPES]
    if unknown:
        raise InvalidInputError(f"types {shown(unknown)} unknown: use {', '.join(MEMORY_TYPES)}")
    return list(dict.fromkeys(value))


def timestamp(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise InvalidInputError(
                f"{name} {shown(value)} is not an ISO 8601 date or time, e.g. 2026-01-31 or 2026-01-31T09:00:00Z"
            ) from e
    else:
        raise InvalidInputError(f"{name} must be an ISO 8601 date or time string")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def time_range(since: object, until: object) -> tuple[datetime | None, datetime | None]:
    start, end = timestamp(since, "since"), timestamp(until, "until")
    if start and end and start > end:
        raise InvalidInputError(f"since ({start.isoformat()}) is after until ({end.isoformat()})")
    return start, end


def fraction(value: object, name: str) -> float:
    """A number from 0 to 1, e.g. a score floor."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInputError(f"{name} must be a number from 0 to 1, got {shown(value)}")
    return float(value)


MAX_CLOCK_SKEW = timedelta(minutes=5)  # how far ahead of the server a client's clock may run


def created_at(value: object, now: datetime) -> datetime | None:
    """When a turn was said: an ISO 8601 time (naive = UTC), not after `now` beyond the clock skew
    allowed. A time within the allowance is taken as `now`, so turns never sort after later ones."""
    moment = timestamp(value, "created_at")
    if moment is None:
        return None
    moment = moment.astimezone(UTC)
    if moment > now + MAX_CLOCK_SKEW:
        raise InvalidInputError(
            f"created_at {moment.isoformat()} is in the future (the server's time is {now.isoformat()}): "
            "give the time the turn was said, or omit created_at for now"
        )
    return min(moment, now)
