"""Progressive summarization: fold older messages into a thread's running summary.

Two writers: an LLM (any ChatModel) with the `summary` prompt template, and the offline extractive
writer (service/extractive.py) that keeps what a later question could need per token of budget. The
LLM writer falls back to the extractive one on any failure, so summarizing never loses a turn or
raises. Both keep the result within the token budget they are given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from mcp_memory.errors import MalformedAnswerError, MemoryServerError
from mcp_memory.llm.chat import ChatModel, clean_answer
from mcp_memory.llm.prompts import PromptTemplate, load_prompt
from mcp_memory.llm.tokens import CountTokens, fit_tokens
from mcp_memory.models import Message
from mcp_memory.service.extractive import ExtractiveSummarizer
from mcp_memory.service.verbatim import repair

log = logging.getLogger(__name__)


class Summarizer(Protocol):
    @property
    def name(self) -> str:
        """ "llm:<model>" or "extractive"."""
        ...

    async def summarize(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        """The new running summary: prev_summary with messages folded in, at most max_tokens."""
        ...


# ---------------------------------------------------------------------------- LLM


def format_messages(messages: Sequence[Message]) -> str:
    """One line per message, oldest first: `[2025-01-31 14:05] user: text`."""
    return "\n".join(
        f"[{m.created_at:%Y-%m-%d %H:%M}] {m.role}: {' '.join(m.content.split())}" for m in messages
    )


class LLMSummarizer:
    """A ChatModel writes the summary; any failure falls back to the extractive summarizer."""

    # An answer this many times over budget ignored the instructions (it likely echoed the
    # messages): cutting it would keep its first sentences, not a summary.
    OVERLONG_FACTOR = 2.0

    def __init__(self, chat: ChatModel, count_tokens: CountTokens, template: PromptTemplate) -> None:
        self._chat = chat
        self._count = count_tokens
        self._template = template
        self._fallback = ExtractiveSummarizer(count_tokens)

    @property
    def name(self) -> str:
        return f"llm:{self._chat.name}"

    async def summarize(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        try:
            prompt = self._template.render(
                prev_summary=prev_summary.strip() or "(none)",
                messages_joined=format_messages(await self._digested(messages, max_tokens)),
                max_words=max(1, int(max_tokens * 0.75)),
            )
            # Headroom over the budget: the model's tokenizer is not ours, and an answer cut off
            # by the provider loses its last sentence anyway.
            answer = await self._chat.complete(prompt.system, prompt.user, max_tokens=max_tokens * 2 + 32)
            source = "\n".join([prev_summary, *(m.content for m in messages)])
            return self._accept(answer, max_tokens, source)
        except MemoryServerError as e:  # MalformedAnswerError among them
            log.warning("LLM summary failed (%s); using the extractive summary instead", e)
        except Exception:
            # Top boundary on purpose: a summary is an optimisation, and a provider bug (a future
            # ChatModel raising something unmapped) must not fail the turn that triggered it.
            log.warning(
                "LLM summary by %s raised; using the extractive summary instead", self.name, exc_info=True
            )
        return await self._fallback.summarize(prev_summary, messages, max_tokens)

    async def _digested(self, messages: Sequence[Message], max_tokens: int) -> list[Message]:
        """The messages as the model reads them: one longer than the whole summary may be (a pasted
        file, a log) as its extractive digest of that size, so the prompt stays within the model's
        context however long the turn; the others as they are."""
        shown = []
        for message in messages:
            if message.token_count > max_tokens:
                digest = await self._fallback.summarize("", [message], max_tokens)
                content = f"(a text of {len(message.content):,} characters; its key lines:)\n{digest}"
                message = message.model_copy(update={"content": content})
            shown.append(message)
        return shown

    def _accept(self, answer: str, max_tokens: int, source: str) -> str:
        """The model's answer as a summary: the terms it quotes spelled as `source` spells them
        (verbatim.py), within `max_tokens`."""
        text = clean_answer(answer)
        if not any(ch.isalnum() for ch in text):
            raise MalformedAnswerError(f"{self.name} answered with no usable text")
        text, unknown = repair(text, source)
        if unknown:
            shown = ", ".join(term[:40] for term in unknown[:5])
            log.info(
                "LLM summary by %s has %d term(s) the messages do not spell so: %s",
                self.name,
                len(unknown),
                shown,
            )
        tokens = self._count(text)
        if tokens > max_tokens * self.OVERLONG_FACTOR:
            raise MalformedAnswerError(
                f"{self.name} answered with {tokens} tokens for a {max_tokens}-token budget"
            )
        fitted = fit_tokens(text, max_tokens, self._count)
        if not any(ch.isalnum() for ch in fitted):
            raise MalformedAnswerError(f"{self.name} answered with no sentence that fits {max_tokens} tokens")
        return fitted


def build_summarizer(
    chat: ChatModel | None, count_tokens: CountTokens, prompts_dir: Path | None = None
) -> Summarizer:
    """The LLM summarizer when a chat model is configured, else the extractive one.

    Loads the summary template now, so a broken user template fails at start (ConfigError).
    """
    if chat is None:
        return ExtractiveSummarizer(count_tokens)
    return LLMSummarizer(chat, count_tokens, load_prompt("summary", prompts_dir))
