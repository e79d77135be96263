"""An array in a file, read where a search needs it (positional reads), not mapped into the process.

A million memories' vectors are 1.5 GB of float32 and their text postings another few hundred MB; a
search reads a few hundred of those rows. Mapped, every page a search touches stays in the process's
resident memory (and the kernel maps whole neighbourhoods around each touched row: measured in
docs/benchmarks.md), so a long-running server ends up holding most of the file. Read with pread, the
pages stay in the operating system's page cache, shared and reclaimable, and the process keeps only
what it copied out. A read of rows from the page cache costs a system call and a copy: close to a
mapped gather for the few hundred rows a search takes, and full scans are read in blocks.

Snapshots (storage/sqlite/snapshots.py) hand their large arrays over as FileArrays; the indexes treat
them like read-only numpy arrays through `[start:stop]`, `take` and `blocks`.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

GAP_ROWS = 8  # rows between two wanted ones read through rather than with a second call
BLOCK_BYTES = 32 * 2**20  # a full scan's reads


class FileArray:
    """Rows of a C-ordered array stored at `offset` in `path`: read-only, thread-safe."""

    def __init__(self, path: Path, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.path = path
        self._offset = offset
        self._row_bytes = self.dtype.itemsize * math.prod(shape[1:])
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        weakref.finalize(self, os.close, self._fd)
        self._lock = threading.Lock()  # only where the system has no positional read (Windows)
        end = offset + self._row_bytes * shape[0]
        if os.fstat(self._fd).st_size < end:
            raise ValueError(f"{path} ends before the array it should hold ({end} bytes)")

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes in the file; none of them held in memory."""
        return self._row_bytes * self.shape[0]

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        """All of it, read (np.asarray(file_array)): for the arrays an index keeps in memory."""
        whole = self.read(0, self.shape[0])
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def mapped(self) -> memoryview:
        """The array's bytes mapped read-only, for a library that reads them in place (the usearch
        graph): the pages it touches are the file's, and the map lives as long as the view returned."""
        start = self._offset - self._offset % mmap.ALLOCATIONGRANULARITY
        length = self._offset + self.nbytes - start
        whole = mmap.mmap(self._fd, length, offset=start, access=mmap.ACCESS_READ)
        return memoryview(whole)[self._offset - start :]

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, step = rows.indices(self.shape[0])
        if step != 1:
            raise IndexError("a FileArray reads contiguous rows only")
        return self.read(start, stop)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a new array."""
        out = np.empty((max(0, stop - start), *self.shape[1:]), dtype=self.dtype)
        if out.nbytes:
            self._read_into(out, self._offset + start * self._row_bytes)
        return out

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The rows at these indices, in their order (repeats allowed): one read per run of nearby rows."""
        rows = np.asarray(rows, dtype=np.int64)
        wanted = np.unique(rows)
        out = np.empty((wanted.size, *self.shape[1:]), dtype=self.dtype)
        if wanted.size == 0:
            return out
        if wanted[0] < 0 or wanted[-1] >= self.shape[0]:
            raise IndexError(f"rows outside 0..{self.shape[0] - 1}")
        breaks = np.flatnonzero(np.diff(wanted) > GAP_ROWS) + 1
        for first, last in zip(
            np.concatenate([[0], breaks]).tolist(),
            np.concatenate([breaks, [wanted.size]]).tolist(),
            strict=True,
        ):
            low, high = int(wanted[first]), int(wanted[last - 1]) + 1
            if high - low == last - first:  # consecutive rows: straight into place
                self._read_into(out[first:last], self._offset + low * self._row_bytes)
                continue
            step = self._block_rows()
            for start in range(low, high, step):  # rows with gaps: read through, a block at a time
                a, b = np.searchsorted(wanted[first:last], [start, start + step]) + first
                if a < b:
                    stop = int(wanted[b - 1]) + 1
                    out[a:b] = self.read(int(wanted[a]), stop)[wanted[a:b] - wanted[a]]
        if wanted.size == rows.size and bool(np.all(wanted == rows)):
            return out
        return out[np.searchsorted(wanted, rows)]

    def blocks(self, stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """(start, rows) blocks covering rows [0, stop): a full scan without holding the whole file."""
        stop = self.shape[0] if stop is None else min(stop, self.shape[0])
        step = self._block_rows()
        for start in range(0, stop, step):
            yield start, self.read(start, min(stop, start + step))

    def _block_rows(self) -> int:
        return max(1, BLOCK_BYTES // max(1, self._row_bytes))

    def _read_into(self, out: np.ndarray, offset: int) -> None:
        view = out.data.cast("B")
        if hasattr(os, "preadv"):
            done = 0
            while done < view.nbytes:  # a positional read may return less than asked
                got = os.preadv(self._fd, [view[done:]], offset + done)
                if got <= 0:
                    raise OSError(f"{self.path} ended early")
                done += got
            return
        with self._lock:
            os.lseek(self._fd, offset, os.SEEK_SET)
            done = 0
            while done < view.nbytes:
                chunk = os.read(self._fd, view.nbytes - done)
                if not chunk:
                    raise OSError(f"{self.path} ended early")
                view[done : done + len(chunk)] = chunk
                done += len(chunk)


class Blocks:
    """An array made a block at a time, in order: a snapshot of a large index is written from it without
    the whole array (1.5 GB of vectors at a million memories) ever being in memory at once."""

    def __init__(
        self, shape: tuple[int, ...], dtype: type | np.dtype, produce: Callable[[], Iterable[np.ndarray]]
    ) -> None:
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self._produce = produce

    def __len__(self) -> int:
        return self.shape[0]

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(start, rows) blocks covering every row, as FileArray.blocks."""
        start = 0
        for block in self._produce():
            rows = np.ascontiguousarray(block, dtype=self.dtype)
            yield start, rows
            start += len(rows)
        if start != self.shape[0]:
            raise ValueError(f"{start} rows made of {self.shape[0]}")

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        parts = [rows for _, rows in self.blocks()]
        whole = np.concatenate(parts) if parts else np.zeros(self.shape, dtype=self.dtype)
        return whole if dtype is None else whole.astype(dtype, copy=False)


Column = np.ndarray | FileArray | Blocks  # a snapshot's array: read, left in its file, or to be made
