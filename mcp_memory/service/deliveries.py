"""A batch of captured events a courier delivered to a memory server (POST /hooks/capture), stored in order.

Each event names what the hook saw (`entry`: client, event, kind, session, cwd, time, project) and carries
the items already read and redacted on the user's machine (`items`: hooks.transcripts.Captured's fields).
The server never reads a file for a network request: a `transcript_path` in an entry is dropped, and
only the items are stored. Each event is checked whole before any of it is stored, so a bad event is
answered `rejected` with why and stores nothing, and the others go on. The answer says, per event in
the batch's order, how many messages were new (`stored`) or why it was refused (`rejected`: for good,
the courier sets it aside). A backend that is down raises BackendUnavailableError out of the batch: the
courier sends it all again later, and the derived ids make what was stored already count 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args

from mcp_memory.errors import InvalidInputError, LimitExceededError
from mcp_memory.hooks.transcripts import Captured, CapturedKind
from mcp_memory.security.spaces import Access
from mcp_memory.service.capture import HookCapture

ROLES = ("user", "assistant", "tool", "system")
KINDS: tuple[str, ...] = get_args(CapturedKind)
ENTRY_FIELDS = ("client", "event", "kind", "session_id", "cwd", "time", "project")
MAX_EVENTS = 500  # per batch
MAX_ITEMS = 2_000  # per event (a long transcript's first delivery)
MAX_ID_CHARS = 200
MAX_KEY_CHARS = 500
MAX_FIELD_CHARS = 1_000  # an entry's strings, an item's time and each path
MAX_PATHS = 20
REASON_CHARS = 300


@dataclass(frozen=True)
class Delivered:
    """One event of a batch: its outbox id, what the hook saw, and the items read for it."""

    id: str
    entry: dict[str, Any]
    items: list[Captured]


def events_of(body: object) -> list[object]:
    """The batch's events as sent (a list), or InvalidInputError when the body is not a batch."""
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        raise InvalidInputError('the body is not a batch: {"events": [...]} expected')
    events: list[object] = body["events"]
    if len(events) > MAX_EVENTS:
        raise InvalidInputError(f"a batch holds at most {MAX_EVENTS} events; this one has {len(events)}")
    return events


def event_id(event: object) -> str | None:
    """The outbox id an event names, to answer it by (None when it names none)."""
    value = event.get("id") if isinstance(event, dict) else None
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS else None


def checked(event: object, max_content_chars: int) -> Delivered:
    """The event as stored, or InvalidInputError naming what is wrong with it."""
    if not isinstance(event, dict):
        raise InvalidInputError("the event is not a JSON object")
    ident = event_id(event)
    if ident is None:
        raise InvalidInputError(f"the event has no id (a string of 1-{MAX_ID_CHARS} characters)")
    entry = event.get("entry")
    if not isinstance(entry, dict):
        raise InvalidInputError("the event has no entry object")
    items = event.get("items")
    if not isinstance(items, list):
        raise InvalidInputError("the event has no items list")
    if len(items) > MAX_ITEMS:
        raise InvalidInputError(f"an event holds at most {MAX_ITEMS} items; this one has {len(items)}")
    kept = {name: entry[name] for name in ENTRY_FIELDS if entry.get(name) is not None}  # no transcript_path
    for name, value in kept.items():
        if name != "project" and (not isinstance(value, str) or len(value) > MAX_FIELD_CHARS):
            raise InvalidInputError(f"entry.{name} is not a string of at most {MAX_FIELD_CHARS} characters")
    if not isinstance(kept.get("project"), dict):
        raise InvalidInputError("entry.project is not an object")
    return Delivered(ident, kept, [_item(n, item, max_content_chars) for n, item in enumerate(items)])


def _item(n: int, item: object, max_content_chars: int) -> Captured:
    if not isinstance(item, dict):
        raise InvalidInputError(f"items[{n}] is not an object")
    key, kind, role, content = (item.get(k) for k in ("key", "kind", "role", "content"))
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(f"items[{n}].key is not a string of 1-{MAX_KEY_CHARS} characters")
    if kind not in KINDS:
        raise InvalidInputError(f"items[{n}].kind is not one of {', '.join(KINDS)}")
    if role not in ROLES:
        raise InvalidInputError(f"items[{n}].role is not one of {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise InvalidInputError(f"items[{n}].content is not a string")
    if len(content) > max_content_chars:
        raise InvalidInputError(
            f"items[{n}].content has {len(content)} characters; at most {max_content_chars} are accepted"
        )
    time = item.get("time")
    if time is not None and (not isinstance(time, str) or len(time) > MAX_FIELD_CHARS):
        raise InvalidInputError(f"items[{n}].time is not an ISO 8601 string")
    paths = item.get("paths") or []
    if not isinstance(paths, list) or not all(
        isinstance(p, str) and len(p) <= MAX_FIELD_CHARS for p in paths
    ):
        raise InvalidInputError(f"items[{n}].paths is not a list of strings")
    return Captured(key, kind, role, content, time, tuple(paths[:MAX_PATHS]))


async def store_batch(
    capture: HookCapture, events: Sequence[object], access: Access, author_name: str
) -> list[dict[str, Any]]:
    """Store each event of a batch in order for `access`'s user; per event {"id", "stored": n} or
    {"id", "rejected": why}. BackendUnavailableError (a backend down) leaves the batch at once."""
    answers: list[dict[str, Any]] = []
    limit = capture.service.settings.max_content_chars
    for event in events:
        ident = event_id(event)
        try:
            delivered = checked(event, limit)
            stored = await capture.store_items(delivered.entry, delivered.items, access, author_name)
        except (InvalidInputError, LimitExceededError) as e:
            answers.append({"id": ident, "rejected": str(e)[:REASON_CHARS]})
            continue
        answers.append({"id": ident, "stored": stored})
    return answers
