"""The README is the front door: its settings table must be the one the code defines."""

from __future__ import annotations

from pathlib import Path

from mcp_memory.cli.settings_table import markdown

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"


def test_readme_settings_table_matches_the_settings_model() -> None:
    text = README.read_text()
    table = text[text.index(START) + len(START) : text.index(END)].strip()
    assert table == markdown(), "README settings table is stale: run scripts/update-readme"


def test_readme_names_the_two_commands() -> None:
    text = README.read_text()
    assert "scripts/demo" in text and "scripts/test" in text
    assert "scripts/test" in (README.parent / ".ci" / "run").read_text()
