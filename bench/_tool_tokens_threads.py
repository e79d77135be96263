"""bench/tool_tokens.py's datasets as threads to add and questions to ask: BEAM conversations (with their
rubric facts) and LoCoMo samples."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench._tool_tokens_count import WORD
from bench.harness.data.beam import Conversation, conversation_folders, first_messages, load_conversation
from bench.harness.data.locomo import session_time
from mcp_memory.search.passages import passages

RUBRIC_FACT = re.compile(r"should (?:state|mention)\s*:\s*(.+)", re.IGNORECASE)
# Their rubrics test how an answer is written (code blocks, saying there is a contradiction), not facts.
NO_FACTS = {"contradiction_resolution", "instruction_following", "preference_following", "abstention"}

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Turn:
    key: Any  # BEAM message id or LoCoMo dia_id
    role: str
    content: str
    said_at: datetime


@dataclass(frozen=True)
class Ask:
    label: str  # BEAM ability or LoCoMo category
    text: str
    evidence: list[Any]
    facts: tuple[str, ...] = ()  # what an answer must state: BEAM's rubric "should state: X", LoCoMo's answer


def rubric_facts(folder: Path) -> dict[str, tuple[str, ...]]:
    """Per BEAM question: the facts its rubric says an answer must state (short ones: at most 8 words)."""
    probing = json.loads((folder / "probing_questions.json").read_text())
    found: dict[str, tuple[str, ...]] = {}
    for ability, questions in probing.items():
        for q in questions:
            if ability in NO_FACTS:
                continue
            rubric = q.get("rubric") or []
            items = rubric if isinstance(rubric, list) else [rubric]
            facts = [m.group(1).strip(" .'\"") for item in items if (m := RUBRIC_FACT.search(str(item)))]
            found[q["question"]] = tuple(f for f in facts if f and len(f.split()) <= 8)
    return found


def fact_visible(fact: str, shown: set[str]) -> bool:
    """Every number and at least two thirds of the other words (len > 3) of the fact are shown."""
    tokens = set(WORD.findall(fact.lower()))
    numbers = {t for t in tokens if any(c.isdigit() for c in t)}
    others = {t for t in tokens - numbers if len(t) > 3}
    return numbers <= shown and (not others or 3 * len(others & shown) >= 2 * len(others))


@dataclass(frozen=True)
class Thread:
    dataset: str  # "BEAM" or "LoCoMo"
    thread_id: str
    turns: list[Turn]
    questions: list[Ask]


def beam_threads(
    root: Path, names: list[str] | None, limit: int | None, long_only: bool = False
) -> list[Thread]:
    """One thread per conversation; with `long_only`, only its long messages (more than one passage),
    so that every hit of a search is a long memory (questions whose evidence is short find less)."""
    threads = []
    for folder in conversation_folders(root, names):
        conversation: Conversation = load_conversation(folder)
        facts = rubric_facts(folder)
        if limit is not None:
            conversation = first_messages(conversation, limit)
        kept = [m for m in conversation.messages if not long_only or len(passages(m.content)) > 1]
        threads.append(
            Thread(
                "BEAM long only" if long_only else "BEAM",
                f"beam-{conversation.name}{'-long' if long_only else ''}",
                [Turn(m.id, m.role, m.content, m.said_at) for m in kept],
                [
                    Ask(q.ability, q.text, list(q.evidence), facts.get(q.text, ()))
                    for q in conversation.questions
                ],
            )
        )
    return threads


def locomo_threads(path: Path, samples: int | None, limit: int | None) -> list[Thread]:
    threads = []
    for sample in json.loads(path.read_text())[:samples]:
        conversation = sample["conversation"]
        roles = {conversation["speaker_a"]: "user", conversation["speaker_b"]: "assistant"}
        turns = []
        session = 1
        while f"session_{session}" in conversation:
            when = session_time(conversation[f"session_{session}_date_time"])
            for number, turn in enumerate(conversation[f"session_{session}"]):
                turns.append(
                    Turn(
                        turn["dia_id"],
                        roles.get(turn["speaker"], "user"),
                        f"{turn['speaker']}: {turn['text']}",
                        when + timedelta(seconds=number),
                    )
                )
            session += 1
        if limit is not None:
            turns = turns[:limit]
        present = {t.key for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES or not qa.get("evidence"):
                continue
            evidence = [e for e in qa["evidence"] if limit is None or e in present]
            if evidence:
                answer = str(qa.get("answer", "")).strip()
                facts = (answer,) if answer and len(answer.split()) <= 8 else ()
                questions.append(Ask(CATEGORIES[qa["category"]], qa["question"], evidence, facts))
        threads.append(Thread("LoCoMo", f"locomo-{sample['sample_id']}", turns, questions))
    return threads
