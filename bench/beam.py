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

import functools
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._beam_calls import (
    READ_TIMEOUT_SECONDS,
    TIMELINE_BUDGETS,
    Options,
    Run,
    add_conversation,
    ask,
    ask_timeline,
    settle,
)
from bench._beam_report import attach_server_times, report
from bench.harness import cli, server, table
from bench.harness.data.beam import (
    Conversation,
    conversation_folders,
    first_messages,
    load_conversation,
)
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.search.passages import passages


async def serve_and_run(conversations: list[Conversation], options: Options, workdir: Path) -> Run:
    """One `mcp-memory serve` over stdio on a fresh data dir: add and ask each conversation in turn."""
    await anyio.Path(workdir).mkdir(parents=True)
    stderr_path = workdir / "server.stderr"
    command = [server.console_script(), "serve", "--in-process"]  # on a throwaway data dir: no resident
    env = server.clean_env(workdir / "data", options.settings)
    run = Run()
    counter = TokenCounter.load("o200k_base", cache_dir=workdir / "tiktoken") if options.timeline else None
    async with server.stdio(command, env, workdir, read_timeout=READ_TIMEOUT_SECONDS) as client:
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
    parser = cli.parser(__doc__)
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
    settings = cli.settings(args.setting)
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
    table.save(args.json, results)


if __name__ == "__main__":
    main()
