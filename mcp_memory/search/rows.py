"""The rows of one user's in-memory search index, with the filters search needs.

The vector index and the text index each keep one row per passage of an active memory (one row for most
memories: search/passages.py), keyed by the memory's SQLite rowid (with the passage's number above its
bits for a long memory's later passages), with the memory's thread, type and time. Filters become one boolean mask over those columns. Rows grow by doubling capacity, so
an append is O(1) amortized. A removed or rewritten memory leaves its old position dead (never
matched); `compacted` copies the live rows into a fresh index, which is how dead rows are reclaimed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Self

import numpy as np

from mcp_memory.search.file_array import Column
from mcp_memory.search.passages import ROWID_MASK, counted, passage_key
from mcp_memory.search.positions import RowPositions

NO_THREAD = " "  # a memory without a thread, in a snapshot's thread list (no thread id has a space)


@dataclass(frozen=True)
class RowFilter:
    thread_id: str | None = None
    threads: tuple[str, ...] | None = None  # only rows of these threads (None: any; (): none)
    types: tuple[str, ...] | None = None
    since: float | None = None  # epoch seconds
    until: float | None = None


class MemoryRows:
    def __init__(self) -> None:
        self._size = 0
        self._rowids = np.zeros(16, dtype=np.int64)
        self._threads = np.zeros(16, dtype=np.int32)
        self._types = np.zeros(16, dtype=np.int8)
        self._created = np.zeros(16, dtype=np.float64)
        self._active = np.zeros(16, dtype=bool)
        self._position = RowPositions()
        self._thread_codes: dict[str | None, int] = {}
        self._type_codes: dict[str, int] = {}
        self._passages: dict[int, int] = {}  # rowid -> passages, of the memories with more than one
        self._extra = 0  # sum over those memories of their counted passages (passages.counted) less one
        self._later_rows = 0  # sum over those memories of their passages less one: rows past memories

    def __len__(self) -> int:
        """Rows: passages of active memories."""
        return len(self._position)

    def memories(self) -> int:
        """Active memories (a long memory has several rows)."""
        return len(self._position) - self._later_rows

    def passages_per_memory(self) -> float:
        """The mean of the active memories' passages, each counted up to PRIOR_PASSAGES (1.0 for chat)."""
        memories = self.memories()
        return 1.0 if memories == 0 else (memories + self._extra) / memories

    def __contains__(self, rowid: int) -> bool:
        return rowid in self._position

    @property
    def dead(self) -> int:
        """Positions left by removed or rewritten memories, reclaimed by `compacted`."""
        return self._size - len(self._position)

    def reserve(self, rows: int) -> None:
        """Make room for `rows` rows in all, so a bulk build does not grow the arrays step by step."""
        if rows > len(self._rowids):
            self._grow(rows)

    def remove(self, rowid: int) -> None:
        """Leave the memory's rows for good (never matched, no longer found by key)."""
        passages = self._passages.pop(rowid, 1)
        self._extra -= counted(passages) - 1
        self._later_rows -= passages - 1
        for number in range(passages):
            self._remove_key(passage_key(rowid, number))

    def _remove_key(self, key: int) -> None:
        position = self._position.pop(key)
        if position is not None:
            self._active[position] = False

    def _trim(self, rowid: int, passages: int) -> None:
        """The memory now has `passages` rows: rows past them (of a longer earlier version) go."""
        before = self._passages.get(rowid, 1)
        for number in range(passages, before):
            self._remove_key(passage_key(rowid, number))
        self._extra += counted(passages) - counted(before)
        self._later_rows += passages - before
        if passages > 1:
            self._passages[rowid] = passages
        else:
            self._passages.pop(rowid, None)

    def _place(self, rowid: int, *, thread_id: str | None, type: str, created: float) -> int:
        """The row's position (a new one for a new rowid), with its columns set."""
        position = self._position.get(rowid)
        if position is None:
            if self._size == len(self._rowids):
                # By a quarter, not double: at 100k memories the vectors alone are 150 MB.
                self._grow(len(self._rowids) + max(16, len(self._rowids) // 4))
            position = self._size
            self._size += 1
            self._position.set(rowid, position)
        self._rowids[position] = rowid
        self._threads[position] = self._thread_codes.setdefault(thread_id, len(self._thread_codes))
        self._types[position] = self._type_codes.setdefault(type, len(self._type_codes))
        self._created[position] = created
        self._active[position] = True
        return position

    def _mask(self, where: RowFilter) -> np.ndarray:
        """Active rows passing the filter, over positions [0, size)."""
        n = self._size
        mask = self._active[:n].copy()
        if where.thread_id is not None:
            code = self._thread_codes.get(where.thread_id)
            if code is None:
                return np.zeros(n, dtype=bool)
            mask &= self._threads[:n] == code
        if where.threads is not None:
            codes = [self._thread_codes[t] for t in where.threads if t in self._thread_codes]
            if not codes:
                return np.zeros(n, dtype=bool)
            mask &= np.isin(self._threads[:n], codes)
        if where.types is not None:
            codes = [self._type_codes[t] for t in where.types if t in self._type_codes]
            mask &= np.isin(self._types[:n], codes)
        if where.since is not None:
            mask &= self._created[:n] >= where.since
        if where.until is not None:
            mask &= self._created[:n] <= where.until
        return mask

    def _grow(self, capacity: int) -> None:
        """Subclasses extend this to grow their own per-row arrays."""
        self._rowids = resized(self._rowids, capacity)
        self._threads = resized(self._threads, capacity)
        self._types = resized(self._types, capacity)
        self._created = resized(self._created, capacity)
        self._active = resized(self._active, capacity)

    def _rows_nbytes(self) -> int:
        arrays = (self._rowids, self._threads, self._types, self._created, self._active)
        return sum(a.nbytes for a in arrays) + self._position.nbytes()

    # ---- compaction and snapshots: the live rows as plain arrays, and back ----------------------

    def _live(self) -> np.ndarray:
        """Positions of the live rows, in position order."""
        return np.flatnonzero(self._active[: self._size])

    def _row_columns(self, live: np.ndarray) -> dict[str, np.ndarray]:
        threads = [NO_THREAD if t is None else t for t in self._thread_codes]
        return {
            "rowids": self._rowids[live],
            "threads": self._threads[live],
            "types": self._types[live],
            "created": self._created[live],
            "thread_names": packed_names(threads),
            "type_names": packed_names(self._type_codes),
        }

    def _load_row_columns(self, columns: Mapping[str, Column]) -> None:
        rowids = np.asarray(columns["rowids"])
        n = len(rowids)
        if any(len(columns[name]) != n for name in ("threads", "types", "created")):
            raise ValueError("row columns of different lengths")
        self._grow(max(16, n))
        self._size = n
        self._rowids[:n] = rowids
        self._threads[:n] = columns["threads"]
        self._types[:n] = columns["types"]
        self._created[:n] = columns["created"]
        self._active[:n] = True
        self._position = RowPositions.of(rowids)
        self._passages = passage_counts(rowids)
        self._extra = sum(counted(n) - 1 for n in self._passages.values())
        self._later_rows = sum(n - 1 for n in self._passages.values())
        threads = unpacked_names(columns["thread_names"])
        self._thread_codes = {None if t == NO_THREAD else t: code for code, t in enumerate(threads)}
        self._type_codes = {t: code for code, t in enumerate(unpacked_names(columns["type_names"]))}

    def columns(self) -> dict[str, Column]:
        """The live rows as arrays (a snapshot's content); subclasses add their own."""
        return dict(self._row_columns(self._live()))

    @classmethod
    def from_columns(cls, columns: Mapping[str, Column], **init: int) -> Self:
        index = cls(**init)
        index._load_row_columns(columns)
        return index

    def compacted(self) -> Self:
        """A copy holding only the live rows: dead positions reclaimed."""
        return type(self).from_columns(self.columns(), **self._init_args())

    def frozen(self) -> Self:
        """A copy, cheap to take, whose `columns()` stay what they are now while this index changes.

        Rows are only ever appended (a rewritten memory's text gets a new position), so the copy
        shares the arrays and keeps its own row count and activity flags; subclasses freeze what
        else they change in place.
        """
        copy = type(self)(**self._init_args())
        copy.__dict__.update(self.__dict__)
        copy._active = self._active.copy()
        copy._position = self._position.copy()
        copy._thread_codes = dict(self._thread_codes)
        copy._type_codes = dict(self._type_codes)
        copy._passages = dict(self._passages)
        return copy

    def _init_args(self) -> dict[str, int]:
        return {}


def passage_counts(keys: np.ndarray) -> dict[int, int]:
    """rowid -> passages of the memories with more than one, from their rows' keys."""
    later = keys[keys > ROWID_MASK]
    if later.size == 0:
        return {}
    rowids, counts = np.unique(later & ROWID_MASK, return_counts=True)
    return dict(zip(rowids.tolist(), (counts + 1).tolist(), strict=True))


def packed_names(names: Iterable[str]) -> np.ndarray:
    """Names (threads, types, terms: none holds a newline) as one uint8 array, for a snapshot."""
    return np.frombuffer("\n".join(names).encode(), dtype=np.uint8)


def unpacked_names(packed: Column) -> list[str]:
    text = np.asarray(packed).tobytes().decode()
    return text.split("\n") if text else []


def resized(array: np.ndarray, capacity: int) -> np.ndarray:
    if capacity == len(array):
        return array
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array[:capacity]
    return grown


def best(scores: np.ndarray, candidates: np.ndarray, limit: int) -> np.ndarray:
    """The `limit` candidate positions with the highest scores, best first (ties in position order)."""
    k = min(limit, candidates.size)
    if k <= 0:
        return candidates[:0]
    top = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
    return top[np.argsort(-scores[top], kind="stable")]
