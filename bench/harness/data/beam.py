"""BEAM (Tavakoli et al., arXiv 2510.27246) read and scored, with no I/O beyond reading the files: the
messages of one conversation, its probing questions with their evidence, and Recall@k and the
knowledge-update check over a ranking of BEAM message ids. bench/beam.py drives the real server with
these; another bench can score an in-process ranking with the same functions.

The data stays where it is (`../shared/data/beam/100K/<n>/`): it is read from the path given, never
copied. Its README describes the format.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

KS = (1, 5, 10, 20)
# " ->-> 1,2" (batch, turn) or " ->-> 2,N/A" ends most user messages, and some assistant ones.
MARKER = re.compile(r"\s*->->\s*\S+,\s*\S+\s*$")
# Messages after one time anchor and before the next share its date; a minute apart keeps them in order.
MESSAGE_GAP = timedelta(minutes=1)


@dataclass(frozen=True)
class Message:
    id: int
    role: str  # user or assistant
    content: str  # without the marker
    said_at: datetime  # the anchor's date (UTC midnight) plus a minute per message since the anchor


@dataclass(frozen=True)
class Question:
    ability: str
    text: str
    evidence: tuple[int, ...]  # the message ids that answer it, in the data's order, without repeats
    original: tuple[int, ...] = ()  # knowledge updates: original_info
    updated: tuple[int, ...] = ()  # knowledge updates: updated_info


@dataclass(frozen=True)
class Conversation:
    name: str  # the folder's name: "1" .. "10"
    messages: list[Message]
    questions: list[Question]  # only those with evidence (every ability but abstention)


def strip_marker(content: str) -> str:
    """The message without its trailing ` ->-> b,t` marker (a label of the data, not what was said)."""
    return MARKER.sub("", content)


def anchor_date(text: str) -> datetime:
    """'March-15-2024' -> 2024-03-15 00:00 UTC."""
    return datetime.strptime(text.strip(), "%B-%d-%Y").replace(tzinfo=UTC)


def messages_of(chat: list[dict[str, Any]]) -> list[Message]:
    """chat.json's batches -> sessions -> messages, flattened in order, each dated by its anchor."""
    raw = [m for batch in chat for session in batch["turns"] for m in session]
    anchors = [m["time_anchor"] for m in raw if m.get("time_anchor")]
    if not anchors:
        raise ValueError("the conversation has no time anchor")
    day, since = anchor_date(anchors[0]), 0
    out = []
    for m in raw:
        if m.get("time_anchor"):
            day, since = anchor_date(m["time_anchor"]), 0
        out.append(Message(int(m["id"]), m["role"], strip_marker(m["content"]), day + since * MESSAGE_GAP))
        since += 1
    return out


def evidence_of(source_chat_ids: Any) -> tuple[int, ...]:
    """Every message id a question names, in order, without repeats: from a list, a dict of lists, or
    (once in the 100K split) a list holding a list."""
    if source_chat_ids is None:
        return ()
    if isinstance(source_chat_ids, int):
        return (source_chat_ids,)
    parts = source_chat_ids.values() if isinstance(source_chat_ids, dict) else source_chat_ids
    return tuple(dict.fromkeys(i for part in parts for i in evidence_of(part)))


def questions_of(probing: dict[str, list[dict[str, Any]]]) -> list[Question]:
    """The probing questions that name their evidence (abstention's do not), ability by ability."""
    out = []
    for ability, questions in probing.items():
        for q in questions:
            ids = q.get("source_chat_ids")
            evidence = evidence_of(ids)
            if not evidence:
                continue
            update = ids if ability == "knowledge_update" and isinstance(ids, dict) else {}
            out.append(
                Question(
                    ability,
                    q["question"],
                    evidence,
                    original=evidence_of(update.get("original_info", [])),
                    updated=evidence_of(update.get("updated_info", [])),
                )
            )
    return out


def load_conversation(folder: Path) -> Conversation:
    chat = json.loads((folder / "chat.json").read_text())
    probing = json.loads((folder / "probing_questions.json").read_text())
    return Conversation(folder.name, messages_of(chat), questions_of(probing))


def conversation_folders(root: Path, names: Iterable[str] | None = None) -> list[Path]:
    """The conversations under root (100K/), in numeric order, or the ones named."""
    if names is not None:
        folders = [root / n for n in names]
    else:
        folders = [p for p in root.iterdir() if (p / "chat.json").is_file()]
    return sorted(folders, key=lambda p: int(p.name) if p.name.isdigit() else p.name)


# ---- scoring -----------------------------------------------------------------------------------------


Ranked = Sequence[int | tuple[int | None, ...] | None]  # a hit: a message, none, or an exchange's two


def messages_at(ranked: Ranked, k: int) -> set[int]:
    """The messages the first k hits hold (an exchange hit holds its turn and its reply)."""
    found: set[int] = set()
    for hit in ranked[:k]:
        for i in hit if isinstance(hit, tuple) else (hit,):
            if i is not None:
                found.add(i)
    return found


def recall(ranked: Ranked, evidence: Iterable[int], k: int) -> float:
    """The share of the evidence messages among the first k hits (None: a hit that is no message)."""
    wanted = set(evidence)
    return len(wanted & messages_at(ranked, k)) / len(wanted)


def update_ranks_first(ranked: Ranked, question: Question) -> bool | None:
    """Knowledge update: an updated_info message is ranked, and above every original_info one. Messages
    named as both are left out; None when no message is only an update (two questions of the 100K
    split name the same message as both: nothing to tell apart)."""
    updated, original = set(question.updated), set(question.original)
    updated, original = updated - original, original - updated
    if not updated:
        return None
    position = {
        i: rank
        for rank, hit in reversed(list(enumerate(ranked)))
        for i in (hit if isinstance(hit, tuple) else (hit,))
        if i is not None
    }
    best = min((position[i] for i in updated if i in position), default=None)
    if best is None:
        return False
    return all(position.get(i, len(ranked)) > best for i in original)


def score(ranked: Ranked, question: Question) -> dict[str, Any]:
    """One question's row: R@k for each k, and for a knowledge update whether the update ranks first."""
    row: dict[str, Any] = {f"R@{k}": recall(ranked, question.evidence, k) for k in KS}
    first = update_ranks_first(ranked, question) if question.updated else None
    if first is not None:
        row["update_first"] = first
    return row


def summarize(rows: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """(ability, score row) pairs -> overall means, per-ability means with n, and the update count."""
    by_ability: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ability, row in rows:
        by_ability[ability].append(row)
    every = [row for _, row in rows]
    updates = [row["update_first"] for row in every if "update_first" in row]
    return {
        "questions": len(every),
        "overall": _means(every),
        "by_ability": {a: _means(r) | {"n": len(r)} for a, r in sorted(by_ability.items())},
        "updates_first": sum(updates),
        "updates": len(updates),
    }


def _means(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {f"R@{k}": statistics.fmean(r[f"R@{k}"] for r in rows) for k in KS} if rows else {}


def first_messages(conversation: Conversation, count: int) -> Conversation:
    """A quick run's conversation: its first `count` messages, and the questions with evidence among them
    (scored against that evidence only)."""
    kept = conversation.messages[:count]
    present = {m.id for m in kept}
    questions = []
    for q in conversation.questions:
        evidence = tuple(i for i in q.evidence if i in present)
        if evidence:
            questions.append(
                replace(
                    q,
                    evidence=evidence,
                    original=tuple(i for i in q.original if i in present),
                    updated=tuple(i for i in q.updated if i in present),
                )
            )
    return Conversation(conversation.name, kept, questions)
