"""Benchmark corpora: a deterministic synthetic conversation (no data files needed), LoCoMo's real text
(read where it is), and turns ready to write straight into a store."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np

from mcp_memory.models import Memory

NAMES = ["Maya", "Ravi", "Priya", "Tom", "Lena", "Omar", "Sofia", "Kenji", "Ada", "Luis", "Noor", "Ivan"]
PLACES = ["Lisbon", "Kyoto", "Seattle", "Nairobi", "Oslo", "Lima", "Hanoi", "Denver", "Porto", "Cairo"]
TOPICS = [
    "the billing migration",
    "our kitchen renovation",
    "the marathon training plan",
    "the quarterly report",
    "the vegetarian menu",
    "the piano recital",
    "the data pipeline",
    "the wedding budget",
    "the garden layout",
    "the onboarding doc",
    "the new laptop",
    "the tax filing",
    "the school trip",
    "the on-call rotation",
]
VERBS = [
    "decided on",
    "postponed",
    "asked about",
    "finished",
    "reviewed",
    "booked",
    "cancelled",
    "priced",
    "planned",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
QUESTIONS = [
    "what did we decide about {topic}?",
    "when is the meeting with {name}?",
    "how much was {topic}?",
    "who is going to {place}?",
    "what did {name} say about {topic}",
    "remind me what happened on {day}",
]


def turns(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        out.append(
            f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(TOPICS)} in {rng.choice(PLACES)} on "
            f"{rng.choice(DAYS)}; it came to {rng.randint(10, 99_999)} dollars and we meet again at "
            f"{rng.randint(1, 12)} pm."
        )
    return out


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(QUESTIONS).format(
            topic=rng.choice(TOPICS), name=rng.choice(NAMES), place=rng.choice(PLACES), day=rng.choice(DAYS)
        )
        for _ in range(count)
    ]


def locomo(path: str) -> tuple[list[str], list[str]]:
    """Real conversation text: every LoCoMo turn ("speaker: text") and every question. The data stays
    where it is (non-commercial licence): it is read from the path given, never copied."""
    import json
    from pathlib import Path

    turns_out, questions = [], []
    for sample in json.loads(Path(path).read_text()):
        conversation = sample["conversation"]
        session = 1
        while f"session_{session}" in conversation:
            turns_out += [f"{t['speaker']}: {t['text']}" for t in conversation[f"session_{session}"]]
            session += 1
        questions += [qa["question"] for qa in sample["qa"]]
    return turns_out, questions


def stored_turns(texts: list[str], count: int, *, dimension: int = 384, seed: int = 1) -> Iterator[Memory]:
    """`count` turns of user "bench" for `store.put`: the texts in order (repeated), each with its two
    previous texts as context, 100 to a thread, a minute apart, random unit vectors (a store's work does
    not depend on what the vectors mean)."""
    rng = np.random.default_rng(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(count):
        vector = rng.standard_normal(dimension).astype(np.float32)
        yield Memory(
            id=f"m{i}",
            user_id="bench",
            thread_id=f"t{i // 100}",
            role="user",
            type="turn",
            content=texts[i % len(texts)],
            index_context=f"{texts[(i - 1) % len(texts)]} {texts[(i - 2) % len(texts)]}",
            embedding=(vector / np.linalg.norm(vector)).tolist(),
            created_at=start + timedelta(minutes=i),
            token_count=20,
        )
