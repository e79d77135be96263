"""An in-memory, brute-force vector index of one user's memories.

Exact cosine over a contiguous float32 matrix: no approximate index to keep consistent. The mat-vec
reads the whole matrix, so in a large store it is where most of a hybrid search's time goes
(bench/latency.py, docs/benchmarks.md); a smaller (float16 or int8) matrix would pay there.
"""

from __future__ import annotations

import numpy as np

from mcp_memory.search.rows import MemoryRows, RowFilter, best, resized

# Gathering a row costs several times streaming it through the mat-vec (bench/latency.py), so the
# candidates are gathered only when they are under a quarter of the rows.
GATHER_COST = 4


class VectorIndex(MemoryRows):
    def __init__(self, dimension: int) -> None:
        super().__init__()
        self.dimension = dimension
        self._matrix = np.zeros((len(self._rowids), dimension), dtype=np.float32)

    def upsert(
        self, rowid: int, vector: np.ndarray, *, thread_id: str | None, type: str, created: float
    ) -> None:
        """Add or rewrite an active memory's row (in place: a vector leaves no dead row behind)."""
        position = self._place(rowid, thread_id=thread_id, type=type, created=created)
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

    def nbytes(self) -> int:
        return self._rows_nbytes() + self._matrix.nbytes

    def columns(self) -> dict[str, np.ndarray]:
        live = self._live()
        return {**self._row_columns(live), "matrix": self._matrix[live]}

    def frozen(self) -> VectorIndex:
        copy = super().frozen()
        # A rewritten vector (and its row's thread, type, time) is written in place, so the copy's may
        # be newer than the moment it was taken: harmless for a snapshot, whose reader catches up on
        # that rewrite anyway.
        copy._matrix = self._matrix[: self._size]
        return copy

    def _load_row_columns(self, columns: dict[str, np.ndarray]) -> None:
        matrix = columns["matrix"]
        if matrix.shape != (len(columns["rowids"]), self.dimension):
            raise ValueError(
                f"a {matrix.shape} matrix for {len(columns['rowids'])} vectors of {self.dimension}"
            )
        # Adopted, not copied (150 MB at 100k memories): the index grows it into a new array anyway.
        self._matrix = np.require(matrix, dtype=np.float32, requirements=["C", "W"])
        super()._load_row_columns(columns)

    def _init_args(self) -> dict[str, int]:
        return {"dimension": self.dimension}

    def _grow(self, capacity: int) -> None:
        super()._grow(capacity)
        self._matrix = resized(self._matrix, capacity)
