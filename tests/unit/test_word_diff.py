"""word_diff: what changed between two revisions of a memory, word by word."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from mcp_memory.ui import diff
from mcp_memory.ui.diff import DiffPart, word_diff

# Few distinct words and spaces, so generated texts share enough to make real diffs.
texts = st.lists(
    st.sampled_from(["fact", "the", "cat", "Lisbon", "flat", "", " ", "  ", "\n", "\t", "a,", "é"]),
    max_size=30,
).map("".join)


def old_of(parts: list[DiffPart]) -> str:
    return "".join(p.text for p in parts if p.op != "added")


def new_of(parts: list[DiffPart]) -> str:
    return "".join(p.text for p in parts if p.op != "removed")


@given(texts, texts)
def test_the_parts_join_back_into_both_texts(old: str, new: str) -> None:
    parts = word_diff(old, new)
    assert old_of(parts) == old and new_of(parts) == new
    assert all(p.text for p in parts)
    assert all(a.op != b.op for a, b in itertools.pairwise(parts))  # neighbours merged


@given(texts)
def test_a_text_against_itself_is_one_unchanged_part(text: str) -> None:
    assert word_diff(text, text) == ([DiffPart("same", text)] if text else [])


def test_a_changed_word_is_removed_then_added_with_its_surroundings_unchanged() -> None:
    assert word_diff("Lives in Lisbon since 2020", "Lives in Porto since 2020") == [
        DiffPart("same", "Lives in "),
        DiffPart("removed", "Lisbon"),
        DiffPart("added", "Porto"),
        DiffPart("same", " since 2020"),
    ]


def test_added_and_removed_words_keep_their_spaces() -> None:
    assert word_diff("likes tea", "likes green tea") == [
        DiffPart("same", "likes "),
        DiffPart("added", "green "),
        DiffPart("same", "tea"),
    ]
    # A run of spaces is one token: two spaces are not one space plus another.
    assert word_diff("likes  green tea", "likes tea") == [
        DiffPart("same", "likes"),
        DiffPart("removed", "  green"),
        DiffPart("same", " tea"),
    ]


def test_a_word_is_compared_whole_not_by_its_letters() -> None:
    assert word_diff("cat", "cart") == [DiffPart("removed", "cat"), DiffPart("added", "cart")]


def test_empty_sides() -> None:
    assert word_diff("", "") == []
    assert word_diff("", "new fact") == [DiffPart("added", "new fact")]
    assert word_diff("old fact", "") == [DiffPart("removed", "old fact")]


def test_long_texts_past_the_exact_comparison_still_join_back() -> None:
    words = [("the", "cat", "flat", f"w{i}")[i % 4] for i in range(4000)]
    old = " ".join(words)
    changed = [("dog" if i % 97 == 0 else w) for i, w in enumerate(words)]
    new = " ".join(changed)
    assert (len(words) * 2) ** 2 > diff.EXACT_PAIRS  # the junk heuristic is on
    parts = word_diff(old, new)
    assert old_of(parts) == old and new_of(parts) == new
    assert sum(len(p.text) for p in parts if p.op == "added") < len(new) // 10  # still a word diff
