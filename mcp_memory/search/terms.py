"""The words of a query and of a memory: content words, quoted phrases, stopwords, dates written as
people write them, and the index terms the full-text side matches (case-folded, Porter-stemmed).

Two steps, each its own rule: `keywords` picks a query's content words (stopwords and a possessive 's
dropped, not stemmed: Cosmos DB's FullTextScore stems them itself); `terms` turns any text into index
terms as the in-memory BM25 index does (search/text_index.py). `QueryTerms` is both, for one query,
computed once (search/query.py SearchQuery.terms) and read by every part of a search.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import Stemmer

_QUOTED = re.compile(r'"([^"]+)"')
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

# Cosmos DB's FullTextScore rejects 31 or more terms; the text index takes as many of the query's words.
MAX_KEYWORDS = 30
# A long memory's passage holding most of the query's words is chosen by this many of them (Cosmos DB).
MAX_PASSAGE_WORDS = 1000

# English function words and question words, dropped from full-text queries: each kept term adds a
# BM25 contribution, and "did"/"what" match thousands of turns, burying the turns that share the
# question's content words. Removing them from the OR query retrieves more answers on LoCoMo
# (bench/locomo.py).
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its
itself let's me more most mustn't my myself no nor not of off on once only or other ought our ours
ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that
that's the their theirs them themselves then there there's these they they'd they'll they're they've
this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what
what's when when's where where's which while who who's whom why why's with won't would wouldn't you
you'd you'll you're you've your yours yourself yourselves
s t d ll m re ve also just will shall may might must
""".split()
)


def quoted_phrases(query: str) -> list[str]:
    """The phrases a user put in double quotes; each must match verbatim."""
    return [p.strip() for p in _QUOTED.findall(query) if p.strip()]


def keywords(query: str, *, limit: int = MAX_KEYWORDS) -> list[str]:
    """The query's content words: lower-cased, stopwords and possessive 's removed, first-occurrence
    order, at most `limit` (Cosmos DB's FullTextScore rejects 31 or more terms)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.casefold().replace("\u2019", "'")):
        base = word[:-2] if word.endswith("'s") else word
        if word in STOPWORDS or base in STOPWORDS:
            continue
        seen.setdefault(base, None)
    return list(seen)[:limit]


_INDEX_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits, as unicode61 splits
_STEMMER = Stemmer.Stemmer("porter")


def terms(text: str) -> list[str]:
    """The text's index terms: case-folded, diacritics removed, split into words, Porter-stemmed."""
    folded = text.casefold()
    if not folded.isascii():
        folded = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
    words: list[str] = _STEMMER.stemWords(_INDEX_WORD.findall(folded))
    return words


def query_terms(words: Iterable[str]) -> list[str]:
    """The distinct terms of a query's words (a word like "o'neil" gives two), first-seen order."""
    return list(dict.fromkeys(t for word in words for t in terms(word)))


@dataclass(frozen=True)
class QueryTerms:
    """One query's words as each part of a search reads them, computed once."""

    words: tuple[str, ...]  # its content words (keywords), first MAX_PASSAGE_WORDS: a passage by its words
    wanted: tuple[str, ...]  # index terms of its keywords and quoted phrases: what BM25 matches
    required: tuple[str, ...]  # index terms of its quoted phrases: what every text hit must hold
    matched: tuple[str, ...]  # index terms of its keywords: a hit's word overlap, a snippet's centre

    @classmethod
    def of(cls, text: str, phrases: Iterable[str] = ()) -> QueryTerms:
        words = keywords(text, limit=MAX_PASSAGE_WORDS)
        phrases = list(phrases)
        kept = words[:MAX_KEYWORDS]
        return cls(
            words=tuple(words),
            wanted=tuple(query_terms([*kept, *phrases])),
            required=tuple(query_terms(phrases)),
            matched=tuple(query_terms(kept)),
        )

    @property
    def keywords(self) -> tuple[str, ...]:
        """Its first MAX_KEYWORDS content words: Cosmos DB's full-text terms."""
        return self.words[:MAX_KEYWORDS]


def date_words(moment: datetime) -> str:
    """'8 May 2023': how people write a date in a question ("what happened in May 2023?")."""
    return f"{moment.day} {moment.strftime('%B %Y')}"
