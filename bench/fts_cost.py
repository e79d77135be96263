"""What the FTS5 full-text table cost on every write, and what a quoted phrase costs without it.

Schema 5 dropped the FTS5 table (and its three triggers) that schema 1 kept beside the memories: the
in-memory BM25 index ranks every text search, and FTS5 served only quoted phrases. This measures both
layouts on the same rows, with SQL alone (the same INSERT and DELETE the store runs, one memory per
transaction as add_turn writes it):

    .venv/bin/python bench/fts_cost.py --locomo ../shared/data/locomo/locomo_dev.json --size 10000

Reports p50/p95 of one insert and of one forget (schema 4 also merged the FTS segments on each
forget), the file size, and p50/p95 of a quoted-phrase search_memory on the current store.
Numbers are wall-clock on this machine; nothing here is asserted.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from bench.harness.data.corpus import locomo, stored_turns, turns
from bench.harness.timing import cpu, percentiles
from mcp_memory.models import EmbeddingSpec, Memory
from mcp_memory.search.query import SearchQuery
from mcp_memory.storage.sqlite import db as sqlite_db
from mcp_memory.storage.sqlite import migrations
from mcp_memory.storage.sqlite.db import SqliteDatabase
from mcp_memory.storage.sqlite.long_term import SqliteLongTermStore, _row

DIMENSION = 384
INSERT = (
    "INSERT INTO memories (id, user_id, thread_id, role, type, content, index_context, embedding, metadata,"
    " created_at, updated_at, token_count, content_hash, superseded_by, supersede_reason, superseded_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def layout(path: Path, schema: int, rows: list[Memory], probes: list[Memory]) -> dict[str, object]:
    """Fill a file of the given schema with `rows`, then time one-row inserts and forgets."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:schema])
        conn = sqlite_db._connect(path)
    fts = schema < 5
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, [_row(m) for m in rows])
        conn.execute("COMMIT")
        inserts, forgets = [], []
        for m in probes:
            began = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            if not fts:
                conn.execute("UPDATE change_clock SET seq = seq + 1")
            conn.execute(INSERT, _row(m))
            conn.execute("COMMIT")
            inserts.append(time.perf_counter() - began)
        for m in probes:
            began = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            if fts:
                conn.execute("DELETE FROM memories WHERE user_id = ? AND id = ?", (m.user_id, m.id))
                conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
            else:
                conn.execute("UPDATE change_clock SET seq = seq + 1")
                conn.execute(
                    "INSERT INTO memory_tombstones (seq, user_key, row, deleted_at)"
                    " SELECT 1, 'k', rowid, 0 FROM memories WHERE user_id = ? AND id = ?",
                    (m.user_id, m.id),
                )
                conn.execute("DELETE FROM memories WHERE user_id = ? AND id = ?", (m.user_id, m.id))
            conn.execute("COMMIT")
            forgets.append(time.perf_counter() - began)
        conn.execute("VACUUM")
    finally:
        conn.close()
    return {
        "schema": schema,
        "insert": percentiles(inserts),
        "forget": percentiles(forgets),
        "file_mb": path.stat().st_size / 2**20,
    }


async def phrase_searches(path: Path, phrases: list[str]) -> dict[str, float]:
    spec = EmbeddingSpec(model="bench", dimension=DIMENSION)
    async with SqliteDatabase.open(path) as db, SqliteLongTermStore.open(db, spec) as store:
        times = []
        for phrase in [phrases[0], *phrases]:  # the first builds the index: not timed
            query = SearchQuery(text=f'"{phrase}"', phrases=[phrase], mode="text")
            began = time.perf_counter()
            await store.search("bench", query, None)
            times.append(time.perf_counter() - began)
    return percentiles(times[1:])


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--locomo", help="path to locomo_dev.json (real text); default: a generated corpus")
    args = parser.parse_args()
    texts = locomo(args.locomo)[0] if args.locomo else turns(5000)
    rows = list(stored_turns(texts, args.size + args.probes, dimension=DIMENSION))
    base, probes = rows[: args.size], rows[args.size :]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu()}, {args.size:,} memories")
    print("| layout | insert p50 / p95 ms | forget p50 / p95 ms | file MB |\n|---|---|---|---:|")
    with tempfile.TemporaryDirectory(prefix="mcp-memory-fts-") as scratch:
        for schema, name in ((4, "FTS5 table + triggers (schema 4)"), (5, "no FTS5 (schema 5)")):
            r = layout(Path(scratch) / f"schema{schema}.db", schema, base, probes)
            i, f = r["insert"], r["forget"]
            print(
                f"| {name} | {i['p50_ms']:.2f} / {i['p95_ms']:.2f} | {f['p50_ms']:.2f} / {f['p95_ms']:.2f}"  # type: ignore[index]
                f" | {r['file_mb']:.1f} |"
            )
        words = [t.split(": ", 1)[-1].split() for t in texts[:400]]
        phrases = [" ".join(w[2:4]) for w in words if len(w) >= 4][:100]
        p = asyncio.run(phrase_searches(Path(scratch) / "schema5.db", phrases))
        print(
            f"\nquoted-phrase search_memory (store, mode text), no FTS5: p50 {p['p50_ms']:.2f} / p95 {p['p95_ms']:.2f} ms"
        )


if __name__ == "__main__":
    main()
