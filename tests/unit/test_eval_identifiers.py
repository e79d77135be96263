"""What `mcp-memory eval` counts as an identifier, and where it finds one mentioned
(mcp_memory/service/self_eval/identifiers.py's docstring)."""

from __future__ import annotations

import pytest

from mcp_memory.service.self_eval.identifiers import identifiers, mentions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("wrote /workspace/hello_world.py", {"hello_world.py"}),  # a file: its name
        ("see mcp_memory/hooks and ~/.claude/projects/", {"mcp_memory/hooks", "~/.claude/projects"}),
        ("ran ./scripts/check", {"scripts/check"}),
        ("fork it from github.com/acme/api", {"github.com/acme/api"}),
        ("call HookRecall.prompt or os.path.join", {"HookRecall.prompt", "os.path.join"}),
        (
            "set budget_tokens and MCP_MEMORY_DATA_DIR in __init__",
            {"budget_tokens", "MCP_MEMORY_DATA_DIR", "__init__"},
        ),
        ("getUser returns a HookRecall", {"getUser", "HookRecall"}),
        ("pin 0.1.4, or v2.1", {"0.1.4", "v2.1"}),
        ("port 8000 answers in 250ms, 30% of the time", {"8000", "250ms", "30%"}),
        ("reverted 186ef41", {"186ef41"}),
        ("we moved to Postgres and Dana owns it", {"Postgres", "Dana"}),
    ],
)
def test_identifiers_are_the_documented_kinds(text: str, expected: set[str]) -> None:
    assert identifiers(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The main config is fine, e.g. for the build.",  # plain words, a sentence's first word, e.g
        "on 2026-01-02 at 19:18, 16 of 42 passed",  # dates, times, short numbers
        "client/server and and/or",  # a slash between two plain words
        "Done. Then: Next steps",  # capitals that open a sentence
        "version 3.11",  # a number with one dot: a version only after a v
    ],
)
def test_plain_words_dates_and_short_numbers_are_not_identifiers(text: str) -> None:
    assert identifiers(text) == set()


def test_an_identifier_is_mentioned_inside_a_longer_one() -> None:
    shown = mentions(
        [
            "- 2026-01-02, the agent's work: [tool] edited /repo/mcp_memory/hooks/projects.py",
            "HookRecall.prompt",
        ]
    )
    for inside in ("projects.py", "mcp_memory/hooks", "/repo/mcp_memory", "HookRecall", "prompt"):
        assert inside in shown
    assert "hooks/gemini.py" not in shown and "hookrecall" not in shown
