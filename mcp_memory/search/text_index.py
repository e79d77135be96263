"""An in-memory BM25 index of one user's memories: the full-text half of a search on the embedded store.

SQLite's FTS5 computes bm25() one matching row at a time through its auxiliary-function API, so its
cost grows with the number of matching rows, and a question's common words match a large share of a
big store: ranking came to dominate a search. Here the same formula runs over numpy posting lists,
a few vectorized passes whatever the number of matches (bench/latency.py, docs/benchmarks.md):

    score(d) = sum over query terms t of  idf(t) * w * (K1 + 1) / (w + K1 * (1 - B + B * |d| / avg|d|))

with w = tf(t, content) + context_weight * tf(t, context), |d| every token of both columns, and
idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5)), floored at 1e-6 as FTS5 does. N, n_t and avg|d| count the
user's active memories only (FTS5 counted every row of the file, other users' and superseded ones too),
and a term counts once even when two of the query's words stem to it (FTS5 counted each).

Words are split like FTS5's `unicode61 remove_diacritics 2` tokenizer and stemmed with the Porter
stemmer (as FTS5 with `porter unicode61 remove_diacritics 2` would): search/terms.py `terms`. It is the only text index: a
quoted phrase needs its words in a memory's own text here, and is then checked verbatim against the
rows returned. Like the vectors, it is a cache of the file, kept current by storage/sqlite/indexes.py.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from mcp_memory.search.file_array import Blocks, Column, FileArray
from mcp_memory.search.passages import counted, passage_key, passages
from mcp_memory.search.rows import (
    MemoryRows,
    RowFilter,
    best,
    packed_names,
    passage_counts,
    resized,
    unpacked_names,
)
from mcp_memory.search.terms import terms

K1 = 1.2  # FTS5's bm25() constants
B = 0.75
MIN_IDF = 1e-6
# A term in more rows than this (a common word in a large store) is scored from its best entries: the
# BEST_ENTRIES rows where it weighs most, kept per term and refreshed as the index changes, plus every
# entry appended since. Its idf is low, so the rows it alone would lift are not the best matches of a
# query; reading all of its entries is what made text search grow with the store.
LONG_POSTINGS = 50_000
BEST_ENTRIES = 20_000
# Loaded postings (4 bytes a position, 8 for the two counts) smaller than this are read into memory;
# larger ones (a store of several hundred thousand memories) are read from the snapshot's file for each
# query term, a term's few hundred KB (file_array.py): the process does not come to hold them all.
KEEP_POSTINGS_BELOW = 16 * 2**20  # bytes of positions


class Document(NamedTuple):
    rowid: int
    content: str
    context: str
    thread_id: str | None
    type: str
    created: float


def _digest(document: Document) -> int:
    """A checksum of a memory's indexed text (never 0: 0 means none)."""
    content = zlib.crc32(document.content.encode("utf-8", "surrogatepass"))
    context = zlib.crc32(document.context.encode("utf-8", "surrogatepass"))
    return (content << 32 | context) or 1


def as_passages(document: Document) -> list[Document]:
    """The memory's rows: itself when it is one passage, else one a passage (search/passages.py), each
    keyed by passage_key and scored on its own words, so a long memory's matching part counts, not its
    length; each passage carries the memory's context."""
    spans = passages(document.content)
    if len(spans) == 1:
        return [document]
    return [
        document._replace(rowid=passage_key(document.rowid, number), content=document.content[start:end])
        for number, (start, end) in enumerate(spans)
    ]


Entries = tuple[np.ndarray, np.ndarray, np.ndarray]  # positions (int32), content and context counts


def _no_entries() -> Entries:
    return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)


class _Postings:
    """One term's rows (positions) with its count in each column, in position order: the entries
    [start, stop) of the index's stored arrays (built or loaded at once, perhaps in a file) and those
    appended since, in memory."""

    __slots__ = ("content", "context", "positions", "size", "start", "stop")

    def __init__(self, start: int = 0, stop: int = 0) -> None:
        self.start = start
        self.stop = stop
        self.positions, self.content, self.context = _no_entries()
        self.size = 0  # appended entries

    def __len__(self) -> int:
        return self.stop - self.start + self.size

    def frozen(self) -> _Postings:
        """A copy that keeps the entries as they are now (appends go past its size)."""
        copy = _Postings(self.start, self.stop)
        copy.positions, copy.content, copy.context = self.positions, self.content, self.context
        copy.size = self.size
        return copy

    def append(self, position: int, content: int, context: int) -> None:
        if self.size == len(self.positions):
            capacity = max(4, 2 * self.size)
            self.positions = resized(self.positions, capacity)
            self.content = resized(self.content, capacity)
            self.context = resized(self.context, capacity)
        self.positions[self.size] = position
        self.content[self.size] = content
        self.context[self.size] = context
        self.size += 1


class _Best(NamedTuple):
    """A long term's best entries among its first `upto`, as weighed with `context_weight` and `average`."""

    upto: int
    context_weight: float
    average: float
    positions: np.ndarray
    weights: np.ndarray  # each entry's BM25 term-frequency part
    frequency: int  # active rows among the first `upto` entries


class TextIndex(MemoryRows):
    def __init__(self) -> None:
        super().__init__()
        self._lengths = np.zeros(len(self._rowids), dtype=np.float32)
        # Per row: a checksum of its memory's content and context (on its first passage's row), so a
        # memory rewritten with the same text (a vector written late) is not tokenized again.
        self._digests = np.zeros(len(self._rowids), dtype=np.uint64)
        self._postings: dict[str, _Postings] = {}
        self._stored: tuple[np.ndarray | FileArray, ...] = _no_entries()  # entries as built or loaded
        self._appended = 0  # entries appended since, dead rows' too (for nbytes)
        self._length_total = 0.0  # of the active rows: their average is BM25's avg|d|
        self._best: dict[str, _Best] = {}

    @classmethod
    def of(cls, documents: Sequence[Document]) -> TextIndex:
        """An index of many documents at once: grouped with numpy rather than appended one by one."""
        index = cls()
        digests = {d.rowid: _digest(d) for d in documents}
        documents = [p for d in documents for p in as_passages(d)]
        if not documents:
            return index
        index._passages = passage_counts(np.fromiter((d.rowid for d in documents), dtype=np.int64))
        index._extra = sum(counted(n) - 1 for n in index._passages.values())
        index._later_rows = sum(n - 1 for n in index._passages.values())
        index._grow(max(16, len(documents)))
        vocabulary: dict[str, int] = {}
        term_ids: list[int] = []
        columns: list[int] = []
        per_row: list[int] = []
        for d in documents:
            position = index._place(d.rowid, thread_id=d.thread_id, type=d.type, created=d.created)
            index._digests[position] = digests.get(d.rowid, 0)
            own, around = terms(d.content), terms(d.context)
            index._lengths[position] = len(own) + len(around)
            term_ids += [vocabulary.setdefault(t, len(vocabulary)) for t in own + around]
            columns += [0] * len(own) + [1] * len(around)
            per_row.append(len(own) + len(around))
        rows = np.repeat(np.arange(len(documents), dtype=np.int64), per_row)
        keys, which = np.unique(
            np.asarray(term_ids, dtype=np.int64) * len(documents) + rows, return_inverse=True
        )
        in_context = np.asarray(columns, dtype=np.float64)
        content = np.bincount(which, weights=1.0 - in_context).astype(np.float32)
        context = np.bincount(which, weights=in_context).astype(np.float32)
        term_of, position_of = np.divmod(keys, len(documents))
        starts = np.flatnonzero(np.diff(term_of, prepend=-1))  # where each term's rows begin
        ends = np.append(starts[1:], len(keys)) if starts.size else starts
        names = list(vocabulary)
        index._stored = (position_of.astype(np.int32), content, context)
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            index._postings[names[int(term_of[start])]] = _Postings(start, end)
        index._length_total = float(index._lengths[: index._size].sum())
        return index

    @property
    def file_backed(self) -> bool:
        """Its loaded postings are read from the snapshot file, not held (a large index)."""
        return isinstance(self._stored[0], FileArray)

    def upsert(self, document: Document) -> None:
        """Index an active memory, a row a passage; one indexed before is replaced (its old postings stay
        on dead rows)."""
        self.remove(document.rowid)
        rows = as_passages(document)
        self._trim(document.rowid, len(rows))
        digest = _digest(document)
        for d in rows:
            position = self._place(d.rowid, thread_id=d.thread_id, type=d.type, created=d.created)
            self._digests[position] = digest if d.rowid == document.rowid else 0
            own, around = Counter(terms(d.content)), Counter(terms(d.context))
            self._lengths[position] = own.total() + around.total()
            self._length_total += float(self._lengths[position])
            for term in own.keys() | around.keys():
                postings = self._postings.get(term)
                if postings is None:
                    postings = self._postings[term] = _Postings()
                postings.append(position, own[term], around[term])
                self._appended += 1

    def holds(self, document: Document) -> bool:
        """Whether the memory is indexed with this very content and context (and place)."""
        position = self._position.get(document.rowid)
        if position is None or self._digests[position] == 0 or self._digests[position] != _digest(document):
            return False
        thread = self._thread_codes.get(document.thread_id)
        return bool(
            thread == self._threads[position]
            and self._type_codes.get(document.type) == self._types[position]
            and self._created[position] == document.created
        )

    def holds_all(self, key: int, wanted: Sequence[str]) -> bool:
        """Whether the row holds every one of these terms in its own text."""
        position = self._position.get(key)
        if position is None or not wanted:
            return False
        for term in wanted:
            postings = self._postings.get(term)
            if postings is None:
                return False
            positions, content, _ = self._entries(postings)
            if not bool(((positions == position) & (content > 0)).any()):
                return False
        return True

    def _remove_key(self, key: int) -> None:
        position = self._position.get(key)
        if position is not None:
            self._length_total -= float(self._lengths[position])
        super()._remove_key(key)

    def search(
        self,
        query: Sequence[str],
        limit: int,
        where: RowFilter,
        *,
        context_weight: float,
        required: Sequence[str] = (),
    ) -> list[tuple[int, float]]:
        """(key, BM25) of the best `limit` active rows (passages) passing the filter that hold a query term.

        `query` is already terms (query_terms); rows must also hold every `required` term in their own
        text (a quoted phrase's words: the phrase itself is checked on the rows returned).
        """
        n = self._size
        active = self._active[:n]
        documents = len(self._position)  # the active rows
        if documents == 0 or limit <= 0:
            return []
        average = max(self._length_total, 0.0) / documents
        scores = np.zeros(n, dtype=np.float64)
        matched = np.zeros(n, dtype=bool)
        for term in query:
            postings = self._postings.get(term)
            if postings is None:
                continue
            if len(postings) > LONG_POSTINGS:
                best_of = self._best_entries(term, postings, context_weight, average, active)
                since = self._entries(postings, best_of.upto)
                # Rows removed since the best entries were taken still count: at most all documents.
                frequency = min(best_of.frequency + int(active[since[0]].sum()), documents)
                positions = np.concatenate([best_of.positions, since[0]])
                weights = np.concatenate([best_of.weights, self._weights(since, context_weight, average)])
            else:
                entries = self._entries(postings)
                positions = entries[0]
                frequency = int(active[positions].sum())
                weights = self._weights(entries, context_weight, average)
            if frequency == 0:
                continue
            idf = max(math.log((documents - frequency + 0.5) / (frequency + 0.5)), MIN_IDF)
            scores[positions] += idf * weights
            matched[positions] = True
        matched &= self._mask(where)
        for term in required:
            matched &= self._in_content(term)
        top = best(scores, np.flatnonzero(matched), limit)
        return list(zip(self._rowids[top].tolist(), scores[top].tolist(), strict=True))

    def _entries(self, postings: _Postings, start: int = 0) -> Entries:
        """The term's entries from its `start`th on: stored ones (read from the file if there), then
        appended ones."""
        stored = postings.stop - postings.start
        parts = []
        if start < stored:
            a, b = postings.start + start, postings.stop
            parts.append(tuple(column[a:b] for column in self._stored))
        appended = max(0, start - stored)
        if appended < postings.size:
            end = postings.size
            parts.append(
                (
                    postings.positions[appended:end],
                    postings.content[appended:end],
                    postings.context[appended:end],
                )
            )
        if not parts:
            return _no_entries()
        if len(parts) == 1:
            return parts[0]  # type: ignore[return-value]
        return tuple(np.concatenate(column) for column in zip(*parts, strict=True))  # type: ignore[return-value]

    def _weights(self, entries: Entries, context_weight: float, average: float) -> np.ndarray:
        """BM25's term-frequency part of the entries: w * (K1 + 1) / (w + K1 * norm)."""
        positions, content, context = entries
        w = content + context_weight * context
        norm = K1 * (1 - B + B * self._lengths[positions] / average)
        weights: np.ndarray = w * (K1 + 1) / (w + norm)
        return weights

    def _best_entries(
        self, term: str, postings: _Postings, context_weight: float, average: float, active: np.ndarray
    ) -> _Best:
        """The term's best entries, taken again when the weighing changed or many entries came since."""
        kept = self._best.get(term)
        stale = (
            kept is None
            or kept.context_weight != context_weight
            or abs(kept.average - average) > 0.05 * average
            or len(postings) - kept.upto > BEST_ENTRIES // 4
        )
        if kept is not None and not stale:
            return kept
        entries = self._entries(postings)
        positions = entries[0]
        live = active[positions]
        weights = np.where(live, self._weights(entries, context_weight, average), -1.0)
        top = np.argpartition(-weights, BEST_ENTRIES - 1)[:BEST_ENTRIES]
        top = top[weights[top] >= 0]
        fresh = _Best(
            len(postings),
            context_weight,
            average,
            positions[top].copy(),
            weights[top],
            int(live.sum()),
        )
        self._best[term] = fresh
        return fresh

    def frozen(self) -> TextIndex:
        copy = super().frozen()
        # Postings are appended to in place: the copy keeps each term's entries as they are now.
        copy._postings = {term: p.frozen() for term, p in self._postings.items()}
        return copy

    def _in_content(self, term: str) -> np.ndarray:
        """Positions whose own text (not their context) holds the term."""
        holds = np.zeros(self._size, dtype=bool)
        postings = self._postings.get(term)
        if postings is not None:
            positions, content, _ = self._entries(postings)
            holds[positions[content > 0]] = True
        return holds

    def nbytes(self) -> int:
        """An estimate of the memory this index holds: its arrays, postings and dict entries."""
        per_term = 300  # the _Postings object, its three array headers and the dict entry
        stored = sum(column.nbytes for column in self._stored if isinstance(column, np.ndarray))
        appended = self._appended * 12 * 3 // 2  # 12 B an entry, capacity grows by doubling
        best = sum(kept.positions.nbytes + kept.weights.nbytes for kept in self._best.values())
        return (
            self._rows_nbytes()
            + self._lengths.nbytes
            + stored
            + appended
            + best
            + per_term * len(self._postings)
        )

    def columns(self) -> dict[str, Column]:
        """The live rows and their postings (as one array each, cut by `offsets`), for a snapshot: the
        postings are made term by term as the snapshot is written (Blocks), each pass reading the
        terms' entries again, so a large index's are never all in memory at once."""
        live = self._live()
        new_position = np.full(self._size, -1, dtype=np.int64)
        new_position[live] = np.arange(live.size)
        names, offsets, terms = [], [0], []
        for term, postings in self._postings.items():
            # Without dead rows every entry is kept: no need to read them to count.
            kept = (
                len(postings) if not self.dead else int((new_position[self._entries(postings)[0]] >= 0).sum())
            )
            if kept:
                names.append(term)
                terms.append(postings)
                offsets.append(offsets[-1] + kept)

        def made(column: int, dtype: type) -> Blocks:
            def produce() -> Iterator[np.ndarray]:
                for postings in terms:
                    entries = self._entries(postings)
                    moved = new_position[entries[0]]
                    kept = moved >= 0
                    yield (moved if column == 0 else entries[column])[kept]

            return Blocks((offsets[-1],), dtype, produce)

        return {
            **self._row_columns(live),
            "lengths": self._lengths[live],
            "digests": self._digests[live],
            "terms": packed_names(names),
            "offsets": np.asarray(offsets, dtype=np.int64),
            "positions": made(0, np.int32),
            "content": made(1, np.float32),
            "context": made(2, np.float32),
        }

    def _load_row_columns(self, columns: Mapping[str, Column]) -> None:
        super()._load_row_columns(columns)
        self._lengths[: self._size] = columns["lengths"]
        self._digests[: self._size] = columns["digests"]
        offsets = np.asarray(columns["offsets"]).tolist()
        positions, content, context = (
            _readable(columns[name]) for name in ("positions", "content", "context")
        )
        if isinstance(positions, FileArray) and positions.nbytes < KEEP_POSTINGS_BELOW:
            positions, content, context = (np.asarray(column) for column in (positions, content, context))
        names = unpacked_names(columns["terms"])
        low, high = _bounds(positions)
        fits = (
            len(offsets) == len(names) + 1
            and offsets[0] == 0
            and offsets[-1] == len(positions) == len(content) == len(context)
            and all(a <= b for a, b in pairwise(offsets))
            and (len(positions) == 0 or 0 <= low <= high < self._size)
        )
        if not fits:
            raise ValueError("postings that do not fit their rows")
        self._stored = (positions, content, context)
        for term, start, end in zip(names, offsets, offsets[1:], strict=False):
            self._postings[term] = _Postings(start, end)
        self._length_total = float(self._lengths[: self._size].sum())

    def _grow(self, capacity: int) -> None:
        super()._grow(capacity)
        self._lengths = resized(self._lengths, capacity)
        self._digests = resized(self._digests, capacity)


def _readable(column: Column) -> np.ndarray | FileArray:
    """A column sliced where needed: one still to be made (a compaction's) is made now."""
    return np.asarray(column) if isinstance(column, Blocks) else column


def _bounds(positions: np.ndarray | FileArray) -> tuple[int, int]:
    """The smallest and largest position (a file's read a block at a time)."""
    if len(positions) == 0:
        return 0, 0
    if isinstance(positions, np.ndarray):
        return int(positions.min()), int(positions.max())
    blocks = [(int(block.min()), int(block.max())) for _, block in positions.blocks()]
    return min(low for low, _ in blocks), max(high for _, high in blocks)
