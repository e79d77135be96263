"""`mcp-memory eval` run as the user runs it, on a home holding real transcripts: a real Claude Code session
(claude_transcripts/, fasthooks' public sample) cut at its third prompt into two sessions of one project,
and a real Gemini CLI session of another (tests/unit/hook_payloads/gemini-cli-0.61.0/), each where its
client keeps it. The user's own data directory holds a real store, which the replay must leave as it was.
On a home of its own, two real Codex CLI sessions of one repository (tests/unit/hook_payloads/captured/
codex-0.171.0-sessions/): the second asks where the first put something.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CLAUDE = Path(__file__).parent / "claude_transcripts" / "fasthooks_main.jsonl"
GEMINI = Path(__file__).parents[1] / "unit" / "hook_payloads" / "gemini-cli-0.61.0" / "transcript-tool.jsonl"
CODEX = (
    Path(__file__).parents[1] / "unit" / "hook_payloads" / "captured" / "codex-0.171.0-sessions" / "sessions"
)
FIRST = "c45af7b1-cb7c-4e51-93db-8cbb250a877a"  # the real session's id
SECOND = "c45af7b1-0000-4000-8000-00000000000b"  # its second part, as a session of its own
CUT_AT = "can you read it back"  # the prompt that opens the second part: it names no file


def write_history(home: Path) -> None:
    lines = CLAUDE.read_text().splitlines()
    cut = next(
        n
        for n, line in enumerate(lines)
        if json.loads(line).get("type") == "user" and CUT_AT in str(json.loads(line)["message"]["content"])
    )
    if json.loads(lines[cut - 1]).get("type") == "file-history-snapshot":  # the prompt's own snapshot
        cut -= 1
    project = home / ".claude" / "projects" / "-workspace"
    project.mkdir(parents=True)
    (project / f"{FIRST}.jsonl").write_text("\n".join(lines[:cut]) + "\n")
    (project / f"{SECOND}.jsonl").write_text("\n".join(x.replace(FIRST, SECOND) for x in lines[cut:]) + "\n")
    (project / "agent-af1ff21.jsonl").write_text(
        (CLAUDE.parent / "fasthooks_sidechain.jsonl").read_text()  # a subagent's: not a session
    )
    chats = home / ".gemini" / "tmp" / "alpha" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-11-28T22-24-c656d518.jsonl").write_text(GEMINI.read_text())


def run(home: Path, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MCP_MEMORY_")}
    env |= {"HOME": str(home), "MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "ann"}
    return subprocess.run(
        [sys.executable, "-m", "mcp_memory", *args],
        cwd=home,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def files(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in directory.rglob("*")
        if p.is_file()
    }


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The home with the transcripts, and the user's data directory with a real store in it."""
    home = tmp_path_factory.mktemp("home")
    write_history(home)
    data_dir = tmp_path_factory.mktemp("data")
    made = run(home, data_dir, "export", "--output", str(home / "export.jsonl"))
    assert made.returncode == 0, made.stderr
    assert (data_dir / "memory.db").exists()
    return home, data_dir


@pytest.fixture(scope="module")
def two_budgets(
    history: tuple[Path, Path],
) -> tuple[
    subprocess.CompletedProcess[str],
    dict[str, Any],
    dict[str, tuple[int, bytes]],
    dict[str, tuple[int, bytes]],
]:
    home, data_dir = history
    before = files(data_dir)
    done = run(home, data_dir, "eval", "--budget", "500,1500", "--json", str(home / "eval.json"))
    assert done.returncode == 0, done.stderr
    return done, json.loads((home / "eval.json").read_text()), before, files(data_dir)


def test_eval_finds_an_identifier_an_earlier_session_gave(two_budgets: Any) -> None:
    _, details, _, _ = two_budgets
    [asked] = details["asked"]  # the second part: the first session of each project has nothing earlier
    assert asked["session"] == SECOND
    assert asked["prompt"].startswith(CUT_AT)
    # Its reply names the file the first session wrote; its prompt does not.
    assert "hello_world.py" in asked["needed"]
    for answer in asked["answers"]:
        assert "hello_world.py" in answer["found"]
        assert "hello_world.py" in answer["injected"]
        assert set(answer["found"]) | set(answer["missed"]) == set(asked["needed"])


def test_eval_finds_an_identifier_an_earlier_codex_session_gave(tmp_path: Path) -> None:
    shutil.copytree(CODEX, tmp_path / ".codex" / "sessions")
    done = run(
        tmp_path, tmp_path / "data", "eval", "--budget", "500,1500", "--json", str(tmp_path / "eval.json")
    )
    assert done.returncode == 0, done.stderr
    details = json.loads((tmp_path / "eval.json").read_text())
    assert details["sessions_replayed"] == 2
    [asked] = details["asked"]
    assert asked["session"] == "01a22507-2443-7902-898b-2ea015f267f3"
    assert asked["prompt"] == "Where did we put the retry limit for billing?"
    # Its reply names the module the first session wrote and the constant in it; its prompt names neither.
    assert {"retry_limits.py", "MAX_RETRIES"} <= set(asked["needed"])
    for answer in asked["answers"]:
        assert "retry_limits.py" in answer["found"] and "retry_limits.py" in answer["injected"]
    assert "github.com/acme/alpha" in done.stdout


def test_eval_leaves_the_users_data_dir_as_it_was(two_budgets: Any) -> None:
    _, _, before, after = two_budgets
    assert after == before


def test_eval_prints_one_row_per_budget(two_budgets: Any) -> None:
    done, details, _, _ = two_budgets
    rows = [
        line.split() for line in done.stdout.splitlines() if line.startswith(("/workspace", "/home/me/alpha"))
    ]
    assert [(row[0], row[1]) for row in rows] == [
        ("/home/me/alpha", "500"),
        ("/home/me/alpha", "1500"),
        ("/workspace", "500"),
        ("/workspace", "1500"),
    ]
    workspace = [row for row in rows if row[0] == "/workspace"]
    needed = len(details["asked"][0]["needed"])
    assert all(row[2:5] == ["2", "1", str(needed)] for row in workspace)  # sessions, scored, needed
    assert [len(a["found"]) for a in details["asked"][0]["answers"]] == [
        round(float(row[5]) * needed) for row in workspace
    ]
    assert details["budgets"] == [500, 1500] and details["sessions_replayed"] == 3


def test_eval_project_and_since_choose_the_sessions(history: tuple[Path, Path]) -> None:
    home, data_dir = history
    by_project = run(home, data_dir, "eval", "--project", "workspace", "--json", str(home / "p.json"))
    assert by_project.returncode == 0, by_project.stderr
    assert json.loads((home / "p.json").read_text())["sessions_replayed"] == 2
    assert "/home/me/alpha" not in by_project.stdout
    since = run(home, data_dir, "eval", "--since", "2026-06-01", "--json", str(home / "s.json"))
    assert since.returncode == 0, since.stderr
    details = json.loads((home / "s.json").read_text())
    assert details["sessions_replayed"] == 1 and details["asked"] == []  # the Gemini session only
    assert "/home/me/alpha" in since.stdout and "/workspace" not in since.stdout


def test_eval_without_history_says_where_it_looked(tmp_path: Path) -> None:
    done = run(tmp_path, tmp_path / "data", "eval")
    assert done.returncode == 1
    assert "no sessions found" in done.stderr and ".claude/projects" in done.stderr
    nothing = run(tmp_path, tmp_path / "data", "eval", "--project", "nowhere")
    assert nothing.returncode == 1 and "--project nowhere" in nothing.stderr


@pytest.mark.parametrize("budget", ["abc", "500,x", "20", "500,9000", ""])
def test_eval_rejects_a_bad_budget_by_name(tmp_path: Path, budget: str) -> None:
    done = run(tmp_path, tmp_path / "data", "eval", "--budget", budget)
    assert done.returncode == 2
    assert "--budget" in done.stderr and len(done.stderr.splitlines()) <= 3
