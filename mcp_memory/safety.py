"""Instruction-like content in memories: a known prompt-injection path, flagged, never obeyed.

Stored text comes back into a model's context on recall. Whatever it says, it is data; these flags
tell the reading model (and a reviewer) that a memory looks like it is trying to steer a model:
overriding instructions, faking tool calls, or impersonating a role. Flags are computed when a memory
is written (kept in its metadata) and again when it is read, so memories written before a pattern
existed are flagged too. A flag never blocks a write: the user may be quoting an attack on purpose.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

FLAGS_KEY = "safety_flags"  # in a memory's metadata; the server owns it, a client's value is replaced

# Zero-width and bidi controls are dropped before matching, so "ig\u200bnore" still reads "ignore".
_INVISIBLE = dict.fromkeys(
    [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)

_PATTERNS: dict[str, list[str]] = {
    "instruction_override": [
        r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|"
        r"your|the|system|developer)\b[^.\n]{0,30}\b(instructions?|prompts?|rules|guidelines|directions|messages)",
        r"\bnew (system )?instructions?\s*:",
        r"\byou are now\b[^.\n]{0,40}\b(unrestricted|jailbroken|dan|developer mode|an? (ai|assistant|agent))",
        r"\b(reveal|print|repeat|leak)\b[^.\n]{0,30}\b(system prompt|your instructions|hidden instructions)",
        r"\bdo not (tell|inform|alert) the user\b",
        r"\bfrom now on,? (you|always|never)\b",
    ],
    "tool_call_syntax": [
        r"</?([\w-]+:)?(tool_call|tool_use|function_calls?|invoke|tool_result)\b",
        r'"(tool_calls|function_call)"\s*:',
        r'\{\s*"name"\s*:\s*"[^"]{1,64}"\s*,\s*"(arguments|parameters|input)"\s*:',
        r"\bcall (the )?(tool|function) [\w.-]+\s*\(",
    ],
    "role_tag": [
        r"<\|(im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|?>",
        r"\[/?inst\]|<<\s*/?sys\s*>>",
        r"</?(system|assistant|developer)>",
        r"(^|\n)\s*#{0,3}\s*(system|developer)\s*(prompt|message)?\s*:",
        r"(^|\n)\s*(human|assistant)\s*:\s",
    ],
    "delimiter_escape": [
        r"</\s*(memory|recalled_memories)\s*>",
    ],
}
# One alternation per flag: one scan of the text per flag rather than one per pattern.
_COMPILED = {
    flag: re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    for flag, patterns in _PATTERNS.items()
}
FLAG_NAMES: tuple[str, ...] = tuple(_PATTERNS)
# Every search hit is checked on read, and the same memories come back search after search: the flags of
# texts up to this long are remembered (at most FLAGS_CACHED of them, a few MB at most).
CACHED_UP_TO_CHARS = 4096
FLAGS_CACHED = 4096


def _normalized(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE)


def flags_of(text: str) -> list[str]:
    """Which kinds of instruction-like content the text holds, in a fixed order; [] when none."""
    if len(text) <= CACHED_UP_TO_CHARS:
        return list(_flags_cached(text))
    return list(_flags(text))


@functools.lru_cache(maxsize=FLAGS_CACHED)
def _flags_cached(text: str) -> tuple[str, ...]:
    return _flags(text)


def _flags(text: str) -> tuple[str, ...]:
    normalized = _normalized(text)
    return tuple(flag for flag, pattern in _COMPILED.items() if pattern.search(normalized))


def stamp(metadata: Mapping[str, Any], text: str) -> dict[str, Any]:
    """The metadata to store with a memory: the client's, with the server's flags (if any) in FLAGS_KEY."""
    stamped = {k: v for k, v in metadata.items() if k != FLAGS_KEY}
    found = flags_of(text)
    if found:
        stamped[FLAGS_KEY] = found
    return stamped


def flags_for(text: str, metadata: Mapping[str, Any]) -> list[str]:
    """A memory's flags on read: those stored at write time plus any found now."""
    stored = metadata.get(FLAGS_KEY)
    known: Iterable[Any] = stored if isinstance(stored, list) else []
    merged = {str(f) for f in known if f in FLAG_NAMES} | set(flags_of(text))
    return [flag for flag in FLAG_NAMES if flag in merged]
