"""The `mcp-memory` command line as a user meets it: --help and the demo."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.services.server_process import mcp_memory_command

DEMO_SECONDS = 180.0


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [mcp_memory_command(), *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEMO_SECONDS,
        check=False,
    )


def clean_env(home: Path) -> dict[str, str]:
    """No MCP_MEMORY_* settings of the developer's, and a home of the test's own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    return env | {"HOME": str(home), "TMPDIR": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")}


def section(output: str, title: str) -> str:
    """The lines the demo printed under its `== <title> ... ==` header."""
    found = re.search(rf"^== {re.escape(title)}.*?==\n(.*?)(?=^== |\Z)", output, re.MULTILINE | re.DOTALL)
    assert found is not None, f"the demo printed no {title!r} section:\n{output}"
    return found.group(1)


def test_help_names_the_commands_and_transports(tmp_path: Path) -> None:
    top = run(["--help"], clean_env(tmp_path), tmp_path)
    assert top.returncode == 0, top.stderr
    for word in ("serve", "demo", "stdio", "sse", "http", "MCP_MEMORY_"):
        assert word in top.stdout, word
    serve = run(["serve", "--help"], clean_env(tmp_path), tmp_path)
    assert serve.returncode == 0, serve.stderr
    assert "{stdio,sse,http}" in serve.stdout and "--port" in serve.stdout


def test_demo_summarizes_and_finds_memories_without_touching_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "my-memories"
    demo = run(["demo"], clean_env(tmp_path) | {"MCP_MEMORY_DATA_DIR": str(data_dir)}, tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "Traceback" not in demo.stderr
    assert "<- summarized" in demo.stdout
    budget_hits = section(demo.stdout, "search_memory 'budget'")
    assert re.search(r"^\s+\d+\.\d{4} \[turn\] .*budget is \$10,000", budget_hits, re.MULTILINE), budget_hits
    passport_hits = section(demo.stdout, """search_memory '"passport"'""")
    assert re.search(r"^\s+\d+\.\d{4} \[turn\] .*passport", passport_hits, re.MULTILINE), passport_hits
    assert not data_dir.exists(), "the demo must run on a temporary data dir unless --keep is given"

    # The recall step prints what it recalled in full: the remembered answer, not a cut-off preamble.
    recall = section(demo.stdout, "prompt recall('where are we flying from?')")
    assert "We decided to fly out of Seattle on March 14 and come back March 24." in recall, recall
    assert recall.rstrip().endswith(
        "Use these memories, where relevant, to help with: where are we flying from?"
    )
    # The offline summary reads as the user's own note, without "user: " or "The user said" lines:
    # the trip's facts, each once.
    working = section(demo.stdout, "get_working_memory")
    summary = working.split("\n  ", 1)[0].removeprefix("summary: ")
    assert summary.strip(), working
    assert not re.search(r"\b(?:user|said)\b", summary, re.IGNORECASE), summary
    for fact in ("Maui and Kauai", "$10,000", "Vacation rentals", "Vegetarian", "Seattle", "sister Maya"):
        assert summary.count(fact) == 1, (fact, summary)
