"""A long memory as passages: the parts a reader would name, each short enough for the embedder's window.

The local embedder reads the first 256 word pieces of a text (about 1,000 characters of prose, fewer of
code), so a long answer, a pasted file or a log would have a vector for its opening only. A memory
longer than one passage is embedded passage by passage and ranked by its best passage, on the vector
side and the text side alike (search/vector_index.py, search/text_index.py).

Passages are cut where a reader would cut: around fenced code blocks, then at blank lines (paragraphs),
then at list items and lines, then at sentence ends, and only as a last resort inside a sentence (at a
space when there is one). Neighbouring small pieces are packed together up to the passage size, so a
list of short items is one passage, not twenty. Each passage is a span of the memory's content
(`start`, `end`: character offsets), so a hit can show the part that matched and nothing is copied.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

# About 190 word pieces of English prose, 240 of dense code: within the local model's 256.
PASSAGE_CHARS = 800
# A memory up to this long is one passage (its whole content): most chat turns.
ONE_PASSAGE_CHARS = 1000
# Passages of one memory at most: 1,000,000 characters are ~1,250 passages; the rest of a longer text
# joins the last passage (found by its words, not its meaning).
MAX_PASSAGES = 4096

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_BLANK_LINES = re.compile(r"\n[ \t]*\n+")
_LINE = re.compile(r"\n")
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+(?=\S)")
_SPACE = re.compile(r"\s+")


class Span(NamedTuple):
    start: int
    end: int


def passages(text: str, size: int = PASSAGE_CHARS) -> list[Span]:
    """The text's passages, in order, covering it (blank runs between them excluded); one span for a
    text no longer than ONE_PASSAGE_CHARS."""
    stripped_end = len(text.rstrip())
    if stripped_end <= ONE_PASSAGE_CHARS:
        return [Span(0, len(text))]
    if len(text) > CACHED_CHARS:
        return list(_long_passages.__wrapped__(text, size))
    return list(_long_passages(text, size))


# A search reads its hits' passages again, and the same memories recur: the last few thousand are kept
# (only texts up to CACHED_CHARS: at most ~100 MB held).
CACHED_CHARS = 50_000


@functools.lru_cache(maxsize=2048)
def _long_passages(text: str, size: int) -> tuple[Span, ...]:
    packed = list(_packed(_pieces(text, 0, len(text), size), size))
    if len(packed) > MAX_PASSAGES:
        packed = [*packed[: MAX_PASSAGES - 1], Span(packed[MAX_PASSAGES - 1].start, packed[-1].end)]
    return tuple(packed)


def _pieces(text: str, start: int, end: int, size: int) -> Iterator[Span]:
    """Spans no longer than `size` (but unsplittable runs), cut at the strongest boundary available:
    code fences first, then blank lines, lines, sentences, spaces."""
    at = start
    for fence in _FENCE.finditer(text, start, end):
        yield from _cut(text, at, fence.start(), size, _BLANK_LINES)
        yield from _cut(text, fence.start(), fence.end(), size, _LINE)  # a code block: by lines
        at = fence.end()
    yield from _cut(text, at, end, size, _BLANK_LINES)


_WEAKER = {_BLANK_LINES: _LINE, _LINE: _SENTENCE, _SENTENCE: _SPACE}


def _cut(text: str, start: int, end: int, size: int, boundary: re.Pattern[str]) -> Iterator[Span]:
    """[start, end) split at `boundary`, each part longer than `size` split again at a weaker one."""
    if start >= end:
        return
    if end - start <= size:
        if text[start:end].strip():
            yield _trimmed(text, start, end)
        return
    at = start
    for separator in boundary.finditer(text, start, end):
        yield from _part(text, at, separator.start(), size, boundary)
        at = separator.end()
    yield from _part(text, at, end, size, boundary)


def _part(text: str, start: int, end: int, size: int, boundary: re.Pattern[str]) -> Iterator[Span]:
    if not text[start:end].strip():
        return
    if end - start <= size:
        yield _trimmed(text, start, end)
    elif boundary in _WEAKER:
        yield from _cut(text, start, end, size, _WEAKER[boundary])
    else:  # one unbroken run (a minified line, a base64 blob): fixed-size pieces
        for at in range(start, end, size):
            yield Span(at, min(end, at + size))


def _trimmed(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Span(start, end)


def _packed(pieces: Iterator[Span], size: int) -> Iterator[Span]:
    """Consecutive pieces joined while the joined span stays within `size`."""
    current: Span | None = None
    for piece in pieces:
        if current is not None and piece.end - current.start <= size:
            current = Span(current.start, piece.end)
            continue
        if current is not None:
            yield current
        current = piece
    if current is not None:
        yield current


# ---- passages as index rows: one key a passage --------------------------------------------------------
# An index row is keyed by the memory's rowid for its first passage, and by the rowid with the passage's
# number in the bits above ROWID_BITS for the others: a memory of one passage has the key it always had.
ROWID_BITS = 48
ROWID_MASK = (1 << ROWID_BITS) - 1


# A memory of n passages has n chances to match a query by accident, so its best passage's cosine is
# lowered by PASSAGE_PRIOR * ln(n) before it is ranked (0.21 for a 3,000-character answer of 4 passages):
# measured on BEAM (bench/beam.py), ranking by the plain best passage let long answers crowd out the short
# messages that held the answer; chat turns (one passage) are untouched.
PASSAGE_PRIOR = 0.15
# ... counting at most this many passages: a pasted file of a thousand passages whose one passage holds
# the answer must still be found by it (the prior stops at 0.21).
PRIOR_PASSAGES = 4


def counted(passages: int) -> int:
    """A memory's passages as the prior and the text side's weight count them (at most PRIOR_PASSAGES)."""
    return min(passages, PRIOR_PASSAGES)


def passage_prior(passages: int | np.ndarray) -> np.ndarray:
    """What a memory of this many passages gives up in cosine: PASSAGE_PRIOR * ln(passages), passages
    counted up to PRIOR_PASSAGES."""
    n = np.clip(np.asarray(passages, dtype=np.float32), 1, PRIOR_PASSAGES)
    prior: np.ndarray = PASSAGE_PRIOR * np.log(n)
    return prior


def rows_passages(keys: np.ndarray) -> np.ndarray:
    """Each row key's memory's number of passages."""
    if keys.size == 0 or int(keys.max()) <= ROWID_MASK:
        return np.ones(keys.size, dtype=np.int64)
    _, inverse, counts = np.unique(keys & ROWID_MASK, return_inverse=True, return_counts=True)
    found: np.ndarray = counts[inverse]
    return found


def passage_key(rowid: int, number: int) -> int:
    return rowid | (number << ROWID_BITS)


def memory_of(key: int) -> tuple[int, int]:
    """(rowid, passage number) of an index key."""
    return key & ROWID_MASK, key >> ROWID_BITS


def best_per_memory(keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Indices into keys/scores of each memory's best-scoring passage (ties: the first), in key order."""
    if keys.size == 0 or int(keys.max()) <= ROWID_MASK:
        return np.arange(keys.size)
    memories = keys & ROWID_MASK
    order = np.lexsort((-scores, memories))
    ordered = memories[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    kept: np.ndarray = order[first]
    return kept


def best_hits(hits: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """Ranked (key, score) hits with each memory's best passage only, in the same order."""
    seen: set[int] = set()
    out = []
    for key, score in hits:
        rowid = key & ROWID_MASK
        if rowid not in seen:
            seen.add(rowid)
            out.append((key, score))
    return out
