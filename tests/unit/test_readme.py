"""The README is the front door: its settings table must be the one the code defines."""

from __future__ import annotations

import re
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


def test_readme_architecture_tree_is_the_package_tree() -> None:
    """Every folder and loose module of mcp_memory/ is in the README's tree, and nothing else is."""
    text = README.read_text()
    section = text[text.index("## Architecture") :]
    tree = section[section.index("```text") : section.index("```", section.index("```text") + 3)]
    drawn = "\n".join(line.split("#")[0] for line in tree.splitlines())  # the tree, not its comments
    named = set(re.findall(r"\b([a-z_]+)/", drawn)) | set(re.findall(r"\b([a-z_]+)\.py\b", drawn))
    package = README.parent / "mcp_memory"
    folders = {p.parent.name for p in package.rglob("__init__.py") if p.parent != package}
    modules = {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert named - {"mcp_memory", "scripts"} == folders | modules
