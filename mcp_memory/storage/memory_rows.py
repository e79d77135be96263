"""The rows of one user's in-memory search index, with the filters search needs.

The vector index and the text index each keep one row per memory: its SQLite rowid, thread, type,
time and whether it is active (not superseded). Filters become one boolean mask over those columns.
Rows grow by doubling capacity, so an append is O(1) amortized.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RowFilter:
    thread_id: str | None = None
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
        self._position: dict[int, int] = {}
        self._thread_codes: dict[str | None, int] = {}
        self._type_codes: dict[str, int] = {}

    def __len__(self) -> int:
        return int(self._active[: self._size].sum())

    def deactivate(self, rowid: int) -> None:
        position = self._position.get(rowid)
        if position is not None:
            self._active[position] = False

    def _place(self, rowid: int, *, thread_id: str | None, type: str, created: float, active: bool) -> int:
        """The row's position (a new one for a new rowid), with its columns set."""
        position = self._position.get(rowid)
        if position is None:
            if self._size == len(self._rowids):
                self._grow(len(self._rowids) * 2)
            position = self._size
            self._size += 1
            self._position[rowid] = position
        self._rowids[position] = rowid
        self._threads[position] = self._thread_codes.setdefault(thread_id, len(self._thread_codes))
        self._types[position] = self._type_codes.setdefault(type, len(self._type_codes))
        self._created[position] = created
        self._active[position] = active
        return position

    def _retire(self, rowid: int) -> None:
        """Leave the row's position for good (inactive, no longer found by rowid)."""
        position = self._position.pop(rowid, None)
        if position is not None:
            self._active[position] = False

    def _mask(self, where: RowFilter) -> np.ndarray:
        """Active rows passing the filter, over positions [0, size)."""
        n = self._size
        mask = self._active[:n].copy()
        if where.thread_id is not None:
            code = self._thread_codes.get(where.thread_id)
            if code is None:
                return np.zeros(n, dtype=bool)
            mask &= self._threads[:n] == code
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


def resized(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def best(scores: np.ndarray, candidates: np.ndarray, limit: int) -> np.ndarray:
    """The `limit` candidate positions with the highest scores, best first (ties in position order)."""
    k = min(limit, candidates.size)
    if k <= 0:
        return candidates[:0]
    top = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
    return top[np.argsort(-scores[top], kind="stable")]
