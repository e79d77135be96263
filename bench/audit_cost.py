"""What the audit trail costs add_turn (issue 39's target: p50 at most +0.3 ms), in process.

Two services side by side on the embedded default, each in a fresh temporary data dir, identical but for
`audit.enabled`; --turns add_turn calls to each, alternating one call to each (ABBA: which goes first
alternates too) so both see the same machine load, into a shared space (where every turn is recorded) and, with --personal, a user's own memory. The
record is written inside the turn's own SQLite transaction (audit/context.py), so the difference is the
hash-chained insert and its JSON. Also times a search of the space on each (a read of a space is recorded
too, in a transaction of its own).

    .venv/bin/python bench/audit_cost.py                    # 2,000 turns each, in a space
    .venv/bin/python bench/audit_cost.py --turns 500 --personal

Prints p50 / p95 / mean of each and the differences. Wall-clock on this machine; nothing is asserted.
"""

from __future__ import annotations

import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli
from bench.harness.data.corpus import turns
from bench.harness.timing import percentiles
from mcp_memory.config import AuditSettings, SecuritySettings, Settings, SpaceSettings
from mcp_memory.models import Owner
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.assembly import open_service
from mcp_memory.service.memory_service import MemoryService


def settings(data_dir: Path, audited: bool) -> Settings:
    space = SpaceSettings(name="team", members={"ann": "writer"})
    return Settings(
        data_dir=data_dir,
        user_id="ann",
        audit=AuditSettings(enabled=audited),
        security=SecuritySettings(spaces=[space]),
    )


async def timed_turns(
    services: dict[str, MemoryService], owner: Owner, texts: list[str], count: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in services}
    for i in range(count):
        for name, service in _abba(services, i):
            started = time.perf_counter()
            await service.add_turn(owner, f"t{i // 50}", "user", texts[i % len(texts)])
            samples[name].append(time.perf_counter() - started)
    return samples


def _abba(services: dict[str, MemoryService], i: int) -> list[tuple[str, MemoryService]]:
    """One call to each, the first of the pair alternating (ABBA): what one call leaves running in the
    background (its embedding, its summary) lands on the other's as often as on its own."""
    pairs = list(services.items())
    return pairs if i % 2 == 0 else pairs[::-1]


async def timed_searches(
    services: dict[str, MemoryService], owner: Owner, count: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in services}
    for i in range(count):
        for name, service in _abba(services, i):
            query = SearchQuery.of([owner], f"topic {i % 17}", settings=service.settings)
            started = time.perf_counter()
            found = await service.search(query)
            await service.audit.read(owner, [h.id for h in found.results])  # what the tool records
            samples[name].append(time.perf_counter() - started)
    return samples


def report(title: str, samples: dict[str, list[float]]) -> None:
    stats = {name: percentiles(s) for name, s in samples.items()}
    print(f"\n{title} ({len(samples['audited'])} each)")
    for name, s in stats.items():
        print(
            f"  {name:9} p50 {s['p50_ms']:7.3f} ms   p95 {s['p95_ms']:7.3f} ms   mean {s['mean_ms']:7.3f} ms"
        )
    for key in ("p50_ms", "p95_ms", "mean_ms"):
        print(f"  audit adds {key[:-3]:4} {stats['audited'][key] - stats['off'][key]:+.3f} ms")


async def run(count: int, personal: bool, searches: int, control: bool) -> None:
    texts = turns(2000)
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            services = {
                name: await stack.enter_async_context(open_service(settings(Path(tmp) / name, audited)))
                for name, audited in (("audited", not control), ("off", False))
            }
            space = Owner("ann", "team", "writer")
            await timed_turns(services, space, texts, 50)  # warm-up: models loaded, files created
            report("add_turn into a space", await timed_turns(services, space, texts, count))
            if personal:
                report(
                    "add_turn into a personal memory", await timed_turns(services, Owner("ann"), texts, count)
                )
            report(
                "search_memory of a space (+ its read record)",
                await timed_searches(services, space, searches),
            )
            log = services["audited"].audit.log
            if log is not None:
                print(f"\naudit records written: {(await log.verify()).checked}, chain verified")


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--personal", action="store_true", help="also time turns into a personal memory")
    parser.add_argument(
        "--control", action="store_true", help="both services without the trail (A/A): the bench's own spread"
    )
    args = parser.parse_args()
    anyio.run(run, args.turns, args.personal, args.searches, args.control)


if __name__ == "__main__":
    main()
