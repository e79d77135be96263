"""The local embedder on int8 kernels (the default) against the packaged graph's float products.

    .venv/bin/python bench/embedder.py --locomo ../shared/data/locomo/locomo_dev.json [--threads 1 2]

For each thread count: p50/p95 of embedding one question (what a search waits for) and the time to embed
the first 500 turns one by one (what add_turn pays), alternating the two models round by round because
this machine's speed drifts; then the cosine between the two models' vectors of every question and those
turns (vectors stored before the int8 change must still match new queries). Prints a table; --json too.

    .venv/bin/python bench/embedder.py --locomo ... --batches 4 8 16

instead embeds 320 turns one by one and in padded batches of each size (CPU seconds of the process per
text, and each batched vector's cosine to the same text embedded alone): whether batching concurrent
texts would buy throughput, and what it would do to the vectors (issue 37).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, table
from bench.harness.data.corpus import locomo
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


def batched(embedder: LocalMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    """One padded inference for these texts, each vector the mean of its own tokens (as the model's
    sentence-transformers pooling does with an attention mask)."""
    encodings = embedder._tokenizer.encode_batch(texts)
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), length), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in embedder._input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    (hidden,) = embedder._session.run([embedder._output], feeds)
    pooled = (np.asarray(hidden) * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    vectors: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return vectors


def batches(turns: list[str], sizes: list[int]) -> None:
    embedder = LocalMiniLMEmbedder.load(EmbeddingSettings(threads=1))
    embedder.embed_now(turns[:20])  # warm
    began = time.process_time()
    alone = embedder.embed_now(turns)
    per_text = (time.process_time() - began) / len(turns)
    print(f"{os.cpu_count()} cores; {len(turns)} LoCoMo turns\n")
    print("| inference | CPU ms per text | cosine to alone: min | 1st percentile | mean |")
    print("|---|---:|---:|---:|---:|")
    print(f"| one text alone (the product) | {1000 * per_text:.2f} | | | |")
    for size in sizes:
        began = time.process_time()
        together = np.concatenate(
            [batched(embedder, turns[i : i + size]) for i in range(0, len(turns), size)]
        )
        per_text = (time.process_time() - began) / len(turns)
        cosines = (together * alone).sum(axis=1)
        print(
            f"| padded batches of {size} | {1000 * per_text:.2f} | {cosines.min():.4f} "
            f"| {np.percentile(cosines, 1):.4f} | {cosines.mean():.4f} |"
        )


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("--locomo", required=True, help="path to locomo_dev.json (read, never copied)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument(
        "--batches", type=int, nargs="+", help="measure padded batches of these sizes instead"
    )
    args = parser.parse_args()
    turns, questions = locomo(args.locomo)
    if args.batches:
        batches(turns[1000:1320], args.batches)
        return
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
    table.save(args.json, results)


if __name__ == "__main__":
    main()
