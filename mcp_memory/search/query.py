"""One search, built and checked once from search_memory's arguments, and carried unchanged from the tool
through the service (service/searching.py) to each owner's store search.

`SearchQuery.of` is the one place a search's arguments are checked and everything about the search is
decided: the time its words name (search/when.py), what it is about (search/intent.py), whose memory it
reads, how many hits each owner's store ranks, the quoted phrases, the fusion settings. Its terms are
computed once, on first use (`terms`, search/terms.py QueryTerms), and read by every part of a search:
the text index, the word overlap of each hit, the token budget's snippets, Cosmos DB's full-text terms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.errors import InvalidInputError
from mcp_memory.models import MemoryType, SearchMode, utcnow
from mcp_memory.search import intent
from mcp_memory.search.terms import QueryTerms, quoted_phrases
from mcp_memory.search.when import time_range
from mcp_memory.views import TimeFilter

POOL = 40  # hits ranked for a question about the user's words, of which the first `limit` are kept
LINKED_POOL = 40  # with links followed, each store ranks at least this many (4 x depth) for them to reorder
MAX_THREADS = 1_000  # threads one search may be limited to (`threads`)


class SearchQuery(BaseModel):
    """One search: what to look for, in whose memory, and how the hits are ranked, scored and cut.

    Built by `of` from a tool's arguments (checked there); a store-level search (the knowledge graph's,
    a test's) may name only the fields it needs. Each store search is told the owner it reads
    (LongTermStore.search): the query itself never changes on its way.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Whose memory: the user's own and the spaces they read, or one of them (the first holds thread_id or
    # threads). Kept as given (an mcp Owner stays one).
    owners: SkipValidation[tuple[str, ...]] = ()
    text: str  # what is searched and embedded: the words asked, less a named time's, focused (intent.focus)
    asked: str = ""  # the words as asked, less a named time's: what the ranking rules read ("": text)
    mode: SearchMode = "hybrid"
    thread_id: str | None = None
    # Only memories of these threads (a project's coding sessions), for the service's own searches, never a
    # tool argument: None = no restriction, () = nothing matches. A memory without a thread is in none.
    threads: tuple[str, ...] | None = None
    types: list[MemoryType] | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 10  # results returned
    # Hits each owner's ranking keeps before the ranking rules pick the first `limit` (None: limit); deeper
    # for a question about the user's words, whose replies outrank them (search/intent.py).
    depth: int | None = None
    follow_links: bool = False  # links to the entities the query names move the ranking (graph.follow_links)
    fusion: Literal["score", "rrf"] = "score"
    rrf_k: int = 60
    text_weight: float = 1.0
    vector_weight: float = 1.0
    context_weight: float = 0.4  # BM25 weight of a memory's indexed context relative to its own words
    # Phrases the user quoted: every hit must contain each one verbatim (case-insensitive).
    phrases: list[str] = Field(default_factory=list)
    # Memory as it stood at this time: nothing created later, and facts superseded since count as
    # they were then (current at as_of: created at or before it, superseded after it, if ever).
    as_of: datetime | None = None
    min_score: float | None = None  # results at least this likely relevant
    max_tokens: int | None = None  # results whose contents fit this many tokens
    time_filter: TimeFilter | None = None  # the time the words named, read as since/until
    # The same search over all of memory, for when nothing was made in the time the words named (None:
    # they named none).
    unbounded: SearchQuery | None = Field(default=None, repr=False)

    @classmethod
    def of(  # noqa: PLR0913 - search_memory's arguments, checked here into one SearchQuery
        cls,
        owners: str | Sequence[str],
        query: str,
        thread_id: str | None = None,
        types: list[str] | None = None,
        limit: int = 10,
        mode: str = "hybrid",
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        *,
        min_score: float | None = None,
        max_tokens: int | None = None,
        as_of: str | datetime | None = None,
        threads: Sequence[str] | None = None,
        settings: Settings,
    ) -> SearchQuery:
        """search_memory's arguments, checked (each error names its argument), with the time the words
        name read as a filter and the rest decided: `settings` gives the limits and the fusion. `threads`
        is the service's own (no tool passes it): only memories of these threads, in the first owner's
        memory."""
        search = settings.search
        text = check.query(query, search.max_query_chars)
        if thread_id is not None:
            thread_id = check.thread_id(thread_id)
        threads_ = None if threads is None else _checked_threads(threads)
        types_ = check.types(types)
        limit = check.count(limit, "limit", low=1, high=search.max_limit)
        mode_ = check.mode(mode)
        since_, until_ = check.time_range(since, until)
        if min_score is not None:
            min_score = check.fraction(min_score, "min_score")
        if max_tokens is not None:
            max_tokens = check.count(max_tokens, "max_tokens", low=1, high=1_000_000)
        as_of_ = check.timestamp(as_of, "as_of")
        time_filter = None
        if since_ is None and until_ is None:  # explicit bounds win over the query's words
            named = time_range(text, as_of_ or utcnow())
            if named is not None:
                time_filter = TimeFilter(phrase=named.phrase, since=named.since, until=named.until)
                since_, until_ = named.since, named.until
                # The words that named the time filter; they are not what the memory is about.
                text = " ".join(text.replace(named.phrase, " ").split()) or text
        keys = (owners,) if isinstance(owners, str) else tuple(owners)
        if thread_id is not None or threads_ is not None:
            keys = keys[:1]  # a thread is one owner's: the same id in a space is another thread
        # For a question about the user's words, a deeper pool than asked: the replies that outrank them
        # move down, and what was below comes up (search/intent.py).
        depth = max(limit, POOL) if intent.about_the_user(text) else limit
        values = {
            "owners": keys,
            "text": intent.focus(text),  # a question for an account over time: what it is about
            "asked": text,
            "mode": mode_,
            "thread_id": thread_id,
            "threads": threads_,
            "types": types_,
            "since": since_,
            "until": until_,
            "limit": limit,
            "depth": depth,
            "follow_links": settings.graph.follow_links,
            "fusion": search.fusion,
            "rrf_k": search.rrf_k,
            "context_weight": search.context_weight,
            "text_weight": search.text_weight,
            "vector_weight": search.vector_weight,
            "phrases": quoted_phrases(text),
            "as_of": as_of_,
            "min_score": min_score,
            "max_tokens": max_tokens,
        }
        if time_filter is None:
            return cls.model_validate(values)
        unbounded = cls.model_validate({**values, "since": None, "until": None})
        return cls.model_validate({**values, "time_filter": time_filter, "unbounded": unbounded})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> SearchQuery:
        """Another query (a test's variation of one): its terms are its own, never the original's."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("terms", None)
        return copied

    @cached_property
    def terms(self) -> QueryTerms:
        """Its words as the text index, the hits' word overlap, the snippets and Cosmos DB read them."""
        return QueryTerms.of(self.text, self.phrases)

    @property
    def kept(self) -> int:
        """Hits each owner's ranking keeps before the ranking rules pick the first `limit`."""
        return self.limit if self.depth is None else self.depth

    @property
    def per_owner(self) -> int:
        """Hits each owner's store search returns: `kept`, or a deeper pool for links to reorder."""
        return max(self.kept * 4, LINKED_POOL) if self.follow_links else self.kept

    @property
    def question(self) -> str:
        """The words as asked (less a named time's)."""
        return self.asked or self.text


def _checked_threads(threads: Sequence[str]) -> tuple[str, ...]:
    """Each a valid thread id, at most MAX_THREADS of them, each once (in the order given)."""
    if isinstance(threads, str):  # a string is a sequence of one-letter "threads"
        raise InvalidInputError("threads must be a list of thread ids, not one string")
    if len(threads) > MAX_THREADS:
        raise InvalidInputError(f"threads names {len(threads)} threads: at most {MAX_THREADS}")
    return tuple(dict.fromkeys(check.thread_id(t, "threads") for t in threads))
