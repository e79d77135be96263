"""A user's search indexes saved beside the data file, so a new process loads them instead of building.

Building a user's indexes means tokenizing and stemming every memory, which grows with the store
(docs/benchmarks.md); loading saved arrays does not. Each snapshot is one uncompressed .npz in
`<data file>-index/`, named by a hash of the user id, holding the live rows of the text and vector
indexes (their `columns()`) and a stamp: which data file (its `file_id`), which point of its change
clock, which embedding model. A snapshot is a cache: one that does not match the file is ignored and
removed, and the indexes are built from the file instead.

Written to a temporary name, flushed to disk and renamed, so a reader sees a whole snapshot or none;
several processes may write the same user's, the last rename wins, and each is true to the point it
names. A reader opens the large arrays where they lie in the file (search/file_array.py) rather than
reading them: at a million memories the vectors alone are 1.5 GB, of which a search reads a few hundred
rows; each index reads into memory what it keeps there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import struct
import time
import uuid
import zipfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from mcp_memory.private_files import open_private
from mcp_memory.search.file_array import Column, FileArray

log = logging.getLogger(__name__)

OPEN_AT_LEAST = 2**20  # bytes: smaller arrays are read at once
# A temporary file this old is a crashed writer's (a snapshot takes seconds to write): removed by the
# next save of the same user's snapshot.
STALE_AFTER_S = 3600
# Raised whenever the arrays' meaning changes: an older snapshot is then rebuilt. 2: a long memory's rows
# are its passages (search/passages.py).
FORMAT = 2


@dataclass(frozen=True)
class Stamp:
    file_id: str
    seq: int  # the change clock's number the indexes reflect
    model: str
    dimension: int


@dataclass(frozen=True)
class Snapshot:
    stamp: Stamp
    text: Mapping[str, Column]
    vectors: Mapping[str, Column]


def user_key(user_id: str) -> str:
    """The user's name in snapshot files and tombstones: a hash, so neither keeps the user id."""
    return hashlib.sha256(user_id.encode()).hexdigest()[:32]


class SnapshotFolder:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def beside(cls, data_file: Path) -> SnapshotFolder:
        return cls(data_file.with_name(data_file.name + "-index"))

    def file_of(self, user_id: str) -> Path:
        return self.path / f"{user_key(user_id)}.npz"

    def save(self, user_id: str, snapshot: Snapshot) -> None:
        """Write the snapshot (blocking: call from a worker thread). Failing to write only costs speed."""
        arrays: dict[str, Column] = {
            "stamp": np.frombuffer(
                json.dumps({"format": FORMAT, **asdict(snapshot.stamp)}).encode(), np.uint8
            ),
            **{f"text.{k}": v for k, v in snapshot.text.items()},
            **{f"vectors.{k}": v for k, v in snapshot.vectors.items()},
        }
        target = self.file_of(user_id)
        temporary = target.with_name(f"{target.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            self.path.mkdir(mode=0o700, exist_ok=True)
            self._remove_leftovers(target)
            with open(open_private(temporary), "wb") as out:  # 0600, as every file of the data dir
                _write_npz(out, arrays)
                out.flush()
                os.fsync(out.fileno())  # on disk before the rename: a crash leaves the old one or this
            os.replace(temporary, target)
        except (OSError, ValueError) as e:
            log.warning("search index snapshot not written to %s: %s", self.path, e)
            with contextlib.suppress(OSError):
                temporary.unlink()

    def _remove_leftovers(self, target: Path) -> None:
        """Temporary files of writers that crashed before their rename (never read: only a renamed
        snapshot is), which would otherwise keep their disk space."""
        now = time.time()
        for leftover in self.path.glob(f"{target.stem}.*.tmp"):
            with contextlib.suppress(OSError):
                if now - leftover.stat().st_mtime > STALE_AFTER_S:
                    leftover.unlink()
                    log.info("search index snapshot left by a crashed writer removed: %s", leftover.name)

    def load(self, user_id: str) -> Snapshot | None:
        """The user's snapshot, or None when there is none or it cannot be read (blocking)."""
        path = self.file_of(user_id)
        try:
            arrays = _opened(path)
            stamp = json.loads(np.asarray(arrays.pop("stamp")).tobytes())
            if stamp.pop("format", None) != FORMAT:
                raise ValueError("written by another version")
            return Snapshot(
                stamp=Stamp(**stamp),
                text={k.removeprefix("text."): v for k, v in arrays.items() if k.startswith("text.")},
                vectors={
                    k.removeprefix("vectors."): v for k, v in arrays.items() if k.startswith("vectors.")
                },
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, struct.error, zipfile.BadZipFile) as e:
            log.warning("search index snapshot %s ignored (%s); the index is built from the file", path, e)
            self.remove(user_id)
            return None

    def remove(self, user_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.file_of(user_id).unlink()


def _write_npz(out: BinaryIO, arrays: Mapping[str, Column]) -> None:
    """What np.savez writes (an uncompressed zip of .npy files), each array written a block at a time."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                header = {
                    "descr": np.lib.format.dtype_to_descr(array.dtype),
                    "fortran_order": False,
                    "shape": tuple(array.shape),
                }
                np.lib.format.write_array_header_2_0(member, header)
                blocks = array.blocks() if not isinstance(array, np.ndarray) else [(0, array)]
                for _, rows in blocks:
                    member.write(np.ascontiguousarray(rows).data.cast("B"))


def _opened(path: Path) -> dict[str, np.ndarray | FileArray]:
    """The arrays of an uncompressed .npz (what np.savez writes): the large ones opened where they lie,
    not read.

    Each member of the zip is a .npy file stored as is: its data starts after the zip's local header
    and the .npy header, so it can be read from where it lies.
    """
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
    arrays: dict[str, np.ndarray | FileArray] = {}
    with path.open("rb") as file:
        for member in members:
            if member.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"{member.filename} is compressed")
            file.seek(member.header_offset + 26)  # the local header's name and extra-field lengths
            name_length, extra_length = struct.unpack("<HH", file.read(4))
            file.seek(member.header_offset + 30 + name_length + extra_length)
            version = np.lib.format.read_magic(file)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
            name = member.filename.removesuffix(".npy")
            if dtype.hasobject:
                raise ValueError(f"{name} holds Python objects")
            count = math.prod(shape)
            if count == 0:
                arrays[name] = np.zeros(shape, dtype=dtype)
                continue
            if fortran and len(shape) > 1:
                raise ValueError(f"{name} is in Fortran order")
            if count * dtype.itemsize < OPEN_AT_LEAST:  # read now, from this open file
                small = np.fromfile(file, dtype=dtype, count=count)
                if small.size != count:
                    raise ValueError(f"{name} ends early")
                arrays[name] = small.reshape(shape)
            else:  # left where it lies: each holds a file descriptor
                arrays[name] = FileArray(path, file.tell(), dtype, shape)
    return arrays
