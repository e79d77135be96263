"""Where each memory's row is in an index: rowid -> position, as two sorted arrays and a small dict.

A dict of a million Python ints takes about 100 MB and a second to build from a snapshot; the index
keeps two of them (text and vectors). Here the bulk (a snapshot's rows, a build's) is a sorted array of
rowids with their positions, searched with numpy (many at once for a search's candidates), and only the
changes since (new rows, moved rows, removals) are a dict, folded into the arrays when it grows past a
share of them. The arrays are never changed in place, so a frozen copy shares them.
"""

from __future__ import annotations

import numpy as np

REMOVED = -1  # a change that removes the rowid
FOLD_AT_LEAST = 4096  # changes kept in the dict before they are folded into the arrays (or 1/16 of them)


class RowPositions:
    def __init__(self) -> None:
        self._rowids = np.zeros(0, dtype=np.int64)  # sorted
        self._positions = np.zeros(0, dtype=np.int64)
        self._changes: dict[int, int] = {}  # rowid -> position, or REMOVED
        self._count = 0

    @classmethod
    def of(cls, rowids: np.ndarray) -> RowPositions:
        """Rowids at positions 0, 1, ...: each at most once."""
        index = cls()
        rowids = np.asarray(rowids, dtype=np.int64)
        order = np.argsort(rowids, kind="stable")
        ordered = rowids[order]
        if ordered.size > 1 and not bool(np.all(ordered[1:] > ordered[:-1])):
            raise ValueError("a rowid at two positions")
        index._rowids, index._positions, index._count = ordered, order.astype(np.int64), int(rowids.size)
        return index

    def __len__(self) -> int:
        return self._count

    def __contains__(self, rowid: int) -> bool:
        return self.get(rowid) is not None

    def get(self, rowid: int) -> int | None:
        changed = self._changes.get(rowid)
        if changed is not None:
            return None if changed == REMOVED else changed
        i = int(np.searchsorted(self._rowids, rowid))
        if i < self._rowids.size and int(self._rowids[i]) == rowid:
            return int(self._positions[i])
        return None

    def many(self, rowids: np.ndarray) -> np.ndarray:
        """Each rowid's position, -1 for a rowid not here (one pass for a search's candidates)."""
        rowids = np.asarray(rowids, dtype=np.int64)
        found = np.full(rowids.size, -1, dtype=np.int64)
        if self._rowids.size:
            i = np.minimum(np.searchsorted(self._rowids, rowids), self._rowids.size - 1)
            hit = self._rowids[i] == rowids
            found[hit] = self._positions[i[hit]]
        if self._changes:
            for j, rowid in enumerate(rowids.tolist()):
                changed = self._changes.get(rowid)
                if changed is not None:
                    found[j] = changed  # REMOVED is -1 too
        return found

    def set(self, rowid: int, position: int) -> None:
        if self.get(rowid) is None:
            self._count += 1
        self._changes[rowid] = position
        self._fold_if_due()

    def pop(self, rowid: int) -> int | None:
        position = self.get(rowid)
        if position is not None:
            self._changes[rowid] = REMOVED
            self._count -= 1
            self._fold_if_due()
        return position

    def copy(self) -> RowPositions:
        copy = RowPositions()
        copy._rowids, copy._positions, copy._count = self._rowids, self._positions, self._count
        copy._changes = dict(self._changes)
        return copy

    def nbytes(self) -> int:
        return self._rowids.nbytes + self._positions.nbytes + 100 * len(self._changes)

    def _fold_if_due(self) -> None:
        if len(self._changes) < max(FOLD_AT_LEAST, self._rowids.size // 16):
            return
        changed = np.fromiter(self._changes.keys(), dtype=np.int64, count=len(self._changes))
        moved = np.fromiter(self._changes.values(), dtype=np.int64, count=len(self._changes))
        kept = ~np.isin(self._rowids, changed)
        rowids = np.concatenate([self._rowids[kept], changed[moved != REMOVED]])
        positions = np.concatenate([self._positions[kept], moved[moved != REMOVED]])
        order = np.argsort(rowids, kind="stable")
        # New arrays, never the old ones changed: a frozen copy may share those.
        self._rowids, self._positions = rowids[order], positions[order]
        self._changes = {}
