"""The SQLite store's in-memory search indexes stay true to the file: other processes' writes, writes
that land while an index is being built, and quoted phrases (matched by FTS5, ranked in memory)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from mcp_memory.models import Scope, SearchQuery
from mcp_memory.storage.sqlite_long_term import SqliteLongTermStore
from tests.contract.conftest_long_term import embed, memory, open_sqlite

pytestmark = pytest.mark.anyio


def text_query(user: str, text: str, **fields: object) -> SearchQuery:
    return SearchQuery.model_validate({"user_id": user, "text": text, "mode": "text", **fields})


async def ids(store: object, query: SearchQuery) -> list[str]:
    hits = await store.search(query, None)  # type: ignore[attr-defined]
    return [h.memory.id for h in hits]


async def test_writes_through_another_connection_are_searched(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with open_sqlite(path) as mine, open_sqlite(path) as theirs:
        await mine.put([memory("u", "bike", "I ride my bicycle")])
        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]  # builds this store's index

        await theirs.put([memory("u", "repair", "the bicycle needs a chain, bicycle")])
        assert await ids(mine, text_query("u", "bicycle")) == ["repair", "bike"]

        await theirs.forget(Scope(user_id="u", memory_id="repair"))
        assert await ids(mine, text_query("u", "bicycle")) == ["bike"]
        vector_hits = await mine.search(
            SearchQuery(user_id="u", text="bicycle", mode="vector"), embed("bicycle")
        )
        assert [h.memory.id for h in vector_hits] == ["bike"]


def slowed_builds(store: SqliteLongTermStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every index build take 0.3 s on its worker thread; returns the list that counts them."""
    build = store._build_index
    builds: list[int] = []

    def slow_build(rows: list[tuple[object, ...]]) -> object:
        builds.append(len(rows))
        time.sleep(0.3)  # writes land meanwhile
        return build(rows)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_build_index", slow_build)
    return builds


async def test_a_write_that_lands_while_the_index_is_built_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_sqlite(tmp_path / "memory.db") as store:
        assert isinstance(store, SqliteLongTermStore)
        await store.put([memory("u", "bike", "I ride my bicycle")])
        builds = slowed_builds(store, monkeypatch)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ids, store, text_query("u", "bicycle"))
            tg.start_soon(ids, store, text_query("u", "bicycle"))  # a second first search: no second build
            await anyio.sleep(0.1)
            await store.put([memory("u", "repair", "the bicycle needs a chain")])

        # One build, from a read that missed the write: the write was applied to it afterwards, so a
        # steady stream of writes cannot keep a first search rebuilding forever.
        assert builds == [1]
        assert sorted(await ids(store, text_query("u", "bicycle"))) == ["bike", "repair"]


async def test_a_forget_while_the_index_is_built_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_sqlite(tmp_path / "memory.db") as store:
        assert isinstance(store, SqliteLongTermStore)
        await store.put([memory("u", "bike", "I ride my bicycle"), memory("u", "old", "an old bicycle")])
        builds = slowed_builds(store, monkeypatch)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ids, store, text_query("u", "bicycle"))
            await anyio.sleep(0.1)
            await store.forget(Scope(user_id="u", memory_id="old"))

        assert builds == [2, 1]  # the first read still held the forgotten memory
        assert await ids(store, text_query("u", "bicycle")) == ["bike"]


async def test_a_forget_after_the_build_updates_the_index_without_rebuilding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_sqlite(tmp_path / "memory.db") as store, open_sqlite(tmp_path / "fresh.db") as fresh:
        assert isinstance(store, SqliteLongTermStore)
        others = [memory("u", f"other{i}", f"my car number {i}", minutes=i) for i in range(4)]
        kept = [memory("u", "bike", "I ride my bicycle", minutes=5), *others]
        gone = memory("u", "old", "an old bicycle, a bicycle", minutes=6)
        await store.put([*kept, gone])
        builds = slowed_builds(store, monkeypatch)
        assert await ids(store, text_query("u", "bicycle")) == ["old", "bike"]

        await store.forget(Scope(user_id="u", memory_id="old"))
        await store.forget(Scope(user_id="u", thread_id="no-such-thread"))  # deletes nothing
        hits = await store.search(text_query("u", "bicycle"), None)
        assert [h.memory.id for h in hits] == ["bike"]
        assert builds == [6]  # the built index dropped the row: no second build

        # The scores are those of an index that never held the forgotten memory (BM25's statistics).
        await fresh.put(kept)
        expected = await fresh.search(text_query("u", "bicycle"), None)
        assert [h.score for h in hits] == pytest.approx([h.score for h in expected])


async def test_a_phrase_of_stopwords_is_matched_verbatim(tmp_path: Path) -> None:
    async with open_sqlite(tmp_path / "memory.db") as store:
        await store.put(
            [
                memory("u", "hamlet", "to be or not to be", minutes=1),
                memory("u", "words", "be quick, to the point", minutes=2),
                memory("u", "other", "nothing in common", minutes=3),
            ]
        )
        assert await ids(store, text_query("u", '"to be"', phrases=["to be"])) == ["hamlet"]
        assert await ids(store, text_query("u", 'point "to the"', phrases=["to the"])) == ["words"]
