"""What summarize_thread did, or why it did nothing, in plain words: the result's `message`.

The counts (summarized_count, kept_count, tokens_before, tokens_after) say it in numbers; a model or a
person reading `summarized_count: 0` should not have to work out that the thread's messages all fit the
share kept verbatim by default, nor what to pass to summarize them anyway.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Folded:
    """A summary written: `folded` oldest messages of `folded_tokens` tokens, `kept` newest verbatim."""

    folded: int
    folded_tokens: int
    kept: int
    tokens_before: int
    tokens_after: int
    by_model: bool


@dataclass(frozen=True)
class NothingFolded:
    """No summary written: the thread's `messages` (of `tokens` tokens) all stay verbatim, because of
    `keep_recent` when given, else because they fit `budget` tokens (the share of the `threshold` kept
    verbatim by default)."""

    messages: int
    tokens: int
    keep_recent: int | None
    budget: int
    threshold: int


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def said(outcome: Folded | NothingFolded) -> str:
    if isinstance(outcome, Folded):
        who = "the configured model" if outcome.by_model else "the offline summarizer"
        kept = (
            f"kept the newest {_n(outcome.kept, 'message')} verbatim"
            if outcome.kept
            else "kept no message verbatim"
        )
        return (
            f"Summarized: folded the oldest {_n(outcome.folded, 'message')} "
            f"({_n(outcome.folded_tokens, 'token')}) into the thread's summary, written by {who}; {kept}. "
            f"The thread went from {outcome.tokens_before:,} to {_n(outcome.tokens_after, 'token')}; "
            "every message stays in long-term memory."
        )
    if outcome.messages == 0:
        return "Nothing to summarize: every message of the thread is in its summary already."
    held = f"its {_n(outcome.messages, 'message')} ({_n(outcome.tokens, 'token')})"
    if outcome.keep_recent is not None:
        return (
            f"Nothing summarized: keep_recent={outcome.keep_recent} keeps all of {held} verbatim. "
            "Pass a smaller keep_recent to fold the older ones in (keep_recent=0 folds them all)."
        )
    return (
        f"Nothing summarized: {held} fit the {_n(outcome.budget, 'token')} kept verbatim by default "
        f"(the thread summarizes itself past {_n(outcome.threshold, 'token')}). "
        "Pass keep_recent to summarize now (keep_recent=0 folds every message in)."
    )
