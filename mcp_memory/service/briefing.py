"""What a new session of a project is told at its start: what the project was doing, in its recent
sessions, newest first, within a token budget.

Facts first: what was decided, the limits set and what was left open come before the rest, each as the
sentence that said it (people, numbers and dates are in those sentences). Then each session: when, what
the person asked for (the first sentence of its first and last prompts), the files it touched, what
failed, a last prompt no reply came after, its running summary when it has one (else the client's own
compaction summary, whose sentences count among the facts). Facts are read as the summary writer reads
them (facts.py). Only stored words are quoted; nothing here is phrased as
an instruction. Items are chosen by importance until the budget is spent, then shown in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from mcp_memory.service.facts import COMMITMENTS, fact_kinds

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])|\n+")
_EDIT = re.compile(r"^\[tool\] (?:wrote|edited) (.+)$")
_FAILED = re.compile(r"^\[tool\] (?:ran `(.+?)` → exit (\S+?):|failed to \w+ (\S+))")
_TASK_LIST = re.compile(r"^\[todo\] (.+)$", re.DOTALL)
_COMPACTION = "[compaction summary]"
# Capitalised only because they start a sentence: not names.
_STARTERS = frozenset(
    "the a an we i it this that these those there here let's lets please can could would should will what "
    "how why when where which who if so and but or also then now ok okay yes no thanks great sure maybe "
    "my our your you they he she is are was were do does did have has had just still next first".split()
)
SENTENCE_CHARS = 240
FACTS_PER_SESSION = 5


@dataclass(frozen=True)
class SessionTurns:
    thread_id: str
    started_at: datetime
    ended_at: datetime
    summary: str | None
    turns: tuple[tuple[str, str, datetime], ...]  # (role, content, created_at), oldest first


@dataclass(frozen=True)
class _Item:
    rank: tuple[int, int, int]  # chosen in this order
    place: tuple[int, int, int]  # shown in this order
    text: str


def brief(
    sessions: Sequence[SessionTurns], budget_tokens: int, count_tokens: Callable[[str], int], now: datetime
) -> str:
    """The brief of `sessions` (newest first) in at most `budget_tokens`; "" when there is nothing."""
    items: list[_Item] = []
    for age, session in enumerate(sessions):
        items += _session_items(age, session, now)
    chosen: list[_Item] = []
    for item in sorted(items, key=lambda i: i.rank):
        trial = sorted([*chosen, item], key=lambda i: i.place)
        if count_tokens(_render(trial)) <= budget_tokens:
            chosen = trial
    return _render(chosen)


def _render(items: Sequence[_Item]) -> str:
    return "\n".join(item.text for item in items)


def _session_items(age: int, session: SessionTurns, now: datetime) -> list[_Item]:
    """A session's items, ranked newest session first and within one: what was asked, the facts it
    settled, what was touched and failed, what is still to do, its summary, its last reply."""
    prompts = [c for role, c, _ in session.turns if role == "user"]
    # Observations are "tool" turns as the hooks store them; a "system" turn that says "[tool] ..." too.
    tools = [c for role, c, _ in session.turns if role == "tool" or c.startswith("[tool] ")]
    compactions = [c[len(_COMPACTION) :].strip() for _, c, _ in session.turns if c.startswith(_COMPACTION)]
    said = [(role, c) for role, c, _ in session.turns if role in ("user", "assistant")]
    # The client's compaction summary stands for the turns it replaced: its facts count, and it is the
    # session's summary when none was stored.
    said = [("assistant", c) for c in compactions] + said
    summary = session.summary or (compactions[-1] if compactions else None)
    short = session.thread_id.split(".", 1)[-1][:8]
    header = f"Session {short}, {_when(session.ended_at, now)}"
    if prompts:
        asked = [_first_sentence(prompts[0])] + ([_first_sentence(prompts[-1])] if len(prompts) > 1 else [])
        header += ": asked " + " … ".join(f'"{a}"' for a in asked)
    items = [_Item((age, 0, 0), (1, age, 0), header)]
    facts = [(who, sentence) for who, sentence in _facts(said) if sentence not in header]
    for n, (who, sentence) in enumerate(facts[:FACTS_PER_SESSION]):
        items.append(_Item((age, 1, n), (0, age, n), f"- {session.ended_at:%Y-%m-%d}, {who}: {sentence}"))
    files = sorted({m.group(1) for t in tools if (m := _EDIT.match(t))})
    if files:
        items.append(_Item((age, 2, 0), (1, age, 2), "  files: " + ", ".join(files[:12])))
    failed = [
        f"`{m.group(1)}` (exit {m.group(2)})" if m.group(1) else str(m.group(3))
        for t in tools
        if (m := _FAILED.match(t))
    ]
    if failed:
        items.append(_Item((age, 2, 1), (1, age, 3), "  failed: " + "; ".join(dict.fromkeys(failed[-3:]))))
    todos = [m.group(1) for t in tools if (m := _TASK_LIST.match(t))]
    if todos:
        items.append(_Item((age, 2, 2), (1, age, 4), "  todo: " + _clip(todos[-1], 300)))
    if open_prompt := _unanswered(session.turns):
        items.append(_Item((age, 1, FACTS_PER_SESSION), (1, age, 1), f'  left open: "{open_prompt}"'))
    if summary:
        items.append(_Item((age, 3, 0), (1, age, 5), "  summary: " + _clip(summary, 600)))
    replies = [c for role, c in said if role == "assistant"]
    if replies:
        items.append(_Item((age, 4, 0), (1, age, 6), f'  last reply: "{_first_sentence(replies[-1])}"'))
    return items


def _unanswered(turns: Sequence[tuple[str, str, datetime]]) -> str | None:
    """The first sentence of the session's last prompt when no reply came after it (the session ended
    with the request still open), else None."""
    for role, content, _ in reversed(turns):
        if role == "assistant":
            return None
        if role == "user":
            return _first_sentence(content)
    return None


def _facts(said: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The sentences that decide, limit or leave something open, then those naming people or numbers;
    within each, those with names or numbers first, the later ones first."""
    found: list[tuple[int, int, str, str]] = []
    for index, (role, content) in enumerate(said):
        for sentence in _sentences(content):
            first = sentence.split(" ", 1)[0]
            kinds = fact_kinds(sentence)  # as the summary writer reads it (facts.py)
            factlike = bool(kinds & {"name", "number", "date"}) or (
                first.istitle() and first.lower() not in _STARTERS
            )
            if kinds & COMMITMENTS:
                weight = 0 if factlike else 1
            elif factlike and role == "user":
                weight = 2
            else:
                continue
            who = "the user" if role == "user" else "the agent"
            found.append((weight, -index, who, _clip(sentence, SENTENCE_CHARS)))
    found.sort()
    return list(dict.fromkeys((who, sentence) for _, _, who, sentence in found))


def _sentences(text: str) -> list[str]:
    text = re.sub(r"```.*?(```|\Z)", " ", text, flags=re.DOTALL)  # code is not a statement
    return [s.strip(" -*#>") for s in _SENTENCE.split(text) if len(s.split()) >= 4]


def _first_sentence(text: str) -> str:
    sentences = _sentences(text) or [text]
    return _clip(sentences[0], SENTENCE_CHARS)


def _clip(text: str, chars: int) -> str:
    text = " ".join(text.split())
    if len(text) <= chars:
        return text
    cut = text[:chars].rsplit(" ", 1)[0]
    return cut + "…"


def _when(moment: datetime, now: datetime) -> str:
    days = (now.date() - moment.date()).days
    relative = "today" if days <= 0 else "yesterday" if days == 1 else f"{days} days ago"
    return f"{relative} ({moment:%Y-%m-%d %H:%M})"
