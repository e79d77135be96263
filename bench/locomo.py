"""Retrieval quality on LoCoMo (turn level), through the public service API the MCP tools call.

    .venv/bin/python bench/locomo.py ../shared/data/locomo/locomo_dev.json            # the default config
    .venv/bin/python bench/locomo.py ../shared/data/locomo/locomo_dev.json --compare  # + text, vector, rrf
    .venv/bin/python bench/locomo.py ../shared/data/locomo/locomo_dev.json --context-turns-after 0  # a setting

Each conversation is indexed as the memories of one user, one thread per session, with `add_turn`
("speaker: text", the session's date as the turn's time; speaker_a as user, speaker_b as assistant).
Every question of categories 1-4 with evidence is searched (types=["turn"], so thread summaries do not
take result slots) and the ranked turns are scored against the evidence dia_ids: Recall@k = the mean
share of a question's evidence turns in the top k; NDCG@10 with binary relevance. Category 5
(adversarial) is reported separately. The data is read from the path given, never copied.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, table
from bench.harness.data.locomo import CATEGORIES, index_conversation
from bench.harness.data.locomo import samples as locomo_samples
from mcp_memory.config import GraphSettings, SearchSettings, Settings
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService

KS = (1, 5, 10, 20)


def score(ranked: list[str], evidence: list[str]) -> dict[str, float]:
    wanted = set(evidence)
    row = {f"R@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in KS}
    gains = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), 10)))
    row["NDCG@10"] = gains / ideal
    return row


async def evaluate(
    service: MemoryService, samples: list[dict[str, Any]], ids: dict[str, dict[str, str]], mode: str
) -> dict[str, Any]:
    per_category: dict[int, list[dict[str, float]]] = defaultdict(list)
    latencies = []
    for sample in samples:
        user = sample["sample_id"]
        for qa in sample["qa"]:
            if not qa.get("evidence"):
                continue
            began = time.perf_counter()
            asked = SearchQuery.of(
                user, qa["question"], types=["turn"], limit=max(KS), mode=mode, settings=service.settings
            )
            found = await service.search(asked)
            latencies.append(time.perf_counter() - began)
            ranked = [ids[user].get(hit.id, "") for hit in found.results]
            per_category[qa["category"]].append(score(ranked, qa["evidence"]))
    main = [row for c in (1, 2, 3, 4) for row in per_category[c]]
    return {
        "overall_1_4": _mean(main),
        "questions_1_4": len(main),
        "by_category": {
            CATEGORIES[c]: _mean(rows) | {"n": len(rows)} for c, rows in sorted(per_category.items())
        },
        "search_p50_ms": statistics.median(latencies) * 1000,
    }


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]} if rows else {}


def print_table(label: str, result: dict[str, Any]) -> None:
    o = result["overall_1_4"]
    print(
        f"| {label} | {o['R@1']:.3f} | {o['R@5']:.3f} | {o['R@10']:.3f} | {o['R@20']:.3f} | {o['NDCG@10']:.3f} "
        f"| {result['search_p50_ms']:.1f} |"
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    samples = locomo_samples(args.data)
    with tempfile.TemporaryDirectory(prefix="mcp-memory-locomo-") as scratch:
        settings = Settings(user_id="bench", data_dir=Path(scratch))
        search = settings.search.model_copy(
            update={k: v for k, v in vars(args).items() if k in SearchSettings.model_fields and v is not None}
        )
        graph = settings.graph.model_copy(
            update={k: v for k, v in vars(args).items() if k in GraphSettings.model_fields and v is not None}
        )
        settings = settings.model_copy(update={"search": search, "graph": graph})
        results: dict[str, Any] = {"settings": search.model_dump(), "graph": graph.model_dump()}
        async with open_service(settings) as service:
            began = time.perf_counter()
            ids = {s["sample_id"]: await index_conversation(service, s) for s in samples}
            print(
                f"indexed {sum(len(v) for v in ids.values())} turns in {time.perf_counter() - began:.0f} s",
                file=sys.stderr,
            )
            variants = [("hybrid", search.fusion, "default")]
            if args.compare:
                other = "rrf" if search.fusion == "score" else "score"
                variants += [
                    ("text", search.fusion, "BM25 only"),
                    ("vector", search.fusion, "vector only"),
                    ("hybrid", other, f"hybrid, {other} fusion"),
                ]
            links = [(w, f"hybrid, links followed at weight {w:g}") for w in args.link_weights or []]
            variants += [("hybrid", search.fusion, label) for _, label in links]
            print(
                "\n| variant | R@1 | R@5 | R@10 | R@20 | NDCG@10 | search p50 ms |\n|---|---:|---:|---:|---:|---:|---:|"
            )
            for mode, fusion, label in variants:
                weight = dict((lbl, w) for w, lbl in links).get(label)
                following = graph.model_copy(update={"follow_links": True, "link_weight": weight})
                service.settings = settings.model_copy(
                    update={
                        "search": search.model_copy(update={"fusion": fusion}),
                        "graph": following if weight is not None else graph,
                    }
                )
                result = await evaluate(service, samples, ids, mode)
                results[label] = result
                print_table(f"{label} ({mode}, {fusion})" if mode == "hybrid" else label, result)
            for label, result in results.items():
                if label != "default" and not label.startswith("hybrid, links"):
                    continue
                print(
                    f"\nby category ({label}):\n| category | n | R@5 | R@10 | NDCG@10 |\n|---|---:|---:|---:|---:|"
                )
                for name, row in result["by_category"].items():
                    print(
                        f"| {name} | {row['n']} | {row['R@5']:.3f} | {row['R@10']:.3f} | {row['NDCG@10']:.3f} |"
                    )
    return results


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument("data", help="path to locomo_dev.json (../shared/data/locomo/locomo_dev.json)")
    parser.add_argument(
        "--compare", action="store_true", help="also BM25 only, vector only and the other fusion"
    )
    parser.add_argument("--fusion", choices=["score", "rrf"])
    parser.add_argument("--text-weight", dest="text_weight", type=float)
    parser.add_argument("--vector-weight", dest="vector_weight", type=float)
    parser.add_argument("--context-turns", dest="context_turns", type=int)
    parser.add_argument("--context-turns-after", dest="context_turns_after", type=int)
    parser.add_argument("--context-weight", dest="context_weight", type=float)
    parser.add_argument(
        "--follow-links",
        dest="follow_links",
        action=argparse.BooleanOptionalAction,
        help="links between turns and the entities they name move the ranking (graph.follow_links)",
    )
    parser.add_argument("--link-weight", dest="link_weight", type=float)
    parser.add_argument(
        "--link-weights",
        dest="link_weights",
        type=float,
        nargs="+",
        help="also evaluate search with links followed at each of these weights (graph.link_weight)",
    )
    args = parser.parse_args()
    results = anyio.run(run, args)
    table.save(args.json, results)


if __name__ == "__main__":
    main()
