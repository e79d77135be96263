"""bench/hooks.py's rule for an evidence message found in what the hooks injected (bench/_hook_replay.py),
and LoCoMo read as conversations to replay (bench/harness/data/locomo.py), on small hand-made data."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench._hook_replay import exchanges, found, normalized
from bench.harness.data.locomo import evidence_ids, sample_of

LONG = " ".join(f"w{i}" for i in range(40))  # 40 distinct words


def shown(text: str) -> str:
    return normalized(f"Earlier:\n- {text} (2 weeks ago)")


def test_a_run_of_the_messages_words_is_found_by_either_rule() -> None:
    words = LONG.split()
    assert found(LONG, shown(" ".join(words[5:35])), 30)  # 30 words in a row
    assert not found(LONG, shown(" ".join(words[5:34])), 30)  # 29 are a mention, not a passage
    assert found(LONG, shown(" ".join(words[5:13])), 8)
    assert not found(LONG, shown(" ".join(words[5:12])), 8)
    assert not found(LONG, shown(" ".join([*words[:20], "…", *words[20:]])), 30)  # a cut breaks the run


def test_a_message_shorter_than_the_run_counts_only_when_shown_whole() -> None:
    short = "Caroline went to the LGBTQ support group on 7 May."
    assert found(short, shown(short), 30)
    assert found(short, shown(short.upper().replace(" ", "\n  ")), 30)  # case and whitespace do not matter
    assert not found(short, shown(short[:-5]), 30)
    assert found(short, shown(short[:-5]), 8)  # 9 of its 10 words: a mention
    assert not found("", shown(short), 8)


def test_evidence_ids_are_read_past_the_datas_misspellings() -> None:
    assert evidence_ids(["D1:3", "D8:6; D9:17"]) == ["D1:3", "D8:6", "D9:17"]
    assert evidence_ids(["D:11:26", "D9:1 D4:4"]) == ["D11:26", "D9:1", "D4:4"]
    assert evidence_ids([]) == []


def turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


SAMPLE = {
    "sample_id": "conv-7",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [turn("Ann", "D1:1", "I adopted a dog."), turn("Bo", "D1:2", "What is its name?")],
        "session_2_date_time": "10:05 am on 2 June, 2023",
        "session_2": [turn("Bo", "D2:1", "How is Rex?"), turn("Ann", "D2:2", "Rex ate my shoe.")],
    },
    "qa": [
        {"question": "What pet did Ann adopt?", "category": 4, "evidence": ["D1:1"]},
        {"question": "What did Rex eat?", "category": 1, "evidence": ["D2:2; D1:1", "D9:9"]},
        {"question": "What did Bo adopt?", "category": 5, "evidence": ["D1:1"]},  # adversarial
        {"question": "Where does Ann live?", "category": 3, "evidence": ["D7:1"]},  # no such turn
    ],
}


def test_a_locomo_sample_is_sessions_of_named_turns_with_speaker_a_as_the_user() -> None:
    sample = sample_of(SAMPLE)
    assert sample.name == "locomo-7"
    first, second = sample.sessions
    assert [(m.role, m.content) for m in first] == [
        ("user", "Ann: I adopted a dog."),
        ("assistant", "Bo: What is its name?"),
    ]
    assert [m.said_at for m in second] == [
        datetime(2023, 6, 2, 10, 5, tzinfo=UTC),
        datetime(2023, 6, 2, 10, 6, tzinfo=UTC),
    ]
    assert sample.texts[second[1].id] == "Rex ate my shoe."  # the found rule looks for the words said
    assert [sample.dia_ids[m.id] for m in second] == ["D2:1", "D2:2"]


def test_a_session_bo_opens_starts_with_a_reply_that_has_no_prompt() -> None:
    second = sample_of(SAMPLE).sessions[1]
    assert exchanges(second) == [(None, [second[0]]), (second[1], [])]


def test_only_questions_of_categories_1_to_4_whose_evidence_is_in_the_conversation_are_asked() -> None:
    sample = sample_of(SAMPLE)
    by_dia = {d: i for i, d in sample.dia_ids.items()}
    asked = [(q.ability, q.text, q.evidence) for q in sample.questions]
    assert asked == [
        ("single-hop", "What pet did Ann adopt?", (by_dia["D1:1"],)),
        ("multi-hop", "What did Rex eat?", (by_dia["D2:2"], by_dia["D1:1"])),
    ]


def test_a_turn_by_neither_speaker_is_a_clear_error() -> None:
    stranger = {**SAMPLE, "conversation": {**SAMPLE["conversation"], "session_1": [turn("Cy", "D1:1", "hi")]}}
    with pytest.raises(ValueError, match="neither speaker"):
        sample_of(stranger)
