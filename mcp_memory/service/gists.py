"""The gist of a turn, in a few tokens: what a timeline line shows of it (service/timeline.py).

- **An opening**: the first words of a turn, cut at a word to fit (an ellipsis says there is more); a
  reply's opening skips its filler ("Sure! Happy to help.").
- **What matched**: from the sentence of the matched passage that holds the most of the query's terms.
- **Names**: capitalised words not opening a sentence, runs of them, and code identifiers, most
  mentioned first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from mcp_memory.search.terms import terms as terms_of

OPENING_CHARS = 1200  # an opening is chosen from this much of a turn's start


_FILLER = re.compile(
    r"^\s*(?:(?:great|good|excellent|perfect|sure|certainly|absolutely|of course|thanks|thank you|yes|okay|ok"
    r"|happy to help|i'?d be (?:happy|glad) to[^.!?\n]*|i'?m glad[^.!?\n]*|no problem)[^.!?\n]{0,60}[.!?:]\s+)+",
    re.IGNORECASE,
)


def shown(
    content: str,
    span: tuple[int, int] | None,
    terms: Sequence[str],
    tokens: int,
    count: Callable[[str], int],
    *,
    filler: bool = False,
) -> str:
    """The part of a turn shown, at most `tokens`: from the sentence of the matched passage that holds
    the most of the query's terms, else from the opening (a reply's past its filler), cut at a word."""
    if tokens <= 0:
        return ""
    begin = 0
    if span is not None:
        begin = _best_sentence(content, span, set(terms))
    elif filler:
        opening = _FILLER.match(content[:OPENING_CHARS])
        if opening is not None and opening.end() < len(content):
            begin = opening.end()
    window = content[begin : begin + OPENING_CHARS]
    words = window.split()
    fitted = _fitted(words, tokens, count)
    text = " ".join(words[:fitted])
    more = fitted < len(words) or bool(content[begin + len(window) :].strip())
    return ("…" if begin > 0 else "") + text + ("…" if more else "")


def _fitted(words: Sequence[str], tokens: int, count: Callable[[str], int]) -> int:
    """How many of the first `words` fit `tokens` with an ellipsis (at least one): a guess from the
    tokens per word of the whole, then a word at a time (a few counts, not one per word)."""
    whole = count(" ".join(words) + "…")
    if whole <= tokens:
        return len(words)
    n = max(1, len(words) * tokens // whole)
    while n > 1 and count(" ".join(words[:n]) + "…") > tokens:
        n = max(1, n - max(1, n // 8))
    while n < len(words) and count(" ".join(words[: n + 1]) + "…") <= tokens:
        n += 1
    return n


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _best_sentence(content: str, span: tuple[int, int], wanted: set[str]) -> int:
    """Where the sentence of content[span] holding the most of `wanted` begins (the span's start if none)."""
    start, end = span
    best, best_held = start, 0
    at = start
    for gap in [*_SENTENCE_END.finditer(content, start, end), None]:
        stop = end if gap is None else gap.start()
        held = len(wanted.intersection(terms_of(content[at:stop]))) if wanted else 0
        if held > best_held:
            best, best_held = at, held
        if gap is None:
            break
        at = gap.end()
    return best


# A name: a capitalised word not opening a sentence, a run of them, or a code identifier.
_NAME = re.compile(
    r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[A-Z]{2,}[A-Za-z0-9]*|[A-Z][a-z]+(?: [A-Z][a-z]+)*"
    r"|[a-z]+(?:_[a-z0-9]+)+|[A-Za-z]+\.(?:py|js|ts|go|rs|java|sql|json|yaml|yml|md|toml|sh))\b"
)
_NOT_NAMES = frozenset(
    "I I'm I've I'd I'll The This That These Those It Its We You Your My Our They Here There What When Where "
    "Which Who Why How Can Could Would Should Will Let Also And But Or If So Then Now Yes No Ok Okay Thanks "
    "Please Hi Hello Great Sure Note First Second Next Finally Step Example However For In On At To With".split()
)
_NAMES_READ = 2000  # characters of each turn read for names


def names(said: str | None, reply: str | None) -> list[str]:
    """The names a user's turn and its reply mention, most mentioned first (the user's count twice)."""
    counted: Counter[str] = Counter()
    for weight, text in ((2, said), (1, reply)):
        if text is None:
            continue
        for name in _NAME.findall(text[:_NAMES_READ]):
            if name not in _NOT_NAMES and len(name) > 2:
                counted[name] += weight
    return [name for name, _ in counted.most_common(8)]
