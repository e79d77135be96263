"""bench/tool_tokens.py's runs against the real server over stdio: every thread added and asked, the
per-thread and once-only calls (results), and tools/list per profile (definitions)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench._tool_tokens_count import (
    _ROOT,
    FACTS,
    LATER_LINE,
    PROFILES,
    READ_TIMEOUT_SECONDS,
    REFERENCE_PACKAGE,
    SEARCH_TYPES,
    SETTLE_SECONDS,
    TOP,
    Tally,
    compact,
    evidence_rows,
    hits_of,
    measure,
    turn_id,
    words_all,
)
from bench._tool_tokens_threads import Thread, Turn, fact_visible
from bench.harness import server
from bench.harness.data.beam import recall
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.search.passages import passages


def later_logged(stderr_path: Path) -> tuple[int, int]:
    """The server's stderr so far: its length, and the count on its latest "later passages embedded" line
    (0 before the first)."""
    logged = stderr_path.read_text(errors="replace")
    done = LATER_LINE.findall(logged)
    return len(logged), int(done[-1]) if done else 0


async def settle(stderr_path: Path, since: tuple[int, int], long_added: int) -> float:
    """Wait (at most SETTLE_SECONDS) until the server says, after `since` (later_logged() before this
    thread's turns were added), that its queue of later passages is empty with at least `long_added` more
    long memories embedded than it had then; the seconds waited. Counted from `since`, not from the
    start: the thread summaries the server writes are long memories too, so its count runs ahead of the
    turns'; an old line would otherwise pass for a new one."""
    offset, before = since
    began = time.monotonic()
    while time.monotonic() - began < SETTLE_SECONDS:
        logged = await anyio.Path(stderr_path).read_text(errors="replace")
        done = [int(n) for n in LATER_LINE.findall(logged[offset:])]
        if done and done[-1] >= before + long_added:
            return time.monotonic() - began
        await anyio.sleep(0.5)
    print(f"the server did not report its later passages embedded within {SETTLE_SECONDS} s", file=sys.stderr)
    return time.monotonic() - began


async def add_thread(client: Client, tally: Tally, thread: Thread) -> dict[str, Turn]:
    """Every turn, in order; our memory id -> the turn."""
    ids: dict[str, Turn] = {}
    for turn in thread.turns:
        out, _, _ = await measure(
            client,
            tally,
            thread.dataset,
            "add_turn",
            {
                "thread_id": thread.thread_id,
                "role": turn.role,
                "content": turn.content,
                "created_at": turn.said_at.isoformat(),
            },
            "thread_id, role, content, created_at",
            content_tokens=tally.tokens(turn.content),
        )
        if out is not None:
            ids[turn_id(out)] = turn
    return ids


async def ask_thread(client: Client, tally: Tally, thread: Thread, ids: dict[str, Turn]) -> None:
    contents = {turn.key: turn.content for turn in ids.values()}
    long_ids = {memory for memory, turn in ids.items() if len(passages(turn.content)) > 1}
    for question in thread.questions:
        out, text, row = await measure(
            client,
            tally,
            thread.dataset,
            "search_memory",
            {
                "query": question.text,
                "thread_id": thread.thread_id,
                "types": SEARCH_TYPES,
                "limit": TOP,
                "mode": "hybrid",
            },
            f'query, thread_id, types={SEARCH_TYPES}, limit={TOP}, mode="hybrid"',
        )
        hits = hits_of(out) if out is not None else []
        row.hits = len(hits)
        long = [hit["id"] in long_ids or bool(hit.get("passage")) for hit in hits]
        row.long_hits = sum(long)
        ranked = [ids[hit["id"]].key if hit["id"] in ids else None for hit in hits]
        tally.questions.append(
            {
                "dataset": thread.dataset,
                "thread": thread.thread_id,
                "label": question.label,
                "question": question.text,
                "evidence": question.evidence,
                "ranked": ranked,
                "R@10": recall(ranked, question.evidence, TOP),
                "text_tokens": row.text_tokens,
                "structured_tokens": row.structured_tokens,
                "hits": row.hits,
                "long_hits": row.long_hits,
                # each hit: is it long, and the tokens of its compact JSON in structured_content
                "hit_tokens": [
                    [is_long, tally.tokens(compact(hit))] for is_long, hit in zip(long, hits, strict=True)
                ],
                **evidence_rows(ranked, hits, text, question.evidence, contents),
                # the answer's facts found in the result text (None: the question names none)
                "facts": len(question.facts),
                "facts_visible": sum(fact_visible(f, words_all(text)) for f in question.facts),
            }
        )


async def per_thread_calls(client: Client, tally: Tally, thread: Thread) -> None:
    """The calls a client makes on a thread, in an order that leaves each one's result typical."""
    tid = {"thread_id": thread.thread_id}
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("get_working_memory", tid, "thread_id"),
        ("get_working_memory", tid | {"recent": 10}, "thread_id, recent=10"),
        ("list_memories", tid | {"limit": 20}, "thread_id, limit=20"),
        ("summarize_thread", tid, "thread_id"),
        ("forget", tid | {"dry_run": True}, "thread_id, dry_run=true"),
    ]
    for tool, arguments, shown in calls:
        await measure(client, tally, thread.dataset, tool, arguments, shown)


async def facts(client: Client, tally: Tally) -> None:
    remembered = []
    for kind, content in FACTS:
        out, _, _ = await measure(
            client, tally, "-", "remember", {"content": content, "type": kind}, "content, type"
        )
        if out is not None:
            remembered.append(out["id"])
    if remembered:
        await measure(
            client,
            tally,
            "-",
            "memory_history",
            {"memory_id": remembered[0]},
            "memory_id (a remembered fact)",
        )


async def run_results(threads: list[Thread], settings: dict[str, str], scratch: Path, tally: Tally) -> None:
    workdir = scratch / "results"
    workdir.mkdir()
    env = server.clean_env(workdir / "data", settings)
    stderr_path = workdir / "server.stderr"
    async with server.stdio(
        server.serve_command(), env, workdir, read_timeout=READ_TIMEOUT_SECONDS
    ) as client:
        for thread in threads:
            since = later_logged(stderr_path)
            began = time.perf_counter()
            ids = await add_thread(client, tally, thread)
            added = time.perf_counter() - began
            new_long = sum(len(passages(turn.content)) > 1 for turn in ids.values())
            waited = await settle(stderr_path, since, new_long) if new_long else 0.0
            began = time.perf_counter()
            await ask_thread(client, tally, thread, ids)
            asked = time.perf_counter() - began
            await per_thread_calls(client, tally, thread)
            tally.threads.append(
                {
                    "dataset": thread.dataset,
                    "thread": thread.thread_id,
                    "turns": len(thread.turns),
                    "added": len(ids),
                    "long": new_long,
                    "questions": len(thread.questions),
                    "add_seconds": added,
                    "settle_seconds": waited,
                    "search_seconds": asked,
                }
            )
            print(
                f"{thread.thread_id}: {len(ids)} of {len(thread.turns)} turns added in {added:.0f} s "
                f"({new_long} long), later passages after {waited:.0f} s more, "
                f"{len(thread.questions)} searches in {asked:.0f} s",
                file=sys.stderr,
            )
        await facts(client, tally)


def definition_costs(tools: list[dict[str, Any]], counter: TokenCounter) -> dict[str, Any]:
    def total(values: Iterable[Any]) -> int:
        return sum(counter.count(compact(value)) for value in values)

    return {
        "tools": len(tools),
        "names": [tool["name"] for tool in tools],
        "definitions": total({k: v for k, v in tool.items() if k != "outputSchema"} for tool in tools),
        "anthropic": total(
            {"name": t["name"], "description": t.get("description", ""), "input_schema": t["inputSchema"]}
            for t in tools
        ),
        "output_schemas": total(tool["outputSchema"] for tool in tools if "outputSchema" in tool),
    }


async def listed(command: list[str], env: dict[str, str], workdir: Path) -> tuple[list[dict[str, Any]], str]:
    async with server.stdio(command, env, workdir, read_timeout=READ_TIMEOUT_SECONDS) as client:
        tools = (await client.list_tools()).tools
        instructions = client.instructions or ""
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools], instructions


async def run_definitions(
    settings: dict[str, str], scratch: Path, counter: TokenCounter
) -> list[dict[str, Any]]:
    rows = []
    for profile in PROFILES:
        name = profile or "default"
        workdir = scratch / f"profile-{name}"
        workdir.mkdir()
        env = server.clean_env(workdir / "data", settings)
        env.pop("MCP_MEMORY_TOOLS", None)
        if profile is not None:
            env["MCP_MEMORY_TOOLS"] = profile
        tools, instructions = await listed(server.serve_command(), env, workdir)
        rows.append(
            {"server": f"mcp-memory, MCP_MEMORY_TOOLS={profile or '(unset)'}"}
            | definition_costs(tools, counter)
            | {"instructions": counter.count(instructions)}
        )
    reference = reference_entry()
    node = shutil.which("node")
    if reference is None or node is None:
        print(
            f"the reference memory server ({REFERENCE_PACKAGE}) is not installed in .cache/server-memory "
            "(or $SERVER_MEMORY_DIR), or node is missing: its row is skipped",
            file=sys.stderr,
        )
        return rows
    workdir = scratch / "reference"
    workdir.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    env["MEMORY_FILE_PATH"] = str(workdir / "memory.jsonl")
    tools, instructions = await listed([node, str(reference)], env, workdir)
    rows.append(
        {"server": f"reference {REFERENCE_PACKAGE}"}
        | definition_costs(tools, counter)
        | {"instructions": counter.count(instructions)}
    )
    return rows


def reference_entry() -> Path | None:
    override = os.environ.get("SERVER_MEMORY_DIR")
    install = Path(override) if override else _ROOT / ".cache" / "server-memory"
    entry = install / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    return entry if entry.is_file() else None
