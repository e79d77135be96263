"""Turns that are refused: too long, or not text. Each refusal names the problem, and nothing is stored."""

from __future__ import annotations

import json

import pytest

from mcp_memory.config import Settings
from mcp_memory.errors import InvalidInputError
from mcp_memory.search.query import SearchQuery
from mcp_memory.service.memory_service import MemoryService

pytestmark = pytest.mark.anyio

USER = "tester"


async def assert_nothing_stored(service: MemoryService, thread_id: str) -> None:
    assert await service.stores.long_term.recent(USER, thread_id, limit=10) == []
    assert await service.stores.working.get(USER, thread_id) is None


async def test_a_turn_over_the_limit_is_refused_naming_its_length_and_the_limit(
    service: MemoryService,
) -> None:
    limit = service.settings.max_content_chars
    assert limit == 1_000_000
    with pytest.raises(InvalidInputError) as refused:
        await service.add_turn(USER, "t", "user", "a" * (limit + 1))
    assert "content is 1,000,001 characters; the limit is 1,000,000" in str(refused.value)
    assert "max_content_chars" in str(refused.value)
    await assert_nothing_stored(service, "t")


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("log line\x00more", "control character U+0000 (NUL) at offset 8"),
        ("\x1b[31mred\x1b[0m", "control character U+001B (ESC) at offset 0"),
        ("a" * 123_456 + "\x7f", "control character U+007F (DEL) at offset 123,456"),
        ("price\x85", "control character U+0085 (C1 control) at offset 5"),
        ("half \ud83d of an emoji", "unpaired surrogate U+D83D at offset 5"),
        ("PK\x03\x04 zip bytes read as text", "U+0003 (ETX) at offset 2"),
    ],
)
async def test_binary_or_control_characters_are_refused_naming_the_character_and_offset(
    service: MemoryService, content: str, named: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        await service.add_turn(USER, "t", "user", content)
    assert named in str(refused.value)
    await assert_nothing_stored(service, "t")


async def test_tab_newline_carriage_return_and_any_script_are_text(service: MemoryService) -> None:
    content = "col1\tcol2\r\nvalue é 東京 🚀\n"
    out = await service.add_turn(USER, "t", "user", content)
    assert (await service.get_memory(USER, out.turn.id)).content == content


async def test_a_query_has_its_own_smaller_limit(service: MemoryService) -> None:
    limit = service.settings.search.max_query_chars
    with pytest.raises(InvalidInputError, match=f"query is {limit + 1:,} characters; the limit is {limit:,}"):
        await service.search(SearchQuery.of(USER, "q" * (limit + 1), settings=service.settings))


async def test_an_import_with_a_control_character_names_the_memory(service: MemoryService) -> None:
    await service.add_turn(USER, "t", "user", "An ordinary turn.")
    exported = (await service.export_memories(USER)).jsonl
    tampered = exported.replace("An ordinary turn.", "An ordinary\\u0000turn.")
    assert tampered != exported
    with pytest.raises(
        InvalidInputError, match=r"imported memory turn_\w+: content has control character U\+0000"
    ):
        await service.import_memories("importer", tampered)
    assert await service.stores.long_term.recent("importer", "t", limit=10) == []
    assert await service.stores.working.get("importer", "t") is None


def test_the_http_body_limit_admits_a_longest_turn_json_escaped(settings: Settings) -> None:
    assert settings.security.max_request_bytes is None
    turn = {"thread_id": "t", "role": "user", "content": "東" * settings.max_content_chars}
    escaped = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": turn}})
    assert len(escaped.encode()) <= settings.request_body_limit < 2 * len(escaped.encode())
    raised = settings.model_copy(update={"max_content_chars": 2_000_000})
    assert raised.request_body_limit > settings.request_body_limit
    fixed = settings.model_copy(
        update={"security": settings.security.model_copy(update={"max_request_bytes": 4096})}
    )
    assert fixed.request_body_limit == 4096
