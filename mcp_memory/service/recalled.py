"""What recall shows of the memories it found: entries that carry the answer, within a token budget.

One shaping for every way recall reaches a model: the hooks' injection (service/hook_recall.py), the
`recall` prompt and search_memory's `max_tokens` (service/results.py).

- **Entries.** A user's turn and its reply, when both were found, are one entry (an exchange), at the
  rank of the better; a memory found twice in all but a few words (the same reply stored twice, a
  message repeated) is one entry, at the better rank.
- **Passages of whole sentences.** Each entry shows the run of whole sentences of its memory that holds
  the most of the question's words (search/budget.py `focus`, in the passage that matched when the memory
  is long), never a sentence cut in two unless one sentence alone is longer than its share.
- **More words for the best.** Entry r may take `share(r)` tokens of text: TOP_TOKENS for the best,
  falling by DECAY per rank to MIN_TOKENS (about 30 words: a passage a model can use). What an entry
  leaves of its share (a short message) goes to the entries after it, and what is left at the end to
  the memories shown in part. Entries are placed best first while the next one's least still fits.
  For a question over time every memory gets the same share (`even`): each moment counts alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from mcp_memory.search.budget import focus
from mcp_memory.views import SearchHit

TOP_TOKENS = 100  # the best entry's text
DECAY = 0.95  # each rank after it, this share of the one before
MIN_TOKENS = 70  # an entry's least: ~30 words of prose, the smallest passage worth its frame
EVEN_TOKENS = MIN_TOKENS  # each memory of a timeline (`even`)
SAME = 0.8  # two memories sharing this much of their word trigrams are one entry
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Entry:
    """One thing recalled: a memory, or a user's turn with the reply that answered it."""

    hit: SearchHit  # the memory; for an exchange, the user's turn
    reply: SearchHit | None = None  # the reply, when both halves were found
    text: str = ""  # what is shown of `hit` (whole sentences)
    reply_text: str = ""  # what is shown of `reply`
    ranks: tuple[int, ...] = (0,)  # of `hit` and `reply` among the hits found, best first


def collapsed(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """`hits` (best first) without those that repeat a better one in all but a few words."""
    kept: list[tuple[SearchHit, frozenset[tuple[str, ...]]]] = []
    for hit in hits:
        grams = _trigrams(hit.content)
        if any(_same(grams, other) for _, other in kept):
            continue
        kept.append((hit, grams))
    return [hit for hit, _ in kept]


def paired(hits: Sequence[SearchHit], replies: dict[str, str]) -> list[Entry]:
    """Entries of `hits` (best first): a user's turn and its reply as one when both are among them.
    `replies`: a user turn's id -> the id of the reply that answered it (for the turns that have one)."""
    by_id = {hit.id: hit for hit in hits}
    answered = {reply: turn for turn, reply in replies.items() if turn in by_id and reply in by_id}
    entries: list[Entry] = []
    done: set[str] = set()
    rank = {hit.id: r for r, hit in enumerate(hits)}
    for hit in hits:
        if hit.id in done:
            continue
        turn_id = hit.id if replies.get(hit.id) in answered else answered.get(hit.id)
        if turn_id is None:
            entries.append(Entry(hit, ranks=(rank[hit.id],)))
            done.add(hit.id)
            continue
        reply_id = replies[turn_id]
        entries.append(Entry(by_id[turn_id], by_id[reply_id], ranks=(rank[turn_id], rank[reply_id])))
        done |= {turn_id, reply_id}
    return entries


def share(rank: int) -> int:
    """Tokens of text entry `rank` (0: the best) may show."""
    return max(MIN_TOKENS, round(TOP_TOKENS * DECAY**rank))


def fitted(
    entries: Sequence[Entry],
    budget: int,
    count: Callable[[str], int],
    terms: Sequence[str],
    frame: Callable[[Entry], int],
    *,
    even: bool = False,
) -> list[Entry]:
    """The entries (best first) whose passages and frames fit `budget` tokens, each with its text
    chosen: each memory within its rank's share (an exchange: each half its own), plus what the entries
    before it left. `frame(entry)`: the tokens its line costs beside its text. `even`: every memory
    EVEN_TOKENS (a timeline: each moment counts alike). What is left at the end goes to the memories
    shown in part."""
    chosen: list[Entry] = []
    left = budget
    carried = 0
    for entry in entries:
        halves = len(entry.ranks)
        room = left - frame(entry)
        least = sum(_least(h, EVEN_TOKENS if even else MIN_TOKENS) for h in _halves(entry))
        if least > room:
            continue  # a smaller entry further down may still fit
        shares = [EVEN_TOKENS if even else share(r) for r in entry.ranks]
        shares[0] += carried
        if sum(shares) > room:
            shares = [room // halves] * halves
        shown = _shown(entry, shares, count, terms)
        used = _used(shown, count)
        carried = 0 if even else max(sum(shares) - used, 0)
        left -= used + frame(entry)
        chosen.append(shown)
    cut = [i for i, e in enumerate(chosen) if not _whole(e)]
    extra = left // sum(len(chosen[i].ranks) for i in cut) if cut else 0
    for i in cut if extra > 0 else []:
        shown = chosen[i]
        sizes = [count(shown.text) + extra, count(shown.reply_text) + extra][: len(shown.ranks)]
        wider = _shown(shown, sizes, count, terms)
        if _used(wider, count) > _used(shown, count):
            chosen[i] = wider
    return chosen


def _halves(entry: Entry) -> list[SearchHit]:
    return [entry.hit] if entry.reply is None else [entry.hit, entry.reply]


def _least(hit: SearchHit, tokens: int) -> int:
    """The fewest tokens a memory is shown in: `tokens`, or all of it when it is shorter."""
    return min(tokens, hit.token_count) if hit.token_count > 0 else tokens


def _whole(entry: Entry) -> bool:
    halves = [(entry.hit, entry.text)] + (
        [(entry.reply, entry.reply_text)] if entry.reply is not None else []
    )
    return all(text == hit.content.strip() for hit, text in halves)


def placed(hits: Sequence[SearchHit], budget: int, frame: int) -> int:
    """About how many of `hits` (best first) `fitted` places one per line, each `frame` tokens beside
    its text: counted from their whole sizes, without choosing their passages."""
    left, carried = budget, 0
    for rank, hit in enumerate(hits):
        if _least(hit, MIN_TOKENS) + frame > left:
            return rank
        used = min(hit.token_count, share(rank) + carried, left - frame)
        carried = max(share(rank) + carried - used, 0)
        left -= used + frame
    return len(hits)


def _shown(entry: Entry, tokens: Sequence[int], count: Callable[[str], int], terms: Sequence[str]) -> Entry:
    if entry.reply is None:
        return replace(entry, text=passage(entry.hit, tokens[0], count, terms))
    asked = passage(entry.hit, tokens[0], count, terms)
    return replace(entry, text=asked, reply_text=passage(entry.reply, tokens[1], count, terms))


def _used(entry: Entry, count: Callable[[str], int]) -> int:
    return count(entry.text) + (count(entry.reply_text) if entry.reply is not None else 0)


def passage(hit: SearchHit, tokens: int, count: Callable[[str], int], terms: Sequence[str]) -> str:
    """The whole sentences of the hit's memory (of the passage that matched, for a long one) that hold
    the most of `terms`, within `tokens`; the whole memory when it fits."""
    content = hit.content
    span = (0, len(content)) if hit.passage is None else (hit.passage.start, hit.passage.end)
    if (hit.token_count or count(content)) <= tokens:
        span = (0, len(content))  # it all fits: the whole, not just the passage that matched
    elif hit.passage is not None and count(content[span[0] : span[1]]) < tokens:
        span = _widened(content, span, tokens, count)
    start, end = focus(content, span, terms, count, max_tokens=max(tokens, 1))
    return content[start:end].strip()


def _widened(
    content: str, span: tuple[int, int], tokens: int, count: Callable[[str], int]
) -> tuple[int, int]:
    """The matched passage with the text after it (then before it) up to about `tokens`: a short
    passage leaves room for what follows it."""
    start, end = span
    per_char = max(count(content[start:end]), 1) / max(end - start, 1)
    room = int((tokens - count(content[start:end])) / per_char)
    after = min(len(content), end + room)
    before = max(0, start - max(room - (after - end), 0))
    return before, after


def _trigrams(text: str) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return frozenset(zip(words, words[1:], words[2:], strict=False)) or frozenset({tuple(words)})


def _same(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if not small:
        return False
    shared = len(small & large)
    # The same text, or one held whole in the other (a reply and its copy with a line added).
    return shared / len(small | large) >= SAME or (
        shared / len(small) >= SAME and len(small) >= 0.5 * len(large)
    )
