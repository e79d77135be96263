"""The local embedder on int8 kernels (the default) against the packaged graph's float products.

    .venv/bin/python bench/embedder.py --locomo ../shared/data/locomo/locomo_dev.json [--threads 1 2]

For each thread count: p50/p95 of embedding one question (what a search waits for) and the time to embed
the first 500 turns one by one (what add_turn pays), alternating the two models round by round because
this machine's speed drifts; then the cosine between the two models' vectors of every question and those
turns (vectors stored before the int8 change must still match new queries). Prints a table; --json too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import locomo

from mcp_memory.config import EmbeddingSettings
from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder

ROUNDS = 3


def timed(embedder: LocalMiniLMEmbedder, texts: list[str]) -> list[float]:
    times = []
    for text in texts:
        began = time.perf_counter()
        embedder.embed_now([text])
        times.append(time.perf_counter() - began)
    return times


def run(questions: list[str], turns: list[str], threads: int) -> dict[str, Any]:
    models = {
        name: LocalMiniLMEmbedder.load(EmbeddingSettings(threads=threads), int8_kernels=name == "int8")
        for name in ("int8", "float")
    }
    query_times: dict[str, list[float]] = {name: [] for name in models}
    turn_seconds: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(ROUNDS):
        for name, embedder in models.items():
            timed(embedder, questions[:20])  # warm
            query_times[name] += timed(embedder, questions)
            turn_seconds[name].append(sum(timed(embedder, turns)))
    texts = questions + turns
    cosines = (models["int8"].embed_now(texts) * models["float"].embed_now(texts)).sum(axis=1)
    return {
        "threads": threads,
        "models": {
            name: {
                "query_p50_ms": 1000 * statistics.median(times),
                "query_p95_ms": 1000 * statistics.quantiles(times, n=20)[-1],
                "turns_per_s": len(turns) / statistics.median(turn_seconds[name]),
            }
            for name, times in query_times.items()
        },
        "cosine_min": float(cosines.min()),
        "cosine_mean": float(cosines.mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--locomo", required=True, help="path to locomo_dev.json (read, never copied)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    turns, questions = locomo(args.locomo)
    results = [run(questions[::4], turns[:500], threads) for threads in args.threads]  # 255 questions
    print("| threads | model | query p50 ms | p95 | turns/s (one at a time) |\n|---:|---|---:|---:|---:|")
    for r in results:
        for name, m in r["models"].items():
            print(
                f"| {r['threads']} | {name} | {m['query_p50_ms']:.2f} | {m['query_p95_ms']:.2f} "
                f"| {m['turns_per_s']:.0f} |"
            )
    for r in results:
        print(
            f"threads {r['threads']}: cosine int8 vs float, min {r['cosine_min']:.4f}, mean {r['cosine_mean']:.4f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
