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
