"""Fitting search results into a token budget: the best hits whole, long ones as a snippet of the match.

A client that asks for `max_tokens` gets hits best first, each counted with the server's tokenizer,
until the budget is spent. Each hit still to place may take an equal share of what is left; a hit that
fits its share comes back whole (and leaves the rest to the hits after it), a longer one comes back
as a snippet: its best passage (a long memory's part that matched, search/passages.py) when that fits,
else the words around its first match with the query (in that passage) cut to the share, marked as a
snippet so the client can read the whole memory through memory://memories/{id}. The contents returned
never count more than the budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_memory.search.terms import terms

ELLIPSIS = "…"
MIN_SNIPPET_TOKENS = 16  # a shorter snippet says too little to be worth its tokens
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Fitted:
    index: int  # the hit's position in the ranked list it came from
    content: str
    token_count: int
    snippet: bool


def fit_budget(
    contents: Sequence[str],
    max_tokens: int,
    count: Callable[[str], int],
    query_terms: Sequence[str],
    passages: Sequence[tuple[int, int] | None] | None = None,
) -> list[Fitted]:
    """The hits (by their contents, best first, each with its best passage's span or None) that fit
    `max_tokens`, whole or as snippets."""
    fitted: list[Fitted] = []
    left = max_tokens
    for index, content in enumerate(contents):
        share = left // (len(contents) - index)
        tokens = count(content)
        if tokens <= share:
            fitted.append(Fitted(index, content, tokens, snippet=False))
            left -= tokens
            continue
        if share < MIN_SNIPPET_TOKENS:
            if tokens <= left:  # no room for a snippet, but the whole memory still fits
                fitted.append(Fitted(index, content, tokens, snippet=False))
                left -= tokens
            continue
        span = passages[index] if passages is not None else None
        part = content if span is None else content[span[0] : span[1]]
        text = part if span is not None and count(part) <= share else snippet(part, query_terms, share, count)
        if text:
            used = count(text)
            fitted.append(Fitted(index, text, used, snippet=True))
            left -= used
    return fitted


def snippet(content: str, query_terms: Sequence[str], max_tokens: int, count: Callable[[str], int]) -> str:
    """The longest run of whole words around the content's first query term that fits max_tokens,
    with "…" where it was cut; the start of the content when no term occurs in it."""
    words = [m.group(0) for m in _WORD.finditer(content)]
    if not words:
        return ""
    wanted = set(query_terms)
    center = next((i for i, word in enumerate(words) if wanted.intersection(terms(word))), 0)

    def window(radius: int) -> str:
        start, end = max(0, center - radius // 3), min(len(words), center + radius)  # more after the match
        text = " ".join(words[start:end])
        return (ELLIPSIS if start > 0 else "") + text + (ELLIPSIS if end < len(words) else "")

    low, high = 0, len(words)
    while low < high:  # the widest window that fits: binary search on its radius
        mid = (low + high + 1) // 2
        if count(window(mid)) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return window(low) if low else ""


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
