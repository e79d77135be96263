"""An in-memory, brute-force vector index of one user's memories, with the filters search needs.

Exact cosine over a contiguous float32 matrix: at 100k x 384 one query is a ~5 ms mat-vec on two cores,
which beats an approximate index we would have to keep consistent. Rows grow by doubling capacity, so
an append is O(1) amortized.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VectorFilter:
    thread_id: str | None = None
    types: tuple[str, ...] | None = None
    since: float | None = None  # epoch seconds
    until: float | None = None


class VectorIndex:
    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._size = 0
        self._matrix = np.zeros((16, dimension), dtype=np.float32)
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

    def upsert(
        self,
        rowid: int,
        vector: np.ndarray,
        *,
        thread_id: str | None,
        type: str,
        created: float,
        active: bool,
    ) -> None:
        position = self._position.get(rowid)
        if position is None:
            if self._size == len(self._rowids):
                self._grow()
            position = self._size
            self._size += 1
            self._position[rowid] = position
        self._matrix[position] = vector
        self._rowids[position] = rowid
        self._threads[position] = self._thread_codes.setdefault(thread_id, len(self._thread_codes))
        self._types[position] = self._type_codes.setdefault(type, len(self._type_codes))
        self._created[position] = created
        self._active[position] = active

    def deactivate(self, rowid: int) -> None:
        position = self._position.get(rowid)
        if position is not None:
            self._active[position] = False

    def scores(self, query: np.ndarray, where: VectorFilter) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosines) of every active row passing the filter, in index order."""
        n = self._size
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        mask = self._active[:n].copy()
        if where.thread_id is not None:
            code = self._thread_codes.get(where.thread_id)
            if code is None:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            mask &= self._threads[:n] == code
        if where.types is not None:
            codes = [self._type_codes[t] for t in where.types if t in self._type_codes]
            mask &= np.isin(self._types[:n], codes)
        if where.since is not None:
            mask &= self._created[:n] >= where.since
        if where.until is not None:
            mask &= self._created[:n] <= where.until
        candidates = np.flatnonzero(mask)
        q = query.astype(np.float32, copy=False)
        # A full mask is the common case (no filters): one mat-vec without gathering rows first.
        cosines = self._matrix[:n] @ q if candidates.size == n else self._matrix[candidates] @ q
        return self._rowids[candidates], cosines

    def search(self, query: np.ndarray, limit: int, where: VectorFilter) -> list[tuple[int, float]]:
        """(rowid, cosine) of the best `limit` active rows passing the filter, best first."""
        rowids, cosines = self.scores(query, where)
        if rowids.size == 0 or limit <= 0:
            return []
        k = min(limit, rowids.size)
        top = np.argpartition(-cosines, k - 1)[:k]
        top = top[np.argsort(-cosines[top], kind="stable")]
        return [(int(rowids[i]), float(cosines[i])) for i in top]

    def _grow(self) -> None:
        capacity = len(self._rowids) * 2
        self._matrix = _resized(self._matrix, capacity)
        self._rowids = _resized(self._rowids, capacity)
        self._threads = _resized(self._threads, capacity)
        self._types = _resized(self._types, capacity)
        self._created = _resized(self._created, capacity)
        self._active = _resized(self._active, capacity)


def _resized(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown
