"""add_turn time for one very long turn (a pasted log), through the service API, and what the
thread's working memory keeps of it.

    python bench/long_turns.py [--sizes 3000 100000 1000000] [--embedder hash|local] [--window 8000]

Each size runs in a fresh data dir: one short turn, then the long one into the same thread (with the
client's context window --window, so the long turn may exceed it), then a third short turn. It prints
the long add_turn's wall time, the token count, whether the thread was summarized, and the working
memory's size afterwards; the turn is read back from long-term memory and compared whole.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from mcp_memory.config import EmbeddingSettings, Settings
from mcp_memory.service.assembly import open_service

USER = "bench"


def pasted_log(chars: int) -> str:
    """A log of `chars` characters: numbered lines with times, levels, hosts and durations."""
    lines: list[str] = []
    size, i = 0, 0
    while size < chars:
        level = ("INFO", "WARN", "ERROR", "DEBUG")[i % 4]
        line = (
            f"2026-11-{i % 28 + 1:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z {level} "
            f"worker-{i % 13} job {i * 31 % 100000} finished in {i * 17 % 997} ms on host-{i % 5}.example"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)[:chars]


async def measure(size: int, embedder: str, window: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            user_id=USER,
            data_dir=Path(tmp),
            embedding=EmbeddingSettings(provider=embedder),  # type: ignore[arg-type]
        )
        text = pasted_log(size)
        async with open_service(settings) as service:
            await service.add_turn(USER, "t", "user", "Here is the log from last night's run.", None, window)
            start = time.perf_counter()
            out = await service.add_turn(USER, "t", "user", text, None, window)
            elapsed = time.perf_counter() - start
            await service.add_turn(USER, "t", "assistant", "Thanks, reading it now.", None, window)
            stored = await service.get_memory(USER, out.turn.id)
            working = await service.get_working_memory(USER, "t")
            print(
                f"{size:>9,} chars  add_turn {elapsed * 1000:9.1f} ms  {out.turn.token_count:>7,} tokens  "
                f"summarized={out.summarized}  stored whole={stored.content == text}  "
                f"working memory: {len(working.messages)} messages, {working.token_count:,} tokens, "
                f"summary {len(working.summary):,} chars",
                flush=True,
            )


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 100_000, 1_000_000])
    parser.add_argument("--embedder", choices=["hash", "local"], default="local")
    parser.add_argument("--window", type=int, default=8000, help="the client's context window, tokens")
    args = parser.parse_args()
    for size in args.sizes:
        anyio.run(measure, size, args.embedder, args.window)


if __name__ == "__main__":
    main()
