"""BEAM's reading and scoring (bench/harness/data/beam.py), on small hand-made conversations."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.harness.data.beam import (
    Question,
    evidence_of,
    first_messages,
    load_conversation,
    recall,
    score,
    strip_marker,
    summarize,
    update_ranks_first,
)

UPDATE = Question("knowledge_update", "Which port?", (3, 7), original=(3,), updated=(7,))


def test_the_marker_is_stripped_and_nothing_else() -> None:
    assert strip_marker("Can you help me with that? ->-> 1,2") == "Can you help me with that?"
    assert strip_marker("an example of Messagepack ->-> 2,N/A") == "an example of Messagepack"
    assert strip_marker("a -> b, then ->-> in the middle stays") == "a -> b, then ->-> in the middle stays"


def test_evidence_comes_from_a_list_or_a_dict_of_lists_without_repeats() -> None:
    assert evidence_of([28]) == (28,)
    assert evidence_of({"first_event": [4, 10], "second_event": [10, 60]}) == (4, 10, 60)
    assert evidence_of([116, 118, [136, 138]]) == (116, 118, 136, 138)
    assert evidence_of(None) == evidence_of([]) == ()


def test_recall_counts_the_evidence_in_the_first_k() -> None:
    ranked = [5, None, 3, 9, 7]
    assert recall(ranked, (3, 7), 1) == 0.0
    assert recall(ranked, (3, 7), 3) == 0.5
    assert recall(ranked, (3, 7), 5) == 1.0
    assert recall([3, 3, 3], (3, 7), 3) == 0.5  # a repeated hit counts once


def test_an_update_counts_when_it_ranks_above_every_original() -> None:
    assert update_ranks_first([7, 1, 3], UPDATE)
    assert update_ranks_first([7, 1], UPDATE)  # the original is not ranked at all
    assert not update_ranks_first([3, 7], UPDATE)
    assert not update_ranks_first([1, 3], UPDATE)  # the update is not ranked: never first
    assert not update_ranks_first([], UPDATE)


def test_an_update_that_is_also_the_original_is_not_counted() -> None:
    same = Question("knowledge_update", "Which port?", (214,), original=(214,), updated=(214,))
    assert update_ranks_first([214], same) is None
    assert "update_first" not in score([214], same)
    overlapping = Question("knowledge_update", "Which port?", (3, 7), original=(3, 7), updated=(7,))
    assert update_ranks_first([7, 3], overlapping) is None
    both = Question("knowledge_update", "Which port?", (3, 7, 9), original=(3, 7), updated=(7, 9))
    assert update_ranks_first([7, 9, 3], both)  # 7 is left out: 9 (an update only) is above 3
    assert not update_ranks_first([3, 9], both)


def test_scores_are_summarized_per_ability_with_the_update_count() -> None:
    rows = [
        ("knowledge_update", score([7, 3], UPDATE)),
        ("knowledge_update", score([3, 7], UPDATE)),
        ("information_extraction", score([1, 2], Question("information_extraction", "When?", (2,)))),
    ]
    summary = summarize(rows)
    assert summary["questions"] == 3
    assert summary["updates_first"] == 1 and summary["updates"] == 2
    assert summary["by_ability"]["information_extraction"] == {
        "R@1": 0.0,
        "R@5": 1.0,
        "R@10": 1.0,
        "R@20": 1.0,
        "n": 1,
    }
    assert summary["overall"]["R@1"] == pytest.approx(1 / 3)  # 0.5, 0.5, 0


def test_a_conversation_is_read_in_order_dated_by_its_anchors(tmp_path: Path) -> None:
    def message(i: int, role: str, content: str, anchor: str | None = None) -> dict[str, object]:
        return {"role": role, "id": i, "content": content} | ({"time_anchor": anchor} if anchor else {})

    chat = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    message(0, "user", "Plan my sprint ->-> 1,1", "March-15-2024"),
                    message(1, "assistant", "Sure."),
                ],
                [message(2, "user", "Port 5000? ->-> 1,2", "April-05-2024"), message(3, "assistant", "Yes.")],
            ],
        }
    ]
    probing = {
        "abstention": [{"question": "What did my manager say?"}],
        "knowledge_update": [
            {"question": "Which port?", "source_chat_ids": {"original_info": [2], "updated_info": [3]}}
        ],
        "information_extraction": [{"question": "What did I plan?", "source_chat_ids": [0]}],
    }
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    (tmp_path / "probing_questions.json").write_text(json.dumps(probing))

    conversation = load_conversation(tmp_path)

    assert [(m.id, m.role, m.content) for m in conversation.messages] == [
        (0, "user", "Plan my sprint"),
        (1, "assistant", "Sure."),
        (2, "user", "Port 5000?"),
        (3, "assistant", "Yes."),
    ]
    assert [m.said_at for m in conversation.messages] == [
        datetime(2024, 3, 15, 0, 0, tzinfo=UTC),
        datetime(2024, 3, 15, 0, 1, tzinfo=UTC),
        datetime(2024, 4, 5, 0, 0, tzinfo=UTC),
        datetime(2024, 4, 5, 0, 1, tzinfo=UTC),
    ]
    assert [(q.ability, q.evidence, q.original, q.updated) for q in conversation.questions] == [
        ("knowledge_update", (2, 3), (2,), (3,)),  # abstention names no evidence: not scored
        ("information_extraction", (0,), (), ()),
    ]
    quick = first_messages(conversation, 3)
    assert len(quick.messages) == 3
    assert [(q.evidence, q.updated) for q in quick.questions] == [((2,), ()), ((0,), ())]
