"""What the offline entity extractor (learning/entities.py) finds in real conversation, and what linking
costs add_turn. Measured on the LoCoMo development conversations; the data is read, never copied.

    .venv/bin/python bench/graph_links.py ../shared/data/locomo/locomo_dev.json

1. Every turn's text ("speaker: text") through `mentions()`: turns with a mention, mentions per turn,
   distinct names, kinds, the most linked names, the extractor's time per turn, and a seeded sample of
   mentions with their turn, to judge by eye (docs/benchmarks.md reports that judgement).
2. add_turn through the service (the hashing embedder, so the model's time does not hide the
   difference) with graph.link_memories on and off: p50 and p95.
What following the links does to retrieval is bench/locomo.py --link-weights.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from mcp_memory.config import Settings
from mcp_memory.learning.entities import mentions
from mcp_memory.service.assembly import open_service

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from bench.harness.data.locomo import samples as locomo_samples


def turns_of(samples: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(sample id, session, "speaker: text") for every turn, in order."""
    found = []
    for sample in samples:
        conversation = sample["conversation"]
        session = 1
        while f"session_{session}" in conversation:
            for turn in conversation[f"session_{session}"]:
                found.append(
                    (sample["sample_id"], f"session_{session}", f"{turn['speaker']}: {turn['text']}")
                )
            session += 1
    return found


def extractor_report(turns: list[tuple[str, str, str]], sample_size: int) -> None:
    began = time.perf_counter()
    found = [mentions(text) for _, _, text in turns]
    per_turn_us = (time.perf_counter() - began) / len(turns) * 1e6
    names: Counter[str] = Counter(m.name for ms in found for m in ms)
    kinds = Counter(m.kind for ms in found for m in ms)
    with_any = sum(1 for ms in found if ms)
    print(f"turns: {len(turns)}; with a mention: {with_any} ({with_any / len(turns):.1%})")
    print(f"mentions per turn: {sum(len(ms) for ms in found) / len(turns):.2f}; distinct names: {len(names)}")
    print(f"kinds: {dict(kinds)}; extractor time per turn: {per_turn_us:.0f} us")
    print("most linked names: " + ", ".join(f"{n} ({c})" for n, c in names.most_common(15)))
    # Names besides the speakers' (every turn of a speaker starts with its name).
    speakers = {text.split(":", 1)[0] for _, _, text in turns}
    others = [
        (m, text) for ms, (_, _, text) in zip(found, turns, strict=True) for m in ms if m.name not in speakers
    ]
    print(f"mentions other than the speakers' names: {len(others)}")
    rng = random.Random(7)
    print(f"\na sample of {sample_size} of them (seed 7), to judge by eye:")
    for mention, text in rng.sample(others, min(sample_size, len(others))):
        print(f"  [{mention.kind}] {mention.name!r:32} <- {text[:100]!r}")


async def add_turn_timings(turns: list[tuple[str, str, str]], link: bool) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="mcp-memory-links-") as scratch:
        settings = Settings(user_id="bench", data_dir=Path(scratch))
        settings = settings.model_copy(
            update={
                "embedding": settings.embedding.model_copy(update={"provider": "hash"}),
                "graph": settings.graph.model_copy(update={"link_memories": link}),
            }
        )
        timings = []
        async with open_service(settings) as service:
            for user, thread, text in turns:
                began = time.perf_counter()
                await service.add_turn(user, thread, "user", text, None, 10_000_000)
                timings.append(time.perf_counter() - began)
        return timings


async def run(args: argparse.Namespace) -> None:
    samples = locomo_samples(args.data)
    turns = turns_of(samples)
    extractor_report(turns, args.sample)
    print("\n| add_turn | p50 ms | p95 ms |\n|---|---:|---:|")
    for link in (False, True):
        timings = sorted(await add_turn_timings(turns, link))
        p50, p95 = statistics.median(timings) * 1000, timings[int(len(timings) * 0.95)] * 1000
        print(f"| link_memories={link} | {p50:.2f} | {p95:.2f} |")
        sys.stdout.flush()


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("data", help="path to locomo_dev.json (../shared/data/locomo/locomo_dev.json)")
    parser.add_argument("--sample", type=int, default=40, help="mentions to print for judging (default 40)")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
