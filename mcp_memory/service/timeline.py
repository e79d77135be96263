"""timeline: what happened, in what order. The outline of a thread, a project, a space or everything the
caller reads, an exchange per line, oldest first; with a query, the exchanges that match it best (and
their neighbours), fitted to the budget, then put back in time order.

Why an outline and not a ranked list: "in what order did we try these fixes", "summarize how the
migration went" name only a topic, and their answer is spread over many exchanges and sessions. A top-10
ranked against the question cannot hold it; the outline of a whole conversation, a line per exchange,
can (docs/tools.md "timeline", bench/beam.py --timeline).

- **An exchange** is a user's turn with what followed it in its thread until the user spoke again (the
  reply, tool turns). A reply with no turn before it in the range is an exchange of its own.
- **Sessions** split a thread where it pauses for more than SESSION_GAP; numbered in time order over
  the whole range, so a page's numbers agree with the next page's.
- **Detail follows the budget.** Each exchange is shown at the richest of LEVELS at which every
  candidate fits `max_tokens`; when none does, at the leanest, and the rest is for the next page. A
  whole outline with every exchange in it serves "in what order" better than half of it in detail.
- **Ids are short**: the id's type and its first SHORT_HEX hex digits, which open the memory whole as
  its full id does (service/memory_service.py get_memory resolves a unique prefix).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import anyio

from mcp_memory import validation as check
from mcp_memory.errors import InvalidInputError
from mcp_memory.models import ListQuery, Memory, Owner, short_id
from mcp_memory.safety import flags_for
from mcp_memory.search.query import SearchQuery
from mcp_memory.service import gists
from mcp_memory.views import TimelineItem, TimelineView

if TYPE_CHECKING:
    from mcp_memory.service.memory_service import MemoryService

SESSION_GAP = timedelta(hours=2)  # a pause this long in a thread starts a new session
DEFAULT_TOKENS = 4000
MIN_TOKENS, MAX_TOKENS = 200, 32_000
SCAN_PAGE = 1000  # turns read from the store at a time
MAX_SCAN = 10_000  # turns read for one timeline at most, the newest (beyond: narrow by thread or time)
SEARCH_HITS = 100  # turns ranked for a query
ENVELOPE_TOKENS = 100  # the answer's fields beside its items (a cursor is ~30 tokens)
_CURSOR_VERSION = 1


@dataclass(frozen=True)
class Level:
    """How much of an exchange is shown: tokens of the user's turn, of the reply, names beyond them."""

    said: int
    reply: int
    names: int


LEVELS = (Level(40, 24, 3), Level(24, 14, 2), Level(20, 10, 0), Level(12, 0, 0))


@dataclass
class Exchange:
    turn: Memory | None  # the user's turn (None: a reply with no turn before it in the range)
    replies: list[Memory] = field(default_factory=list)
    session: int = 0

    @property
    def first(self) -> Memory:
        return self.turn if self.turn is not None else self.replies[0]

    @property
    def last(self) -> Memory:
        return self.replies[-1] if self.replies else self.first

    @property
    def reply(self) -> Memory | None:
        return next(
            (m for m in self.replies if m.role == "assistant"), self.replies[0] if self.replies else None
        )


@dataclass(frozen=True)
class Matched:
    """What a query found in an exchange: the span of the user's turn or of the reply that matched."""

    turn: tuple[int, int] | None = None
    reply: tuple[int, int] | None = None


def exchanges_of(turns: Sequence[Memory]) -> list[Exchange]:
    """Turns (any order) as exchanges, in time order, sessions numbered (module docstring)."""
    ordered = sorted(turns, key=lambda m: (m.created_at, m.id))
    open_by_thread: dict[str | None, Exchange] = {}
    exchanges: list[Exchange] = []
    for memory in ordered:
        current = open_by_thread.get(memory.thread_id)
        if memory.role == "user" or current is None:
            current = (
                Exchange(turn=memory) if memory.role == "user" else Exchange(turn=None, replies=[memory])
            )
            open_by_thread[memory.thread_id] = current
            exchanges.append(current)
        else:
            current.replies.append(memory)
    _number_sessions(exchanges)
    return exchanges


def _number_sessions(exchanges: Sequence[Exchange]) -> None:
    last: dict[str | None, tuple[datetime, int]] = {}
    sessions = 0
    for exchange in exchanges:
        thread = exchange.first.thread_id
        before = last.get(thread)
        if before is None or exchange.first.created_at - before[0] > SESSION_GAP:
            sessions += 1
            session = sessions
        else:
            session = before[1]
        exchange.session = session
        last[thread] = (exchange.last.created_at, session)


async def timeline(  # noqa: PLR0913 - the tool's arguments
    service: MemoryService,
    owners: Sequence[Owner],
    *,
    query: str | None = None,
    thread_id: str | None = None,
    project: str | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    max_tokens: int | None = None,
    cursor: str | None = None,
) -> tuple[TimelineView, dict[str, list[str]]]:
    """The timeline of what `owners` hold in the range (module docstring), and the whole ids of the
    memories it shows from each space (for the space's audit trail); each argument checked, an error
    naming it."""
    if thread_id is not None:
        thread_id = check.thread_id(thread_id)
    if project is not None:
        project = check.thread_id(project, "project")
    if query is not None and not query.strip():
        query = None
    since_, until_ = check.time_range(since, until)
    budget = check.count(
        DEFAULT_TOKENS if max_tokens is None else max_tokens, "max_tokens", low=MIN_TOKENS, high=MAX_TOKENS
    )
    fingerprint = _fingerprint(query, thread_id, project, since_, until_, [str(o) for o in owners])
    offset = 0 if cursor is None else _decode_cursor(cursor, fingerprint)
    threads = None if project is None else await _project_threads(service, owners, project)
    spaces: dict[str, str] = {}
    turns, unread = await _turns_in_range(service, owners, thread_id, threads, since_, until_, spaces)
    exchanges = exchanges_of(turns)
    matched: dict[int, Matched] = {}
    order = list(range(len(exchanges)))
    first_tier = len(order)
    terms: tuple[str, ...] = ()
    if query is not None and exchanges:
        asked = SearchQuery.of(
            list(owners),
            query,
            thread_id,
            ["turn"],
            min(SEARCH_HITS, service.settings.search.max_limit),
            since=since_,
            until=until_,
            threads=threads,
            settings=service.settings,
        )
        terms = tuple(asked.terms.matched)
        found = await service.search(asked)
        order, matched = _ranked(exchanges, [(hit.id, hit.passage) for hit in found.results])
        first_tier = len(order)
        order += _by_nearness(order, len(exchanges))
    page = _Page(exchanges, matched, terms, service.tokens.count, spaces)
    choose = functools.partial(page.choose, order, first_tier, offset, budget)
    chosen = await anyio.to_thread.run_sync(choose)
    while True:  # the whole answer within the budget, exactly: the last chosen left for the next page
        consumed = offset + len(chosen)
        view = TimelineView(
            items=as_log([item for _, item in sorted(chosen, key=lambda pair: pair[0])]),
            in_range=len(exchanges),
            listed=len(chosen),
            left_out=max(0, len(exchanges) - consumed),
            sessions=max((e.session for e in exchanges), default=0),
            matched=None if query is None else sum(1 for i in order if i in matched),
            next_cursor=_encode_cursor(fingerprint, consumed) if consumed < len(order) else None,
            older_unread=unread,
        )
        if len(chosen) <= 1 or service.tokens.count(view.model_dump_json(exclude_defaults=True)) <= budget:
            break
        chosen = chosen[:-1]
    shown = {item.id for item in view.items} | {item.reply_id for item in view.items}
    read: dict[str, list[str]] = {}
    for memory in turns:
        space = spaces.get(memory.id)
        if space is not None and short_id(memory.id) in shown:
            read.setdefault(space, []).append(memory.id)
    return view, read


def as_log(items: Sequence[TimelineItem]) -> list[TimelineItem]:
    """Items in time order as a log reads: a day's date and a session's number on their first line only."""
    shown: list[TimelineItem] = []
    day = session = thread = None
    for item in items:
        update: dict[str, object] = {}
        if (item.at[:10], item.thread_id) == (day, thread):
            update["at"] = item.at[11:]
        if (item.session, item.thread_id) == (session, thread):
            update["session"] = None
        day, session, thread = item.at[:10], item.session, item.thread_id
        shown.append(item.model_copy(update=update) if update else item)
    return shown


async def _project_threads(service: MemoryService, owners: Sequence[Owner], project: str) -> list[str]:
    """A project's session threads (hooks/projects.py: `<project key>.<session>`)."""
    threads = [
        t.thread_id for t in await service.list_threads(list(owners)) if t.thread_id.startswith(project + ".")
    ]
    return sorted(set(threads))


async def _turns_in_range(
    service: MemoryService,
    owners: Sequence[Owner],
    thread_id: str | None,
    threads: Sequence[str] | None,
    since: datetime | None,
    until: datetime | None,
    spaces: dict[str, str],
) -> tuple[list[Memory], bool]:
    """Every current turn of the range, each owner's, and whether older ones were left unread: at most
    MAX_SCAN, the newest (what happened last matters most when a range is that large). `spaces` gets
    the space of each turn read from one."""
    store = service.stores.long_term
    scopes = (
        [thread_id] if threads is None else ([t for t in threads if t == thread_id] if thread_id else threads)
    )
    found: list[Memory] = []
    unread = False
    for owner in owners:
        for scope in scopes:
            read = 0
            before: tuple[datetime, str] | None = None
            while True:
                page = await store.list_memories(
                    ListQuery(
                        user_id=owner,
                        types=["turn"],
                        thread_id=scope,
                        since=since,
                        until=until,
                        order="newest",
                        limit=SCAN_PAGE,
                        after=before,
                    )
                )
                found += page
                read += len(page)
                if owner.space is not None:
                    spaces.update((m.id, owner.space) for m in page)
                if len(page) < SCAN_PAGE:
                    break
                if read >= MAX_SCAN:
                    unread = True
                    break
                before = (page[-1].created_at, page[-1].id)
    if len(found) > MAX_SCAN:
        found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        found, unread = found[:MAX_SCAN], True
    return found, unread


def _ranked(
    exchanges: Sequence[Exchange], hits: Sequence[tuple[str, object]]
) -> tuple[list[int], dict[int, Matched]]:
    """Exchanges in the order the query's hits rank them, each followed in the end by its neighbours
    (one before, one after: the context of what matched), then nothing else."""
    at: dict[str, tuple[int, bool]] = {}
    for index, exchange in enumerate(exchanges):
        if exchange.turn is not None:
            at[exchange.turn.id] = (index, True)
        for reply in exchange.replies:
            at[reply.id] = (index, False)
    order: list[int] = []
    matched: dict[int, Matched] = {}
    for memory_id, passage in hits:
        place = at.get(memory_id)
        if place is None:
            continue
        index, is_turn = place
        span = _span(passage)
        before = matched.get(index)
        if before is None:
            order.append(index)
            matched[index] = Matched(turn=span, reply=None) if is_turn else Matched(turn=None, reply=span)
        elif is_turn and before.turn is None:
            matched[index] = Matched(turn=span, reply=before.reply)
        elif not is_turn and before.reply is None:
            matched[index] = Matched(turn=before.turn, reply=span)
    seen = set(order)
    for index in list(order):
        for near in (index - 1, index + 1):
            if 0 <= near < len(exchanges) and near not in seen:
                seen.add(near)
                order.append(near)
    return order, matched


def _by_nearness(found: Sequence[int], total: int) -> list[int]:
    """The exchanges not `found`, nearest to one found first (then the earlier), for the outline around."""
    taken = set(found)
    if not found:
        return [i for i in range(total) if i not in taken]
    marks = sorted(taken)
    distance = {}
    for index in range(total):
        if index in taken:
            continue
        at = bisect.bisect_left(marks, index)
        near = [abs(index - marks[j]) for j in (at - 1, at) if 0 <= j < len(marks)]
        distance[index] = min(near)
    return sorted(distance, key=lambda i: (distance[i], i))


def _span(passage: object) -> tuple[int, int] | None:
    start, end = getattr(passage, "start", None), getattr(passage, "end", None)
    return (start, end) if isinstance(start, int) and isinstance(end, int) else None


@dataclass
class _Page:
    """One page's choice (blocking work, in a worker thread): items at a level per tier, within budget."""

    exchanges: Sequence[Exchange]
    matched: dict[int, Matched]
    terms: Sequence[str]
    count: Callable[[str], int]
    spaces: dict[str, str]
    one_thread: bool = True
    _names: dict[int, list[str]] = field(default_factory=dict)

    def item(self, index: int, level: Level) -> TimelineItem:
        exchange, matched = self.exchanges[index], self.matched.get(index)
        turn, reply = exchange.turn, exchange.reply
        said = gist = ""
        if turn is not None:
            said = gists.shown(
                turn.content, matched.turn if matched else None, self.terms, level.said, self.count
            )
        if reply is not None and (level.reply or (matched is not None and matched.reply is not None)):
            tokens = (
                max(level.reply, level.said // 2) if matched is not None and matched.reply else level.reply
            )
            gist = gists.shown(
                reply.content, matched.reply if matched else None, self.terms, tokens, self.count, filler=True
            )
        # Flags on what is shown, and those found when it was stored.
        flags = {
            f
            for m, text in ((turn, said), (reply, gist))
            if m is not None
            for f in flags_for(text, m.metadata)
        }
        if level.names and index not in self._names:
            self._names[index] = gists.names(
                None if turn is None else turn.content, None if reply is None else reply.content
            )
        first = exchange.first
        return TimelineItem(
            id=None if turn is None else short_id(turn.id),
            reply_id=None if reply is None else short_id(reply.id),
            at=first.created_at.strftime("%Y-%m-%d %H:%M"),
            session=exchange.session,
            thread_id=None if self.one_thread else first.thread_id,
            said=said,
            reply=gist,
            names=[n for n in self._names.get(index, ()) if n.casefold() not in f"{said} {gist}".casefold()][
                : level.names
            ],
            matched=matched is not None,
            flags=sorted(flags),
            space=self.spaces.get(first.id),
        )

    def cost(self, item: TimelineItem) -> int:
        """Its tokens as a line within a day and a session (the usual case: as_log)."""
        within = item.model_copy(update={"at": item.at[11:], "session": None})
        return self.count(within.model_dump_json(exclude_defaults=True)) + 1

    def fill(
        self, candidates: Sequence[int], level: Level, room: int
    ) -> tuple[list[tuple[int, TimelineItem]], int]:
        """The first candidates that fit `room` at `level`, and the room they used."""
        chosen: list[tuple[int, TimelineItem]] = []
        used = 0
        for index in candidates:
            item = self.item(index, level)
            cost = self.cost(item)
            if used + cost > room:
                break
            chosen.append((index, item))
            used += cost
        return chosen, used

    def choose(
        self, order: Sequence[int], first_tier: int, offset: int, budget: int
    ) -> list[tuple[int, TimelineItem]]:
        """The page's exchanges and items, in the order of `order` from `offset`. `order[:first_tier]`
        are the exchanges found for the query (all of them without one): shown at the richest level at
        which all of them fit; the rest of the range after them, at the leanest, while room is left."""
        candidates = order[offset:]
        if not candidates:
            return []
        self.one_thread = len({self.exchanges[i].first.thread_id for i in candidates}) == 1
        tier = candidates[: max(0, first_tier - offset)]
        room = budget - ENVELOPE_TOKENS
        chosen: list[tuple[int, TimelineItem]] = []
        used = 0
        for level in LEVELS:
            chosen, used = self.fill(tier, level, room)
            if len(chosen) == len(tier):
                break
        if len(chosen) == len(tier):
            more, _ = self.fill(candidates[len(tier) :], LEVELS[-1], room - used)
            chosen += more
        if not chosen:  # one exchange larger than the budget at the leanest: shown anyway, alone
            chosen = [(candidates[0], self.item(candidates[0], LEVELS[-1]))]
        return chosen


def _fingerprint(
    query: str | None,
    thread_id: str | None,
    project: str | None,
    since: datetime | None,
    until: datetime | None,
    owners: Sequence[str],
) -> str:
    asked = json.dumps([query, thread_id, project, str(since), str(until), sorted(owners)])
    return hashlib.sha256(asked.encode()).hexdigest()[:12]


def _encode_cursor(fingerprint: str, offset: int) -> str:
    key = {"v": _CURSOR_VERSION, "of": fingerprint, "at": offset}
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode_cursor(cursor: object, fingerprint: str) -> int:
    unknown = InvalidInputError(
        "cursor is not one timeline returned: pass a next_cursor unchanged, or omit cursor to start"
    )
    if not isinstance(cursor, str) or not cursor or len(cursor) > 512:
        raise unknown
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError) as e:
        raise unknown from e
    if not isinstance(key, dict) or key.get("v") != _CURSOR_VERSION or not isinstance(key.get("at"), int):
        raise unknown
    if key.get("of") != fingerprint:
        raise InvalidInputError(
            "cursor was made for other arguments: keep query, thread_id, project, space, since and until "
            "while paging, or omit cursor to start again"
        )
    return max(0, int(key["at"]))
