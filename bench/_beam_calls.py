"""bench/beam.py's calls to the server: each conversation's messages added with add_turn, each question
asked with search_memory (per mode) and timeline, rankings mapped back to BEAM message ids and scored,
and the wait for the server's log to say every passage is embedded (--settled)."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.harness.data.beam import (
    KS,
    Conversation,
    Question,
    recall,
    score,
)
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import short_id

TOP = 20
TIMELINE_BUDGETS = (2000, 4000, 8000)
READ_TIMEOUT_SECONDS = 600.0  # the first search waits for a whole conversation to be embedded


# The server's line for each request (mcp/middleware/request_log.py, RequestLog).
REQUEST_LINE = re.compile(r"method=tools/call target=(\S+) .*? outcome=ok ms=([0-9.]+)")
TIMED = ("add_turn", "search_memory", "timeline")


@dataclass
class Call:
    tool: str
    conversation: str
    client_ms: float
    first_search: bool = False  # the first search after its conversation was added
    mode: str | None = None  # search_memory's mode
    server_ms: float | None = None


@dataclass
class Run:
    """What one server saw: its calls in order, and each question's scored ranking."""

    calls: list[Call] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    timelines: list[dict[str, Any]] = field(default_factory=list)  # --timeline: each question's coverage
    conversations: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)  # messages add_turn refused


@dataclass(frozen=True)
class Options:
    modes: list[str]
    pace_seconds: float = 0.0  # a pause after each add_turn: turns arriving as a conversation goes
    settled: bool = False  # score only rankings asked once every passage is embedded
    timeline: bool = False  # also ask timeline
    settings: dict[str, str] = field(default_factory=dict)  # MCP_MEMORY_* given to the server


class Refused(Exception):
    """The tool answered with an error (is_error): what it said."""


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
    began = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - began) * 1000
    if result.is_error or result.structured_content is None:
        raise Refused(" ".join(getattr(part, "text", "") for part in result.content))
    return result.structured_content, elapsed


async def add_conversation(
    client: Client, conversation: Conversation, run: Run, pace_seconds: float
) -> dict[str, int]:
    """Every message into thread beam-<n>, in order; our memory id -> BEAM message id."""
    ids: dict[str, int] = {}
    for message in conversation.messages:
        try:
            out, ms = await call(
                client,
                "add_turn",
                {
                    "thread_id": f"beam-{conversation.name}",
                    "role": message.role,
                    "content": message.content,
                    "created_at": message.said_at.isoformat(),
                },
            )
        except Refused as refusal:  # e.g. longer than max_content_chars: a client would go on too
            run.refused.append(
                {"conversation": conversation.name, "message": message.id, "error": str(refusal)}
            )
            print(f"conversation {conversation.name}, message {message.id}: {refusal}", file=sys.stderr)
            continue
        ids[out["id"]] = message.id
        run.calls.append(Call("add_turn", conversation.name, ms))
        if pace_seconds:
            await anyio.sleep(pace_seconds)
    return ids


async def ask(
    client: Client,
    conversation: Conversation,
    ids: dict[str, int],
    modes: list[str],
    run: Run,
    settled: Callable[[], Awaitable[None]],
    rescore_first: bool = False,
) -> None:
    """Every question in each mode, the modes one after the other; after the first question (timed as
    the first search after the conversation was added), the rest once the server has embedded the long
    messages' later passages (`settled`). `rescore_first`: the first question is asked again then, and
    only that ranking of it is scored."""
    for mode in modes:
        for number, question in enumerate(conversation.questions):
            if mode == modes[0] and number == 1:
                await settled()
            if mode == modes[0] and number == 0 and rescore_first:
                _, ms = await call(
                    client,
                    "search_memory",
                    {
                        "query": question.text,
                        "thread_id": f"beam-{conversation.name}",
                        "types": ["turn"],
                        "limit": TOP,
                        "mode": mode,
                    },
                )
                run.calls.append(Call("search_memory", conversation.name, ms, first_search=True, mode=mode))
                await settled()
            asked = {
                "query": question.text,
                "thread_id": f"beam-{conversation.name}",
                "types": ["turn"],
                "limit": TOP,
                "mode": mode,
            }
            out, ms = await call(client, "search_memory", asked)
            first = mode == modes[0] and number == 0 and not rescore_first
            run.calls.append(Call("search_memory", conversation.name, ms, first_search=first, mode=mode))
            row = record(conversation, question, mode, ranked_ids(out, ids), out.get("time_filter"))
            if out.get("in_time_order"):
                # The best `limit`, oldest first: the first k of them are not the best k. Each R@k is
                # of the answer to limit=k, as a client asking for k hits gets.
                for k in KS:
                    if k < TOP:
                        arguments = {**asked, "limit": k}
                        fewer, fewer_ms = await call(client, "search_memory", arguments)
                        run.calls.append(Call("search_memory", conversation.name, fewer_ms, mode=mode))
                        row[f"R@{k}"] = recall(ranked_ids(fewer, ids), question.evidence, k)
                row["in_time_order"] = True
            run.questions.append(row)


def ranked_ids(out: dict[str, Any], ids: dict[str, int]) -> list[int | tuple[int | None, ...] | None]:
    """BEAM's message ids of an answer's hits; an exchange hit (unit "exchange") holds two messages at one
    rank: the turn and its reply."""
    return [
        (ids.get(hit["id"]), ids.get(hit["reply"]["id"])) if "reply" in hit else ids.get(hit["id"])
        for hit in out["results"]
    ]


async def ask_timeline(
    client: Client, conversation: Conversation, ids: dict[str, int], run: Run, counter: TokenCounter
) -> None:
    """--timeline: the conversation's outline at each budget, then each question as the query; the share
    of its evidence in the exchanges returned."""
    by_short = {short_id(memory_id): message for memory_id, message in ids.items()}
    thread = f"beam-{conversation.name}"

    def covered(out: dict[str, Any]) -> set[int]:
        shown = [item.get(key) for item in out["items"] for key in ("id", "reply_id")]
        return {by_short[s] for s in shown if s in by_short}

    outlines: dict[int, tuple[set[int], int]] = {}
    for budget in TIMELINE_BUDGETS:
        out, ms = await call(client, "timeline", {"thread_id": thread, "max_tokens": budget})
        run.calls.append(Call("timeline", conversation.name, ms))
        outlines[budget] = (
            covered(out),
            counter.count(json.dumps(out, separators=(",", ":"), ensure_ascii=False)),
        )
    for question in conversation.questions:
        row: dict[str, Any] = {"conversation": conversation.name, "ability": question.ability}
        evidence = set(question.evidence)
        for budget in TIMELINE_BUDGETS:
            out, ms = await call(
                client, "timeline", {"thread_id": thread, "query": question.text, "max_tokens": budget}
            )
            run.calls.append(Call("timeline", conversation.name, ms))
            row[f"query@{budget}"] = len(evidence & covered(out)) / len(evidence)
            row[f"query_tokens@{budget}"] = counter.count(
                json.dumps(out, separators=(",", ":"), ensure_ascii=False)
            )
            shown, tokens = outlines[budget]
            row[f"outline@{budget}"] = len(evidence & shown) / len(evidence)
            row[f"outline_tokens@{budget}"] = tokens
        run.timelines.append(row)


LATER_LINE = re.compile(r"later passages embedded: (\d+) long memories in all, none waiting")
SETTLE_SECONDS = 600


async def settle(stderr_path: Path, long_added: int) -> None:
    """Wait (at most SETTLE_SECONDS) until the server says it embedded the later passages of at least
    `long_added` long memories (service/vectors.py logs it when its queue drains). A client asking
    later, as people do, finds every passage embedded; asking within seconds of a flat-out replay of a
    whole conversation, a long message is found by its words and its first passage's meaning."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        logged = await anyio.Path(stderr_path).read_text(errors="replace")
        done = [int(n) for n in LATER_LINE.findall(logged)]
        if done and done[-1] >= long_added:
            return
        await anyio.sleep(0.5)
    print(f"the server did not report its later passages embedded within {SETTLE_SECONDS} s", file=sys.stderr)


def record(
    conversation: Conversation,
    question: Question,
    mode: str,
    ranked: list[int | tuple[int | None, ...] | None],
    time_filter: Any,
) -> dict[str, Any]:
    return {
        "conversation": conversation.name,
        "mode": mode,
        "ability": question.ability,
        "question": question.text,
        "evidence": list(question.evidence),
        "original": list(question.original),
        "updated": list(question.updated),
        "ranked": ranked,
        "time_filter": time_filter,
        **score(ranked, question),
    }
