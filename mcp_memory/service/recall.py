"""The recall prompt: the memories worth recalling for a query, shown as data, never as instructions.

Retrieval:
- "hi", "thanks", "ok!" recall nothing: searching them only surfaces noise.
- A vague follow-up ("how much?", "and that one?") means nothing alone; it is searched together
  with the thread's most recent turns, which say what "that" is.
- A hit whose cosine similarity to the query is under a floor is dropped, even when its keywords
  matched. The floor depends on the embedder (its cosines live on different scales) and can be set.

Rendering: each memory in its own delimited, attributed block, with anything that could close the
delimiters early escaped and flagged text marked as such.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcp_memory import validation as check
from mcp_memory.errors import NotFoundError
from mcp_memory.llm.embedder import Embedder
from mcp_memory.models import space_key
from mcp_memory.search.query import SearchQuery
from mcp_memory.search.terms import QueryTerms
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.service.recalled import collapsed
from mcp_memory.service.results import within_budget
from mcp_memory.storage.base import LongTermStore
from mcp_memory.views import SearchHit

# Cosines of unrelated texts sit near 0 for MiniLM and text-embedding-3, near 0.7 for ada-002.
_FLOORS: dict[str, float] = {
    "all-minilm-l6-v2": 0.25,
    "text-embedding-3-small": 0.25,
    "text-embedding-3-large": 0.25,
    "text-embedding-ada-002": 0.75,
    "hash": 0.1,
}
DEFAULT_FLOOR = 0.2

_WORD = re.compile(r"[\w']+")
_SMALL_TALK = frozenset(
    "hi hello hey heya hiya yo howdy thanks thank thx ty cheers you so much a lot very again ok okay k kk "
    "cool great nice perfect awesome fine alright good morning afternoon evening night bye goodbye see ya "
    "later cya yes no yep yeah nope sure lol haha got it sounds np welcome there all everyone folks".split()
)
# Words that carry no topic: a query made only of these (and at most one other word) is a follow-up.
_FUNCTION = frozenset(
    "a an the and or but so what which who whom whose when where why how much many about that this "
    "those these it its one ones them they there here is are was were be do does did can could would "
    "should will of for to in on at by with from then too also else more less again ok okay hmm".split()
)
_DEICTIC = frozenset("that this those these it one ones them there".split())
_CONTEXT_TURNS = 4
_CONTEXT_CHARS = 300
_RECALLED = 8


def default_floor(model: str) -> float:
    name = model.lower().split("/")[-1]
    for prefix, floor in _FLOORS.items():
        if name.startswith(prefix):
            return floor
    return DEFAULT_FLOOR


def is_small_talk(query: str) -> bool:
    words = _WORD.findall(query.lower())
    return bool(words) and len(words) <= 6 and all(w in _SMALL_TALK for w in words)


def is_vague(query: str) -> bool:
    words = _WORD.findall(query.lower())
    if not words or len(words) > 6:
        return False
    topical = [w for w in words if w not in _FUNCTION]
    return len(topical) == 0 or (len(topical) <= 1 and any(w in _DEICTIC for w in words))


def with_context(query: str, recent: list[str]) -> str:
    """The text searched for a vague follow-up: the thread's last turns, then the question."""
    lines = [" ".join(t.split())[:_CONTEXT_CHARS] for t in recent[-_CONTEXT_TURNS:]]
    return "\n".join([*lines, query])


@dataclass
class SimilarityFloor:
    long_term: LongTermStore
    embedder: Embedder
    floor: float

    async def keep(self, user_id: str, text: str, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits whose stored vector is at least `floor` similar to the text's (`user_id`: whose
        personal memory; a hit from a shared space is read from that space)."""
        if not hits:
            return hits
        query = (await self.embedder.embed([text]))[0]
        kept = []
        for hit in hits:
            try:
                memory = await self.long_term.get(
                    user_id if hit.space is None else space_key(hit.space), hit.id
                )
            except NotFoundError:  # forgotten between the search and now
                continue
            if memory.embedding is None:
                continue
            # A long memory is as similar as its best passage.
            vectors = np.asarray(memory.passage_embeddings or [memory.embedding], dtype=np.float32)
            if float((vectors @ query).max()) >= self.floor:
                kept.append(hit)
        return kept


async def recall(
    service: MemoryService,
    owners: str | Sequence[str],
    query: str,
    thread_id: str | None,
    max_tokens: int | None = None,
) -> list[SearchHit]:
    """The memories the recall prompt shows for `query`, best first, at most eight, near-duplicates
    once, their contents within `max_tokens` when given, shaped as the hooks' recall is
    (service/recalled.py: whole sentences around the match, more for the best). `owners`: the user's own
    memory and the spaces they read, or one of them; the first holds `thread_id`."""
    keys = [owners] if isinstance(owners, str) else list(owners)
    user_id = keys[0]
    if max_tokens is not None:
        max_tokens = check.count(max_tokens, "max_tokens", low=1, high=1_000_000)
    if is_small_talk(query):
        return []
    text, context_ids = query, set[str]()
    if thread_id is not None and is_vague(query):
        recent = (await service.get_working_memory(user_id, thread_id, recent=_CONTEXT_TURNS)).messages
        text = with_context(query, [m.content for m in recent])
        context_ids = {m.id for m in recent}  # already in the conversation: not worth recalling
    limit = _RECALLED + len(context_ids)
    found = await service.search(
        SearchQuery.of(keys, text, thread_id=thread_id, limit=limit, settings=service.settings)
    )
    hits = collapsed([h for h in found.results if h.id not in context_ids])[:_RECALLED]
    floor = service.settings.learning.recall_min_similarity
    if floor is None:
        floor = default_floor(service.embedder.spec.model)
    kept = await SimilarityFloor(service.stores.long_term, service.embedder, floor).keep(user_id, text, hits)
    if max_tokens is None:
        return kept
    # Snippets around the words of the question as asked (not the thread's turns searched with it).
    return within_budget(kept, max_tokens, service.tokens.count, QueryTerms.of(query).matched)


_CLOSING_TAG = re.compile(r"<\s*/\s*(memory|recalled_memories)\b[^>]*>", re.IGNORECASE)


def render_memories(hits: Sequence[SearchHit]) -> str:
    if not hits:
        return "(no relevant memories found)"
    blocks = []
    for hit in hits:
        speaker = hit.role or hit.type
        where = f"thread {hit.thread_id}" if hit.thread_id else "all threads"
        if hit.space is not None:  # shared memory: which space, and who wrote it
            where = f"space {hit.space}, {where}" + (f", written by {hit.author}" if hit.author else "")
        # Escape anything that could close our delimiters early (any case or spacing).
        text = _CLOSING_TAG.sub(lambda m: m.group(0).replace("<", "&lt;"), hit.content)
        # Flagged text looked like instructions when written or read: say so next to it.
        flagged = f' flags="{",".join(hit.flags)}"' if hit.flags else ""
        blocks.append(
            f'<memory id="{hit.id}" type="{hit.type}" from="{speaker}" {_attr("where", where)} '
            f'when="{hit.created_at.isoformat()}"{flagged}>\n{text}\n</memory>'
        )
    return "\n".join(blocks)


def _attr(name: str, value: str) -> str:
    return f'{name}="{value.replace(chr(34), "&quot;")}"'
