"""LoCoMo (Maharana et al., ACL 2024, arXiv 2402.17753) read as conversations to replay: each sample's
sessions as bench.harness.data.beam's Messages, its questions of categories 1-4 with the turns that answer them.

LoCoMo is two named people chatting. Speaker A is the user and speaker B the assistant (as bench/locomo.py
stores them); each turn is one message "Name: text" (the questions name the people, so who said what is
part of what was said), its text alone, without the image a turn may share. A session's turns are dated
by the session's time plus a minute per turn, in order. The data's README describes the format; the file
is read from the path given, never copied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness.data.beam import Message, Question
from mcp_memory.service.memory_service import MemoryService

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ASKED = (1, 2, 3, 4)  # adversarial questions (5) have no answer in the conversation
TURN_GAP = timedelta(minutes=1)
DIA_ID = re.compile(r"D:?(\d+):(\d+)")  # "D1:3"; the data also writes "D:11:26" and "D9:1 D4:4" once or twice


@dataclass(frozen=True)
class Sample:
    name: str  # "locomo-26" for sample conv-26: the project conv-locomo-26
    sessions: list[list[Message]]
    questions: list[Question]  # categories 1-4, evidence as message ids
    texts: dict[int, str]  # message id -> the turn's text alone (what the found rule looks for)
    dia_ids: dict[int, str]  # message id -> LoCoMo's dia_id


def samples(path: str | Path) -> list[dict[str, Any]]:
    """The file's samples as LoCoMo writes them (each a conversation, its sessions and its questions)."""
    loaded: list[dict[str, Any]] = json.loads(Path(path).read_text())
    return loaded


def session_time(text: str) -> datetime:
    """LoCoMo writes '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(evidence: list[str]) -> list[str]:
    """The dia_ids a question names, read past the data's few misspellings ("D:11:26", two in one)."""
    return [f"D{a}:{b}" for entry in evidence for a, b in DIA_ID.findall(entry)]


def sample_of(raw: dict[str, Any]) -> Sample:
    conversation = raw["conversation"]
    roles = {conversation["speaker_a"]: "user", conversation["speaker_b"]: "assistant"}
    sessions: list[list[Message]] = []
    texts: dict[int, str] = {}
    by_dia: dict[str, int] = {}
    number = 1
    while f"session_{number}" in conversation:
        start = session_time(conversation[f"session_{number}_date_time"])
        session: list[Message] = []
        for turn in conversation[f"session_{number}"]:
            if turn["speaker"] not in roles:
                raise ValueError(
                    f"{raw['sample_id']} {turn['dia_id']}: {turn['speaker']!r} is neither speaker"
                )
            message_id = len(texts) + 1
            said = f"{turn['speaker']}: {turn['text']}"
            session.append(Message(message_id, roles[turn["speaker"]], said, start + len(session) * TURN_GAP))
            texts[message_id], by_dia[turn["dia_id"]] = turn["text"], message_id
        if session:
            sessions.append(session)
        number += 1
    questions = []
    for qa in raw["qa"]:
        evidence = tuple(
            dict.fromkeys(by_dia[d] for d in evidence_ids(qa.get("evidence", [])) if d in by_dia)
        )
        if qa["category"] in ASKED and evidence:
            questions.append(Question(CATEGORIES[qa["category"]], str(qa["question"]), evidence))
    name = "locomo-" + str(raw["sample_id"]).removeprefix("conv-")
    return Sample(name, sessions, questions, texts, {i: d for d, i in by_dia.items()})


async def index_conversation(service: MemoryService, sample: dict[str, Any]) -> dict[str, str]:
    """Add every turn; return our memory id -> LoCoMo dia_id."""
    conversation = sample["conversation"]
    roles = {conversation["speaker_a"]: "user", conversation["speaker_b"]: "assistant"}
    ids: dict[str, str] = {}
    session = 1
    while f"session_{session}" in conversation:
        when = session_time(conversation[f"session_{session}_date_time"])
        for turn in conversation[f"session_{session}"]:
            out = await service.add_turn(
                sample["sample_id"],
                f"session_{session}",
                roles.get(turn["speaker"], "user"),
                f"{turn['speaker']}: {turn['text']}",
                None,
                10_000_000,  # the benchmark measures retrieval, not summarization
                created_at=when,
            )
            ids[out.turn.id] = turn["dia_id"]
        session += 1
    return ids
