"""What changed between two revisions of a memory, word by word, for the memory page to mark up.

Words keep the whitespace around them as tokens of their own, so the "same" and "removed" parts join
back into the old text exactly, and the "same" and "added" parts into the new one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

DiffOp = Literal["same", "added", "removed"]

_TOKENS = re.compile(r"\s+|\S+")
# Token pairs compared exactly, at most (see word_diff).
EXACT_PAIRS = 4_000_000


@dataclass(frozen=True)
class DiffPart:
    op: DiffOp
    text: str


def word_diff(old: str, new: str) -> list[DiffPart]:
    """The parts of old and new in reading order: unchanged, removed from old, added in new. A
    replacement reads as its removed words, then its added ones; neighbours of one kind are merged."""
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    # A revision mostly changes a few words: what both start and end with is the same, uncompared.
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    middle_before, middle_after = before[start : len(before) - end], after[start : len(after) - end]

    parts: list[DiffPart] = []
    _append(parts, "same", "".join(before[:start]))
    # SequenceMatcher's junk heuristic would stop common words and spaces anchoring a match, a poorer
    # diff; only past a size where the exact comparison could stall the page is it worth that.
    exact = len(middle_before) * len(middle_after) <= EXACT_PAIRS
    matcher = SequenceMatcher(None, middle_before, middle_after, autojunk=not exact)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _append(parts, "same", "".join(middle_before[i1:i2]))
        else:  # a replace is its removed words, then its added ones; an insert or delete has one
            _append(parts, "removed", "".join(middle_before[i1:i2]))
            _append(parts, "added", "".join(middle_after[j1:j2]))
    _append(parts, "same", "".join(before[len(before) - end :]))
    return parts


def _append(parts: list[DiffPart], op: DiffOp, text: str) -> None:
    if not text:
        return
    if parts and parts[-1].op == op:
        parts[-1] = DiffPart(op, parts[-1].text + text)
    else:
        parts.append(DiffPart(op, text))
