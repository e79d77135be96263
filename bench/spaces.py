"""search_memory across shared spaces: a user's own memory plus three spaces, against one personal memory
of the same size.

Through the public service API (what the MCP tool calls), on the embedded default, in a fresh temporary
data dir. Two owners' worth of the same memories are seeded straight into the long-term store (synthetic
turns, or LoCoMo turns with --locomo; random unit vectors: the store's work does not depend on what the
vectors mean; the query is embedded by the real local model, as in the server):

- "solo": one user with --per-owner x 4 memories of their own;
- "member": a user with --per-owner memories of their own and three spaces of --per-owner memories each.

Then times --searches hybrid searches of each (the member's over their memory and the three spaces, one
query vector for all four, pooled by calibrated relevance), alternating, after one untimed search of each
that builds the in-memory indexes:

    .venv/bin/python bench/spaces.py                  # 10,000 per owner: 40,000 either way
    .venv/bin/python bench/spaces.py --per-owner 2000 --searches 50

Prints p50 / p95 of each and the ratio. Numbers are wall-clock on this machine; nothing is asserted.
"""

from __future__ import annotations

import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from bench.harness.data.corpus import locomo, queries, stored_turns, turns
from bench.harness.timing import percentiles
from mcp_memory.config import SecuritySettings, Settings, SpaceSettings
from mcp_memory.models import Owner, space_key
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service

SPACES = ("design", "ops", "sales")


async def seed(service: object, key: str, texts: list[str], count: int, seed_: int) -> None:
    store = service.stores.long_term  # type: ignore[attr-defined]
    memories = stored_turns(texts, count, seed=seed_)
    while batch := list(islice(memories, 1000)):
        for memory in batch:
            memory.user_id = key
            memory.id = f"{key.lstrip('@')}-{memory.id}"
        await store.put(batch)


async def run(per_owner: int, searches: int, locomo_path: str | None) -> None:
    if locomo_path:
        texts, questions = locomo(locomo_path)
    else:
        texts, questions = turns(5000), queries(searches)
    probe = [questions[i * 7 % len(questions)] for i in range(searches)]
    members = {"member": "reader"}
    spaces = [SpaceSettings(name=name, members=members) for name in SPACES]  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory(prefix="mcp-memory-spaces-") as scratch:
        settings = Settings(data_dir=Path(scratch), security=SecuritySettings(spaces=spaces))
        async with open_service(settings) as service:
            await seed(service, "solo", texts, per_owner * 4, 1)
            await seed(service, "member", texts, per_owner, 2)
            for n, name in enumerate(SPACES):
                await seed(service, space_key(name), texts, per_owner, 3 + n)
            solo = "solo"
            member = [Owner("member"), *(Owner("member", name, "reader") for name in SPACES)]
            await service.search(
                SearchQuery.of(solo, probe[0], settings=service.settings)
            )  # build each owner's indexes: not timed
            await service.search(SearchQuery.of(member, probe[0], settings=service.settings))
            times: dict[str, list[float]] = {"solo": [], "member": []}
            empty = {"solo": 0, "member": 0}  # searches that found nothing (a time the query named, ...)
            for query in probe:
                for who, owners in (("solo", solo), ("member", member)):
                    started = time.perf_counter()
                    found = await service.search(SearchQuery.of(owners, query, settings=service.settings))
                    times[who].append(time.perf_counter() - started)
                    empty[who] += not found.results
            spread = {
                h.space
                for h in (
                    await service.search(
                        SearchQuery.of(member, probe[1], limit=50, settings=service.settings)
                    )
                ).results
            }
    solo_p, member_p = percentiles(times["solo"]), percentiles(times["member"])
    total = per_owner * 4
    print(
        f"{searches} hybrid searches each, {total:,} memories either way ({'LoCoMo' if locomo_path else 'synthetic'})"
    )
    print(
        f"  personal, {total:,} memories in one owner:       p50 {solo_p['p50_ms']:.1f} ms  p95 {solo_p['p95_ms']:.1f} ms"
    )
    print(
        f"  personal {per_owner:,} + 3 spaces of {per_owner:,}:        p50 {member_p['p50_ms']:.1f} ms  "
        f"p95 {member_p['p95_ms']:.1f} ms"
    )
    print(f"  ratio (member / personal): p50 {member_p['p50_ms'] / solo_p['p50_ms']:.2f}x")
    print(f"  owners among a 50-hit answer: {sorted(str(s) for s in spread)}; empty answers: {empty}")


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--per-owner", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--locomo", help="path to locomo_dev.json (read in place, never copied)")
    args = parser.parse_args()
    anyio.run(run, args.per_owner, args.searches, args.locomo)


if __name__ == "__main__":
    main()
