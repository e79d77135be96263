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
    git -C /work/main worktree add /tmp/base HEAD && cp bench/tool_tokens.py /tmp/
    cd /tmp && SERVER_MEMORY_DIR=/work/main/.cache/server-memory PYTHONPATH=/tmp/base timeout 2400 \
        /work/main/.venv/bin/python /tmp/tool_tokens.py \
        --beam /work/shared/data/beam/100K --locomo /work/shared/data/locomo/locomo_dev.json \
        --json /tmp/tool_tokens_baseline.json > /tmp/tool_tokens_baseline.md

1. Tool results. The model reads a result's text: the `text` of its TextContent blocks, concatenated;
   its tokens are reported, and separately those of `json.dumps(structured_content, separators=(",",
   ":"))` (ASCII-escaped, json's default). One server holds everything. BEAM (bench/_beam_data.py):
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

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

# This checkout (a copy elsewhere, e.g. in /tmp, finds bench/ and mcp_memory on PYTHONPATH instead).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._beam_data import Conversation, conversation_folders, first_messages, load_conversation, recall
from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.search.passages import passages

_ROOT = Path(__file__).resolve().parents[1]
TOP = 10
SEARCH_TYPES = ["turn"]
READ_TIMEOUT_SECONDS = 600.0  # the first search waits for a whole conversation to be embedded
LATER_LINE = re.compile(r"later passages embedded: (\d+) long memories in all, none waiting")
SETTLE_SECONDS = 900
WORD = re.compile(r"[a-z0-9_]+")
ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)")  # a JSON string escape (\n, \", \u00e9) in a result's text
MOSTLY_LONG = (5, 8)  # of 10 hits: searches where at least this many hits are long
PROFILES: tuple[str | None, ...] = (None, "core", "standard", "all")  # None: MCP_MEMORY_TOOLS unset
FACTS = (
    ("semantic", "The user's project stores its data in PostgreSQL 15 with the pgvector extension."),
    ("preference", "The user prefers short answers with a code example in Python."),
    ("procedural", "To release, the user runs `make release` and then tags the commit vMAJOR.MINOR.PATCH."),
    ("episodic", "On 2024-03-15 the user fixed the login timeout by raising the session TTL to 30 minutes."),
)
REFERENCE_PACKAGE = "@modelcontextprotocol/server-memory"


# ---- the server ----------------------------------------------------------------------------------------


def server_env(data_dir: Path, settings: dict[str, str]) -> dict[str, str]:
    """This process's environment (PYTHONPATH too) without the developer's MCP_MEMORY_* settings, plus
    the bench's."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    return env | {
        "MCP_MEMORY_DATA_DIR": str(data_dir),
        "MCP_MEMORY_USER_ID": "bench",
        "MCP_MEMORY_EMBEDDING__PROVIDER": "local",
        "MCP_MEMORY_LOG_LEVEL": "INFO",  # the line that says the later passages are embedded
        **settings,
    }


def mcp_memory_command() -> list[str]:
    """`python -m mcp_memory serve` with this Python: the server is the mcp_memory this process would
    import (a PYTHONPATH checkout first, else the installed one)."""
    return [sys.executable, "-m", "mcp_memory", "serve", "--in-process"]  # no resident left behind


def server_code(env: dict[str, str]) -> str:
    """Where the server's mcp_memory is imported from, as its process will see it."""
    found = subprocess.run(
        [sys.executable, "-c", "import mcp_memory; print(mcp_memory.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    return found.stdout.strip() or found.stderr.strip()[-300:]


@asynccontextmanager
async def connect(command: list[str], env: dict[str, str], workdir: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=workdir)
    with (workdir / "server.stderr").open("a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), read_timeout_seconds=READ_TIMEOUT_SECONDS
        ) as client:
            yield client


# ---- counting ------------------------------------------------------------------------------------------


@dataclass
class Measured:
    """One tool call: the tokens of what it returned."""

    dataset: str
    tool: str
    arguments: str  # the call's arguments, as a row shows them
    text_tokens: int  # the TextContent blocks' text, concatenated: what the model reads
    structured_tokens: int | None  # compact JSON of structured_content
    is_error: bool = False
    content_tokens: int | None = None  # add_turn: the stored message's own tokens
    hits: int | None = None  # search_memory: hits returned
    long_hits: int | None = None  # search_memory: hits that are long memories
    ms: float = 0.0


@dataclass
class Tally:
    counter: TokenCounter
    calls: list[Measured] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    threads: list[dict[str, Any]] = field(default_factory=list)

    def tokens(self, text: str) -> int:
        return self.counter.count(text)


def result_text(result: Any) -> str:
    return "".join(part.text for part in result.content if getattr(part, "type", None) == "text")


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


async def measure(
    client: Client,
    tally: Tally,
    dataset: str,
    tool: str,
    arguments: dict[str, Any],
    shown: str,
    **extra: Any,
) -> tuple[dict[str, Any] | None, str, Measured]:
    """Call a tool; count what it returned; the structured result (None on an error) and its text."""
    began = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - began) * 1000
    text = result_text(result)
    structured = result.structured_content
    row = Measured(
        dataset,
        tool,
        shown,
        tally.tokens(text),
        tally.tokens(compact(structured)) if structured is not None else None,
        is_error=bool(result.is_error),
        ms=elapsed,
        **extra,
    )
    tally.calls.append(row)
    if result.is_error:
        print(f"{dataset} {tool}({shown}) refused: {text[:300]}", file=sys.stderr)
        return None, text, row
    return structured, text, row


def turn_id(structured: dict[str, Any]) -> str:
    """add_turn's memory id: `id` once results are flat, `turn.id` before."""
    return str(structured.get("id") or structured["turn"]["id"])


def hits_of(structured: dict[str, Any]) -> list[dict[str, Any]]:
    return structured.get("results") or structured.get("hits") or []


# ---- evidence visible ----------------------------------------------------------------------------------


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 3}


def words_all(text: str) -> set[str]:
    """Every word and number of a result's text, its JSON escapes read as spaces."""
    return set(WORD.findall(ESCAPE.sub(" ", text).lower()))


def strings_of(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def visible(evidence: str, shown: set[str]) -> bool:
    """At least half of the evidence's distinct words (len > 3) are among the words shown."""
    wanted = words(evidence)
    return not wanted or len(wanted & shown) * 2 >= len(wanted)


def evidence_rows(
    ranked: list[Any], hits: list[dict[str, Any]], text: str, evidence: list[Any], contents: dict[Any, str]
) -> dict[str, Any]:
    """Of the evidence ranked in the top 10: how much is visible in its hit's returned strings, and in
    the whole result text."""
    whole = words(ESCAPE.sub(" ", text))  # JSON text's "\\nword" reads as a line break, then "word"
    found = visible_hit = visible_text = 0
    for item in dict.fromkeys(evidence):
        if item not in ranked[:TOP] or item not in contents:
            continue
        found += 1
        hit = hits[ranked.index(item)]
        visible_hit += visible(contents[item], words(" ".join(strings_of(hit))))
        visible_text += visible(contents[item], whole)
    total = len(set(evidence))
    return {
        "evidence": total,
        "found": found,
        "visible_in_hit": visible_hit,
        "visible_in_text": visible_text,
        "visible@10": visible_hit / total,
        "visible_text@10": visible_text / total,
    }


# ---- the datasets --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    key: Any  # BEAM message id or LoCoMo dia_id
    role: str
    content: str
    said_at: datetime


@dataclass(frozen=True)
class Ask:
    label: str  # BEAM ability or LoCoMo category
    text: str
    evidence: list[Any]
    facts: tuple[str, ...] = ()  # what an answer must state: BEAM's rubric "should state: X", LoCoMo's answer


RUBRIC_FACT = re.compile(r"should (?:state|mention)\s*:\s*(.+)", re.IGNORECASE)
# Their rubrics test how an answer is written (code blocks, saying there is a contradiction), not facts.
NO_FACTS = {"contradiction_resolution", "instruction_following", "preference_following", "abstention"}


def rubric_facts(folder: Path) -> dict[str, tuple[str, ...]]:
    """Per BEAM question: the facts its rubric says an answer must state (short ones: at most 8 words)."""
    probing = json.loads((folder / "probing_questions.json").read_text())
    found: dict[str, tuple[str, ...]] = {}
    for ability, questions in probing.items():
        for q in questions:
            if ability in NO_FACTS:
                continue
            rubric = q.get("rubric") or []
            items = rubric if isinstance(rubric, list) else [rubric]
            facts = [m.group(1).strip(" .'\"") for item in items if (m := RUBRIC_FACT.search(str(item)))]
            found[q["question"]] = tuple(f for f in facts if f and len(f.split()) <= 8)
    return found


def fact_visible(fact: str, shown: set[str]) -> bool:
    """Every number and at least two thirds of the other words (len > 3) of the fact are shown."""
    tokens = set(WORD.findall(fact.lower()))
    numbers = {t for t in tokens if any(c.isdigit() for c in t)}
    others = {t for t in tokens - numbers if len(t) > 3}
    return numbers <= shown and (not others or 3 * len(others & shown) >= 2 * len(others))


@dataclass(frozen=True)
class Thread:
    dataset: str  # "BEAM" or "LoCoMo"
    thread_id: str
    turns: list[Turn]
    questions: list[Ask]


def beam_threads(
    root: Path, names: list[str] | None, limit: int | None, long_only: bool = False
) -> list[Thread]:
    """One thread per conversation; with `long_only`, only its long messages (more than one passage),
    so that every hit of a search is a long memory (questions whose evidence is short find less)."""
    threads = []
    for folder in conversation_folders(root, names):
        conversation: Conversation = load_conversation(folder)
        facts = rubric_facts(folder)
        if limit is not None:
            conversation = first_messages(conversation, limit)
        kept = [m for m in conversation.messages if not long_only or len(passages(m.content)) > 1]
        threads.append(
            Thread(
                "BEAM long only" if long_only else "BEAM",
                f"beam-{conversation.name}{'-long' if long_only else ''}",
                [Turn(m.id, m.role, m.content, m.said_at) for m in kept],
                [
                    Ask(q.ability, q.text, list(q.evidence), facts.get(q.text, ()))
                    for q in conversation.questions
                ],
            )
        )
    return threads


CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def session_time(text: str) -> datetime:
    """LoCoMo writes '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_threads(path: Path, samples: int | None, limit: int | None) -> list[Thread]:
    threads = []
    for sample in json.loads(path.read_text())[:samples]:
        conversation = sample["conversation"]
        roles = {conversation["speaker_a"]: "user", conversation["speaker_b"]: "assistant"}
        turns = []
        session = 1
        while f"session_{session}" in conversation:
            when = session_time(conversation[f"session_{session}_date_time"])
            for number, turn in enumerate(conversation[f"session_{session}"]):
                turns.append(
                    Turn(
                        turn["dia_id"],
                        roles.get(turn["speaker"], "user"),
                        f"{turn['speaker']}: {turn['text']}",
                        when + timedelta(seconds=number),
                    )
                )
            session += 1
        if limit is not None:
            turns = turns[:limit]
        present = {t.key for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES or not qa.get("evidence"):
                continue
            evidence = [e for e in qa["evidence"] if limit is None or e in present]
            if evidence:
                answer = str(qa.get("answer", "")).strip()
                facts = (answer,) if answer and len(answer.split()) <= 8 else ()
                questions.append(Ask(CATEGORIES[qa["category"]], qa["question"], evidence, facts))
        threads.append(Thread("LoCoMo", f"locomo-{sample['sample_id']}", turns, questions))
    return threads


# ---- the run -------------------------------------------------------------------------------------------


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
    env = server_env(workdir / "data", settings)
    stderr_path = workdir / "server.stderr"
    async with connect(mcp_memory_command(), env, workdir) as client:
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


# ---- definitions ---------------------------------------------------------------------------------------


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
    async with connect(command, env, workdir) as client:
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
        env = server_env(workdir / "data", settings)
        env.pop("MCP_MEMORY_TOOLS", None)
        if profile is not None:
            env["MCP_MEMORY_TOOLS"] = profile
        tools, instructions = await listed(mcp_memory_command(), env, workdir)
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


# ---- the report ----------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"mean": statistics.fmean(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}


def call_rows(tally: Tally) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[Measured]] = {}
    for one in tally.calls:
        if not one.is_error:
            groups.setdefault((one.dataset, one.tool, one.arguments), []).append(one)
    rows = []
    for (dataset, tool, arguments), made in groups.items():
        row: dict[str, Any] = {
            "dataset": dataset,
            "call": tool,
            "arguments": arguments,
            "n": len(made),
            "text": spread([m.text_tokens for m in made]),
            "structured": spread([m.structured_tokens for m in made if m.structured_tokens is not None]),
        }
        if tool == "add_turn":
            row["content_mean"] = statistics.fmean(m.content_tokens or 0 for m in made)
        if tool == "search_memory":
            row["hits_mean"] = statistics.fmean(m.hits or 0 for m in made)
        rows.append(row)
    rows.sort(key=lambda r: r["dataset"] == "-")
    return rows


def long_rows(tally: Tally) -> list[dict[str, Any]]:
    rows = []
    for dataset in dict.fromkeys(q["dataset"] for q in tally.questions):
        asked = [q for q in tally.questions if q["dataset"] == dataset]
        for label, chosen in (
            ("every search", asked),
            *(
                (f"at least {most} of {TOP} hits long", [q for q in asked if q["long_hits"] >= most])
                for most in MOSTLY_LONG
            ),
            (f"all {TOP} hits long", [q for q in asked if q["hits"] == TOP and q["long_hits"] == TOP]),
            ("no hit long", [q for q in asked if q["hits"] and not q["long_hits"]]),
        ):
            hits = sum(q["hits"] for q in chosen)
            rows.append(
                {
                    "dataset": dataset,
                    "searches": label,
                    "n": len(chosen),
                    "long_share": sum(q["long_hits"] for q in chosen) / hits if hits else None,
                    "text_per_search": statistics.fmean(q["text_tokens"] for q in chosen) if chosen else None,
                    "text_per_hit": sum(q["text_tokens"] for q in chosen) / hits if hits else None,
                    "structured_per_search": (
                        statistics.fmean(q["structured_tokens"] or 0 for q in chosen) if chosen else None
                    ),
                    "structured_per_hit": sum(q["structured_tokens"] or 0 for q in chosen) / hits
                    if hits
                    else None,
                }
            )
    return rows


def hit_rows(tally: Tally) -> list[dict[str, Any]]:
    """Hit by hit: the tokens of each hit's compact JSON (in structured_content), long hits apart."""
    rows = []
    for dataset in dict.fromkeys(q["dataset"] for q in tally.questions):
        asked = [q for q in tally.questions if q["dataset"] == dataset]
        for label, wanted in (("long memory", True), ("one passage", False)):
            tokens = [n for q in asked for is_long, n in q["hit_tokens"] if is_long == wanted]
            rows.append({"dataset": dataset, "hits": label, "n": len(tokens)} | spread(tokens))
    return rows


def recall_rows(tally: Tally) -> list[dict[str, Any]]:
    rows = []
    for dataset in dict.fromkeys(q["dataset"] for q in tally.questions):
        asked = [q for q in tally.questions if q["dataset"] == dataset]
        groups = {"overall": asked} | {
            label: [q for q in asked if q["label"] == label] for label in sorted({q["label"] for q in asked})
        }
        for label, chosen in groups.items():
            found = sum(q["found"] for q in chosen)
            rows.append(
                {
                    "dataset": dataset,
                    "questions": label,
                    "n": len(chosen),
                    "R@10": statistics.fmean(q["R@10"] for q in chosen),
                    "visible@10": statistics.fmean(q["visible@10"] for q in chosen),
                    "visible_text@10": statistics.fmean(q["visible_text@10"] for q in chosen),
                    "ranked_evidence": found,
                    "visible_share": sum(q["visible_in_hit"] for q in chosen) / found if found else None,
                    "visible_text_share": sum(q["visible_in_text"] for q in chosen) / found
                    if found
                    else None,
                    # of the answers' facts (questions that name some), the share in the result's text
                    "fact_questions": sum(1 for q in chosen if q["facts"]),
                    "facts_visible": sum(q["facts_visible"] for q in chosen) / facts
                    if (facts := sum(q["facts"] for q in chosen))
                    else None,
                }
            )
    return rows


def fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def print_report(results: dict[str, Any]) -> None:
    print(f"\n{results['header']}\n")
    if results["calls"]:
        print(
            "Tool results, tokens (o200k_base): text = the TextContent the model reads; structured = compact JSON\n"
        )
        print(
            "| data | call | arguments | n | text mean | text p50 | text p95 | structured mean "
            "| structured p95 | stored content mean | text / content |"
        )
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in results["calls"]:
            text, structured = row["text"], row["structured"]
            content = row.get("content_mean")
            ratio = text["mean"] / content if content else None
            print(
                f"| {row['dataset']} | {row['call']} | {row['arguments']} | {row['n']} | {fmt(text['mean'])} "
                f"| {fmt(text['p50'])} | {fmt(text['p95'])} | {fmt(structured.get('mean'))} "
                f"| {fmt(structured.get('p95'))} | {fmt(content)} | {fmt(ratio, 2)} |"
            )
        errors = results["errors"]
        if errors:
            print(f"\n{len(errors)} calls answered with an error (left out above): " + "; ".join(errors[:10]))
    if results["long"]:
        print(
            f"\nsearch_memory (limit {TOP}) by how many hits are long memories (more than one passage), tokens\n"
        )
        print(
            "| data | searches | n | long share of hits | text per search | text per hit "
            "| structured per search | structured per hit |\n|---|---|---:|---:|---:|---:|---:|---:|"
        )
        for row in results["long"]:
            print(
                f"| {row['dataset']} | {row['searches']} | {row['n']} | {fmt(row['long_share'], 2)} "
                f"| {fmt(row['text_per_search'])} | {fmt(row['text_per_hit'])} "
                f"| {fmt(row['structured_per_search'])} | {fmt(row['structured_per_hit'])} |"
            )
        print(
            f"\nsearch_memory hit by hit: tokens of each hit's compact JSON in structured_content "
            f"({TOP} long hits = {TOP} x the mean)\n"
        )
        print(f"| data | hits | n | mean | p50 | p95 | {TOP} such hits |\n|---|---|---:|---:|---:|---:|---:|")
        for row in results["hit_tokens"]:
            print(
                f"| {row['dataset']} | {row['hits']} | {row['n']} | {fmt(row.get('mean'))} "
                f"| {fmt(row.get('p50'))} | {fmt(row.get('p95'))} "
                f"| {fmt(TOP * row['mean'] if row.get('mean') is not None else None)} |"
            )
    if results["recall"]:
        print(
            "\nRetrieval from the same searches: R@10 of the evidence; visible@10: the evidence ranked in the "
            "top 10 AND at least half its words (len > 3) in that hit's returned strings (text: anywhere "
            "in the result text); visible share: of the evidence ranked; answer facts shown: of the facts "
            "an answer must state (BEAM: the rubric's short 'should state: X'; LoCoMo: a short answer), the "
            "share whose numbers and two thirds of whose words are in the result text\n"
        )
        print(
            "| data | questions | n | R@10 | visible@10 | visible@10 (result text) | evidence ranked "
            "| visible share | visible share (result text) | questions with facts | answer facts shown |"
            "\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        )
        for row in results["recall"]:
            print(
                f"| {row['dataset']} | {row['questions']} | {row['n']} | {row['R@10']:.3f} "
                f"| {row['visible@10']:.3f} | {row['visible_text@10']:.3f} | {row['ranked_evidence']} "
                f"| {fmt(row['visible_share'], 3)} | {fmt(row['visible_text_share'], 3)} "
                f"| {row['fact_questions']} | {fmt(row['facts_visible'], 3)} |"
            )
    print(
        "\nTool definitions (tools/list), tokens: (a) each tool but its outputSchema, compact JSON "
        "(mcp_memory/cli/tool_profiles.py); (b) {name, description, input_schema} as Anthropic's API "
        "receives them; (c) the output schemas; and the initialize result's instructions\n"
    )
    print(
        "| server | tools | (a) definitions | (b) name+description+input_schema | (c) output schemas "
        "| instructions |\n|---|---:|---:|---:|---:|---:|"
    )
    for row in results["definitions"]:
        print(
            f"| {row['server']} | {row['tools']} | {row['definitions']:,} | {row['anthropic']:,} "
            f"| {row['output_schemas']:,} | {row['instructions']:,} |"
        )
    if not any(row["server"].startswith("reference") for row in results["definitions"]):
        print(
            f"\nThe reference memory server ({REFERENCE_PACKAGE}) is not installed locally "
            "(.cache/server-memory or $SERVER_MEMORY_DIR): its row is skipped."
        )
    if results["threads"]:
        print(
            "\n| thread | turns added | long | questions | add_turn s | waited for passages s | searches s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for row in results["threads"]:
            print(
                f"| {row['thread']} | {row['added']} of {row['turns']} | {row['long']} | {row['questions']} "
                f"| {row['add_seconds']:.0f} | {row['settle_seconds']:.0f} | {row['search_seconds']:.0f} |"
            )
    print(f"\n{results['elapsed_seconds']:.0f} s in all")


async def run(threads: list[Thread], settings: dict[str, str]) -> dict[str, Any]:
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-tool-tokens-") as tmp:
        scratch = Path(tmp)
        counter = TokenCounter.load("o200k_base", cache_dir=scratch / "tiktoken")
        tally = Tally(counter)
        code = server_code(server_env(scratch / "probe", settings))
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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    settings = dict(item.split("=", 1) for item in args.setting)
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
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
