"""Progressive summarization: fold older messages into a thread's running summary.

Two writers: an LLM (any ChatModel) with the `summary` prompt template, and an offline extractive
summarizer that keeps the sentences carrying names, numbers, dates, decisions, preferences and
open questions. The LLM writer falls back to the extractive one on any failure, so summarizing
never loses a turn or raises. Both keep the result within the token budget they are given.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mcp_memory.errors import MalformedAnswerError, MemoryServerError
from mcp_memory.llm.chat import ChatModel, clean_answer
from mcp_memory.llm.prompts import PromptTemplate, load_prompt
from mcp_memory.llm.tokens import ELLIPSIS, CountTokens, fit_tokens, sentences
from mcp_memory.models import Message

log = logging.getLogger(__name__)


class Summarizer(Protocol):
    @property
    def name(self) -> str:
        """ "llm:<model>" or "extractive"."""
        ...

    async def summarize(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        """The new running summary: prev_summary with messages folded in, at most max_tokens."""
        ...


# ---------------------------------------------------------------------------- text helpers

_SPEAKER = re.compile(r"^(user|assistant|tool|system):\s+(.*)$", re.DOTALL)
_KEYWORDS = re.compile(
    r"\b(decid\w*|agree\w*|will|won't|must|plan\w*|deadline\w*|budget\w*|prefer\w*|"
    r"should|need\w*|going to|confirm\w*|chose|choose|chosen|select\w*|approv\w*|commit\w*|"
    r"schedul\w*|due|remember|always|never|favou?rite|likes?|dislikes?|hates?|wants?|"
    r"goal|allerg\w*|require\w*|todo|next step\w*|promis\w*)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
# Month and day names only capitalised ("March 3", not "we march"); relative dates in any case.
_DATE = re.compile(
    r"\b(Jan(uary)?|Feb(ruary)?|Mar(ch)?|Apr(il)?|May|June?|July?|Aug(ust)?|Sept?(ember)?|"
    r"Oct(ober)?|Nov(ember)?|Dec(ember)?)\b|"
    r"\b(Mon|Tues?|Wed(nes)?|Thu(rs)?|Fri|Sat(ur)?|Sun)(day)?\b|"
    r"(?i:\b(today|tomorrow|yesterday|tonight|next (week|month|year)|EOD|EOW|Q[1-4])\b)"
)
# A capitalised word that does not start the sentence: most often a name.
_NAME = re.compile(r"(?<=[^.!?]\s)(?!I\b)[A-Z][\w'-]+")
_MAX_SENTENCE_WORDS = 60
# A sentence scoring below this is filler ("Okay.", "Thanks!"): left out even when there is room.
_MIN_SCORE = 0.5


def _clip_words(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + ELLIPSIS


# ---------------------------------------------------------------------------- extractive


@dataclass
class _Candidate:
    order: int  # position in the source text: output keeps the original order
    group: int  # sentences of one message (or one summary line) are rendered on one line
    speaker: str | None
    text: str
    score: float


def _score(sentence: str, speaker: str | None, from_summary: bool) -> float:
    score = 1.0
    if _KEYWORDS.search(sentence):
        score += 2.0
    if sentence.rstrip().endswith("?"):
        # An open question; the assistant's are mostly clarifications it answers itself.
        score += 1.5 if speaker in ("user", None) else 0.5
    if _NUMBER.search(sentence):
        score += 1.5
    if _DATE.search(sentence):
        score += 1.5
    score += min(len(_NAME.findall(sentence)), 2) * 0.75
    if from_summary:
        score += 2.0  # already judged important once: old key facts persist
    if len(sentence.split()) < 4:
        score *= 0.3  # "Thanks!", "OK, sure."
    if speaker == "tool":
        score *= 0.4  # tool output is long and mostly restated by the assistant
    return score


class ExtractiveSummarizer:
    """Offline and deterministic: the highest-scoring sentences within the budget, in order."""

    name = "extractive"

    def __init__(self, count_tokens: CountTokens) -> None:
        self._count = count_tokens

    async def summarize(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        return self.summarize_now(prev_summary, messages, max_tokens)

    def summarize_now(self, prev_summary: str, messages: Sequence[Message], max_tokens: int) -> str:
        """The synchronous core (pure CPU, no I/O), also used as the LLM writer's fallback."""
        if max_tokens <= 0:
            return ""
        candidates = self._candidates(prev_summary, messages)
        # Best first; among equals the more recent one, which more likely holds the current state.
        ranked = sorted(candidates, key=lambda c: (-c.score, -c.order))
        chosen: list[_Candidate] = []
        labelled: set[int] = set()
        used = 0
        for candidate in ranked:
            if candidate.score < _MIN_SCORE:
                break
            cost = self._count(candidate.text) + 1  # + the separator
            if candidate.group not in labelled and candidate.speaker:
                cost += self._count(f"{candidate.speaker}: ")
            if used + cost > max_tokens:
                continue
            chosen.append(candidate)
            labelled.add(candidate.group)
            used += cost
        text = _render(chosen)
        # Counts of parts need not add up exactly (BPE merges across joins): drop the weakest
        # sentences until the rendered text itself fits.
        while chosen and self._count(text) > max_tokens:
            chosen.remove(min(chosen, key=lambda c: (c.score, c.order)))
            text = _render(chosen)
        if not chosen and candidates:
            # Nothing fits whole: the best sentence, cut to the budget.
            best = ranked[0]
            label = f"{best.speaker}: " if best.speaker else ""
            text = fit_tokens(label + best.text, max_tokens, self._count)
        return text

    def _candidates(self, prev_summary: str, messages: Sequence[Message]) -> list[_Candidate]:
        candidates: list[_Candidate] = []
        seen: set[str] = set()
        group = 0

        def add(text: str, speaker: str | None, from_summary: bool) -> None:
            for sentence in sentences(text):
                key = sentence.casefold()
                if key in seen:
                    continue
                seen.add(key)
                clipped = _clip_words(sentence, _MAX_SENTENCE_WORDS)
                score = _score(sentence, speaker, from_summary)
                candidates.append(_Candidate(len(candidates), group, speaker, clipped, score))

        for line in prev_summary.splitlines():
            match = _SPEAKER.match(line.strip())
            speaker, body = (match.group(1), match.group(2)) if match else (None, line)
            add(body, speaker, from_summary=True)
            group += 1
        for message in messages:
            add(message.content, message.role, from_summary=False)
            group += 1
        return candidates


def _render(chosen: list[_Candidate]) -> str:
    lines: list[str] = []
    current: int | None = None
    for candidate in sorted(chosen, key=lambda c: c.order):
        if candidate.group == current:
            lines[-1] += " " + candidate.text
            continue
        current = candidate.group
        lines.append(f"{candidate.speaker}: {candidate.text}" if candidate.speaker else candidate.text)
    return "\n".join(lines)


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
                messages_joined=format_messages(messages),
                max_words=max(1, int(max_tokens * 0.75)),
            )
            # Headroom over the budget: the model's tokenizer is not ours, and an answer cut off
            # by the provider loses its last sentence anyway.
            answer = await self._chat.complete(prompt.system, prompt.user, max_tokens=max_tokens * 2 + 32)
            return self._accept(answer, max_tokens)
        except MemoryServerError as e:  # MalformedAnswerError among them
            log.warning("LLM summary failed (%s); using the extractive summary instead", e)
        except Exception:
            # Top boundary on purpose: a summary is an optimisation, and a provider bug (a future
            # ChatModel raising something unmapped) must not fail the turn that triggered it.
            log.warning(
                "LLM summary by %s raised; using the extractive summary instead", self.name, exc_info=True
            )
        return self._fallback.summarize_now(prev_summary, messages, max_tokens)

    def _accept(self, answer: str, max_tokens: int) -> str:
        text = clean_answer(answer)
        if not any(ch.isalnum() for ch in text):
            raise MalformedAnswerError(f"{self.name} answered with no usable text")
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
