"""What full-text search indexes beside a turn (search/context.py): the turns before it, the turns after
it once they arrive, and its date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from mcp_memory.models import Memory
from mcp_memory.search.context import contexts_without, thread_contexts, turn_contexts

DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turns(*texts: str) -> list[Memory]:
    return [
        Memory(
            id=f"t{i}",
            user_id="ann",
            thread_id="s",
            type="turn",
            content=text,
            created_at=DAY + timedelta(minutes=i),
        )
        for i, text in enumerate(texts)
    ]


def test_the_new_turn_gets_the_turns_before_it_and_its_date() -> None:
    found = turn_contexts(turns("a", "b", "c", "d"), "e", DAY, before=2, after=2)
    assert found.own == "c d 8 May 2023"


def test_the_turns_before_it_get_it_as_a_turn_after_them() -> None:
    found = turn_contexts(turns("a", "b", "c", "d"), "e", DAY, before=2, after=2)
    assert found.rewritten == {"t2": "a b d e 8 May 2023", "t3": "b c e 8 May 2023"}


def test_at_the_start_of_a_thread_there_is_less_around() -> None:
    assert turn_contexts([], "a", DAY, before=2, after=2).own == "8 May 2023"
    found = turn_contexts(turns("a"), "b", DAY, before=2, after=2)
    assert found.own == "a 8 May 2023"
    assert found.rewritten == {"t0": "b 8 May 2023"}


def test_nothing_is_rewritten_without_turns_after() -> None:
    found = turn_contexts(turns("a", "b"), "c", DAY, before=2, after=0)
    assert found.own == "a b 8 May 2023"
    assert found.rewritten == {}


@given(
    count=st.integers(min_value=0, max_value=8),
    before=st.integers(min_value=0, max_value=3),
    after=st.integers(min_value=0, max_value=3),
)
def test_contexts_built_turn_by_turn_equal_the_window_around_each_turn(
    count: int, before: int, after: int
) -> None:
    """Adding turns one by one, each rewrite leaves every turn with the whole window around it."""
    texts = [f"w{i}" for i in range(count)]
    stored: list[Memory] = []
    contexts: dict[str, str] = {}
    for i, text in enumerate(texts):
        found = turn_contexts(
            stored[-(before + after) :] if before + after else [], text, DAY, before=before, after=after
        )
        contexts.update(found.rewritten)
        stored.append(turns(*texts)[i])
        contexts[stored[-1].id] = found.own
    for i in range(count):
        window = texts[max(0, i - before) : i] + texts[i + 1 : i + 1 + after]
        assert contexts[f"t{i}"] == " ".join([*window, "8 May 2023"])


@given(
    count=st.integers(min_value=1, max_value=9),
    data=st.data(),
    before=st.integers(min_value=0, max_value=3),
    after=st.integers(min_value=0, max_value=3),
)
def test_forgetting_a_turn_rewrites_every_context_that_held_it(
    count: int, data: st.DataObject, before: int, after: int
) -> None:
    texts = [f"w{i}" for i in range(count)]
    gone = data.draw(st.integers(min_value=0, max_value=count - 1))
    reach = before + after
    window = turns(*texts)[max(0, gone - reach) : gone + reach + 1]
    rewritten = contexts_without(window, f"t{gone}", before=before, after=after)

    kept = [t for i, t in enumerate(texts) if i != gone]
    held_it = {i for i in range(count) if i != gone and (0 < gone - i <= after or 0 < i - gone <= before)}
    assert set(rewritten) == {f"t{i}" for i in held_it}
    for i in held_it:
        at = kept.index(texts[i])
        around = kept[max(0, at - before) : at] + kept[at + 1 : at + 1 + after]
        assert rewritten[f"t{i}"] == " ".join([*around, "8 May 2023"])
        assert texts[gone] not in rewritten[f"t{i}"].split()


def test_a_turn_not_in_the_window_rewrites_nothing() -> None:
    assert contexts_without(turns("a", "b"), "elsewhere", before=2, after=2) == {}


def test_a_whole_thread_gets_every_window_in_time_order_whatever_order_it_comes_in() -> None:
    a, b, c = turns("a", "b", "c")
    other = Memory(id="x", user_id="ann", thread_id="elsewhere", type="turn", content="x", created_at=DAY)
    found = thread_contexts([c, other, a, b], before=1, after=1)
    assert found == {"t0": "b 8 May 2023", "t1": "a c 8 May 2023", "t2": "b 8 May 2023", "x": "8 May 2023"}
