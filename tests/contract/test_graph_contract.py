"""The GraphStore contract (storage/graph_base.py): the SQLite file and Cosmos DB (on the local
Cosmos-protocol server, in the learning container) store the knowledge graph alike: order of creation,
skipping what exists, all-or-nothing observations, cascades, owners apart, concurrent writers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from mcp_memory.errors import NotFoundError
from mcp_memory.models import GraphEntity, GraphObservation, GraphRelation, observation_id
from mcp_memory.storage.graph_base import GraphStore
from tests.contract.conftest_long_term import local_cosmos_settings, open_cosmos, open_sqlite
from tests.services.cosmos_server import CosmosServer

pytestmark = pytest.mark.anyio

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NewUser = Callable[[], str]


@pytest.fixture(params=["sqlite", "cosmos"])
async def graph_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[GraphStore]:
    if request.param == "sqlite":
        from mcp_memory.storage.sqlite.graph import SqliteGraphStore
        from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore

        async with open_sqlite(tmp_path / "memory.db") as store:
            assert isinstance(store, SqliteLongTermStore)
            yield SqliteGraphStore(store.db)
        return
    from mcp_memory.storage.cosmos.graph import CosmosGraphStore
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

    server: CosmosServer = request.getfixturevalue("cosmos_server")
    async with open_cosmos(local_cosmos_settings(server)) as store:
        assert isinstance(store, CosmosLongTermStore)
        yield CosmosGraphStore(await store.open_learning_container(), timeout_seconds=10.0)


def at(step: int) -> datetime:
    return T0 + timedelta(microseconds=step)


def observed(owner: str, name: str, content: str, step: int) -> GraphObservation:
    return GraphObservation(
        content=content, memory_id=observation_id(owner, name, content), created_at=at(step)
    )


def entity(owner: str, name: str, step: int, *observations: str, kind: str = "person") -> GraphEntity:
    return GraphEntity(
        name=name,
        entity_type=kind,
        created_at=at(step),
        observations=[observed(owner, name, o, step * 100 + i) for i, o in enumerate(observations)],
    )


def relation(source: str, target: str, kind: str, step: int) -> GraphRelation:
    return GraphRelation(source=source, target=target, relation_type=kind, created_at=at(step))


def shape(entities: list[GraphEntity]) -> list[tuple[str, str, list[str]]]:
    return [(e.name, e.entity_type, [o.content for o in e.observations]) for e in entities]


async def test_entities_come_back_in_creation_order_and_existing_names_are_skipped(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    created = await graph_store.create_entities(
        owner, [entity(owner, "Zed", 1, "b", "a"), entity(owner, "Ann", 2, "x")]
    )
    assert [e.name for e in created] == ["Zed", "Ann"]
    again = await graph_store.create_entities(
        owner, [entity(owner, "Ann", 3, "other"), entity(owner, "Bo", 4)]
    )
    assert [e.name for e in again] == ["Bo"]
    assert shape(await graph_store.entities(owner)) == [
        ("Zed", "person", ["b", "a"]),
        ("Ann", "person", ["x"]),
        ("Bo", "person", []),
    ]
    assert sorted(await graph_store.names(owner)) == ["Ann", "Bo", "Zed"]
    assert shape(await graph_store.entities(owner, names=["Bo", "Zed", "nobody"])) == [
        ("Zed", "person", ["b", "a"]),
        ("Bo", "person", []),
    ]


async def test_pages_of_entities_follow_the_key_of_the_last(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    await graph_store.create_entities(owner, [entity(owner, f"e{i}", i) for i in range(5)])
    first = await graph_store.entities(owner, limit=2)
    rest = await graph_store.entities(owner, after=(first[-1].created_at, first[-1].name), limit=10)
    assert [e.name for e in first + rest] == [f"e{i}" for i in range(5)]


async def test_observations_are_all_or_nothing_and_skip_what_is_held(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    await graph_store.create_entities(owner, [entity(owner, "Ann", 1, "likes tea")])
    with pytest.raises(NotFoundError, match="Entity with name Ghost not found"):
        await graph_store.add_observations(
            owner,
            [("Ann", [observed(owner, "Ann", "new", 5)]), ("Ghost", [observed(owner, "Ghost", "x", 6)])],
        )
    assert shape(await graph_store.entities(owner)) == [("Ann", "person", ["likes tea"])]
    added = await graph_store.add_observations(
        owner, [("Ann", [observed(owner, "Ann", "likes tea", 7), observed(owner, "Ann", "plays go", 8)])]
    )
    assert [[o.content for o in batch] for batch in added] == [["plays go"]]
    assert await graph_store.entity_of(owner, observation_id(owner, "Ann", "plays go")) == "Ann"


async def test_deleting_an_entity_takes_its_observations_relations_and_links(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    await graph_store.create_entities(
        owner, [entity(owner, "Ann", 1, "o1", "o2"), entity(owner, "Bo", 2, "o3")]
    )
    created = await graph_store.create_relations(
        owner,
        [
            relation("Ann", "Bo", "knows", 3),
            relation("Bo", "Ann", "knows", 4),
            relation("Bo", "Cy", "met", 5),
        ],
    )
    assert len(created) == 3
    assert await graph_store.create_relations(owner, [relation("Ann", "Bo", "knows", 6)]) == []
    links = [("Ann", "turn_1", "t1"), ("Ann", "turn_1", "t1"), ("Bo", "turn_2", "t1")]
    assert await graph_store.link(owner, links) == 2
    removed = await graph_store.delete_entities(owner, ["Ann", "nobody"])
    assert sorted(removed) == sorted(observation_id(owner, "Ann", o) for o in ("o1", "o2"))
    assert shape(await graph_store.entities(owner)) == [("Bo", "person", ["o3"])]
    assert [r.key for r in await graph_store.relations(owner)] == [("Bo", "Cy", "met")]
    assert await graph_store.linked(owner, ["Ann", "Bo"]) == [("Bo", "turn_2")]


async def test_relations_touching_names_and_deletions_of_what_is_not_there(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    await graph_store.create_relations(
        owner, [relation("A", "B", "r", 1), relation("C", "A", "r", 2), relation("C", "D", "r", 3)]
    )
    assert [r.key for r in await graph_store.relations(owner, touching=["A"])] == [
        ("A", "B", "r"),
        ("C", "A", "r"),
    ]
    assert await graph_store.delete_relations(owner, [("A", "B", "r"), ("X", "Y", "z")]) == 1
    assert [r.key for r in await graph_store.relations(owner)] == [("C", "A", "r"), ("C", "D", "r")]
    await graph_store.create_entities(owner, [entity(owner, "A", 4, "keep", "drop")])
    removed = await graph_store.delete_observations(owner, [("A", ["drop", "never"]), ("Nope", ["x"])])
    assert removed == [observation_id(owner, "A", "drop")]
    assert shape(await graph_store.entities(owner)) == [("A", "person", ["keep"])]


async def test_owners_are_apart_and_forget_takes_one_owner_s_graph(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    ann, space = new_user(), "@" + new_user()
    for owner in (ann, space):
        await graph_store.create_entities(owner, [entity(owner, "Shared name", 1, f"of {owner}")])
        await graph_store.create_relations(owner, [relation("Shared name", "X", "r", 2)])
        await graph_store.link(owner, [("Shared name", "m1", None)])
    assert shape(await graph_store.entities(space)) == [("Shared name", "person", [f"of {space}"])]
    assert await graph_store.forget(ann, dry_run=True) == 4
    assert await graph_store.forget(ann) == 4
    assert await graph_store.entities(ann) == [] and await graph_store.relations(ann) == []
    assert len(await graph_store.entities(space)) == 1
    memory_id = observation_id(space, "Shared name", f"of {space}")
    assert await graph_store.forget_memory(space, memory_id) == 1
    assert shape(await graph_store.entities(space)) == [("Shared name", "person", [])]
    assert await graph_store.forget_memory(space, "m1") == 1
    assert await graph_store.linked(space, ["Shared name"]) == []


async def test_two_writers_at_once_lose_nothing_and_store_nothing_twice(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    await graph_store.create_entities(owner, [entity(owner, "Hub", 0)])

    async def writer(who: int) -> None:
        for i in range(10):
            await graph_store.create_entities(owner, [entity(owner, f"n{i}", i + 1, f"by {who}")])
            await graph_store.add_observations(
                owner, [("Hub", [observed(owner, "Hub", f"{who}-{i}", 1000 + i)])]
            )
            await graph_store.add_observations(
                owner, [("Hub", [observed(owner, "Hub", f"both-{i}", 2000 + i)])]
            )
            await graph_store.create_relations(owner, [relation("Hub", f"n{i}", "links", 3000 + i)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer, 1)
        tg.start_soon(writer, 2)
    entities = await graph_store.entities(owner)
    assert sorted(e.name for e in entities) == sorted(["Hub", *(f"n{i}" for i in range(10))])
    hub = next(e for e in entities if e.name == "Hub")
    expected = {f"{w}-{i}" for w in (1, 2) for i in range(10)} | {f"both-{i}" for i in range(10)}
    assert sorted(o.content for o in hub.observations) == sorted(expected)
    assert len(await graph_store.relations(owner)) == 10


async def test_forgetting_a_thread_takes_the_links_to_its_memories(
    graph_store: GraphStore, new_user: NewUser
) -> None:
    owner = new_user()
    await graph_store.link(
        owner, [("Ann", "turn_1", "t1"), ("Sweden", "turn_1", "t1"), ("Ann", "turn_9", "t2")]
    )
    assert await graph_store.forget_thread(owner, "t1", dry_run=True) == 2
    assert await graph_store.forget_thread(owner, "t1") == 2
    assert await graph_store.linked(owner, ["Ann", "Sweden"]) == [("Ann", "turn_9")]
