"""An in-memory vector index of one user's memories: exact, and approximate once it is large.

Exact cosine over a contiguous float32 matrix reads every vector per query, which is where most of a
hybrid search's time goes in a large store (bench/latency.py, docs/benchmarks.md). From
`ann_min_rows` live vectors on, an HNSW graph (search/ann.py) beside the matrix answers unfiltered and
broadly filtered searches: its nearest rows, the rows the caller names (the text side's hits), and a
fixed spread of rows for the scale of the cosines, each with its exact cosine from the matrix. A search
whose filters leave few rows (one thread, a time window, facts only) stays exact, so its results do not
change; what the graph returns is always checked against the rows' filters and activity, so a removed
or superseded memory is never returned.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from mcp_memory.search.ann import ApproximateIndex
from mcp_memory.search.file_array import Blocks, Column, FileArray
from mcp_memory.search.passages import best_per_memory, memory_of, passage_key, passage_prior, rows_passages
from mcp_memory.search.rows import MemoryRows, RowFilter, best, resized

# Gathering a row costs several times streaming it through the mat-vec (bench/latency.py), so the
# candidates are gathered only when they are under a quarter of the rows.
GATHER_COST = 4
# With the graph, a search whose filters leave at most this many rows is still exact (a few ms).
EXACT_AT_MOST = 20_000
# Rows spread over the candidates whose exact cosines give the scale (minimum) that score fusion
# normalizes by, as the whole collection's would.
SCALE_SAMPLE = 1024
# The graph is built from the rows in blocks of this many (a loaded block is read from its file).
BUILD_BLOCK = 65_536


class VectorIndex(MemoryRows):
    def __init__(self, dimension: int, *, ann_min_rows: int = 0, ann_expansion: int = 2048) -> None:
        super().__init__()
        self.dimension = dimension
        self.ann_min_rows = ann_min_rows  # 0: always exact
        self.ann_expansion = ann_expansion
        # Rows [0, len(_matrix)) are in _matrix, the rest in _tail, which grows: growing never copies
        # the loaded rows. Loaded from a snapshot, _matrix is mapped, or with the graph read from its file
        # where needed (FileArray: a search reads a few hundred rows); a rewritten row of a FileArray
        # is kept in _rewritten.
        self._matrix: np.ndarray | FileArray = np.zeros((len(self._rowids), dimension), dtype=np.float32)
        self._tail = np.zeros((0, dimension), dtype=np.float32)
        self._rewritten: dict[int, np.ndarray] = {}
        self._ann: ApproximateIndex | None = None
        self._ann_saved: np.ndarray | None = None  # a frozen copy's graph, serialized when frozen
        # Per row: what its memory's score gives up for having several passages (0 for one).
        self._prior = np.zeros(len(self._rowids), dtype=np.float32)

    @property
    def approximate(self) -> bool:
        return self._ann is not None

    @property
    def file_backed(self) -> bool:
        """Its loaded rows are read from the snapshot file, not held (a large index)."""
        return isinstance(self._matrix, FileArray)

    def upsert(
        self, rowid: int, vectors: np.ndarray, *, thread_id: str | None, type: str, created: float
    ) -> None:
        """Add or rewrite an active memory's rows: one a passage (`vectors`: one row a passage, or one
        vector), rewritten in place: a vector leaves no dead row behind."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        self._trim(rowid, len(vectors))
        prior = passage_prior(len(vectors))
        for number, vector in enumerate(vectors):
            key = passage_key(rowid, number)
            position = self._place(key, thread_id=thread_id, type=type, created=created)
            self._prior[position] = prior
            base, matrix = len(self._matrix), self._matrix
            if position < base:
                if isinstance(matrix, FileArray):
                    self._rewritten[position] = vector.copy()
                else:
                    matrix[position] = vector
            else:
                self._tail[position - base] = vector
            if self._ann is not None:
                self._ann.add(np.asarray([key]), self._vectors(np.asarray([position])))

    def _remove_key(self, key: int) -> None:
        super()._remove_key(key)
        if self._ann is not None:
            self._ann.remove(key)

    def settle(self, *, threads: int = 2) -> None:
        """Build the graph once the index has grown to `ann_min_rows` (blocking; after a build or a
        batch of changes, not per row: one bulk insert is several times faster)."""
        if self._ann is None and self.ann_min_rows and len(self) >= self.ann_min_rows:
            live = self._live()
            ann = ApproximateIndex(self.dimension, expansion=self.ann_expansion)
            for start in range(0, live.size, BUILD_BLOCK):
                block = live[start : start + BUILD_BLOCK]
                ann.add(self._rowids[block], self._vectors(block), threads=threads)
            self._ann = ann

    def scores(
        self,
        query: np.ndarray,
        where: RowFilter,
        *,
        pool: int | None = None,
        also: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(keys, scores) of every active row passing the filter, in index order; with the graph and a
        `pool`, of the graph's nearest rows passing it, the rows `also` names and a spread of rows for the
        cosines' scale (every cosine exact). A row's score is its cosine, less the prior of a memory of
        several passages (search/passages.py PASSAGE_PRIOR)."""
        positions, cosines = self._scores(query, where, pool, also)
        if self._passages:
            cosines = cosines - self._prior[positions]
        return self._rowids[positions], cosines

    def _scores(
        self, query: np.ndarray, where: RowFilter, pool: int | None, also: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(positions, cosines), as `scores` describes."""
        n = self._size
        mask = self._mask(where)
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return candidates, np.zeros(0, dtype=np.float32)
        q = query.astype(np.float32, copy=False)
        if self._ann is not None and pool is not None and candidates.size > EXACT_AT_MOST:
            return self._approximate(q, mask, candidates, pool, also)
        if candidates.size * GATHER_COST < n or (
            isinstance(self._matrix, FileArray) and candidates.size <= EXACT_AT_MOST
        ):  # few rows (one thread, a time window): gather them
            cosines = self._vectors(candidates) @ q
        else:  # most rows: streaming the whole matrix through one mat-vec beats copying most of it
            cosines = self._all_cosines(q, n)[candidates]
        return candidates, cosines

    def search(self, query: np.ndarray, limit: int, where: RowFilter) -> list[tuple[int, float]]:
        """(key, cosine) of the best passage of each of the best `limit` memories passing the filter,
        best first."""
        keys, cosines = self.scores(query, where, pool=limit)
        kept = best_per_memory(keys, cosines)
        top = kept[best(cosines[kept], np.arange(kept.size), limit)]
        return [(int(keys[i]), float(cosines[i])) for i in top]

    def cosines(self, query: np.ndarray, keys: Sequence[int]) -> list[float | None]:
        """The query's cosine with each key's row, from the index's own vectors (a ranked search's few hits:
        a row read each). A passage with no row yet (a long turn's later passages are embedded after its
        first: service/vectors.py) has its memory's nearest earlier passage's; None: no vector of its
        memory is here."""
        q = query.astype(np.float32, copy=False)
        found: list[float | None] = []
        for key in keys:
            rowid, number = memory_of(key)
            position = None
            for earlier in range(number, -1, -1):
                position = self._position.get(passage_key(rowid, earlier))
                if position is not None:
                    break
            if position is None:
                found.append(None)
                continue
            # One row's dot product, as a hit's cosine always was: not the mat-vec's (last bits may differ).
            row = self._vectors(np.asarray([position], dtype=np.int64))[0]
            found.append(float(row @ q))
        return found

    def _approximate(
        self, q: np.ndarray, mask: np.ndarray, candidates: np.ndarray, pool: int, also: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        assert self._ann is not None
        # Asked for more than the pool: what the filters or a removal drop leaves enough.
        share = candidates.size / max(1, len(self))
        wanted = min(len(self._ann), int(pool * 4 / max(share, 0.05)) + 64)
        keys = self._ann.search(q, wanted)
        found = self._position.many(keys)
        found = found[found >= 0]
        found = found[mask[found]]
        if found.size < min(pool, candidates.size):  # the filters left too few: exact over them all
            return candidates, self._all_cosines(q, self._size)[candidates]
        spread = candidates[
            np.linspace(0, candidates.size - 1, min(SCALE_SAMPLE, candidates.size)).astype(np.int64)
        ]
        named = np.zeros(0, dtype=np.int64)
        if also is not None and also.size:
            named = self._position.many(also)
            named = named[named >= 0]
            named = named[mask[named]]
        positions = np.unique(np.concatenate([found, spread, named]))
        return positions, self._vectors(positions) @ q

    def _vectors(self, positions: np.ndarray) -> np.ndarray:
        """The rows' vectors, from the loaded block and the grown one."""
        base = len(self._matrix)
        if positions.size == 0 or int(positions.max()) < base:
            return self._rewrites(positions, self._loaded(positions))
        rows = np.empty((positions.size, self.dimension), dtype=np.float32)
        low = positions < base
        rows[low] = self._rewrites(positions[low], self._loaded(positions[low]))
        rows[~low] = self._tail[positions[~low] - base]
        return rows

    def _loaded(self, positions: np.ndarray) -> np.ndarray:
        if isinstance(self._matrix, FileArray):
            return self._matrix.take(positions)
        gathered: np.ndarray = self._matrix[positions]
        return gathered

    def _rewrites(self, positions: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The rows with the loaded block's rewritten ones in place of what the file holds."""
        if self._rewritten:
            for i, position in enumerate(positions.tolist()):
                vector = self._rewritten.get(position)
                if vector is not None:
                    rows[i] = vector
        return rows

    def _all_cosines(self, q: np.ndarray, n: int) -> np.ndarray:
        """Every row's cosine with q, positions [0, n)."""
        base = len(self._matrix)
        if isinstance(self._matrix, FileArray):
            loaded = np.concatenate([block @ q for _, block in self._matrix.blocks(min(n, base))] or [[]])
            for position, vector in self._rewritten.items():
                if position < loaded.size:
                    loaded[position] = vector @ q
        else:
            loaded = self._matrix[: min(n, base)] @ q
        if n <= base:
            return loaded.astype(np.float32, copy=False)
        return np.concatenate([loaded, self._tail[: n - base] @ q]).astype(np.float32, copy=False)

    def nbytes(self) -> int:
        graph = self._ann.nbytes() if self._ann is not None else 0
        # A FileArray's rows are in the file (the page cache), not the process.
        loaded = 0 if isinstance(self._matrix, FileArray) else self._matrix.nbytes
        return self._rows_nbytes() + loaded + self._tail.nbytes + graph

    def columns(self) -> dict[str, Column]:
        live = self._live()

        # Made a block at a time as the snapshot is written: never every vector in memory at once.
        def blocks() -> Iterator[np.ndarray]:
            for start in range(0, live.size, BUILD_BLOCK):
                yield self._vectors(live[start : start + BUILD_BLOCK])

        matrix = Blocks((live.size, self.dimension), np.float32, blocks)
        columns: dict[str, Column] = {**self._row_columns(live), "matrix": matrix}
        graph = self._ann_saved if self._ann_saved is not None else self._graph()
        if graph is not None:
            columns["graph"] = graph
        return columns

    def frozen(self) -> VectorIndex:
        copy = super().frozen()
        # A rewritten vector (and its row's thread, type, time) is written in place, so the copy's may
        # be newer than the moment it was taken: harmless for a snapshot, whose reader catches up on
        # that rewrite anyway. The graph changes in place too: it is serialized now, as it stands.
        copy._matrix = self._matrix if isinstance(self._matrix, FileArray) else self._matrix[: self._size]
        copy._tail = self._tail[: max(0, self._size - len(self._matrix))]
        copy._rewritten = dict(self._rewritten)
        copy._ann = None
        copy._ann_saved = self._graph()
        return copy

    def _graph(self) -> np.ndarray | None:
        """The graph as bytes for a snapshot: a viewed one changed since is merged first."""
        if self._ann is None:
            return None
        if self._ann.changed:
            self._ann.merge(lambda rowids: self._vectors(self._position.many(rowids)))
        return self._ann.serialized()

    def _load_row_columns(self, columns: Mapping[str, Column]) -> None:
        matrix = columns["matrix"]
        if matrix.shape != (len(columns["rowids"]), self.dimension):
            raise ValueError(
                f"a {matrix.shape} matrix for {len(columns['rowids'])} vectors of {self.dimension}"
            )
        graph = columns.get("graph")
        data: memoryview | None = None
        if graph is not None and self.ann_min_rows:
            # Viewed where it lies in the snapshot (a FileArray's map), not copied in.
            data = graph.mapped() if isinstance(graph, FileArray) else np.ascontiguousarray(graph).data
            if not ApproximateIndex.current(data):
                data = None  # stored as an older version did: settle() builds one from the rows below
        if isinstance(matrix, FileArray) and (graph is None or not self.ann_min_rows):
            matrix = matrix[:]  # no graph: every search reads every row, so they are kept in memory
        # Adopted, not copied (150 MB at 100k memories): the index grows it into a new array anyway.
        if isinstance(matrix, FileArray):
            if matrix.dtype != np.float32:
                raise ValueError(f"a matrix of {matrix.dtype}")
            self._matrix = matrix
        else:
            self._matrix = np.require(matrix, dtype=np.float32, requirements=["C", "W"])
        self._tail = np.zeros((0, self.dimension), dtype=np.float32)
        self._rewritten = {}
        super()._load_row_columns(columns)
        if self._passages:
            self._prior[: self._size] = passage_prior(rows_passages(self._rowids[: self._size]))
        if data is not None:
            self._ann = ApproximateIndex.viewing(data, self.dimension, expansion=self.ann_expansion)
            if len(self._ann) != len(self):
                raise ValueError(f"a graph of {len(self._ann)} vectors for {len(self)} rows")
        self.settle()

    def _init_args(self) -> dict[str, int]:
        return {
            "dimension": self.dimension,
            "ann_min_rows": self.ann_min_rows,
            "ann_expansion": self.ann_expansion,
        }

    def _grow(self, capacity: int) -> None:
        super()._grow(capacity)
        self._prior = resized(self._prior, capacity)
        # The mapped block stays as it is (a load sets capacity to its rows); only the tail grows.
        self._tail = resized(self._tail, max(0, capacity - len(self._matrix)))
