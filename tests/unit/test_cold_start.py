"""A store whose index folder is gone (a backup restored on a new machine, a lost cache) builds its
search indexes from the file in the background, in bounded memory, and answers meanwhile from what is
ready, saying its meaning side is incomplete; once built, it answers as a warm build does
(storage/sqlite/cold_start.py, cold_build.py). Nothing here waits on time: a gate holds the build."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_memory.config import EmbeddingSettings, LongTermSettings, Settings
from mcp_memory.models import Scope
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.storage.sqlite import cold_build, cold_start, indexes
from mcp_memory.storage.sqlite.cold_build import StreamedBuild
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore
from tests.contract.conftest_long_term import DIMENSION, EMBEDDING, embed, memory
from tests.helpers import eventually_async
from tests.unit.test_sqlite_search_indexes import Gate, gated

pytestmark = pytest.mark.anyio
USER = "cold"
TOPICS = [
    "garden shed",
    "Lisbon flight",
    "budget spreadsheet",
    "piano lesson",
    "bicycle repair",
    "tax return",
]


def texts(count: int) -> list[str]:
    return [f"Note {n} about the {TOPICS[n % len(TOPICS)]} and item{n % 37} number {n}" for n in range(count)]


@asynccontextmanager
async def opened(path: Path, **options: Any) -> AsyncIterator[SqliteLongTermStore]:
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, EMBEDDING, **options) as store:
        yield store


async def filled(path: Path, count: int) -> None:
    """`count` memories in threads of 25 (some with no thread), a long one of several passages, and one
    superseded; the index folder removed, as a restored backup has none."""
    long_text = " ".join(f"Paragraph {p} on the harbour crane inspection schedule." * 6 for p in range(40))
    async with opened(path) as store:
        batch = [
            memory(USER, f"m{n}", text, thread_id=None if n % 50 == 7 else f"t{n // 25}", minutes=n)
            for n, text in enumerate(texts(count))
        ]
        batch.append(memory(USER, "long", long_text, minutes=count))
        await store.put(batch)
        await store.put([memory(USER, "m3", "Note 3 rewritten", superseded_by="m4", minutes=3)])
    shutil.rmtree(path.with_name(path.name + "-index"), ignore_errors=True)


QUERIES = ["garden shed", "Lisbon flight item5", "harbour crane inspection", "piano", "number 123 tax"]


async def answers(store: SqliteLongTermStore) -> list[list[tuple[str, float]]]:
    found = []
    for text in QUERIES:
        for mode in ("text", "vector", "hybrid"):
            for thread in (None, "t2"):
                query = SearchQuery.model_validate(
                    {"text": text, "mode": mode, "limit": 10, "thread_id": thread}
                )
                hits = await store.search(USER, query, None if mode == "text" else embed(text))
                found.append([(h.memory.id, round(h.score, 5)) for h in hits])
    return found


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold starts from 100 memories on, previews of 40, chunks of 64 rows."""
    monkeypatch.setattr(indexes, "STREAM_ABOVE", 100)
    monkeypatch.setattr(cold_start, "PREVIEW_MEMORIES", 40)
    monkeypatch.setattr(cold_start, "BUILD_AFTER_S", 0)
    monkeypatch.setattr(cold_build, "CHUNK_ROWS", 64)
    monkeypatch.setattr(cold_build, "MERGE_ENTRIES", 500)  # several merge groups


async def test_the_words_side_answers_at_once_saying_the_meaning_side_is_incomplete_then_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks: None
) -> None:
    path = tmp_path / "memory.db"
    await filled(path, 400)
    gate = Gate()
    gated(monkeypatch, StreamedBuild, "_add_chunk", gate)  # the build holds at its first chunk
    settings = Settings(
        user_id=USER,
        data_dir=tmp_path,
        sqlite_file=path.name,
        long_term=LongTermSettings(warm_on_start=False),
        embedding=EmbeddingSettings(provider="hash", dimension=DIMENSION),
    )
    async with open_service(settings) as service:
        store = service.stores.long_term
        assert isinstance(store, SqliteLongTermStore)
        newest = SearchQuery.of(USER, "item398 number 398", settings=service.settings)
        with anyio.fail_after(30):  # a guard: the search does not wait for the build
            during = await service.search(newest)
        await gate.reached.wait()
        assert during.meaning_incomplete
        assert "meaning_incomplete" in during.model_dump(exclude_defaults=True)
        assert during.results[0].id == "m398"  # the newest memories answer at once
        assert store.indexes.cold.building(USER)
        assert not store.indexes.complete(USER)
        spilled = list(path.with_name(path.name + "-index").glob("build-*/*.bin"))
        assert spilled and all(f.stat().st_mode & 0o777 == 0o600 for f in spilled)  # only its owner's

        gate.release()
        with anyio.fail_after(60):
            await store.indexes.cold.built(USER)
        assert store.indexes.complete(USER)
        oldest = SearchQuery.of(USER, "item2 number 2", settings=service.settings)
        after = await service.search(oldest)
        assert not after.meaning_incomplete
        assert after.results[0].id == "m2"  # older than the preview: found once built
        assert store.indexes.stats.builds == 1
    assert (path.with_name(path.name + "-index") / f"{indexes.user_key(USER)}.npz").exists()
    assert not list(path.with_name(path.name + "-index").glob("build-*"))  # the spill folder went


@pytest.mark.parametrize("ann_min_memories", [0, 200])
async def test_a_streamed_build_answers_as_a_build_in_memory_does(
    tmp_path: Path, small_chunks: None, ann_min_memories: int
) -> None:
    path = tmp_path / "memory.db"
    await filled(path, 400)
    async with opened(path, ann_min_memories=ann_min_memories) as store:
        store.indexes._stream_above = 10**9  # at once, in memory: the warm build
        warm = await answers(store)
        assert store.indexes.cold.builds == {} and store.indexes.stats.builds == 1
    shutil.rmtree(path.with_name(path.name + "-index"))
    async with opened(path, ann_min_memories=ann_min_memories) as store:
        await store.search(USER, SearchQuery(text="garden", mode="text"), None)
        assert not store.indexes.complete(USER)
        with anyio.fail_after(60):
            await store.indexes.cold.built(USER)
        async with store.indexes.current(USER) as index:
            assert index.vectors.approximate == bool(ann_min_memories)
            assert index.text.file_backed is False  # small: read into memory, as a warm load does
        assert await answers(store) == warm
    async with opened(path, ann_min_memories=ann_min_memories) as store:  # a restart loads its snapshot
        assert await answers(store) == warm
        assert store.indexes.stats.loads == 1 and store.indexes.stats.builds == 0


async def test_a_cold_build_reads_the_file_a_chunk_at_a_time_never_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks: None
) -> None:
    path = tmp_path / "memory.db"
    await filled(path, 400)

    def whole_file(*args: object) -> None:
        raise AssertionError("the whole file was read at once")

    monkeypatch.setattr(indexes, "_read_all", whole_file)
    seen: list[StreamedBuild] = []
    original = StreamedBuild._add_chunk

    def add_chunk(self: StreamedBuild, rows: Any) -> None:
        seen.append(self)
        assert len(rows) <= 64
        original(self, rows)

    monkeypatch.setattr(StreamedBuild, "_add_chunk", add_chunk)
    async with opened(path) as store:
        await store.search(USER, SearchQuery(text="garden", mode="text"), None)
        with anyio.fail_after(60):
            await store.indexes.cold.built(USER)
        progress = seen[0].progress
        assert progress.largest_chunk == 64 and progress.chunks == 7  # 400 active memories
        assert progress.rows_read == 400 and progress.words_ready
        found = await store.search(USER, SearchQuery(text="item5 Lisbon", mode="text"), None)
        assert found and store.indexes.complete(USER)


async def test_a_forget_during_the_build_removes_its_spill_files_before_it_answers_and_starts_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks: None
) -> None:
    path = tmp_path / "memory.db"
    await filled(path, 400)
    gate = Gate()
    gated(monkeypatch, StreamedBuild, "_text_columns", gate)  # every chunk spilled, held before the merge
    async with opened(path) as store:
        await store.search(USER, SearchQuery(text="garden", mode="text"), None)
        await gate.reached.wait()
        first = store.indexes.cold.builds[USER]
        spill = first.spill
        assert list(spill.glob("*.bin"))  # the spill holds every memory's postings and vectors, t1's too

        async def stopping() -> None:
            await eventually_async(first._stop.is_set, what="the forget stops the build under way")
            gate.release()

        async with anyio.create_task_group() as group:
            group.start_soon(stopping)
            counts = await store.forget(Scope(user_id=USER, thread_id="t1"))
        assert counts  # t1's 25 memories went
        assert not spill.exists()  # gone before the forget answered
        with anyio.fail_after(60):
            await store.indexes.cold.built(USER)
        assert store.indexes.complete(USER)
        assert store.indexes.cold.builds == {} and store.indexes.stats.builds == 1
        gone = await store.search(USER, SearchQuery(text="item30 number 30", mode="text"), None)
        assert all(hit.memory.thread_id != "t1" for hit in gone)  # m30 was t1's
        kept = await store.search(USER, SearchQuery(text="item23 number 60", mode="text"), None)
        assert kept[0].memory.id == "m60"  # t2's, older than the preview: found by the new build
