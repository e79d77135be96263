"""What the embedded store's in-memory search indexes hold per memory, for chat turns and for long
technical messages, through the public service API.

    .venv/bin/python bench/index_memory.py --locomo ../shared/data/locomo/locomo_dev.json \
        --beam ../shared/data/beam/100K

Each corpus goes into a fresh store (a temporary data dir) as one user's turns, one thread per
conversation (LoCoMo: "speaker: text"; BEAM: every message, its ` ->-> b,t` marker stripped), with the
hashing embedder (what the indexes hold does not depend on the model's values, and passages are cut from
the text alone). After every vector is written, one search builds the user's indexes, and the bench prints
their size (SearchIndexes.memory_bytes, the estimate the index memory budget uses) per memory, and the
rows per memory (passages). It uses nothing newer than the service API, so the same command on an older
commit gives the before figure. Nothing is asserted; the data is read from the paths given.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli

MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


def locomo_threads(path: Path) -> dict[str, list[str]]:
    threads = {}
    for sample in json.loads(path.read_text()):
        conversation, n, texts = sample["conversation"], 1, []
        while f"session_{n}" in conversation:
            texts += [f"{t['speaker']}: {t['text']}" for t in conversation[f"session_{n}"]]
            n += 1
        threads[sample["sample_id"]] = texts
    return threads


def beam_threads(folder: Path) -> dict[str, list[str]]:
    threads = {}
    for chat in sorted(folder.glob("*/chat.json"), key=lambda p: int(p.parent.name)):
        batches: list[dict[str, Any]] = json.loads(chat.read_text())
        texts = [
            MARKER.sub("", message["content"])
            for batch in batches
            for session in batch["turns"]
            for message in session
        ]
        threads[f"beam-{chat.parent.name}"] = [t for t in texts if t.strip()]
    return threads


async def measure(name: str, threads: dict[str, list[str]]) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-memory-index-memory-") as scratch:
        settings = Settings(user_id="bench", data_dir=Path(scratch))
        settings = settings.model_copy(
            update={"embedding": settings.embedding.model_copy(update={"provider": "hash"})}
        )
        async with open_service(settings) as service:
            count = 0
            for thread, texts in threads.items():
                for text in texts:
                    try:
                        await service.add_turn("bench", thread, "user", text, None, 10_000_000)
                    except MemoryServerError as refused:  # over an older max_content_chars: left out
                        print(f"{thread}: {refused}", file=sys.stderr)
                        continue
                    count += 1
            await service.search(
                SearchQuery.of("bench", "warm the indexes", limit=1, settings=service.settings)
            )  # waits for the vectors, builds
            store: Any = service.stores.long_term
            indexes = store.indexes
            held = indexes.memory_bytes()
            index = indexes._users["bench"]
            rows = len(index.vectors)
        chars = sum(len(t) for texts in threads.values() for t in texts)
        print(
            f"| {name} | {count:,} | {chars / count:,.0f} | {rows / count:.2f} | {held / 2**20:.1f} "
            f"| {held / count / 1024:.2f} |"
        )


async def main(args: argparse.Namespace) -> None:
    print("| corpus | memories | mean characters | index rows per memory | index MB | KB per memory |")
    print("|---|---:|---:|---:|---:|---:|")
    if args.locomo:
        await measure("LoCoMo dev (chat)", locomo_threads(args.locomo))
    if args.beam:
        await measure("BEAM 100K dev (long technical)", beam_threads(args.beam))


if __name__ == "__main__":
    parser = cli.parser(__doc__)
    parser.add_argument("--locomo", type=Path, help="locomo_dev.json")
    parser.add_argument("--beam", type=Path, help="BEAM's 100K folder")
    arguments = parser.parse_args()
    if not (arguments.locomo or arguments.beam):
        sys.exit("give --locomo and/or --beam")
    anyio.run(main, arguments)
