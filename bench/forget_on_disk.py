"""What a forget leaves on disk: the bytes of a forgotten thread in the data directory right after
`forget` answers, the data file's size before and after, and how long the forget takes (issue 58).

    .venv/bin/python bench/forget_on_disk.py [--mb 5] [--no-erase] [--json PATH]

A fresh data dir gets a thread of about --mb megabytes (turns of 100,000 characters, each repeating a
marker phrase) and a small thread that stays. A second process opens the file and reads the thread
(as a server with the same file open would), then stays connected, idle. The thread is forgotten
through the service; right after the answer every file under the data dir is scanned for the marker.
--no-erase skips the erasure after the delete (what a forget did before: no checkpoint, no
incremental vacuum), for comparison. Hashing embedder: no model is loaded.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import cli, server, table
from mcp_memory.config import EmbeddingSettings, Settings
from mcp_memory.storage.sqlite.db import SqliteDatabase

USER = "bench"
MARKER = "Vexmarrow ledger 7731"
TURN_CHARS = 100_000
READER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
print(sum(len(r[0]) for r in conn.execute("SELECT content FROM memories")), flush=True)
sys.stdin.readline()
"""


def occurrences(data_dir: Path) -> tuple[int, list[str]]:
    """How many times the marker is in the files under the data dir, and which files hold it."""
    total, holders = 0, []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            n = path.read_bytes().count(MARKER.encode())
            if n:
                total += n
                holders.append(f"{path.name} ({n:,})")
    return total, holders


def sizes(data_dir: Path) -> str:
    files = ("memory.db", "memory.db-wal")
    return ", ".join(f"{name} {(data_dir / name).stat().st_size / 1e6:.2f} MB" for name in files)


def start_reader(data_file: Path) -> tuple[subprocess.Popen[str], int]:
    """The second process: it reads every memory's text, then stays connected (idle) until told."""
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(data_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None
    return reader, int(reader.stdout.readline())


async def measure(megabytes: float, erase: bool) -> dict[str, object]:
    if not erase:

        async def skipped(self: SqliteDatabase) -> bool:
            return True

        SqliteDatabase.erase_forgotten = skipped  # type: ignore[method-assign]
    turn = ((MARKER + " ") * (TURN_CHARS // (len(MARKER) + 1) + 1))[:TURN_CHARS]
    turns = max(1, round(megabytes * 1e6 / TURN_CHARS))
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        settings = Settings(user_id=USER, data_dir=data_dir, embedding=EmbeddingSettings(provider="hash"))
        async with server.open_service(settings) as service:
            for i in range(turns):
                await service.add_turn(USER, "doomed", "user", f"part {i}: {turn}", None, None)
            await service.add_turn(USER, "kept", "user", "This thread stays.", None, None)
            reader, read = await anyio.to_thread.run_sync(start_reader, settings.sqlite_path)
            before, _ = occurrences(data_dir)
            size_before = sizes(data_dir)
            started = time.perf_counter()
            receipt = await service.forget(USER, thread_id="doomed")
            seconds = time.perf_counter() - started
            after, holders = occurrences(data_dir)  # right after the answer, the reader still connected
            size_after = sizes(data_dir)
            assert reader.stdin is not None
            reader.stdin.write("done\n")
            reader.stdin.flush()
            reader.wait()
        print(
            f"forget of a {turns * TURN_CHARS / 1e6:.1f} MB thread ({turns} turns), erase {'on' if erase else 'off'}"
        )
        print(f"  second process read {read / 1e6:.1f} MB of it and stayed connected")
        print(f"  marker occurrences in the data dir: before {before:,}, right after forget {after:,}")
        print(f"    held by: {', '.join(holders) or 'no file'}")
        print(f"  sizes before: {size_before}")
        print(f"  sizes after:  {size_after}")
        print(
            f"  forget took {seconds:.2f} s; pending: {receipt.pending}"
            + (f"; note: {receipt.note}" if erase else "")
        )


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("--mb", type=float, default=5.0, help="size of the forgotten thread")
    parser.add_argument("--no-erase", action="store_true", help="skip the erasure, as forget did before")
    args = parser.parse_args()
    table.save(args.json, [anyio.run(measure, args.mb, not args.no_erase)])


if __name__ == "__main__":
    main()
