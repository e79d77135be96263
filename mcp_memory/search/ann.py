"""An approximate nearest-neighbour index (HNSW, usearch) over one user's vectors, keyed by rowid.

Exact search reads every vector per query: at a million memories that is 1.5 GB of float32 through a
mat-vec, 150 ms on two cores. An HNSW graph answers from a few thousand of them. usearch was chosen
from the libraries measured on this machine (../shared/research/vector-indexes.md, docs/architecture.md):
Apache-2.0, wheels for Linux, macOS and Windows, removal of single vectors (faiss's HNSW has none),
a file it can save and restore, and half-precision storage at the recall of float32.

The graph only proposes candidates: the caller asks it for several times the rows it needs, drops what
its filters exclude and what was removed, and ranks the rest by their exact cosines from its own
float32 rows (vector_index.py). So the graph stores its vectors as int8 (a quarter of float32: 0.5 GB
at a million memories instead of 1.5 GB), whose own recall levels off near 0.90, and the exact
re-ranking of its candidates gives the recall bench/scale.py reports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from usearch.index import Index

CONNECTIVITY = 16  # edges per node: the library's default
EXPANSION_ADD = 128  # candidate list while inserting: a better graph for a slower build


def _usearch_index() -> Any:
    """usearch's Index class, imported when a store first needs the graph (most never do).

    onnxruntime (the local embedder) is imported first on purpose: importing usearch 2.26's compiled
    module before onnxruntime's makes the later import crash the process (a segmentation fault, on
    Linux x86-64 with onnxruntime 1.32); the other order works. The embedder normally loads first
    anyway; this makes the order hold wherever the graph is built first (a CLI command, a test)."""
    importlib.import_module("onnxruntime")
    return importlib.import_module("usearch.index").Index


class ApproximateIndex:
    def __init__(self, dimension: int, *, expansion: int) -> None:
        self.dimension = dimension
        self._index: Index = _usearch_index()(
            ndim=dimension,
            metric="ip",  # vectors are unit length: inner product is the cosine
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=expansion,
        )
        self._per_row = 0.0
        self._measured_rows = 0

    def __len__(self) -> int:
        return len(self._index)

    def add(self, rowids: np.ndarray, vectors: np.ndarray, *, threads: int = 1) -> None:
        """Add (or replace) these rows' vectors."""
        keys = rowids.astype(np.uint64, copy=False)
        present = np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
        for key in keys[present]:
            self._index.remove(int(key))
        self._index.add(keys, np.asarray(vectors, dtype=np.float32), threads=threads)

    def remove(self, rowid: int) -> None:
        if self._index.contains(rowid):
            self._index.remove(rowid)

    def search(self, query: np.ndarray, count: int) -> np.ndarray:
        """The rowids of about the `count` nearest rows, nearest first. No scores: int8 distances are on
        the quantized scale; the caller ranks by exact cosines."""
        if len(self._index) == 0 or count <= 0:
            return np.zeros(0, dtype=np.int64)
        found = self._index.search(np.asarray(query, dtype=np.float32), min(count, len(self._index)))
        return np.asarray(found.keys, dtype=np.int64)

    def nbytes(self) -> int:
        """An estimate: usearch measures its memory by walking the graph (milliseconds at a million
        rows), so it is measured once per doubling and scaled by the rows since."""
        rows = len(self._index)
        if rows > 2 * self._measured_rows or self._per_row == 0.0:
            self._per_row = int(self._index.memory_usage) / max(1, rows)
            self._measured_rows = rows
        return int(self._per_row * rows)

    def serialized(self) -> np.ndarray:
        """The whole index as bytes (a snapshot's array)."""
        saved = self._index.save()
        assert saved is not None  # saved to no path: the bytes come back
        return np.frombuffer(bytes(saved), dtype=np.uint8)

    @classmethod
    def restored(cls, data: np.ndarray, dimension: int, *, expansion: int) -> ApproximateIndex:
        index = cls(dimension, expansion=expansion)
        index._index.load(np.ascontiguousarray(data, dtype=np.uint8).tobytes())
        if index._index.ndim != dimension:
            raise ValueError(f"an approximate index of {index._index.ndim} dimensions, not {dimension}")
        # The file keeps the expansion it was saved with; the setting wins (usearch types it read-only).
        index._index.expansion_search = expansion  # type: ignore[misc]
        return index
