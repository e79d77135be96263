"""add_turn latency with fact extraction off vs on (p50 / p95, ms), through the service API.

    python bench/add_turn_extraction.py [--turns 200] [--every 2] [--llm-ms 150] [--embedder hash|local]

The LLM is the local OpenAI-compatible stub (tests.fakes.openai_stub), answering every
extraction with two facts after --llm-ms of simulated thinking. Extraction runs in the background
lane, so add_turn should cost the same either way; the table also shows how many extractions ran
and how many facts they stored once the lane drained.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import cli, llm
from mcp_memory.config import EmbeddingSettings, LearningSettings, SecuritySettings, Settings
from mcp_memory.learning import Learning
from mcp_memory.service.assembly import open_service
from tests.fakes.openai_stub import OpenAIStub

TOPICS = ["Hawaii trip", "Atlas deploy", "sister's birthday", "kitchen renovation", "marathon training"]


def answer_after(delay_ms: float) -> Any:
    def reply(body: dict[str, Any]) -> str:
        time.sleep(delay_ms / 1000)  # the stub's own thread: a model thinking, not our event loop
        n = len(body["messages"][-1]["content"])
        facts = [
            {"text": f"The user's note {n} about the {TOPICS[n % 5]}", "type": "semantic", "confidence": 0.9},
            {"text": f"The user prefers option {n % 7} for the {TOPICS[(n + 1) % 5]}", "type": "preference"},
        ]
        return json.dumps({"facts": facts})

    return reply


async def run(settings: Settings, turns: int) -> dict[str, float]:
    samples = []
    async with open_service(settings) as service:
        learning = service.learning
        assert isinstance(learning, Learning)
        for i in range(turns):
            role = "user" if i % 2 == 0 else "assistant"
            text = f"Turn {i}: about the {TOPICS[i % 5]}, the figure is {i * 17}, on May {i % 28 + 1}."
            start = time.perf_counter()
            await service.add_turn(settings.user_id, f"thread-{(i // 2) % 4}", role, text)
            samples.append((time.perf_counter() - start) * 1000)
        drain_start = time.perf_counter()
        await learning.worker.drain()
        drained = (time.perf_counter() - drain_start) * 1000
        facts = len(await learning.long_term.list_active(settings.user_id, types=("fact",), limit=100_000))
    samples.sort()
    return {
        "p50": statistics.median(samples),
        "p95": samples[int(0.95 * (len(samples) - 1))],
        "max": samples[-1],
        "drain": drained,
        "facts": facts,
    }


async def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--every", type=int, default=2, help="extract_every_turns when on")
    parser.add_argument("--llm-ms", type=float, default=150.0, help="simulated model latency per call")
    parser.add_argument("--embedder", choices=["hash", "local"], default="hash")
    args = parser.parse_args()

    rows = []
    with OpenAIStub.running() as stub, tempfile.TemporaryDirectory() as tmp:
        stub.reply_with(answer_after(args.llm_ms))
        model = llm.stub_settings(stub.base_url)
        for name, every in (("extraction off", 0), ("extraction on", args.every)):
            settings = Settings(
                user_id="bench",
                data_dir=Path(tmp) / name.replace(" ", "-"),
                embedding=EmbeddingSettings(provider=args.embedder),
                llm=model,
                learning=LearningSettings(
                    extract_every_turns=every, extract_on_summary=False, max_llm_calls_per_hour=100_000
                ),
                security=SecuritySettings(llm_calls_per_hour=None),  # every call, budget aside
            )
            before = len(stub.chat_requests())
            figures = await run(settings, args.turns)
            rows.append((name, figures, len(stub.chat_requests()) - before))

    print(
        f"add_turn latency, {args.turns} turns over 4 threads, {args.embedder} embedder, "
        f"LLM {args.llm_ms:g} ms/call"
    )
    print(
        f"{'mode':<16} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'LLM calls':>10} {'facts':>6}"
        f" {'drain ms':>9}"
    )
    for name, f, calls in rows:
        print(
            f"{name:<16} {f['p50']:>8.2f} {f['p95']:>8.2f} {f['max']:>8.2f} {calls:>10} {int(f['facts']):>6}"
            f" {f['drain']:>9.0f}"
        )


if __name__ == "__main__":
    anyio.run(main)
