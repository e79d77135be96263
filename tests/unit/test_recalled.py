"""What recall shows of what it found (service/recalled.py): whole sentences, more for the best, an
exchange as one entry, near-duplicates once, never past the budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.llm.tokens import TokenCounter
from mcp_memory.service.recalled import (
    MIN_TOKENS,
    Entry,
    collapsed,
    fitted,
    paired,
    passage,
    placed,
    share,
)
from mcp_memory.views import PassageView, SearchHit

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def count(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    return TokenCounter.load("o200k_base", cache_dir=tmp_path_factory.mktemp("tiktoken"))


def hit(n: int, content: str, role: str = "assistant", **extra: object) -> SearchHit:
    return SearchHit(
        id=f"turn_{n:032x}",
        type="turn",
        thread_id="proj.s1",
        role=role,  # type: ignore[arg-type]
        content=content,
        created_at=T0 + timedelta(minutes=n),
        score=1 - n / 100,
        matched_by="both",
        **({"token_count": len(content.split()) * 2} | extra),  # type: ignore[arg-type]
    )


def prose(topic: str, sentences: int) -> str:
    return " ".join(
        f"Sentence {i} about {topic} says that step {i} of the {topic} rollout used batch size {i * 8}."
        for i in range(sentences)
    )


def fit(entries: list[Entry], budget: int, count: TokenCounter, frame: int = 0) -> list[Entry]:
    return fitted(entries, budget, count.count, ["rollout"], lambda e: frame)


def test_shares_fall_with_rank_to_a_usable_least() -> None:
    shares = [share(r) for r in range(40)]
    assert shares == sorted(shares, reverse=True)
    assert shares[0] > shares[10] and shares[-1] == MIN_TOKENS


def test_a_passage_is_whole_sentences_and_the_whole_memory_when_it_fits(count: TokenCounter) -> None:
    long = hit(1, prose("billing", 40))
    text = passage(long, 80, count.count, ["rollout"])
    assert count.count(text) <= 80 and text.endswith(".") and text[0].isupper()
    assert text in long.content and "…" not in text
    short = hit(2, "We chose PostgreSQL 16 for billing.")
    assert passage(short, 80, count.count, []) == short.content


def test_a_long_memory_shows_the_passage_that_matched(count: TokenCounter) -> None:
    content = prose("billing", 30) + " " + prose("search", 30)
    start = content.index("Sentence 0 about search")
    found = hit(1, content, passage=PassageView(start=start, end=start + 600))
    assert "about search" in passage(found, 60, count.count, ["search"])


def test_the_best_get_more_words_than_the_last(count: TokenCounter) -> None:
    entries = [Entry(hit(n, prose(f"topic{n}", 30)), ranks=(n,)) for n in range(12)]
    shown = fit(entries, 900, count)
    sizes = [count.count(e.text) for e in shown]
    assert len(shown) >= 8 and sizes[0] >= max(sizes[-3:]) and sizes[0] > min(sizes)
    assert sum(sizes) <= 900


@pytest.mark.parametrize("budget", [70, 200, 700, 1500])
def test_never_past_the_budget_frames_included(count: TokenCounter, budget: int) -> None:
    entries = [Entry(hit(n, prose(f"t{n}", 5 + n)), ranks=(n,)) for n in range(20)]
    shown = fit(entries, budget, count, frame=30)
    assert sum(count.count(e.text) + 30 for e in shown) <= budget
    assert all(count.count(e.text) >= 20 for e in shown)


def test_what_is_left_goes_to_the_memories_cut(count: TokenCounter) -> None:
    entries = [Entry(hit(n, prose(f"t{n}", 40)), ranks=(n,)) for n in range(2)]
    shown = fit(entries, 1500, count)
    assert sum(count.count(e.text) for e in shown) > 1200  # not just their two shares


def test_a_turn_and_its_reply_are_one_entry_when_both_were_found() -> None:
    asked = hit(1, "Which database should billing use?", role="user")
    answer = hit(2, "Billing uses PostgreSQL 16 with pgbouncer.")
    other = hit(3, "Search runs on OpenSearch.")
    lone = hit(4, "What about search?", role="user")
    entries = paired([answer, other, asked, lone], {asked.id: answer.id, lone.id: "turn_elsewhere"})
    assert [(e.hit.id, e.reply.id if e.reply else None) for e in entries] == [
        (asked.id, answer.id),
        (other.id, None),
        (lone.id, None),
    ]
    assert entries[0].ranks == (2, 0)


def test_an_exchange_shows_both_halves(count: TokenCounter) -> None:
    asked = hit(1, "Which database should billing use for the rollout?", role="user")
    answer = hit(2, prose("billing", 20))
    (shown,) = fit([Entry(asked, answer, ranks=(0, 1))], 400, count)
    assert shown.text == asked.content and shown.reply_text.startswith("Sentence")


def test_near_duplicates_are_one_entry_at_the_better_rank() -> None:
    reply = prose("billing", 6)
    first, copy, edited = hit(1, reply), hit(2, reply), hit(3, reply + " Noted.")
    different = hit(4, prose("search", 6))
    assert [h.id for h in collapsed([first, copy, edited, different])] == [first.id, different.id]


def test_placed_counts_what_fits_one_per_line() -> None:
    hits = [hit(n, "word " * 200) for n in range(30)]
    assert 0 < placed(hits, 1500, 40) < 30
    assert placed(hits, MIN_TOKENS + 39, 40) == 0


def test_a_short_memory_fits_a_budget_smaller_than_the_least_share(count: TokenCounter) -> None:
    short = hit(1, "PostgreSQL 16.", token_count=count.count("PostgreSQL 16."))
    long = hit(2, prose("billing", 20))
    shown = fit([Entry(long, ranks=(0,)), Entry(short, ranks=(1,))], 10, count)
    assert [e.text for e in shown] == ["PostgreSQL 16."]  # the long one needs MIN_TOKENS, the short one whole
