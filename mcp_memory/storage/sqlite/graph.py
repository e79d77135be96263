"""The knowledge graph in the SQLite file (GraphStore, storage/graph_base.py): four tables of migration 9.

Each call is one transaction on the write connection, so a batch is all or nothing and a second process
writing the same file waits for it; adding what exists is an INSERT OR IGNORE on the primary key, so two
writers adding at once lose nothing and store nothing twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from mcp_memory.errors import NotFoundError
from mcp_memory.models import GraphEntity, GraphObservation, GraphRelation
from mcp_memory.storage.graph_base import EntityKey
from mcp_memory.storage.sqlite.codec import parse_ts, ts
from mcp_memory.storage.sqlite.db import SqliteDatabase

# SQLite binds at most 32,766 variables a statement; names are passed in chunks well below that.
_CHUNK = 500


def _chunks(values: Sequence[Any]) -> list[Sequence[Any]]:
    return [values[i : i + _CHUNK] for i in range(0, len(values), _CHUNK)]


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


class SqliteGraphStore:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    # ---- writes ------------------------------------------------------------------------------------

    async def create_entities(self, owner: str, entities: Sequence[GraphEntity]) -> list[GraphEntity]:
        def work(conn: sqlite3.Connection) -> list[GraphEntity]:
            created = []
            for entity in entities:
                inserted = conn.execute(
                    "INSERT OR IGNORE INTO graph_entities (user_id, name, entity_type, author, created_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (owner, entity.name, entity.entity_type, entity.author, ts(entity.created_at)),
                ).rowcount
                if inserted:
                    _insert_observations(conn, owner, entity.name, entity.observations)
                    created.append(entity)
            return created

        return await self._db.write(work, change=True)

    async def add_observations(
        self, owner: str, additions: Sequence[tuple[str, Sequence[GraphObservation]]]
    ) -> list[list[GraphObservation]]:
        def work(conn: sqlite3.Connection) -> list[list[GraphObservation]]:
            for name, _ in additions:
                if not _has_entity(conn, owner, name):
                    raise NotFoundError(f"Entity with name {name} not found")
            return [_insert_observations(conn, owner, name, added) for name, added in additions]

        return await self._db.write(work, change=True)

    async def create_relations(self, owner: str, relations: Sequence[GraphRelation]) -> list[GraphRelation]:
        def work(conn: sqlite3.Connection) -> list[GraphRelation]:
            return [
                r
                for r in relations
                if conn.execute(
                    "INSERT OR IGNORE INTO graph_relations"
                    " (user_id, source, target, relation_type, author, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (owner, r.source, r.target, r.relation_type, r.author, ts(r.created_at)),
                ).rowcount
            ]

        return await self._db.write(work, change=True)

    async def delete_entities(self, owner: str, names: Sequence[str]) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            memory_ids: list[str] = []
            for chunk in _chunks(list(dict.fromkeys(names))):
                marks, args = _marks(chunk), (owner, *chunk)
                memory_ids += [
                    row[0]
                    for row in conn.execute(
                        f"SELECT memory_id FROM graph_observations WHERE user_id = ? AND entity IN ({marks})",
                        args,
                    )
                ]
                for statement in (
                    f"DELETE FROM graph_observations WHERE user_id = ? AND entity IN ({marks})",
                    f"DELETE FROM graph_links WHERE user_id = ? AND entity IN ({marks})",
                    f"DELETE FROM graph_relations WHERE user_id = ? AND source IN ({marks})",
                    f"DELETE FROM graph_relations WHERE user_id = ? AND target IN ({marks})",
                    f"DELETE FROM graph_entities WHERE user_id = ? AND name IN ({marks})",
                ):
                    conn.execute(statement, args)
            return memory_ids

        return await self._db.write(work, change=True)

    async def delete_observations(
        self, owner: str, deletions: Sequence[tuple[str, Sequence[str]]]
    ) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            memory_ids = []
            for name, contents in deletions:
                for content in contents:
                    row = conn.execute(
                        "DELETE FROM graph_observations WHERE user_id = ? AND entity = ? AND content = ?"
                        " RETURNING memory_id",
                        (owner, name, content),
                    ).fetchone()
                    if row is not None:
                        memory_ids.append(row[0])
            return memory_ids

        return await self._db.write(work, change=True)

    async def delete_relations(self, owner: str, relations: Sequence[tuple[str, str, str]]) -> int:
        def work(conn: sqlite3.Connection) -> int:
            return sum(
                conn.execute(
                    "DELETE FROM graph_relations"
                    " WHERE user_id = ? AND source = ? AND target = ? AND relation_type = ?",
                    (owner, *key),
                ).rowcount
                for key in relations
            )

        return await self._db.write(work, change=True)

    async def link(self, owner: str, links: Sequence[tuple[str, str, str | None]]) -> int:
        def work(conn: sqlite3.Connection) -> int:
            return sum(
                conn.execute(
                    "INSERT OR IGNORE INTO graph_links (user_id, entity, memory_id, thread_id) VALUES (?, ?, ?, ?)",
                    (owner, name, memory_id, thread_id),
                ).rowcount
                for name, memory_id, thread_id in links
            )

        return await self._db.write(work)

    async def forget_thread(self, owner: str, thread_id: str, *, dry_run: bool = False) -> int:
        def work(conn: sqlite3.Connection) -> int:
            where = "FROM graph_links WHERE user_id = ? AND thread_id = ?"
            if dry_run:
                return int(conn.execute(f"SELECT count(*) {where}", (owner, thread_id)).fetchone()[0])
            return conn.execute(f"DELETE {where}", (owner, thread_id)).rowcount

        return await self._db.write(work)

    async def forget_memory(self, owner: str, memory_id: str, *, dry_run: bool = False) -> int:
        def work(conn: sqlite3.Connection) -> int:
            verb = "SELECT count(*)" if dry_run else "DELETE"
            counted = 0
            for table in ("graph_observations", "graph_links"):
                cursor = conn.execute(
                    f"{verb} FROM {table} WHERE user_id = ? AND memory_id = ?", (owner, memory_id)
                )
                counted += cursor.fetchone()[0] if dry_run else cursor.rowcount
            return counted

        return await self._db.write(work)

    async def forget(self, owner: str, *, dry_run: bool = False) -> int:
        def work(conn: sqlite3.Connection) -> int:
            counted = 0
            for table in ("graph_entities", "graph_observations", "graph_relations", "graph_links"):
                if dry_run:
                    counted += conn.execute(
                        f"SELECT count(*) FROM {table} WHERE user_id = ?", (owner,)
                    ).fetchone()[0]
                else:
                    counted += conn.execute(f"DELETE FROM {table} WHERE user_id = ?", (owner,)).rowcount
            return counted

        return await self._db.write(work)

    # ---- reads -------------------------------------------------------------------------------------

    async def entities(
        self,
        owner: str,
        *,
        names: Sequence[str] | None = None,
        after: EntityKey | None = None,
        limit: int | None = None,
    ) -> list[GraphEntity]:
        def work(conn: sqlite3.Connection) -> list[GraphEntity]:
            rows: list[Any] = []
            select = "SELECT name, entity_type, author, created_at FROM graph_entities WHERE user_id = ?"
            if names is not None:
                for chunk in _chunks(list(dict.fromkeys(names))):
                    rows += conn.execute(
                        f"{select} AND name IN ({_marks(chunk)})", (owner, *chunk)
                    ).fetchall()
                rows.sort(key=lambda r: (r[3], r[0]))
            else:
                where, args = "", [owner]
                if after is not None:
                    where = " AND (created_at > ? OR (created_at = ? AND name > ?))"
                    args += [ts(after[0]), ts(after[0]), after[1]]
                page = f" LIMIT {int(limit)}" if limit is not None else ""
                rows = conn.execute(f"{select}{where} ORDER BY created_at, name{page}", args).fetchall()
            found = [
                GraphEntity(name=r[0], entity_type=r[1], author=r[2], created_at=parse_ts(r[3])) for r in rows
            ]
            by_name = {e.name: e for e in found}
            for chunk in _chunks(list(by_name)):
                for r in conn.execute(
                    "SELECT entity, content, memory_id, author, created_at FROM graph_observations"
                    f" WHERE user_id = ? AND entity IN ({_marks(chunk)}) ORDER BY created_at, content",
                    (owner, *chunk),
                ):
                    by_name[r[0]].observations.append(
                        GraphObservation(content=r[1], memory_id=r[2], author=r[3], created_at=parse_ts(r[4]))
                    )
            return found

        return await self._db.read(work)

    async def relations(self, owner: str, *, touching: Sequence[str] | None = None) -> list[GraphRelation]:
        def work(conn: sqlite3.Connection) -> list[GraphRelation]:
            select = "SELECT source, target, relation_type, author, created_at FROM graph_relations WHERE user_id = ?"
            if touching is None:
                rows = conn.execute(select, (owner,)).fetchall()
            else:
                found: dict[tuple[str, str, str], Any] = {}
                for chunk in _chunks(list(dict.fromkeys(touching))):
                    for end in ("source", "target"):
                        for r in conn.execute(f"{select} AND {end} IN ({_marks(chunk)})", (owner, *chunk)):
                            found[(r[0], r[1], r[2])] = r
                rows = list(found.values())
            rows.sort(key=lambda r: (r[4], r[0], r[1], r[2]))
            return [
                GraphRelation(
                    source=r[0], target=r[1], relation_type=r[2], author=r[3], created_at=parse_ts(r[4])
                )
                for r in rows
            ]

        return await self._db.read(work)

    async def names(self, owner: str) -> list[str]:
        def work(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT name FROM graph_entities WHERE user_id = ?", (owner,))
            return [str(r[0]) for r in rows]

        return await self._db.read(work)

    async def entity_of(self, owner: str, memory_id: str) -> str | None:
        def work(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT entity FROM graph_observations WHERE user_id = ? AND memory_id = ?",
                (owner, memory_id),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._db.read(work)

    async def linked(self, owner: str, names: Sequence[str]) -> list[tuple[str, str]]:
        def work(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            found: list[tuple[str, str]] = []
            for chunk in _chunks(list(dict.fromkeys(names))):
                found += conn.execute(
                    f"SELECT entity, memory_id FROM graph_links WHERE user_id = ? AND entity IN ({_marks(chunk)})",
                    (owner, *chunk),
                ).fetchall()
            return [(str(a), str(b)) for a, b in found]

        return await self._db.read(work)


def _has_entity(conn: sqlite3.Connection, owner: str, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM graph_entities WHERE user_id = ? AND name = ?", (owner, name))
    return found.fetchone() is not None


def _insert_observations(
    conn: sqlite3.Connection, owner: str, name: str, observations: Sequence[GraphObservation]
) -> list[GraphObservation]:
    return [
        o
        for o in observations
        if conn.execute(
            "INSERT OR IGNORE INTO graph_observations (user_id, entity, content, memory_id, author, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (owner, name, o.content, o.memory_id, o.author, ts(o.created_at)),
        ).rowcount
    ]
