"""The part of a long memory a reader is shown: the run of whole sentences that holds the most of the
query's words, within a token budget (`focus`). search_memory narrows a long hit to it
(service/results.py), and recall shows each memory through it (service/recalled.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from mcp_memory.search.terms import terms

_WORD = re.compile(r"\S+")


# A long memory's hit shows its best passage narrowed to this many tokens: the sentences that hold the
# most of the query's words (bench/tool_tokens.py measured what this keeps of the evidence).
FOCUS_TOKENS = 80
_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")  # between sentences: after . ! ? and a space, or a line break


def focus(
    content: str,
    span: tuple[int, int],
    query_terms: Sequence[str],
    count: Callable[[str], int],
    max_tokens: int = FOCUS_TOKENS,
) -> tuple[int, int]:
    """The part of `content[span]` a client is shown: the run of whole sentences holding the most of
    the query's terms (the earliest such run) within `max_tokens`, or, when one sentence is longer,
    the words around its first match. Offsets into `content`, so the part is `content[start:end]`."""
    start, end = span
    if count(content[start:end]) <= max_tokens:
        return span
    wanted = set(query_terms)
    sentences = _sentences(content, start, end)
    found = [wanted.intersection(terms(content[s:e])) for s, e in sentences]
    # Each sentence counted once; a run costs about the sum of its sentences (one token more per joint,
    # for the space or line break between them), checked exactly once it is chosen.
    sizes = [count(content[s:e]) + 1 for s, e in sentences]
    # The best run: the most terms held, then one that starts at a match, then the earliest.
    best: tuple[int, bool, int, int] | None = None  # (terms held, starts at a match, first, last)
    for first in range(len(sentences)):
        held: set[str] = set()
        last, used = first, 0
        while last < len(sentences) and used + sizes[last] <= max_tokens + 1:
            held |= found[last]
            used += sizes[last]
            last += 1
        if last > first and (best is None or (len(held), bool(found[first])) > best[:2]):
            best = (len(held), bool(found[first]), first, last - 1)
    if best is not None and (best[0] > 0 or not any(found)):
        _, _, first, last = best
        while last > first and count(content[sentences[first][0] : sentences[last][1]]) > max_tokens:
            last -= 1  # the estimate was short: the run without its last sentence
        return _trimmed(content, sentences[first][0], sentences[last][1])
    # The best sentence alone is longer than max_tokens: the words around its first match.
    at = next((i for i, held in enumerate(found) if held), 0)
    return _words_around(content, sentences[at] if sentences else span, wanted, count, max_tokens)


def _sentences(content: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, at = [], start
    for gap in _BREAK.finditer(content, start, end):
        if content[at : gap.start()].strip():
            spans.append((at, gap.start()))
        at = gap.end()
    if content[at:end].strip():
        spans.append((at, end))
    return spans


def _trimmed(content: str, start: int, end: int) -> tuple[int, int]:
    while start < end and content[start].isspace():
        start += 1
    while end > start and content[end - 1].isspace():
        end -= 1
    return start, end


def _words_around(
    content: str, span: tuple[int, int], wanted: set[str], count: Callable[[str], int], max_tokens: int
) -> tuple[int, int]:
    words = [(span[0] + m.start(), span[0] + m.end()) for m in _WORD.finditer(content[span[0] : span[1]])]
    if not words:
        return span
    center = next((i for i, (s, e) in enumerate(words) if wanted.intersection(terms(content[s:e]))), 0)

    def window(radius: int) -> tuple[int, int]:  # more after the match than before, as snippet() does
        return words[max(0, center - radius // 3)][0], words[min(len(words), center + radius) - 1][1]

    low, high = 1, len(words)
    while low < high:
        mid = (low + high + 1) // 2
        if count(content[slice(*window(mid))]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return window(low)
