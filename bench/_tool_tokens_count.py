"""bench/tool_tokens.py's counting: the constants, a call measured as a client sees it (the tokens of its text and
of its structured content), and whether an evidence message is visible in what a search returns."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client

from mcp_memory.llm.tokens import TokenCounter

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
