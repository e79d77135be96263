"""An in-memory, brute-force vector index of one user's memories.

Exact cosine over a contiguous float32 matrix: no approximate index to keep consistent. It is ~1 ms at
10k memories; at 100k the mat-vec reads 150 MB, ~14 ms of a ~29 ms hybrid search (bench/latency.py),
which is where a smaller (float16 or int8) matrix would pay.
"""

from __future__ import annotations

import numpy as np

from .memory_rows import MemoryRows, RowFilter, best, resized

# A gathered row costs ~3.5x a row streamed through the mat-vec (measured at 100k x 384: gathering 99%
# of the rows took 48 ms, the full mat-vec 14 ms), so gather only below a quarter of the rows.
GATHER_COST = 4


class VectorIndex(MemoryRows):
    def __init__(self, dimension: int) -> None:
        super().__init__()
        self.dimension = dimension
        self._matrix = np.zeros((len(self._rowids), dimension), dtype=np.float32)

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
        position = self._place(rowid, thread_id=thread_id, type=type, created=created, active=active)
        self._matrix[position] = vector

    def scores(self, query: np.ndarray, where: RowFilter) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosines) of every active row passing the filter, in index order."""
        n = self._size
        candidates = np.flatnonzero(self._mask(where))
        if candidates.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = query.astype(np.float32, copy=False)
        if candidates.size * GATHER_COST < n:  # few rows (one thread, a time window): gather them
            cosines = self._matrix[candidates] @ q
        else:  # most rows: streaming the whole matrix through one mat-vec beats copying most of it
            cosines = (self._matrix[:n] @ q)[candidates]
        return self._rowids[candidates], cosines

    def search(self, query: np.ndarray, limit: int, where: RowFilter) -> list[tuple[int, float]]:
        """(rowid, cosine) of the best `limit` active rows passing the filter, best first."""
        rowids, cosines = self.scores(query, where)
        top = best(cosines, np.arange(rowids.size), limit)
        return [(int(rowids[i]), float(cosines[i])) for i in top]

    def _grow(self, capacity: int) -> None:
        super()._grow(capacity)
        self._matrix = resized(self._matrix, capacity)
