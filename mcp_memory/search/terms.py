"""The words of a query: content words, quoted phrases, stopwords, and dates written as people write them."""

from __future__ import annotations

import re
from datetime import datetime

_QUOTED = re.compile(r'"([^"]+)"')
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

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


def keywords(query: str, *, limit: int = 30) -> list[str]:
    """The query's content words: lower-cased, stopwords and possessive 's removed, first-occurrence
    order, at most `limit` (Cosmos DB's FullTextScore rejects 31 or more terms)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.casefold().replace("\u2019", "'")):
        base = word[:-2] if word.endswith("'s") else word
        if word in STOPWORDS or base in STOPWORDS:
            continue
        seen.setdefault(base, None)
    return list(seen)[:limit]


def date_words(moment: datetime) -> str:
    """'8 May 2023': how people write a date in a question ("what happened in May 2023?")."""
    return f"{moment.day} {moment.strftime('%B %Y')}"
