"""An approximate nearest-neighbour index (HNSW, usearch) over one user's vectors, keyed by rowid.

Exact search reads every vector per query: at a million memories that is 1.5 GB of float32 through a
mat-vec, 150 ms on two cores. An HNSW graph answers from a few thousand of them. usearch was chosen
from the libraries measured on this machine (../shared/research/vector-indexes.md, docs/architecture.md):
Apache-2.0, wheels for Linux, macOS and Windows, removal of single vectors (faiss's HNSW has none),
a file it can save and restore, and half-precision storage at the recall of float32.

The graph only proposes candidates: the caller asks it for several times the rows it needs, drops what
its filters exclude and what was removed, and ranks the rest by their exact cosines from its own
float32 rows (vector_index.py). The graph stores its vectors as bfloat16 (half the size of float32,
at float32's recall). It stored int8 before (a quarter), whose coarser distances also steer the walk
through the graph: where memories cluster as near-duplicates, the walk then stops in the wrong copies,
and re-ranking candidates it never reached cannot help (bench/scale.py --corpus near-duplicates). A
snapshot's graph stored otherwise is not viewed: the index builds a new one from its rows
(vector_index.py), once, and the next snapshot saves that.

A graph loaded from a snapshot is viewed where it lies in the file (0.1 s at a million memories; a copy
takes half a second and holds the interpreter meanwhile): read-only, so the rows added since go to a
second, small graph searched beside it, and the loaded graph's rows removed or rewritten since are
left to the caller's filters (it drops what is no longer active and scores what is by its current
vector). The two are merged into one graph when the index is next saved.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from usearch.index import Index

CONNECTIVITY = 16  # edges per node: the library's default
STORAGE = "bf16"  # how the graph stores its vectors (usearch's scalar kind)
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
        self.expansion = expansion
        self._index = self._new()  # changeable: every row, or those added since the viewed graph
        self._viewed: Index | None = None  # a snapshot's graph, read where it lies
        self._viewed_bytes: memoryview | None = None  # what it reads: kept alive while viewed
        self._shadowed: set[int] = set()  # viewed rows removed or rewritten since
        self._per_row = 0.0
        self._measured_rows = 0

    def _new(self) -> Index:
        index: Index = _usearch_index()(
            ndim=self.dimension,
            metric="ip",  # vectors are unit length: inner product is the cosine
            dtype=STORAGE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=self.expansion,
        )
        return index

    def __len__(self) -> int:
        viewed = len(self._viewed) - len(self._shadowed) if self._viewed is not None else 0
        return viewed + len(self._index)

    @property
    def changed(self) -> bool:
        """Rows were added, rewritten or removed since the graph was viewed from its snapshot."""
        return self._viewed is not None and (len(self._index) > 0 or bool(self._shadowed))

    def add(self, rowids: np.ndarray, vectors: np.ndarray, *, threads: int = 1) -> None:
        """Add (or replace) these rows' vectors."""
        keys = rowids.astype(np.uint64, copy=False)
        present = np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
        for key in keys[present]:
            self._index.remove(int(key))
        self._shadow(keys)
        self._index.add(keys, np.asarray(vectors, dtype=np.float32), threads=threads)

    def remove(self, rowid: int) -> None:
        if self._index.contains(rowid):
            self._index.remove(rowid)
        self._shadow(np.asarray([rowid], dtype=np.uint64))

    def _shadow(self, keys: np.ndarray) -> None:
        if self._viewed is not None:
            held = np.asarray(self._viewed.contains(keys), dtype=bool).reshape(-1)
            self._shadowed.update(keys[held].tolist())

    def search(self, query: np.ndarray, count: int) -> np.ndarray:
        """The rowids of about the `count` nearest rows, nearest first (and perhaps rows removed since
        the graph was viewed: the caller's filters drop them). No scores: int8 distances are on the
        quantized scale; the caller ranks by exact cosines."""
        query = np.asarray(query, dtype=np.float32)
        keys, distances = [], []
        for graph, wanted in (
            (self._viewed, count + min(count, len(self._shadowed))),  # room for the shadowed rows
            (self._index, count),
        ):
            if graph is not None and len(graph) and wanted > 0:
                found = graph.search(query, min(wanted, len(graph)))
                keys.append(np.asarray(found.keys, dtype=np.int64).reshape(-1))
                distances.append(np.asarray(found.distances, dtype=np.float32).reshape(-1))
        if not keys:
            return np.zeros(0, dtype=np.int64)
        if len(keys) == 1:
            return keys[0]
        merged = np.concatenate(keys)
        return merged[np.argsort(np.concatenate(distances), kind="stable")]

    def nbytes(self) -> int:
        """An estimate of the memory held (a viewed graph's pages are the file's): usearch measures
        its memory by walking the graph (milliseconds at a million rows), so it is measured once per
        doubling and scaled by the rows since."""
        rows = len(self._index)
        if rows > 2 * self._measured_rows or self._per_row == 0.0:
            self._per_row = int(self._index.memory_usage) / max(1, rows)
            self._measured_rows = rows
        return int(self._per_row * rows) + 100 * len(self._shadowed)

    def merge(self, vectors_of: Callable[[np.ndarray], np.ndarray]) -> None:
        """Make the viewed graph and the changes since one changeable graph (before a save): a copy of
        the viewed one, less its shadowed rows, plus the rows added since (`vectors_of(rowids)` gives
        their vectors)."""
        if self._viewed is None or self._viewed_bytes is None:
            return
        merged = self._new()
        merged.load(self._viewed_bytes)
        for key in self._shadowed:
            merged.remove(key)
        added = np.asarray(self._index.keys, dtype=np.uint64).reshape(-1)
        if added.size:
            merged.add(added, np.asarray(vectors_of(added.astype(np.int64)), dtype=np.float32))
        self._index, self._viewed, self._viewed_bytes, self._shadowed = merged, None, None, set()
        self._measured_rows = 0

    def serialized(self) -> np.ndarray:
        """The whole index as bytes (a snapshot's array); merge() first if it has changed since viewed."""
        if self._viewed_bytes is not None:
            if self.changed:
                raise ValueError("a viewed graph changed since: merge it before saving")
            return np.frombuffer(self._viewed_bytes, dtype=np.uint8)
        saved = self._index.save()
        assert saved is not None  # saved to no path: the bytes come back
        return np.frombuffer(bytes(saved), dtype=np.uint8)

    def save(self, path: Path) -> None:
        """Write the whole (changeable) index to a file, as serialized() would give it, without holding a
        second copy of it in memory (a cold build at a million memories: storage/sqlite/cold_build.py)."""
        if self._viewed is not None:
            raise ValueError("a viewed graph: merge it before saving")
        self._index.save(str(path))

    @staticmethod
    def current(data: memoryview) -> bool:
        """Whether a saved graph stores its vectors as this version does (an older one's are int8: it
        loads, but at the recall that made them change, so the caller builds a new one instead)."""
        try:
            kind = _usearch_index().metadata(data)["kind_scalar"]
        except (RuntimeError, ValueError, TypeError, KeyError):
            return True  # not a graph usearch can read: viewing() says why
        return str(getattr(kind, "name", kind)).lower() == STORAGE

    @classmethod
    def viewing(cls, data: memoryview, dimension: int, *, expansion: int) -> ApproximateIndex:
        """The index saved as `data`, read where it lies (`data` must not change while it is used)."""
        index = cls(dimension, expansion=expansion)
        viewed = index._new()
        try:
            viewed.view(data)
        except RuntimeError as e:  # not a graph usearch can read
            raise ValueError(f"an approximate index that cannot be read: {e}") from e
        if viewed.ndim != dimension:
            raise ValueError(f"an approximate index of {viewed.ndim} dimensions, not {dimension}")
        # The file keeps the expansion it was saved with; the setting wins (usearch types it read-only).
        viewed.expansion_search = expansion  # type: ignore[misc]
        index._viewed, index._viewed_bytes = viewed, data
        return index
