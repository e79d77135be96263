"""The embedded database's schema: numbered migrations, recorded in PRAGMA user_version.

Migration N is MIGRATIONS[N - 1]: a file at schema N runs the ones after it, each in its own write
transaction; a file of a newer schema than this code knows is refused.
"""

from __future__ import annotations

import logging
import sqlite3

from mcp_memory.errors import ConfigError

log = logging.getLogger(__name__)

MIGRATIONS: list[str] = [
    # 1: working memory, long-term memories, full-text index
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE threads (
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        summary_tokens INTEGER NOT NULL DEFAULT 0,
        summary_version INTEGER NOT NULL DEFAULT 0,
        context_window INTEGER,
        data TEXT NOT NULL DEFAULT '{}',
        token_count INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, thread_id)
    );

    -- Summarization leases live apart from threads: taking one must not create a thread.
    CREATE TABLE leases (
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires REAL NOT NULL,
        PRIMARY KEY (user_id, thread_id)
    );

    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        token_count INTEGER NOT NULL
    );
    CREATE INDEX messages_by_thread ON messages (user_id, thread_id, seq);
    CREATE UNIQUE INDEX messages_by_id ON messages (user_id, thread_id, id);

    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        thread_id TEXT,
        role TEXT,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        index_context TEXT NOT NULL,
        embedding BLOB,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT,
        token_count INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        superseded_by TEXT,
        supersede_reason TEXT,
        superseded_at TEXT,
        UNIQUE (user_id, id)
    );
    CREATE INDEX memories_by_thread ON memories (user_id, thread_id, created_at);
    CREATE INDEX memories_by_hash ON memories (user_id, content_hash);

    -- Two columns so BM25 can weigh a memory's own words above its context (bm25(..., 1.0, w)).
    -- Porter stemming: a question and its answer often differ only in word endings (bench/locomo.py).
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        content, index_context, content='memories', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, content, index_context)
        VALUES (new.rowid, new.content, new.index_context);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, index_context)
        VALUES ('delete', old.rowid, old.content, old.index_context);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, index_context)
        VALUES ('delete', old.rowid, old.content, old.index_context);
        INSERT INTO memories_fts(rowid, content, index_context)
        VALUES (new.rowid, new.content, new.index_context);
    END;
    """,
    # 2: learning: immutable revisions of long-term memories, trigger counters and marks
    """
    CREATE TABLE revisions (
        pk INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        thread_id TEXT,
        memory_type TEXT NOT NULL,
        seq INTEGER NOT NULL,
        action TEXT NOT NULL,
        cause TEXT NOT NULL,
        content TEXT NOT NULL,
        metadata TEXT NOT NULL,
        superseded_by TEXT,
        supersede_reason TEXT,
        source_text TEXT,
        labels TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (user_id, id),
        UNIQUE (user_id, memory_id, seq)
    );
    CREATE INDEX revisions_by_thread ON revisions (user_id, thread_id);
    CREATE INDEX revisions_by_time ON revisions (created_at);

    CREATE TABLE learning_counters (
        user_id TEXT NOT NULL,
        key TEXT NOT NULL,
        number INTEGER NOT NULL DEFAULT 0,
        mark TEXT,
        expires REAL,
        PRIMARY KEY (user_id, key)
    );
    """,
    # 3: which memories are a user's active ones, answerable without reading the rows (text search)
    """
    CREATE INDEX memories_active ON memories (user_id, superseded_by, type);
    """,
    # 4: text search ranks on an in-memory index now (search/text_index.py); 3's index is unread
    """
    DROP INDEX memories_active;
    """,
    # 5: several processes share the file. Each write of memories takes the next number of a change
    # clock, so a process's in-memory search indexes catch up on what changed since the number they
    # reflect (storage/sqlite/indexes.py), and deletions leave tombstones (no content) for them to read.
    # The FTS5 index goes: the in-memory BM25 index serves quoted phrases as well.
    """
    CREATE TABLE change_clock (seq INTEGER NOT NULL);
    INSERT INTO change_clock (seq) VALUES (0);
    ALTER TABLE memories ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX memories_by_change ON memories (user_id, change_seq);
    -- user_key: a hash of the user id, so a forgotten user's id is not kept with their tombstones.
    CREATE TABLE memory_tombstones (
        seq INTEGER NOT NULL,
        user_key TEXT NOT NULL,
        row INTEGER NOT NULL,
        deleted_at REAL NOT NULL
    );
    CREATE INDEX memory_tombstones_by_user ON memory_tombstones (user_key, seq);
    CREATE INDEX memory_tombstones_by_time ON memory_tombstones (deleted_at);
    INSERT INTO meta (key, value) VALUES ('tombstone_horizon', '0');
    INSERT INTO meta (key, value) VALUES ('file_id', lower(hex(randomblob(16))));
    DROP TRIGGER memories_ai;
    DROP TRIGGER memories_ad;
    DROP TRIGGER memories_au;
    DROP TABLE memories_fts;
    """,
    # 6: each user's stored bytes (security.max_stored_bytes): the UTF-8 bytes of their memories'
    # content and of their revisions' content and source text (storage/usage.py), kept by triggers in
    # the transaction of every write and deletion, so the counter is exact whichever process writes,
    # and forget and revision retention need no code of their own. An existing file is counted once,
    # here. A user's row goes with their last byte, so forgetting everything leaves no row naming them.
    """
    CREATE TABLE usage (user_id TEXT PRIMARY KEY, stored_bytes INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO usage (user_id, stored_bytes)
        SELECT user_id, sum(bytes) FROM (
            SELECT user_id, length(CAST(content AS BLOB)) AS bytes FROM memories
            UNION ALL
            SELECT user_id,
                length(CAST(content AS BLOB)) + coalesce(length(CAST(source_text AS BLOB)), 0) AS bytes
            FROM revisions
        ) GROUP BY user_id;
    CREATE TRIGGER usage_ai AFTER INSERT ON memories BEGIN
        INSERT INTO usage (user_id, stored_bytes) VALUES (new.user_id, length(CAST(new.content AS BLOB)))
        ON CONFLICT (user_id) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    END;
    CREATE TRIGGER usage_ad AFTER DELETE ON memories BEGIN
        UPDATE usage SET stored_bytes = stored_bytes - length(CAST(old.content AS BLOB))
        WHERE user_id = old.user_id;
        DELETE FROM usage WHERE user_id = old.user_id AND stored_bytes <= 0;
    END;
    CREATE TRIGGER usage_au AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO usage (user_id, stored_bytes)
        VALUES (new.user_id, length(CAST(new.content AS BLOB)) - length(CAST(old.content AS BLOB)))
        ON CONFLICT (user_id) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    END;
    -- Revisions are immutable: only inserts and deletions change their bytes.
    CREATE TRIGGER usage_revisions_ai AFTER INSERT ON revisions BEGIN
        INSERT INTO usage (user_id, stored_bytes)
        VALUES (
            new.user_id,
            length(CAST(new.content AS BLOB)) + coalesce(length(CAST(new.source_text AS BLOB)), 0)
        )
        ON CONFLICT (user_id) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
    END;
    CREATE TRIGGER usage_revisions_ad AFTER DELETE ON revisions BEGIN
        UPDATE usage SET stored_bytes = stored_bytes
            - length(CAST(old.content AS BLOB)) - coalesce(length(CAST(old.source_text AS BLOB)), 0)
        WHERE user_id = old.user_id;
        DELETE FROM usage WHERE user_id = old.user_id AND stored_bytes <= 0;
    END;
    """,
    # 7: list_memories pages a user's memories by (created_at, id), across threads: read in that order
    # from an index instead of sorting every row of the user for each page.
    """
    CREATE INDEX memories_by_time ON memories (user_id, created_at, id);
    """,
    # 8: shared spaces. A space's rows are keyed "@" + its name where a user's are keyed by their id,
    # and say who wrote them; every row before this one is a personal memory, written by its owner
    # (author NULL), so nothing needs rewriting.
    """
    ALTER TABLE memories ADD COLUMN author TEXT;
    ALTER TABLE messages ADD COLUMN author TEXT;
    """,
    # 9: the knowledge graph (storage/graph_base.py): entities, their observations (each also a row of
    # memories, type "observation", which search finds), relations between entity names, and links from
    # an entity to the memories that mention it. Every table is keyed by the owner (user or space).
    """
    CREATE TABLE graph_entities (
        user_id TEXT NOT NULL,
        name TEXT NOT NULL,
        entity_type TEXT NOT NULL,
        author TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, name)
    );
    CREATE INDEX graph_entities_in_order ON graph_entities (user_id, created_at, name);
    CREATE TABLE graph_observations (
        user_id TEXT NOT NULL,
        entity TEXT NOT NULL,
        content TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        author TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, entity, content)
    );
    CREATE INDEX graph_observations_by_memory ON graph_observations (user_id, memory_id);
    CREATE TABLE graph_relations (
        user_id TEXT NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        relation_type TEXT NOT NULL,
        author TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (user_id, source, target, relation_type)
    );
    CREATE INDEX graph_relations_by_target ON graph_relations (user_id, target);
    CREATE TABLE graph_links (
        user_id TEXT NOT NULL,
        entity TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        thread_id TEXT,
        PRIMARY KEY (user_id, entity, memory_id)
    );
    CREATE INDEX graph_links_by_memory ON graph_links (user_id, memory_id);
    CREATE INDEX graph_links_by_thread ON graph_links (user_id, thread_id);
    """,
    # 10: a long memory's passage vectors (search/passages.py), float32 rows of the embedding's dimension,
    # one a passage in order; NULL for a memory of one passage (its vector is `embedding`).
    """
    ALTER TABLE memories ADD COLUMN passage_embeddings BLOB;
    """,
    # 11: the audit trail (audit/, storage/sqlite/audit.py): one hash-chained record a change or a read of
    # a space, written in the change's transaction; the columns beside `record` are its copies to filter
    # by. 'audit_key' keys the pseudonyms that stand for forgotten users.
    """
    CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        ledger TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        thread_id TEXT,
        hash TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX audit_log_by_ledger ON audit_log (ledger, seq);
    INSERT INTO meta (key, value) VALUES ('audit_key', lower(hex(randomblob(32))));
    """,
    # 12: one audit chain per ledger (audit/records.py): a record's chain (its ledger's pseudonym) and seq
    # within it. The single chain kept so far is the archive (chain ''), as it was; every ledger's chain
    # goes on from its tip ('audit_split'); each chain's retention anchor is a row of audit_anchors.
    """
    CREATE TABLE audit_chains (
        chain TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        ledger TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        thread_id TEXT,
        hash TEXT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (chain, seq)
    );
    INSERT INTO audit_chains (chain, seq, at, ledger, actor, action, thread_id, hash, record)
        SELECT '', seq, at, ledger, actor, action, thread_id, hash, record FROM audit_log;
    DROP TABLE audit_log;
    ALTER TABLE audit_chains RENAME TO audit_log;
    CREATE INDEX audit_log_by_ledger ON audit_log (ledger, seq);
    CREATE INDEX audit_log_by_time ON audit_log (at);
    CREATE TABLE audit_anchors (chain TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL);
    INSERT INTO audit_anchors (chain, seq, hash)
        SELECT '', CAST(substr(value, 1, instr(value, ':') - 1) AS INTEGER), substr(value, instr(value, ':') + 1)
        FROM meta WHERE key = 'audit_anchor';
    DELETE FROM meta WHERE key = 'audit_anchor';
    INSERT INTO meta (key, value) SELECT 'audit_split', coalesce(
        (SELECT seq || ':' || hash FROM audit_log ORDER BY seq DESC LIMIT 1),
        (SELECT seq || ':' || hash FROM audit_anchors WHERE chain = ''),
        '0:' || '0000000000000000000000000000000000000000000000000000000000000000'
    );
    """,
]


def migrate(conn: sqlite3.Connection) -> None:
    while True:
        # The version is read inside the write transaction: two clients starting at once on a new
        # file must not both run migration 1 (the second would find its tables already there).
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise ConfigError(
                    f"the memory database was written by a newer mcp-memory (schema {version});"
                    " upgrade mcp-memory"
                )
            if version == len(MIGRATIONS):
                conn.execute("COMMIT")
                return
            _run_script(conn, MIGRATIONS[version])
            conn.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        log.info("memory database migrated to schema %d", version + 1)


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT our transaction first; run statement by statement instead.
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
