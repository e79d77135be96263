"""Calibrate search scores: the weights of search/relevance.py, fitted and checked on LoCoMo.

    .venv/bin/python bench/calibrate_scores.py ../shared/data/locomo/locomo_dev.json

Every turn of the development conversations is added with `add_turn` (as bench/locomo.py does); every
question of categories 1-4 is searched (top 10, hybrid and text mode), and each hit is labelled
relevant when it is one of the question's evidence turns. The signals of each hit are the ones the
server computes (service/results.py: rank, share of the query's terms, cosine). A logistic regression
is fitted on the first conversations (--fit, default 3) and checked on the rest: the reliability table
(mean score against the share of relevant hits, per score band), the Brier score, and what each
`min_score` floor keeps. The weights printed are what search/relevance.py holds.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, table
from bench.harness.data.locomo import index_conversation
from bench.harness.data.locomo import samples as locomo_samples
from mcp_memory.config import Settings
from mcp_memory.models import Hit
from mcp_memory.search import ranking, relevance
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.relevance import HitSignals
from mcp_memory.search.terms import QueryTerms
from mcp_memory.service.assembly import open_service

FLOORS = (0.05, 0.1, 0.2, 0.3, 0.5)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Newton-Raphson (IRLS) for weights [bias, *features]; a little L2 keeps it finite."""
    design = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(design.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-design @ w))
        gradient = design.T @ (p - y) + l2 * w
        hessian = (design * (p * (1 - p))[:, None]).T @ design + l2 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


async def collect(data: Path, mode: str) -> list[tuple[int, list[list[HitSignals]], list[list[bool]]]]:
    """Per conversation: each question's hits' signals and relevance labels."""
    samples = locomo_samples(data)
    out = []
    with tempfile.TemporaryDirectory(prefix="mcp-memory-calibrate-") as scratch:
        settings = Settings(user_id="bench", data_dir=Path(scratch))
        async with open_service(settings) as service:
            for number, sample in enumerate(samples):
                user = sample["sample_id"]
                ids = await index_conversation(service, sample)
                signals, labels = [], []
                for qa in sample["qa"]:
                    if not qa.get("evidence") or qa["category"] not in (1, 2, 3, 4):
                        continue
                    found = await service.search(
                        SearchQuery.of(
                            user,
                            qa["question"],
                            types=["turn"],
                            limit=10,
                            mode=mode,
                            settings=service.settings,
                        )
                    )
                    vector = None
                    if mode != "text":
                        vector = np.asarray(
                            (await service.embedder.embed([qa["question"]]))[0], dtype=np.float32
                        )
                    hits = []
                    for h in found.results:
                        memory = await service.stores.long_term.get(user, h.id)
                        cosine = None
                        if vector is not None and memory.embedding is not None:
                            cosine = float(np.dot(vector, np.asarray(memory.embedding, dtype=np.float32)))
                        hits.append(Hit(memory=memory, score=0.0, cosine=cosine))
                    terms = QueryTerms.of(qa["question"]).matched
                    signals.append(ranking.signals_of(terms, hits, vector is not None))
                    evidence = set(qa["evidence"])
                    labels.append([ids.get(h.id) in evidence for h in found.results])
                out.append((number, signals, labels))
                print(f"{mode}: conversation {number + 1} of {len(samples)} searched", file=sys.stderr)
    return out


def report(mode: str, conversations: list[Any], fit_count: int) -> dict[str, Any]:
    def rows(part: list[Any]) -> tuple[np.ndarray, np.ndarray, list[list[HitSignals]]]:
        x, y, per_query = [], [], []
        for _, signals, labels in part:
            for query_signals, query_labels in zip(signals, labels, strict=True):
                per_query.append(query_signals)
                x += [s.features() for s in query_signals]
                y += query_labels
        return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), per_query

    x_fit, y_fit, _ = rows(conversations[:fit_count])
    weights = fit_logistic(x_fit, y_fit)
    if mode == "text":
        relevance.TEXT_WEIGHTS = tuple(float(w) for w in weights)  # type: ignore[assignment]
    else:
        relevance.HYBRID_WEIGHTS = tuple(float(w) for w in weights)  # type: ignore[assignment]
    _, y_check, per_query = rows(conversations[fit_count:])
    scores = np.asarray([s for query in per_query for s in relevance.ranked_scores(query)])
    print(f"\n## {mode}: weights (bias, log rank, term overlap{', cosine' if mode != 'text' else ''})")
    print("(" + ", ".join(f"{w:.4f}" for w in weights) + ")")
    print(
        f"fitted on {len(y_fit)} hits ({int(y_fit.sum())} relevant), checked on {len(y_check)} "
        f"({int(y_check.sum())} relevant); Brier score {np.mean((scores - y_check) ** 2):.4f} "
        f"(always saying the base rate: {np.mean((y_check.mean() - y_check) ** 2):.4f})"
    )
    print("\n| score band | hits | mean score | share relevant |\n|---|---:|---:|---:|")
    edges = [0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0001]
    bands = []
    for low, high in itertools.pairwise(edges):
        inside = (scores >= low) & (scores < high)
        if inside.any():
            bands.append(
                (low, high, int(inside.sum()), float(scores[inside].mean()), float(y_check[inside].mean()))
            )
            print(
                f"| {low:.2f}-{min(high, 1):.2f} | {bands[-1][2]} | {bands[-1][3]:.3f} | {bands[-1][4]:.3f} |"
            )
    print(
        "\n| min_score | hits kept | relevant hits kept | share of kept that are relevant |\n|---:|---:|---:|---:|"
    )
    floors = []
    for floor in FLOORS:
        kept = scores >= floor
        row = (
            floor,
            float(kept.mean()),
            float(y_check[kept].sum() / max(y_check.sum(), 1)),
            float(y_check[kept].mean()) if kept.any() else 0.0,
        )
        floors.append(row)
        print(f"| {floor} | {row[1]:.3f} | {row[2]:.3f} | {row[3]:.3f} |")
    return {"weights": weights.tolist(), "bands": bands, "floors": floors}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    out = {}
    for mode in ("hybrid", "text"):
        conversations = await collect(Path(args.data), mode)
        out[mode] = report(mode, conversations, args.fit)
    return out


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument(
        "data", help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo_dev.json); read, never copied"
    )
    parser.add_argument("--fit", type=int, default=3, help="conversations to fit on; the rest check the fit")
    args = parser.parse_args()
    result = anyio.run(run, args)
    table.save(args.json, result)


if __name__ == "__main__":
    main()
