"""A user's search indexes built from the data file alone, in bounded memory (a cold start).

Without a usable snapshot (a backup restored on a new machine, a lost cache, a snapshot format that
changed) the indexes are made from the file. Reading every row at once and indexing it in memory took
225 s and 9.6 GB at a million memories as the issue measured it, 494 s and 11.1 GB here (docs/benchmarks.md
"Latest: Cold start"). Here the rows are
read CHUNK_ROWS at a time, each chunk indexed on its own (TextIndex.of, VectorIndex: the same code as
any index) and written to spill files at once: its vectors as rows, its postings as (term, position,
counts) entries sorted by term. What stays in memory grows by a few dozen bytes a row (rowids, threads,
times, lengths) and a word a term; never the rows' text or vectors.

Then the postings of every chunk are merged term by term (a group of terms at a time) into the arrays a
snapshot holds: the words side is ready (`words_ready`: a text index reading them where they lie),
while the approximate vector index (the graph) is built from the spilled vectors a block at a time and
saved straight to a file. Last, one snapshot is written from those files (SnapshotFolder.save reads them
a block at a time) and the spill folder goes; the caller loads the snapshot as after any restart.

Rows are read in separate read transactions after the change clock was read: a row written or removed
meanwhile is read as it is or missed, and the caller's catch-up from that clock number applies it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import shutil
import sqlite3
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import anyio.to_thread
import numpy as np

from mcp_memory.search.ann import ApproximateIndex
from mcp_memory.search.file_array import Column, FileArray
from mcp_memory.search.rows import packed_names, unpacked_names
from mcp_memory.search.text_index import Document, TextIndex
from mcp_memory.search.vector_index import BUILD_BLOCK, VectorIndex
from mcp_memory.storage.sqlite.db import SqliteDatabase

CHUNK_ROWS = 20_000  # memories read and indexed at a time (a chunk's text and vectors: ~40 MB)
MERGE_ENTRIES = 4_000_000  # postings entries merged at a time (16 bytes each)
POSTINGS = ("positions", "content", "context")
_DTYPES = {"terms": np.int32, "positions": np.int32, "content": np.float32, "context": np.float32}

Decode = Callable[[tuple[Any, ...]], tuple[Document | None, np.ndarray | None]]


class BuildStopped(Exception):
    """The build was stopped before it ended (its process is closing)."""


@dataclass
class _Rows:
    """Row columns of an index being built, a chunk's arrays at a time, with names coded once."""

    rowids: list[np.ndarray] = field(default_factory=list)
    threads: list[np.ndarray] = field(default_factory=list)
    types: list[np.ndarray] = field(default_factory=list)
    created: list[np.ndarray] = field(default_factory=list)
    thread_codes: dict[str, int] = field(default_factory=dict)
    type_codes: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def add(self, columns: dict[str, Column]) -> None:
        """A chunk index's row columns (its own name codes, made ours)."""
        threads = [self.thread_codes.setdefault(t, len(self.thread_codes)) for t in _names(columns, "thread")]
        types = [self.type_codes.setdefault(t, len(self.type_codes)) for t in _names(columns, "type")]
        self.rowids.append(np.asarray(columns["rowids"], dtype=np.int64))
        self.threads.append(
            np.asarray(threads, dtype=np.int32)[np.asarray(columns["threads"], dtype=np.int64)]
        )
        self.types.append(np.asarray(types, dtype=np.int8)[np.asarray(columns["types"], dtype=np.int64)])
        self.created.append(np.asarray(columns["created"], dtype=np.float64))
        self.count += len(self.rowids[-1])

    def columns(self) -> dict[str, Column]:
        def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        return {
            "rowids": joined(self.rowids, np.int64),
            "threads": joined(self.threads, np.int32),
            "types": joined(self.types, np.int8),
            "created": joined(self.created, np.float64),
            "thread_names": packed_names(self.thread_codes),
            "type_names": packed_names(self.type_codes),
        }


def _names(columns: dict[str, Column], kind: str) -> list[str]:
    return unpacked_names(columns[f"{kind}_names"])


@dataclass
class BuildProgress:
    """How far a build is, for logs, tests and benchmarks."""

    rows_read: int = 0
    chunks: int = 0
    largest_chunk: int = 0  # rows read at once: never more than CHUNK_ROWS
    words_ready: bool = False


class StreamedBuild:
    """One user's indexes from the file into a snapshot's columns, through spill files in `folder`."""

    def __init__(
        self,
        db: SqliteDatabase,
        user_id: str,
        folder: Path,
        decode: Decode,
        *,
        dimension: int,
        ann_min_rows: int,
        ann_expansion: int,
        chunk_rows: int | None = None,
    ) -> None:
        self._db = db
        self._user_id = user_id
        self._decode = decode
        self._dimension = dimension
        self._ann_min_rows = ann_min_rows
        self._ann_expansion = ann_expansion
        self._chunk_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows
        self.spill = folder / f"build-{uuid.uuid4().hex[:12]}"
        self.progress = BuildProgress()
        self._text_rows = _Rows()
        self._vector_rows = _Rows()
        self._lengths: list[np.ndarray] = []
        self._digests: list[np.ndarray] = []
        self._terms: dict[str, int] = {}
        self._term_counts = np.zeros(0, dtype=np.int64)
        # Per chunk: where its entries start in the spill, its terms (sorted) and where each begins.
        self._chunks: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        self._entries = 0
        self._files: dict[str, BinaryIO] = {}
        self._stop = threading.Event()  # set by `stop`: the work on a worker thread ends at its next block

    def stop(self) -> None:
        """End the build soon (the process is closing): its worker-thread loops check this between blocks."""
        self._stop.set()

    def _check(self) -> None:
        if self._stop.is_set():
            raise BuildStopped("the index build was stopped")

    async def run(
        self, columns_query: str, words_ready: Callable[[TextIndex], Awaitable[None]] | None = None
    ) -> tuple[dict[str, Column], dict[str, Column]]:
        """The text and vector columns of a snapshot (large ones in spill files, which `close` removes).
        `columns_query`: the columns an index reads of a memory (decoded by `decode`)."""
        self.spill.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            for name in (*_DTYPES, "matrix"):
                self._files[name] = _private(self.spill / f"{name}.bin")
            after = -1
            while True:

                def chunk(conn: sqlite3.Connection, after: int = after) -> list[tuple[Any, ...]]:
                    return _chunk(conn, columns_query, self._user_id, after, self._chunk_rows)

                rows = await self._db.read(chunk)
                if not rows:
                    break
                after = int(rows[-1][0])
                self.progress.rows_read += len(rows)
                self.progress.chunks += 1
                self.progress.largest_chunk = max(self.progress.largest_chunk, len(rows))
                await anyio.to_thread.run_sync(self._add_chunk, rows)
                del rows
        finally:
            for out in self._files.values():
                out.close()
        text = await anyio.to_thread.run_sync(self._text_columns)
        if words_ready is not None:
            await words_ready(TextIndex.from_columns(text))
        self.progress.words_ready = True
        vectors = await anyio.to_thread.run_sync(self._vector_columns)
        return text, vectors

    def close(self) -> None:
        """The spill files go (a loaded snapshot reads its own file)."""
        for out in self._files.values():
            out.close()
        shutil.rmtree(self.spill, ignore_errors=True)
        # What the build held goes now, not when the object does: then the freed heap is handed back.
        self._text_rows, self._vector_rows, self._lengths, self._digests = _Rows(), _Rows(), [], []
        self._terms, self._chunks, self._term_counts = {}, [], np.zeros(0, dtype=np.int64)
        release_memory()

    # ---- a chunk at a time ----------------------------------------------------------------------

    def _add_chunk(self, rows: Sequence[tuple[Any, ...]]) -> None:
        documents: list[Document] = []
        vectors = VectorIndex(self._dimension)
        for row in rows:
            document, vector = self._decode(row)
            if document is None:
                continue
            documents.append(document)
            if vector is not None:
                vectors.upsert(
                    document.rowid,
                    vector,
                    thread_id=document.thread_id,
                    type=document.type,
                    created=document.created,
                )
        self._add_text(TextIndex.of(documents).columns())
        columns = vectors.columns()
        self._vector_rows.add(columns)
        matrix = np.asarray(columns["matrix"], dtype=np.float32)
        self._files["matrix"].write(np.ascontiguousarray(matrix).data.cast("B"))

    def _add_text(self, columns: dict[str, Column]) -> None:
        base = self._text_rows.count
        self._text_rows.add(columns)
        self._lengths.append(np.asarray(columns["lengths"], dtype=np.float32))
        self._digests.append(np.asarray(columns["digests"], dtype=np.uint64))
        names = unpacked_names(columns["terms"])
        ids = np.asarray([self._terms.setdefault(t, len(self._terms)) for t in names], dtype=np.int64)
        offsets = np.asarray(columns["offsets"], dtype=np.int64)
        counts = np.diff(offsets)
        if len(self._term_counts) < len(self._terms):
            grown = np.zeros(max(len(self._terms), 2 * len(self._term_counts)), dtype=np.int64)
            grown[: len(self._term_counts)] = self._term_counts
            self._term_counts = grown
        np.add.at(self._term_counts, ids, counts)
        order = np.argsort(ids, kind="stable")  # the chunk's terms in our term order
        entry_order = np.concatenate(
            [np.arange(offsets[i], offsets[i + 1]) for i in order.tolist()] or [np.zeros(0, dtype=np.int64)]
        )
        terms = np.repeat(ids[order], counts[order]).astype(np.int32)
        entries = {
            "terms": terms,
            "positions": np.asarray(columns["positions"], dtype=np.int32)[entry_order] + np.int32(base),
            "content": np.asarray(columns["content"], dtype=np.float32)[entry_order],
            "context": np.asarray(columns["context"], dtype=np.float32)[entry_order],
        }
        for name, values in entries.items():
            self._files[name].write(np.ascontiguousarray(values).data.cast("B"))
        starts = (
            np.concatenate([[0], np.cumsum(counts[order])[:-1]])
            if order.size
            else np.zeros(0, dtype=np.int64)
        )
        self._chunks.append(
            (self._entries, self._entries + int(terms.size), ids[order], starts.astype(np.int64))
        )
        self._entries += int(terms.size)

    # ---- the words side: every chunk's postings merged term by term ------------------------------

    def _text_columns(self) -> dict[str, Column]:
        counts = self._term_counts[: len(self._terms)]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        spilled = {name: self._spilled(name, self._entries) for name in _DTYPES}
        merged: dict[str, BinaryIO] = {name: _private(self.spill / f"merged-{name}.bin") for name in POSTINGS}
        try:
            first = 0
            while first < len(counts):  # terms [first, last): at most MERGE_ENTRIES entries, or one term
                self._check()
                last = int(np.searchsorted(offsets, offsets[first] + MERGE_ENTRIES, side="right")) - 1
                last = min(max(last, first + 1), len(counts))
                self._merge(first, last, spilled, merged)
                first = last
        finally:
            for out in merged.values():
                out.close()
        return {
            **self._text_rows.columns(),
            "lengths": np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.float32),
            "digests": np.concatenate(self._digests) if self._digests else np.zeros(0, dtype=np.uint64),
            "terms": packed_names(self._terms),
            "offsets": offsets,
            **{name: self._spilled(name, self._entries, prefix="merged-") for name in POSTINGS},
        }

    def _merge(
        self, first: int, last: int, spilled: dict[str, np.ndarray | FileArray], merged: dict[str, BinaryIO]
    ) -> None:
        """Terms [first, last) of every chunk, in term order and, within a term, in position order."""
        parts: dict[str, list[np.ndarray]] = {name: [] for name in _DTYPES}
        for start, end, terms, starts in self._chunks:
            a, b = np.searchsorted(terms, [first, last])
            if a == b:
                continue
            low = start + int(starts[a])
            high = start + int(starts[b]) if b < len(starts) else end
            for name in _DTYPES:
                parts[name].append(np.asarray(spilled[name][low:high]))
        if not parts["terms"]:
            return
        order = np.argsort(np.concatenate(parts["terms"]), kind="stable")  # chunks are in position order
        for name in POSTINGS:
            merged[name].write(np.ascontiguousarray(np.concatenate(parts[name])[order]).data.cast("B"))

    # ---- the meaning side: the spilled vectors, and the graph built from them --------------------

    def _vector_columns(self) -> dict[str, Column]:
        columns = self._vector_rows.columns()
        rows = self._vector_rows.count
        matrix = self._spilled("matrix", rows, shape=(rows, self._dimension))
        columns["matrix"] = matrix
        if self._ann_min_rows and rows >= self._ann_min_rows:
            columns["graph"] = self._graph(np.asarray(columns["rowids"]), matrix)
        return columns

    def _graph(self, keys: np.ndarray, matrix: Column) -> Column:
        """The approximate index of every spilled vector, added a block at a time, saved to a file."""
        ann = ApproximateIndex(self._dimension, expansion=self._ann_expansion)
        for start in range(0, len(keys), BUILD_BLOCK):
            self._check()
            block = np.asarray(matrix[start : start + BUILD_BLOCK], dtype=np.float32)  # type: ignore[index]
            ann.add(keys[start : start + BUILD_BLOCK], block, threads=2)
        path = self.spill / "graph.bin"
        ann.save(path)
        path.chmod(0o600)
        del ann
        release_memory()
        return self._spilled_bytes(path)

    def _spilled(
        self, name: str, rows: int, *, prefix: str = "", shape: tuple[int, ...] | None = None
    ) -> np.ndarray | FileArray:
        dtype = np.dtype(_DTYPES.get(name, np.float32))
        shape = shape or (rows,)
        if rows == 0:
            return np.zeros(shape, dtype=dtype)
        return FileArray(self.spill / f"{prefix}{name}.bin", 0, dtype, shape)

    @staticmethod
    def _spilled_bytes(path: Path) -> Column:
        size = path.stat().st_size
        return FileArray(path, 0, np.dtype(np.uint8), (size,)) if size else np.zeros(0, dtype=np.uint8)


def _chunk(
    conn: sqlite3.Connection, columns: str, user_id: str, after: int, limit: int
) -> list[tuple[Any, ...]]:
    """The user's next active memories by rowid: a walk of the table's own order (`+`: not an index of
    the user's rows, which would sort them all to take a chunk)."""
    rows: list[tuple[Any, ...]] = conn.execute(
        f"SELECT {columns} FROM memories WHERE rowid > ? AND +user_id = ? AND +superseded_by IS NULL"
        " ORDER BY rowid LIMIT ?",
        (after, user_id, limit),
    ).fetchall()
    return rows


def _private(path: Path) -> BinaryIO:
    """A new file only its owner reads (it holds the memories' words and vectors)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(path, flags, 0o600), "wb")


def release_memory() -> None:
    """Hand what a build freed back to the system (glibc keeps freed heap for reuse otherwise)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)
