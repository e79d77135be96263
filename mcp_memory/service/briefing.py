"""What a new session of a project is told at its start: what the project was doing in its recent
sessions, newest first, within a token budget, in whole sentences worth reading.

Each session gets a line, "Session <id>, <when>: asked "<its first prompt's first sentence>"", then
"- " lines under it: the last prompt ("left open" when no reply came after it), the sentences that decided,
limited or left something open (facts.py's COMMITMENTS), the user's sentences naming people, numbers
or dates, what failed, the open items of its to-do list, the files it changed, its running summary's
lines. Only stored words are quoted, each sentence whole (prose.py: markdown read as markdown, so no
label, heading, table row or clipped line of an assistant's list appears), never one holding a
redaction marker, never boilerplate, and from the assistant only sentences naming something of this
project. No sentence is cut: one longer than its cap (ASK_CHARS for an ask, SENTENCE_CHARS for a fact)
is read as its clauses that stand as sentences (prose.clauses), or left out; an ask's place then goes
to the first that fits, of this sentence or the prompt's next. A sentence that repeats one
already shown (the same content words, or most of them) is left out, across the whole brief, the asks
included.

Items are chosen by value until the budget is spent, then shown session by session: an item's value is
its kind's tier plus its session's age (newest 0), so a small budget gets the newest sessions' asks and
decisions first, and no item is shown without its session's line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from mcp_memory.hooks.transcripts import TASK_LIST_CHARS
from mcp_memory.service import prose
from mcp_memory.service.ages import attributed
from mcp_memory.service.facts import COMMITMENTS, fact_kinds

_EDIT = re.compile(r"^\[tool\] (?:wrote|edited) (.+)$")
_FAILED = re.compile(r"^\[tool\] (?:ran `(.+?)` → exit (\S+?):|failed to \w+ (\S+))")
_TASK_LIST = re.compile(r"^\[todo\] (.+)$", re.DOTALL)
_TASK_GROUP = re.compile(r"(?:^| / )(pending|in_progress|completed): ")
_COMPACTION = "[compaction summary]"
ASK_CHARS = 300
SENTENCE_CHARS = 240
FACTS_PER_SESSION = 5
FILES_SHOWN = 8
# An item's tier: the lower, the sooner it is chosen (its session's age is added).
_HEADER, _ASKED, _COMMITTED, _FAILED_TIER, _NOTED, _SUMMARY = 0, 1, 1, 2, 3, 4


@dataclass(frozen=True)
class SessionTurns:
    thread_id: str
    started_at: datetime
    ended_at: datetime
    summary: str | None
    turns: tuple[tuple[str, str, datetime], ...]  # (role, content, created_at), oldest first
    author: str | None = None  # who ran it, for a session of a shared space ("alice, 3 days ago")


@dataclass(frozen=True)
class _Item:
    age: int  # the session's, newest 0
    rank: tuple[int, int, int, int]  # chosen in this order
    place: tuple[int, int, int]  # shown in this order
    text: str
    quoted: tuple[str, ...] = ()  # the sentences it shows, for repeats


def brief(
    sessions: Sequence[SessionTurns], budget_tokens: int, count_tokens: Callable[[str], int], now: datetime
) -> str:
    """The brief of `sessions` (newest first) in at most `budget_tokens`; "" when there is nothing."""
    common = prose.common_words(c for s in sessions for role, c, _ in s.turns if role == "assistant")
    items: list[_Item] = []
    for age, session in enumerate(sessions):
        items += _session_items(age, session, now, common)
    chosen: list[_Item] = []
    said: list[frozenset[str]] = []
    headed: set[int] = set()
    for item in sorted(items, key=lambda i: i.rank):
        if item.place[1] != 0 and item.age not in headed:
            continue  # nothing without its session's line
        words = [prose.content_words(q) for q in item.quoted]
        if item.place[1] == 0 and any(prose.near_duplicate(w, said) for w in words):
            item, words = _Item(item.age, item.rank, item.place, item.text.split(": asked ", 1)[0]), []
        elif any(prose.near_duplicate(w, said) for w in words):
            continue
        trial = sorted([*chosen, item], key=lambda i: i.place)
        if count_tokens(_render(trial)) <= budget_tokens:
            chosen = trial
            said += words
            if item.place[1] == 0:
                headed.add(item.age)
    # A session's line that asks nothing is shown only with a line of its own under it.
    lines = Counter(i.age for i in chosen)
    return _render(
        [i for i in chosen if not (i.place[1] == 0 and ": asked " not in i.text and lines[i.age] == 1)]
    )


def _render(items: Sequence[_Item]) -> str:
    return "\n".join(item.text for item in items)


def _item(age: int, tier: int, n: int, line: int, text: str, *quoted: str) -> _Item:
    """An item of the session `age`: chosen by its tier plus the session's age (then the newer session,
    then the tier), shown as the session's `line`-th kind of line."""
    return _Item(age, (tier + age + n // 2, age, tier, n), (age, line, n), text, quoted)


def _session_items(age: int, session: SessionTurns, now: datetime, common: frozenset[str]) -> list[_Item]:
    """A session's items (module docstring)."""
    prompts = [c for role, c, _ in session.turns if role == "user"]
    # Observations are "tool" turns as the hooks store them; a "system" turn that says "[tool] ..." too.
    tools = [c for role, c, _ in session.turns if role == "tool" or c.startswith("[tool] ")]
    compactions = [c[len(_COMPACTION) :].strip() for _, c, _ in session.turns if c.startswith(_COMPACTION)]
    said = [(role, c) for role, c, _ in session.turns if role in ("user", "assistant")]
    # The client's compaction summary stands for the turns it replaced: its facts count as the user's
    # do (it is a record of the session, not advice), and it is the session's summary when none was stored.
    said = [("summary", c) for c in compactions] + said
    summary = session.summary or (compactions[-1] if compactions else None)
    left_open = _left_open(session.turns)
    short = session.thread_id.split(".", 1)[-1][:8]
    when = (
        _when(session.ended_at, now)
        if session.author is None
        else attributed(session.author, session.ended_at, now)
    )
    header = f"Session {short}, {when}"
    first = _ask(prompts[0]) if prompts else None
    if first:
        left = " (left open: no reply came)" if left_open and len(prompts) == 1 else ""
        header += f': asked "{first}"{left}'
    items = [_item(age, _HEADER, 0, 0, header, *([first] if first else []))]
    if len(prompts) > 1 and (last := _ask(prompts[-1])):
        what = "left open" if left_open else "last asked"
        items.append(_item(age, _ASKED, 0, 1, f'- {what}: "{last}"', last))
    for n, (who, sentence) in enumerate(_facts(said, common)[:FACTS_PER_SESSION]):
        tier = _COMMITTED if fact_kinds(sentence) & COMMITMENTS else _NOTED
        items.append(_item(age, tier + (who == "agent"), n, 2, f"- {who}: {sentence}", sentence))
    failed = [
        f"`{m.group(1)}` (exit {m.group(2)})" if m.group(1) else str(m.group(3))
        for t in tools
        if (m := _FAILED.match(t)) and not prose.is_redacted(t)
    ]
    if failed:
        items.append(_item(age, _FAILED_TIER, 0, 3, "- failed: " + "; ".join(dict.fromkeys(failed[-3:]))))
    todos = [m.group(1) for t in tools if (m := _TASK_LIST.match(t))]
    if todos and (open_tasks := _open_tasks(todos[-1], len(todos[-1]) + len("[todo] ") >= TASK_LIST_CHARS)):
        items.append(_item(age, _FAILED_TIER, 1, 4, "- to do: " + "; ".join(open_tasks), *open_tasks))
    files = sorted({m.group(1) for t in tools if (m := _EDIT.match(t))})
    if files:
        more = f" and {len(files) - FILES_SHOWN} more" if len(files) > FILES_SHOWN else ""
        items.append(_item(age, _NOTED, 1, 5, "- files changed: " + ", ".join(files[:FILES_SHOWN]) + more))
    if summary:
        lines = [
            s
            for s in _within(prose.sentences(summary, prompt=True), SENTENCE_CHARS)
            if _quotable(s, "user", common)
        ]
        for n, line in enumerate(lines[:3]):
            items.append(_item(age, _SUMMARY, n, 6, f"- summary: {line}", line))
    return items


def _ask(prompt: str) -> str | None:
    """The first sentence of the prompt that says something (not "Thanks!") within ASK_CHARS, whole."""
    for sentence in _within(prose.sentences(prompt, prompt=True), ASK_CHARS):
        if not prose.is_redacted(sentence) and not prose.is_boilerplate(sentence):
            return sentence
    return None


def _within(sentences: Sequence[str], chars: int) -> list[str]:
    """The sentences of at most `chars`, a longer one as those of its clauses that fit (prose.py)."""
    return [
        part
        for s in sentences
        for part in ([s] if len(s) <= chars else prose.clauses(s))
        if len(part) <= chars
    ]


def _left_open(turns: Sequence[tuple[str, str, datetime]]) -> bool:
    """Whether no reply came after the session's last prompt (it ended with the request still open)."""
    for role, _, _ in reversed(turns):
        if role in ("user", "assistant"):
            return role == "user"
    return False


def _open_tasks(task_list: str, clipped: bool) -> list[str]:
    """The items of a to-do list ("pending: a; b / completed: c") not done yet; the last item dropped
    when capture cut the list short."""
    parts = _TASK_GROUP.split(task_list)
    groups = list(zip(parts[1::2], parts[2::2], strict=True))
    if clipped and groups:
        status, items = groups[-1]
        groups[-1] = (status, items.rsplit("; ", 1)[0] if "; " in items else "")
    found = [t.strip() for status, items in groups if status != "completed" for t in items.split("; ")]
    return [t for t in found if t and not prose.is_redacted(t)]


def _quotable(sentence: str, role: str, common: frozenset[str]) -> bool:
    """Worth quoting to a newcomer (prose.py): not redacted, not boilerplate, and from the agent only
    when it names something of this project."""
    if prose.is_redacted(sentence) or prose.is_boilerplate(sentence):
        return False
    return role != "assistant" or prose.is_specific(sentence, common)


def _facts(said: Sequence[tuple[str, str]], common: frozenset[str]) -> list[tuple[str, str]]:
    """The statements that decide, limit or leave something open, the user's before the agent's, then
    the user's naming people, numbers or dates; within each, those with names or numbers first, the
    later ones first. Questions are asks, not facts."""
    found: list[tuple[int, int, str, str]] = []
    for index, (role, content) in enumerate(said):
        for sentence in _within(prose.sentences(content, prompt=role != "assistant"), SENTENCE_CHARS):
            if sentence.endswith("?") or not _quotable(sentence, role, common):
                continue
            kinds = fact_kinds(sentence)  # as the summary writer reads it (facts.py)
            factlike = bool(kinds & {"name", "number", "date"})
            if kinds & COMMITMENTS and not (role == "assistant" and prose.is_advice(sentence)):
                weight = (0 if factlike else 1) + (2 if role == "assistant" else 0)
            elif factlike and role != "assistant":
                weight = 4
            else:
                continue
            found.append((weight, -index, "agent" if role == "assistant" else role, sentence))
    found.sort()
    return list(dict.fromkeys((who, sentence) for _, _, who, sentence in found))


def _when(moment: datetime, now: datetime) -> str:
    days = (now.date() - moment.date()).days
    relative = "today" if days <= 0 else "yesterday" if days == 1 else f"{days} days ago"
    return f"{relative} ({moment:%Y-%m-%d})"
