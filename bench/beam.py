"""Retrieval quality and latency on BEAM's 100K conversations, measured as a client would: the real
`mcp-memory serve` process over stdio, driven by the MCP SDK's own `Client`, through its tools only.

    .venv/bin/python bench/beam.py ../shared/data/beam/100K                      # one server, all ten
    .venv/bin/python bench/beam.py ../shared/data/beam/100K --per-conversation   # a fresh one for each
    .venv/bin/python bench/beam.py ../shared/data/beam/100K --conversations 1 --limit-messages 40
    .venv/bin/python bench/beam.py ../shared/data/beam/100K --modes hybrid,vector,text   # each mode
    .venv/bin/python bench/beam.py ../shared/data/beam/100K --conversations 1,2 --pace-ms 200 \
        --setting MCP_MEMORY_SUMMARY__INLINE_SECONDS=60   # paced turns, a server setting
    .venv/bin/python bench/beam.py ../shared/data/beam/100K --settled --timeline   # repeatable; timeline

A temporary data dir, the embedded SQLite store and the local ONNX embedder (the defaults). Every message
of a conversation is added with `add_turn` into one thread, in order (created_at: its time anchor's
date, a minute per message since the anchor; the ` ->-> b,t` marker stripped); a message the server
refuses is reported and left out, as a client would go on. Then each probing question that names its evidence is searched with `search_memory` (that
thread, types ["turn"], limit 20; with `--modes`, once in each mode) and the returned memory ids are
mapped back to BEAM message ids: Recall@k = the mean share of a question's evidence messages in the top
k, overall and per ability; for knowledge updates, how often an updated_info message ranks above every
original_info one (bench/harness/data/beam.py).

Latency, client side: each call's round trip. Server side: the server's own line for each request
(`mcp_memory.requests`, `ms=`, logged at INFO to its stderr), exact per call; the Prometheus histogram
is not used because /metrics (and observability.metrics_port) is served on SSE/HTTP only, never over
stdio, and would give buckets only. A search by meaning waits for the turns still waiting for their
(first passage's) vector, so the first search after a conversation is added is reported on its own row;
the other questions are asked once the server logs that it embedded the long messages' later passages
(service/vectors.py), as a client asking later would find them. With `--settled` the first question
is asked again once they are, and only that ranking is scored: two runs give the same figures. An
answer that holds the best hits oldest first (`in_time_order`: an account over time) is asked again
with limit k for each R@k, as a client asking for k hits would.

With `--timeline`, each question is also asked of the `timeline` tool (that thread, the question as
its query, at TIMELINE_BUDGETS tokens), and each conversation's whole outline is read without a query
at the same budgets: the share of each question's evidence messages among the exchanges returned (a
user turn's id or its reply's), per ability, with the tokens the answers held (o200k_base, the JSON text a client reads).

With `--per-conversation` each conversation gets a fresh server and store (as other memory servers are
compared); without it one server holds the whole split, one thread per conversation. Prints markdown
tables; `--json` also writes every question's ranking. Nothing is asserted. The data is read from the
path given, never copied. Cite the paper when reporting figures: Tavakoli et al., "Beyond a Million
Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs", arXiv 2510.27246.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness.data.beam import (
    KS,
    Conversation,
    Question,
    conversation_folders,
    first_messages,
    load_conversation,
    recall,
    score,
    summarize,
)
from bench.harness.timing import percentile
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.models import short_id
from mcp_memory.search.passages import passages

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


def server_env(data_dir: Path, settings: dict[str, str]) -> dict[str, str]:
    """This process's environment without the developer's MCP_MEMORY_* settings, plus the bench's."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    return env | {
        "MCP_MEMORY_DATA_DIR": str(data_dir),
        "MCP_MEMORY_USER_ID": "bench",
        "MCP_MEMORY_EMBEDDING__PROVIDER": "local",
        "MCP_MEMORY_LOG_LEVEL": "INFO",  # the request lines the server-side figures come from
        **settings,
    }


def mcp_memory_command() -> str:
    script = Path(sys.executable).parent / ("mcp-memory.exe" if os.name == "nt" else "mcp-memory")
    if not script.is_file():
        raise SystemExit(f"the mcp-memory console script is missing at {script}; run `pip install -e .[dev]`")
    return str(script)


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


def timeline_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of evidence timeline returned, per ability and overall, with and without the query."""
    by_ability: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_ability.setdefault(row["ability"], []).append(row)
    keys = [f"{kind}@{budget}" for kind in ("query", "outline") for budget in TIMELINE_BUDGETS]
    table = {
        name: {key: statistics.fmean(r[key] for r in group) for key in keys} | {"n": len(group)}
        for name, group in [*sorted(by_ability.items()), ("overall", rows)]
        if group
    }
    tokens = (
        {
            key: max(r[key] for r in rows)
            for key in [
                f"{kind}_tokens@{budget}" for kind in ("query", "outline") for budget in TIMELINE_BUDGETS
            ]
        }
        if rows
        else {}
    )
    print(
        "\n| ability | n |"
        + "".join(f" with question {b} |" for b in TIMELINE_BUDGETS)
        + "".join(f" whole outline {b} |" for b in TIMELINE_BUDGETS)
        + "\n|---|---:|"
        + "---:|" * len(keys)
    )
    for name, means in table.items():
        print(f"| {name} | {means['n']} |" + "".join(f" {means[key]:.3f} |" for key in keys))
    if tokens:
        print("\nmost tokens in one timeline answer: " + ", ".join(f"{k} {v}" for k, v in tokens.items()))
    return {"by_ability": table, "max_tokens": tokens}


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


async def serve_and_run(conversations: list[Conversation], options: Options, workdir: Path) -> Run:
    """One `mcp-memory serve` over stdio on a fresh data dir: add and ask each conversation in turn."""
    await anyio.Path(workdir).mkdir(parents=True)
    stderr_path = workdir / "server.stderr"
    params = StdioServerParameters(
        command=mcp_memory_command(),
        args=[
            "serve",
            "--in-process",
        ],  # the server itself, on a throwaway data dir (no resident left behind)
        env=server_env(workdir / "data", options.settings),
        cwd=workdir,
    )
    run = Run()
    counter = TokenCounter.load("o200k_base", cache_dir=workdir / "tiktoken") if options.timeline else None
    with stderr_path.open("w") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), read_timeout_seconds=READ_TIMEOUT_SECONDS
        ) as client:
            long_added = 0
            for conversation in conversations:
                began = time.perf_counter()
                ids = await add_conversation(client, conversation, run, options.pace_seconds)
                added = time.perf_counter() - began
                long_added += sum(
                    len(passages(m.content)) > 1 for m in conversation.messages if m.id in ids.values()
                )
                settled = functools.partial(settle, stderr_path, long_added)
                await ask(client, conversation, ids, options.modes, run, settled, options.settled)
                if counter is not None:
                    await ask_timeline(client, conversation, ids, run, counter)
                print(
                    f"conversation {conversation.name}: {len(conversation.messages)} messages added in "
                    f"{added:.0f} s, {len(conversation.questions)} questions",
                    file=sys.stderr,
                )
                run.conversations.append(
                    {
                        "conversation": conversation.name,
                        "messages": len(conversation.messages),
                        "add_seconds": added,
                    }
                )
    attach_server_times(run.calls, stderr_path.read_text(errors="replace"))
    return run


def attach_server_times(calls: list[Call], stderr: str) -> None:
    """The server logs one line per tool call, in the order the calls (sequential) were made."""
    logged = REQUEST_LINE.findall(stderr)
    if [tool for tool, _ in logged if tool in TIMED] != [c.tool for c in calls]:
        print(
            f"the server logged {len(logged)} tool calls for {len(calls)} made: no server-side times",
            file=sys.stderr,
        )
        return
    answered = [ms for tool, ms in logged if tool in TIMED]
    for made, ms in zip(calls, answered, strict=True):
        made.server_ms = float(ms)


def latency_rows(calls: list[Call], modes: list[str]) -> list[dict[str, Any]]:
    groups = {"add_turn": [c for c in calls if c.tool == "add_turn"]}
    for mode in modes:
        groups[f"search_memory, {mode} (after the first)"] = [
            c for c in calls if c.tool == "search_memory" and c.mode == mode and not c.first_search
        ]
    groups[f"first search after a conversation is added ({modes[0]})"] = [c for c in calls if c.first_search]
    groups["timeline"] = [c for c in calls if c.tool == "timeline"]
    rows = []
    for label, group in groups.items():
        if not group:
            continue
        row: dict[str, Any] = {"call": label, "n": len(group)}
        for side in ("client", "server"):
            values = [getattr(c, f"{side}_ms") for c in group]
            if None in values:
                continue
            row |= {f"{side}_p50_ms": percentile(values, 0.5), f"{side}_p95_ms": percentile(values, 0.95)}
            row[f"{side}_max_ms"] = max(values)
        rows.append(row)
    return rows


def report(run: Run, args: argparse.Namespace) -> dict[str, Any]:
    modes: list[str] = args.modes
    summaries = {
        mode: summarize([(q["ability"], q) for q in run.questions if q["mode"] == mode]) for mode in modes
    }
    latencies = latency_rows(run.calls, modes)
    print(
        f"\nBEAM 100K, {len(run.conversations)} conversations, {summaries[modes[0]]['questions']} questions; "
        f"{'a fresh server per conversation' if args.per_conversation else 'one server'}; "
        f"{f'{args.pace_ms:g} ms after each add_turn; ' if args.pace_ms else ''}"
        f"{''.join(f'{item}; ' for item in args.setting)}"
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n"
    )
    print("| mode | " + " | ".join(f"R@{k}" for k in KS) + " | knowledge updates: update first |")
    print("|---|" + "---:|" * len(KS) + "---:|")
    for mode, summary in summaries.items():
        overall = summary["overall"]
        print(
            f"| {mode} | "
            + " | ".join(f"{overall[f'R@{k}']:.3f}" for k in KS)
            + f" | {summary['updates_first']} of {summary['updates']} |"
        )
    for refusal in run.refused:
        print(
            f"\nrefused: conversation {refusal['conversation']}, message {refusal['message']}: {refusal['error']}"
        )
    first = summaries[modes[0]]
    others = modes[1:]
    print(
        "\n| ability | n | R@5 | R@10 | R@20 |"
        + "".join(f" R@10 {mode} |" for mode in others)
        + "\n|---|---:|---:|---:|---:|"
        + "---:|" * len(others)
    )
    for ability, row in first["by_ability"].items():
        print(
            f"| {ability} | {row['n']} | {row['R@5']:.3f} | {row['R@10']:.3f} | {row['R@20']:.3f} |"
            + "".join(f" {summaries[m]['by_ability'][ability]['R@10']:.3f} |" for m in others)
        )
    print(
        "\n| call | n | client p50 ms | client p95 ms | client max ms | server p50 ms | server p95 ms "
        "| server max ms |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for row in latencies:
        figures = [
            f"{row[key]:.1f}" if key in row else "n/a"
            for key in (
                "client_p50_ms",
                "client_p95_ms",
                "client_max_ms",
                "server_p50_ms",
                "server_p95_ms",
                "server_max_ms",
            )
        ]
        print(f"| {row['call']} | {row['n']} | " + " | ".join(figures) + " |")
    per_conversation = []
    print(
        "\n| conversation | messages | questions |"
        + "".join(f" R@10 {mode} |" for mode in modes)
        + " add_turn total s | first search client ms |\n|---|---:|---:|"
        + "---:|" * len(modes)
        + "---:|---:|"
    )
    for info in run.conversations:
        name = info["conversation"]
        recalls = {}
        for mode in modes:
            rows = [q["R@10"] for q in run.questions if q["conversation"] == name and q["mode"] == mode]
            recalls[mode] = statistics.fmean(rows) if rows else float("nan")
        asked = sum(1 for q in run.questions if q["conversation"] == name and q["mode"] == modes[0])
        searched = next((c for c in run.calls if c.first_search and c.conversation == name), None)
        per_conversation.append(
            info | {"questions": asked, "R@10": recalls, "first_search_ms": searched and searched.client_ms}
        )
        print(
            f"| {name} | {info['messages']} | {asked} |"
            + "".join(f" {recalls[mode]:.3f} |" for mode in modes)
            + f" {info['add_seconds']:.1f} | {searched.client_ms if searched else float('nan'):.0f} |"
        )
    timelines = timeline_report(run.timelines) if run.timelines else None
    return {
        "timeline": timelines,
        "per_conversation_servers": args.per_conversation,
        "summary": summaries,
        "latency": latencies,
        "conversations": per_conversation,
        "questions": run.questions,
        "refused": run.refused,
        "calls": [asdict(c) for c in run.calls],
    }


async def run_all(conversations: list[Conversation], options: Options, per_conversation: bool) -> Run:
    with tempfile.TemporaryDirectory(prefix="mcp-memory-beam-") as scratch:
        if not per_conversation:
            return await serve_and_run(conversations, options, Path(scratch) / "all")
        total = Run()
        for conversation in conversations:
            one = await serve_and_run([conversation], options, Path(scratch) / conversation.name)
            total.calls += one.calls
            total.questions += one.questions
            total.conversations += one.conversations
            total.refused += one.refused
            total.timelines += one.timelines
        return total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="BEAM's 100K folder (../shared/data/beam/100K)")
    parser.add_argument("--conversations", help="a comma-separated subset, e.g. 1,2 (default: all)")
    parser.add_argument(
        "--per-conversation", action="store_true", help="a fresh server and store for each conversation"
    )
    parser.add_argument(
        "--limit-messages",
        type=int,
        help="a quick run: each conversation's first N messages, and the questions with evidence there",
    )
    parser.add_argument(
        "--modes",
        type=lambda text: text.split(","),
        default=["hybrid"],
        help="search_memory modes to ask every question in, e.g. hybrid,vector,text (default: hybrid); "
        "the first search after a conversation is in the first",
    )
    parser.add_argument(
        "--pace-ms",
        type=float,
        default=0.0,
        help="pause this long after each add_turn (default 0: flat out), as turns come in a conversation",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting, e.g. MCP_MEMORY_SUMMARY__INLINE_SECONDS=60 (repeatable)",
    )
    parser.add_argument(
        "--settled",
        action="store_true",
        help="score only rankings asked once every passage is embedded (the first search is still timed)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help=f"also ask timeline, with and without the question, at {TIMELINE_BUDGETS} tokens",
    )
    parser.add_argument("--json", type=Path, help="also write the results (and every ranking) here")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.setting)
    if bad := [name for name in settings if not name.startswith("MCP_MEMORY_")]:
        parser.error(f"--setting takes MCP_MEMORY_* names; got {', '.join(bad)}")
    names = args.conversations.split(",") if args.conversations else None
    conversations = [load_conversation(folder) for folder in conversation_folders(args.data, names)]
    if args.limit_messages is not None:
        conversations = [first_messages(c, args.limit_messages) for c in conversations]
    options = Options(
        args.modes, args.pace_ms / 1000, settled=args.settled, timeline=args.timeline, settings=settings
    )
    run = anyio.run(run_all, conversations, options, args.per_conversation)
    results = report(run, args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
