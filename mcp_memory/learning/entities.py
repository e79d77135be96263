"""Entities named in a text, found offline and deterministically: proper names (runs of capitalized
words), places (a name after in/at/from/to/near/visit...), and quoted titles. No model, no network:
the same text always gives the same mentions, so links built from them are stable and testable.

What it finds is measured, not assumed: bench/graph_links.py reports, on the LoCoMo development
conversations, how many turns get a mention, the most linked names, and what following the links does
to retrieval. An LLM (or MCP sampling) extracts typed entities and relations better; this is the floor
that needs neither.

`EntityMatcher` finds, in a text, the names of a graph's entities (case-insensitive, on word boundaries):
the links from an entity to the turns and facts that mention it.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MentionKind = Literal["name", "place", "title"]

_WORD = r"[A-Z][\w'’.-]*[\w]|[A-Z]"
_JOINER = r"(?:of|the|de|da|del|van|von|der|la|le|du|di|y|&)"
_RUN = re.compile(rf"(?<![\w'’])(?:{_WORD})(?:\s+(?:{_JOINER}\s+)?(?:{_WORD}))*")
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{2,80})[\"”]")
_SENTENCE_START = re.compile(r"(?:^|[.!?…:;]\s+|\n\s*|[\"“(]\s*)$")
_PLACE_CUES = frozenset(
    "in at from to near into visit visited visiting around across toward towards outside inside".split()
)
_POSSESSIVE = re.compile(r"['’]s$")
# Capitalized words that start sentences or fill them, never names on their own.
_COMMON = frozenset(
    """
    i i'm i've i'd i'll im ive a an the this that these those there here it it's its he she we you they
    me my mine our your his her their them us what when where why how who which whose whom yes no not
    and or but so if then because as at by for from in into of on onto to up with without about after
    before over under again also just only even still yet too very really quite maybe perhaps well oh
    ah hey hi hello wow thanks thank ok okay sure great good nice cool awesome amazing yeah yep nope
    congrats congratulations sorry please haha lol omg absolutely definitely totally exactly right
    all any some every each both either neither many much more most few less least other another such
    do does did done have has had having be is am are was were been being can could will would shall
    should may might must let let's lets get got go going went make made see saw seen look looks know
    knew think thought feel felt love loved like liked want wanted need needed try tried take took
    glad happy sad sounds sound seems seem hope hoped guess bet mean means tell told say said ask asked
    anyway anyways btw by-the-way speaking talking totally honestly actually basically literally
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday tonight
    january february march april may june july august september october november december
    mr mrs ms dr st mom dad mum besides woohoo woo yay hooray whoa aww omg tv
    mon tue tues wed thu thur thurs fri sat sun
    """.split()
)


@dataclass(frozen=True)
class Mention:
    name: str
    kind: MentionKind


def mentions(text: str) -> list[Mention]:
    """The entities a text names, each once, in the order first named."""
    found: dict[str, Mention] = {}
    quoted: list[tuple[int, int]] = []
    mid_sentence: set[str] | None = None  # computed once, when a doubtful word first needs it
    for match in _QUOTED.finditer(text):
        title = match.group(1).strip(" ,.;:!?")
        words = title.split()
        if 1 <= len(words) <= 10 and words[0][:1].isupper():
            found.setdefault(key(title), Mention(title, "title"))
            quoted.append(match.span())
    quoted_starts = [start for start, _ in quoted]
    for match in _RUN.finditer(text):
        inside = bisect.bisect_right(quoted_starts, match.start()) - 1
        if inside >= 0 and match.start() < quoted[inside][1]:
            continue  # a word of a title found whole above
        name = _POSSESSIVE.sub("", match.group().rstrip(".-'’"))
        words = name.split()
        while words and _common(words[0]):  # "Thanks Melanie" -> "Melanie"
            words = words[1:]
        while words and _common(words[-1]):
            words = words[:-1]
        if not words or (len(words) == 1 and len(words[0]) < 2):  # "R&R", "A"
            continue
        name = " ".join(words)
        # One capitalized word opening a sentence is usually just the sentence's first word; it counts
        # when it labels a speaker ("Ann: ...") or the text names it elsewhere mid-sentence.
        doubtful = _at_sentence_start(text, match.start()) and not _followed_by_colon(text, match.end())
        if len(words) == 1 and doubtful:
            if mid_sentence is None:
                mid_sentence = _named_mid_sentence(text)
            if name not in mid_sentence:
                continue
        kind: MentionKind = "place" if _previous_word(text, match.start()) in _PLACE_CUES else "name"
        found.setdefault(key(name), Mention(name, kind))
    return list(found.values())


def _common(word: str) -> bool:
    return word.lower().replace("’", "'") in _COMMON


def key(name: str) -> str:
    """The form two spellings of one name share: NFKC, case-folded, spaces folded."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


class EntityMatcher:
    """The names of a graph's entities, found in texts on word boundaries, case-insensitively."""

    MAX_WORDS = 6

    def __init__(self, names: Iterable[str]) -> None:
        self._names: dict[str, str] = {}
        self._first_words: set[str] = set()  # a name can start only where one of these is
        for name in names:
            tokens = _tokens(name)
            if tokens:
                self._names.setdefault(" ".join(tokens), name)
                self._first_words.add(tokens[0])

    def __len__(self) -> int:
        return len(self._names)

    def find(self, text: str) -> list[str]:
        tokens = _tokens(text)
        found: dict[str, None] = {}
        for start in range(len(tokens)):
            if tokens[start] not in self._first_words:
                continue
            for width in range(1, min(self.MAX_WORDS, len(tokens) - start) + 1):
                name = self._names.get(" ".join(tokens[start : start + width]))
                if name is not None:
                    found[name] = None
        return list(found)


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+(?:['’]\w+)*", unicodedata.normalize("NFKC", text).casefold())


# Every check below looks back at most this far from a position, so one text of any length is read in
# linear time (a long pasted file must not cost quadratic regex scans of everything before each name).
_LOOKBACK = 256
_NAME_CANDIDATE = re.compile(r"(?<![\w'’])[A-Z][\w'’.-]*")


def _at_sentence_start(text: str, start: int) -> bool:
    # With pos > 0, ^ does not match at pos: only a real start of the text counts.
    return _SENTENCE_START.search(text, max(0, start - _LOOKBACK), start) is not None


def _previous_word(text: str, start: int) -> str:
    """The last word before start (lower-cased), or "": read backwards, as \\w+ counts a word."""
    low, end = max(0, start - _LOOKBACK), start
    while end > low and not _is_word_char(text[end - 1]):
        end -= 1
    begin = end
    while begin > low and _is_word_char(text[begin - 1]):
        begin -= 1
    return text[begin:end].lower()


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # what \w matches in a str pattern


def _followed_by_colon(text: str, end: int) -> bool:
    return text[end : end + 1] == ":"


def _named_mid_sentence(text: str) -> set[str]:
    """Every capitalized word the text names somewhere not at a sentence's start, each of its forms that
    ends on a word boundary ("Jean-Luc" gives "Jean" and "Jean-Luc"): one pass over the text."""
    named: set[str] = set()
    for match in _NAME_CANDIDATE.finditer(text):
        if _at_sentence_start(text, match.start()):
            continue
        word = match.group()
        named.add(word)  # the match is maximal: the character after it is no word character
        named.update(word[:cut] for cut in range(1, len(word)) if not _is_word_char(word[cut]))
    return named
