"""bench/shared_file.py's seeding (phase 1): data dirs filled fast with LoCoMo turns built as
MemoryService.add_turn builds them, written in batches, plus a few threads through the real add_turn."""

from __future__ import annotations

import random
import string
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from bench._shared_file_procs import BATCH, LIVE_THREADS, LIVE_TURNS, THREAD_SIZE, load
from bench.harness.data.corpus import locomo
from mcp_memory import safety
from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.models import Memory, utcnow
from mcp_memory.search.terms import date_words
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService


class Corpus:
    """LoCoMo turns and questions, with each distinct turn's vector, token count and metadata computed once
    (by the service's embedder and token counter, as add_turn computes them)."""

    def __init__(self, path: str) -> None:
        self.turns, questions = locomo(path)
        # Questions with a quoted title ("The Four Seasons") must match it verbatim and often find
        # nothing: left out, so every search is an ordinary hybrid one.
        self.questions = [q for q in questions if '"' not in q]
        self.vectors: dict[str, list[float]] = {}
        self.tokens: dict[str, int] = {}
        self.metadata: dict[str, dict[str, Any]] = {}
        self.embed_seconds = 0.0

    async def prepare(self, service: MemoryService) -> None:
        if self.vectors:
            return
        began = time.perf_counter()
        distinct = list(dict.fromkeys(self.turns))
        for start in range(0, len(distinct), 64):
            batch = distinct[start : start + 64]
            for text, vector in zip(batch, await service.embedder.embed(batch), strict=True):
                self.vectors[text] = vector.tolist()
        for text in distinct:
            content = check.content(text, service.settings.max_content_chars)
            self.tokens[text] = service.tokens.count(content)
            metadata = check.metadata(None)
            if service.settings.security.flag_instructions:
                metadata = safety.stamp(metadata, content)
            self.metadata[text] = metadata
        self.embed_seconds = time.perf_counter() - began


def seed_dir(data_dir: Path, users: list[str], per_user: int, corpus: Corpus) -> dict[str, Any]:
    """seed() on a new dir, plus the size of the file it made."""
    data_dir.mkdir(parents=True, exist_ok=True)
    row = anyio.run(seed, data_dir, users, per_user, corpus)
    row["file_mb"] = sum(p.stat().st_size for p in data_dir.glob("memory.db*")) / 2**20
    return row


def seeded_batches(
    service: MemoryService, corpus: Corpus, user: str, count: int, start: datetime
) -> Iterator[list[Memory]]:
    """`count` turns as add_turn would store them, in threads of THREAD_SIZE, one second apart from
    `start`, BATCH at a time (built lazily: 100k vectors as Python lists would take a gigabyte)."""
    context_turns = service.settings.search.context_turns
    batch: list[Memory] = []
    previous: list[str] = []
    for i in range(count):
        position = i % THREAD_SIZE
        if position == 0:
            previous = []
        text = corpus.turns[i % len(corpus.turns)]
        moment = start + timedelta(seconds=i)
        # service._index_context: the thread's `context_turns` previous turns, oldest first, and the date.
        context = " ".join([*(previous[-context_turns:] if context_turns else []), date_words(moment)])
        batch.append(
            Memory(
                id=f"turn_{uuid.uuid4().hex}",
                user_id=user,
                thread_id=f"seed-{i // THREAD_SIZE}",
                role="user" if position % 2 == 0 else "assistant",
                type="turn",
                content=text,
                embedding=corpus.vectors[text],
                index_context=context,
                metadata=dict(corpus.metadata[text]),
                created_at=moment,
                token_count=corpus.tokens[text],
            )
        )
        previous.append(text)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def seed(data_dir: Path, users: list[str], per_user: int, corpus: Corpus) -> dict[str, Any]:
    """Fill a fresh data dir: per user, per_user memories, LIVE_THREADS x LIVE_TURNS of them through the
    real add_turn. The service is opened without the start-up warm-up so nothing builds indexes."""
    settings = Settings(user_id=users[0], data_dir=data_dir)
    settings = settings.model_copy(
        update={"long_term": settings.long_term.model_copy(update={"warm_on_start": False})}
    )
    began = time.perf_counter()
    put_seconds = add_seconds = 0.0
    async with open_service(settings) as service:
        await corpus.prepare(service)
        prepared = time.perf_counter()
        live = LIVE_THREADS * LIVE_TURNS
        for user in users:
            seeded = max(0, per_user - live)
            start = utcnow() - timedelta(seconds=seeded + 86_400)
            t0 = time.perf_counter()
            for batch in seeded_batches(service, corpus, user, seeded, start):
                await service.stores.long_term.put(batch)
            put_seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            for n in range(min(live, per_user)):
                text = corpus.turns[(7919 * (n + 1)) % len(corpus.turns)]
                role = "user" if n % 2 == 0 else "assistant"
                await service.add_turn(user, f"live-{n % LIVE_THREADS}", role, text, None, None)
            add_seconds += time.perf_counter() - t0
        embed_seconds = prepared - began
    total = len(users) * per_user
    return {
        "dir": str(data_dir),
        "users": len(users),
        "memories": total,
        "seconds": time.perf_counter() - began,
        "open_and_embed_s": embed_seconds,
        "put_s": put_seconds,
        "put_rows_per_s": (total - len(users) * LIVE_THREADS * LIVE_TURNS) / put_seconds
        if put_seconds
        else 0,
        "add_turn_s": add_seconds,
        "load": load(),
        "at": datetime.now().isoformat(timespec="seconds"),
    }


def distinctive_word(rng: random.Random) -> str:
    """A word no LoCoMo turn holds (letters only: the text index splits on anything else)."""
    return "zq" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))
