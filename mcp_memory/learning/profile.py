"""The cross-thread user profile: one long-term memory, id user_summary_<user>, rewritten in place.

Incremental: the profile remembers (metadata folded_through) the newest fact change it has folded
in, and the next update sends the model only the current profile plus facts changed since. With no
model the profile is rebuilt offline: the user's active facts, newest first, within the budget.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from mcp_memory.config import LearningSettings
from mcp_memory.errors import MalformedAnswerError, NotFoundError
from mcp_memory.learning.templates import LearningPrompts
from mcp_memory.learning.writer import MemoryWriter
from mcp_memory.llm.chat import clean_answer
from mcp_memory.llm.embedder import Embedder, embed_passages, memory_vectors
from mcp_memory.llm.prompts import RenderedPrompt
from mcp_memory.llm.tokens import TokenCounter, fit_tokens
from mcp_memory.models import Memory, utcnow
from mcp_memory.storage.base import LongTermStore

log = logging.getLogger(__name__)

_MAX_NEW_FACTS = 100


def profile_id(user_id: str) -> str:
    """The one long-term id of a user's profile."""
    return f"user_summary_{user_id}"


@dataclass(frozen=True)
class ProfileBatch:
    user_id: str
    previous: Memory | None
    facts: list[Memory]  # changed since the previous profile, newest first
    prompt: RenderedPrompt


@dataclass
class ProfileWriter:
    long_term: LongTermStore
    writer: MemoryWriter
    embedder: Embedder
    tokens: TokenCounter
    prompts: LearningPrompts
    settings: LearningSettings

    async def current(self, user_id: str) -> Memory | None:
        try:
            return await self.long_term.get(user_id, profile_id(user_id))
        except NotFoundError:
            return None

    async def prepare(self, user_id: str) -> ProfileBatch | None:
        """The prompt folding newer facts into the profile, or None when no fact changed since."""
        previous = await self.current(user_id)
        since = previous.metadata.get("folded_through") if previous else None
        facts = await self.long_term.list_active(
            user_id,
            types=("fact",),
            limit=_MAX_NEW_FACTS,
            changed_since=datetime.fromisoformat(since) if since else None,
        )
        if not facts:
            return None
        prompt = self.prompts.profile.render(
            prev_profile=previous.content if previous else "(none)",
            facts="\n".join(f"- {' '.join(f.content.split())}" for f in facts),
            max_words=max(16, int(self.settings.profile_max_tokens * 0.75)),
        )
        return ProfileBatch(user_id, previous, facts, prompt)

    async def apply(self, batch: ProfileBatch, answer: str, *, model: str) -> Memory:
        text = clean_answer(answer)
        if not any(ch.isalnum() for ch in text):
            raise MalformedAnswerError("the profile answer has no text")
        return await self._store(batch.user_id, batch.previous, text, batch.facts, writer=f"llm:{model}")

    async def rebuild_offline(self, user_id: str) -> Memory | None:
        """No model: the profile is the user's active facts, newest first, as many as fit."""
        facts = await self.long_term.list_active(user_id, types=("fact",), limit=_MAX_NEW_FACTS)
        previous = await self.current(user_id)
        if not facts:
            return None
        text = "\n".join(f"- {' '.join(f.content.split())}" for f in facts)
        if previous is not None and previous.content == fit_tokens(
            text, self.settings.profile_max_tokens, self.tokens.count
        ):
            return previous
        return await self._store(user_id, previous, text, facts, writer="extractive")

    async def _store(
        self, user_id: str, previous: Memory | None, text: str, facts: list[Memory], *, writer: str
    ) -> Memory:
        text = fit_tokens(text, self.settings.profile_max_tokens, self.tokens.count)
        newest = max((f.updated_at or f.created_at) for f in facts)
        vector, passage_vectors = memory_vectors((await embed_passages(self.embedder, [text]))[0])
        profile = Memory(
            id=profile_id(user_id),
            user_id=user_id,
            thread_id=None,
            type="user_summary",
            content=text,
            embedding=vector,
            passage_embeddings=passage_vectors,
            token_count=self.tokens.count(text),
            created_at=previous.created_at if previous else utcnow(),
            updated_at=utcnow(),
            metadata={
                "writer": writer,
                "folded_through": newest.isoformat(),
                "facts_folded": len(facts),  # in this update
            },
        )
        await self.writer.save(
            profile,
            "update" if previous else "create",
            "profile",
            source_text="\n".join(f.content for f in facts[:20]),
            labels={"writer": writer},
        )
        log.info(
            "user %s: profile %s from %d facts", user_id, "updated" if previous else "created", len(facts)
        )
        return profile
