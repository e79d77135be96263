r"""What the MCP surface costs a client, in tokens (GitHub issue 47, part 5): every token a tool returns
is read by the model, and every tool definition is sent to it in every conversation. Measured as a
client sees it: the real `mcp-memory serve` process over stdio (`python -m mcp_memory serve`, the
Python running this file), driven by the MCP SDK's own `Client`, on a temporary data dir with the local
ONNX embedder. Tokens are tiktoken's o200k_base (the repo's offline `TokenCounter`).

    .venv/bin/python bench/tool_tokens.py --beam ../shared/data/beam/100K \
        --locomo ../shared/data/locomo/locomo_dev.json --json /tmp/tool_tokens.json   # the dev data
    .venv/bin/python bench/tool_tokens.py --beam ../shared/data/beam/100K --conversations 1 \
        --locomo ../shared/data/locomo/locomo_dev.json --locomo-samples 1              # a quick run
    .venv/bin/python bench/tool_tokens.py --locomo ../shared/data/locomo/locomo_dev.json \
        --locomo-samples 1 --limit-messages 60 --setting MCP_MEMORY_SEARCH__FUSION=rrf  # a server setting
    # another checkout's server (and this file's imports), e.g. HEAD while the working tree changes:
    git -C /work/main worktree add /tmp/base HEAD && mkdir -p /tmp/tt && cp -r bench /tmp/tt/
    cd /tmp && SERVER_MEMORY_DIR=/work/main/.cache/server-memory PYTHONPATH=/tmp/base timeout 2400 \
        /work/main/.venv/bin/python /tmp/tt/bench/tool_tokens.py \
        --beam /work/shared/data/beam/100K --locomo /work/shared/data/locomo/locomo_dev.json \
        --json /tmp/tool_tokens_baseline.json > /tmp/tool_tokens_baseline.md

1. Tool results. The model reads a result's text: the `text` of its TextContent blocks, concatenated;
   its tokens are reported, and separately those of `json.dumps(structured_content, separators=(",",
   ":"))` (ASCII-escaped, json's default). One server holds everything. BEAM (bench/harness/data/beam.py):
   every message of a conversation is added with `add_turn` into thread beam-<n> (created_at from the
   time anchors); LoCoMo: every turn of a sample into thread locomo-<sample_id> ("speaker: text",
   speaker_a as user, speaker_b as assistant, the session's date plus a second per turn). add_turn's row
   also gives the mean tokens of the content it stored. Once the server logs that the thread's long
   messages' later passages are embedded (service/vectors.py; its stderr at INFO), every question that
   names its evidence (BEAM: every ability but abstention; LoCoMo: categories 1-4) is searched with
   `search_memory(query, thread_id, types=["turn"], limit=10, mode="hybrid")` (turns only, as
   bench/beam.py: the thread's summaries take no slot). Searches whose hits are long memories get their
   own rows, per search and per hit (and each hit's compact JSON is counted, long hits apart: 10 hits of
   long memories cost about 10 times their mean): a hit is long when the stored message has more than
   one passage (the repo's `passages()`), which is when the server's hit carries a non-null `passage`.
   The text is counted whole per search (the SDK renders it from the result, e.g. as indented JSON).
   Then, per thread, in this order: `get_working_memory` (default arguments, then recent=10),
   `list_memories(thread_id, limit=20)`, `summarize_thread`, `forget(thread_id, dry_run=true)`; once,
   at the end: `remember` of four facts (one of each type) and `memory_history` of the first. A call
   answered with an error is counted apart.
2. Definitions. A server per profile (MCP_MEMORY_TOOLS unset = the default, core, standard, all);
   tools/list counted three ways, each the sum over tools of a compact-JSON dump: (a) every field of the
   tool but its outputSchema (name, title, description, inputSchema, annotations: what
   mcp_memory/cli/tool_profiles.py counts), (b) what Anthropic's API receives from a client such as
   Claude Code, {name, description, input_schema}, (c) the output schemas; and the tokens of the
   `instructions` the server sends in its initialize result. The reference memory server
   (@modelcontextprotocol/server-memory) is counted the same way when it is installed where the tests
   install it (.cache/server-memory, or $SERVER_MEMORY_DIR); it is never installed here.
3. Retrieval, from the same searches: R@10 of the evidence (BEAM message ids; LoCoMo dia_ids), each
   memory id mapped back by add_turn's result (`id`, or `turn.id` before the results were flattened).
   "Evidence visible": an evidence message ranked in the top 10 is visible when at least half of its
   distinct words (lowercased, longer than 3 characters) appear in what the result returns for that hit
   (every string of the hit in structured_content: content, passage text, ...); also checked against
   the whole result text (its JSON escapes such as \n read as spaces). Reported as visible@10 (the mean
   share of a question's evidence ranked and visible: at most R@10) and as the share of ranked evidence
   that is visible.

Prints markdown tables; `--json` also writes every call's and every question's figures. Nothing is
asserted. The data is read from the paths given, never copied. Cite the datasets when reporting figures:
Tavakoli et al., "Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in LLMs", arXiv
2510.27246; Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio

# This checkout (a copy of bench/ elsewhere, e.g. /tmp/tt/bench, finds mcp_memory on PYTHONPATH instead).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._tool_tokens_calls import run_definitions, run_results
from bench._tool_tokens_count import Tally
from bench._tool_tokens_report import call_rows, hit_rows, long_rows, print_report, recall_rows
from bench._tool_tokens_threads import Thread, beam_threads, locomo_threads
from bench.harness import cli, server, table
from mcp_memory.llm.tokens import TokenCounter

# ---- the run and the command line ---------------------------------------------------------------------


async def run(threads: list[Thread], settings: dict[str, str]) -> dict[str, Any]:
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-tool-tokens-") as tmp:
        scratch = Path(tmp)
        counter = TokenCounter.load("o200k_base", cache_dir=scratch / "tiktoken")
        tally = Tally(counter)
        code = server.server_code(server.clean_env(scratch / "probe", settings))
        definitions = await run_definitions(settings, scratch, counter)
        if threads:
            await run_results(threads, settings, scratch, tally)
    header = (
        f"mcp-memory tool tokens: server code {code}; "
        f"{''.join(f'{k}={v}; ' for k, v in settings.items())}"
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    return {
        "header": header,
        "server_code": code,
        "settings": settings,
        "definitions": definitions,
        "calls": call_rows(tally),
        "long": long_rows(tally),
        "hit_tokens": hit_rows(tally),
        "recall": recall_rows(tally),
        "threads": tally.threads,
        "errors": [f"{m.dataset} {m.tool}({m.arguments})" for m in tally.calls if m.is_error],
        "questions": tally.questions,
        "every_call": [asdict(m) for m in tally.calls],
        "elapsed_seconds": time.perf_counter() - began,
    }


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument("--beam", type=Path, help="BEAM's 100K folder (../shared/data/beam/100K)")
    parser.add_argument("--locomo", type=Path, help="locomo_dev.json (../shared/data/locomo/locomo_dev.json)")
    parser.add_argument("--conversations", help="BEAM: a comma-separated subset, e.g. 1,2 (default: all)")
    parser.add_argument("--locomo-samples", type=int, help="LoCoMo: the first N conversations (default: all)")
    parser.add_argument(
        "--limit-messages",
        type=int,
        help="a quick run: each conversation's first N messages, and the questions with evidence there",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting, e.g. MCP_MEMORY_SEARCH__FUSION=rrf (repeatable)",
    )
    parser.add_argument(
        "--long-only",
        action="store_true",
        help="BEAM: each thread holds only the conversation's long messages (more than one passage), so "
        "every search returns 10 long memories (dataset 'BEAM long only')",
    )
    parser.add_argument("--json", type=Path, help="also write the results (every call and question) here")
    args = parser.parse_args()
    settings = cli.settings(args.setting)
    if bad := [name for name in settings if not name.startswith("MCP_MEMORY_")]:
        parser.error(f"--setting takes MCP_MEMORY_* names; got {', '.join(bad)}")
    threads: list[Thread] = []
    if args.beam:
        names = args.conversations.split(",") if args.conversations else None
        threads += beam_threads(args.beam, names, args.limit_messages, long_only=args.long_only)
    if args.locomo:
        threads += locomo_threads(args.locomo, args.locomo_samples, args.limit_messages)
    results = anyio.run(run, threads, settings)
    print_report(results)
    table.save(args.json, results)


if __name__ == "__main__":
    main()
