"""Private by default: the data directory is its owner's alone (docs/security.md, "Files on disk").

Every directory under the data directory is 0700 and every file in it 0600: the memory database and the
files SQLite keeps beside it (`-wal`, `-shm`, `-journal`), the search-index snapshots, the hooks' spool,
log and socket, the token-encoding cache, what was moved aside by a restore. Backups and exports the
command line writes are 0600 wherever they go.

Files are created with these modes (`create_private`, `private_dir`); SQLite creates its `-wal` and
`-shm` with the mode of the database file, so the database is created 0600 before SQLite opens it.
`make_private` repairs what an older version (or a copy, or an editor) left readable by others, once
at every start; `exposed` is what `mcp-memory doctor` reports. Standard library only: the doctor and the
hooks use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
_OTHERS = 0o077  # the group's and everyone's bits


def private_dir(path: Path) -> Path:
    """The directory, made if missing (its parents too), and made this user's alone."""
    make_dirs(path)
    if stat.S_IMODE(path.stat().st_mode) & _OTHERS:
        path.chmod(DIR_MODE)
    return path


def make_dirs(path: Path) -> None:
    """Every missing folder of `path` made 0700, its missing parents too (mkdir(parents=True) would
    make the parents with the umask's mode: a data directory made on the way to its cache readable by
    all). Existing folders are left as they are."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)


def create_private(path: Path) -> None:
    """Create the file empty with mode 0600 if it does not exist; an existing one is made 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & _OTHERS:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """os.open with mode 0600 for a file it creates: a file descriptor for `open(fd, ...)`."""
    return os.open(path, flags, FILE_MODE)


def exposed(folder: Path) -> list[tuple[Path, int]]:
    """Every directory and file from `folder` down that another user could read, write or enter, with
    its mode (symbolic links are not followed: what they point at is not the data directory's)."""
    found: list[tuple[Path, int]] = []
    if not folder.is_dir():
        return found
    for path in (folder, *_walk(folder)):
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile (a rotated log, a snapshot)
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & _OTHERS:
                found.append((path, stat.S_IMODE(mode)))
    return found


def make_private(folder: Path) -> list[Path]:
    """Take the group's and everyone's permissions off everything from `folder` down (what `exposed`
    lists); the paths changed. Those that cannot be changed (another user's file) are left and listed
    by `exposed` again."""
    changed = []
    for path, mode in exposed(folder):
        with contextlib.suppress(OSError):
            path.chmod(mode & ~_OTHERS)
            changed.append(path)
    return changed


def _walk(folder: Path) -> list[Path]:
    paths: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        paths += [Path(root, name) for name in (*dirs, *files)]
    return paths


def make_private_file(path: Path) -> None:
    """The file made 0600 if it is there and another user could read it."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_IMODE(path.stat().st_mode) & _OTHERS:
            path.chmod(FILE_MODE)
