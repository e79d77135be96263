"""The memory's hooks in the real Claude Code CLI, end to end, with no network (issue 46, item 7).

Claude Code (npm, native binary; tests/services/claude_code.py) runs headless (`claude -p`) against a
stand-in Messages API (tests/services/messages_api.py), as a user whose home is the test's own. The memory
is installed the way a user installs it (`mcp-memory install claude-code --scope user`), and what its
hooks inject is read where it matters: in the request the model receives. Each test stops the resident
server its hooks started.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.claude_code import ClaudeRun, run_claude
from tests.services.memory_user import (
    DECISION,
    QUESTION,
    Memory,
    git_project,
    installed,
    stored,
    wait_until_stored,
)
from tests.services.messages_api import MessagesAPI
from tests.services.resident import stop_resident_servers

# A bound against a hang on one whole `claude -p`, hooks included: speed lives in bench/. A hook that waits
# for the broken store is cut off by its own timeout (install_clients.RECALL_SECONDS, CAPTURE_SECONDS) and
# shows in run.hook_errors(), which the test asserts empty.
RUN_BOUND_SECONDS = 90.0
SMALL_TALK_CHARACTERS = 300

# Planted credentials: an AWS secret key and a JWT (neither is real).
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiJxN3ZrMnBmOSIsIm5hbWUiOiJEZXBsb3kgQm90Iiwicm9sZSI6ImFkbWluIn0."
    "Zk3pQv9XbT2mWq7LrN4sY8cJ1dH6gF0eKuA5oB3iVxE"
)
# Pieces of the credentials that any stored copy would contain, whatever the case or tokenizer (the
# full-text index keeps lowercased tokens, prefix-compressed, so the middle of each token is the test).
SECRET_PIECES = (
    "lrxutnfemi",
    "rficyexample",
    "jzdwiioijxn2zr",
    "ivxnczogqm90iiwicm9s",
    "zk3pqv9xbt2mwq7lrn4s",
)


def files_containing(root: Path, pieces: tuple[str, ...]) -> dict[str, list[str]]:
    """Every file under root holding one of the pieces (case-insensitive), with the pieces it holds."""
    found: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if path.is_file():
            content = path.read_bytes().lower()
            held = [piece for piece in pieces if piece.lower().encode() in content]
            if held:
                found[str(path.relative_to(root))] = held
    return found


def assert_ran_cleanly(run: ClaudeRun, reply: str) -> None:
    assert run.exit_code == 0, run.describe()
    assert run.output is not None and run.output.get("is_error") is False, run.describe()
    assert run.output.get("result") == reply, run.describe()


def report(what: str, run: ClaudeRun) -> None:
    durations = ", ".join(f"{h.event} {h.duration_ms} ms" for h in run.hooks())
    print(f"\n{what}: claude -p took {run.seconds:.2f}s; hooks: {durations or 'none recorded'}")


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI.running(["Noted."]) as running:
        yield running


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def memory(tmp_path: Path, home: Path) -> Iterator[Memory]:
    """`mcp-memory install claude-code --scope user`, as the user runs it; its processes stopped after."""
    with installed(tmp_path, "claude-code", "--scope", "user") as memory:
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        for event in ("SessionStart", "UserPromptSubmit", "Stop"):
            assert settings.get("hooks", {}).get(event), f"install wrote no {event} hook: {settings}"
        yield memory


@pytest.fixture
def projects(tmp_path: Path) -> tuple[Path, Path]:
    """Two git repositories, two projects: acme/alpha and acme/beta."""
    return (
        git_project(tmp_path / "work" / "alpha", "https://github.com/acme/alpha.git"),
        git_project(tmp_path / "work" / "beta", "https://github.com/acme/beta.git"),
    )


def test_hooks_fire_and_their_output_reaches_the_model(tmp_path: Path, home: Path, api: MessagesAPI) -> None:
    """The machinery itself, with trivial hooks in ~/.claude/settings.json: what SessionStart and
    UserPromptSubmit print reaches the model's request; Stop gets the reply on stdin."""
    stop_payload = tmp_path / "stop.json"
    prompt_context = "PROMPT-MARKER-5678 from the prompt hook"

    def hook(command: str) -> list[dict[str, object]]:
        return [{"hooks": [{"type": "command", "command": command}]}]

    prompt_output = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": prompt_context}}
    )
    settings = {
        "hooks": {
            "SessionStart": hook("echo SESSION-MARKER-1234"),  # plain stdout
            "UserPromptSubmit": hook(f"cat >/dev/null; echo '{prompt_output}'"),  # JSON additionalContext
            "Stop": hook(f"cat > {stop_payload}"),
        }
    }
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    project = tmp_path / "project"
    project.mkdir()
    api.reply_with(["Hello from the stand-in."])

    run = run_claude("hello there", cwd=project, home=home, api=api)

    assert_ran_cleanly(run, "Hello from the stand-in.")
    report("trivial hooks", run)
    assert len(run.conversation) == 1, [r.path for r in run.requests]
    request = run.conversation[0]
    assert request.contains("SESSION-MARKER-1234") and request.contains(prompt_context)
    assert run.injected("SessionStart") == "SESSION-MARKER-1234"
    assert run.injected("UserPromptSubmit") == prompt_context
    payload = json.loads(stop_payload.read_text())
    assert payload["hook_event_name"] == "Stop"
    assert payload["last_assistant_message"] == "Hello from the stand-in."
    assert payload["cwd"] == str(project)
    assert run.output is not None and payload["session_id"] == run.output["session_id"]
    assert Path(payload["transcript_path"]).is_file()
    assert str(home / ".claude" / "projects") in payload["transcript_path"]


def test_a_decision_reaches_a_later_session_of_the_same_project_and_not_another(
    memory: Memory, projects: tuple[Path, Path], api: MessagesAPI
) -> None:
    alpha, beta = projects
    api.reply_with(["Got it: PostgreSQL 16 with pgbouncer for billing, and Dana on the migration."])
    first = run_claude(DECISION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(first, "Got it: PostgreSQL 16 with pgbouncer for billing, and Dana on the migration.")
    report("session 1 (alpha)", first)
    wait_until_stored(memory, "PostgreSQL 16 behind pgbouncer")

    api.reply_with(["Answered from memory."])
    second = run_claude(QUESTION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(second, "Answered from memory.")
    report("session 2 (alpha)", second)
    injected = second.injected("SessionStart") + "\n" + second.injected("UserPromptSubmit")
    assert "PostgreSQL 16" in injected and "Dana" in injected, injected
    request = second.conversation[0]
    assert request.contains("PostgreSQL 16") and request.contains("Dana")
    # Session 2 is captured too, but never what the memory injected into it.
    wait_until_stored(memory, "Answered from memory.")
    assert stored(memory, "which database"), "session 2's prompt was not captured"
    assert not stored(memory, "memory-recall") and not stored(memory, "What this project was doing")

    third = run_claude(QUESTION, cwd=beta, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(third, "Answered from memory.")
    report("session 3 (beta)", third)
    # The hooks ran in beta too (Claude Code records a hook that printed nothing only at Stop).
    assert "Stop" in {h.event for h in third.hooks()} and third.hook_errors() == [], third.describe()
    for word in ("PostgreSQL 16", "pgbouncer"):
        assert not third.mentions(word), f"{word!r} leaked from alpha into beta"


def test_small_talk_gets_almost_nothing_injected(
    memory: Memory, projects: tuple[Path, Path], api: MessagesAPI
) -> None:
    alpha, _ = projects
    first = run_claude(DECISION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(first, "Noted.")
    wait_until_stored(memory, "PostgreSQL 16 behind pgbouncer")

    hi = run_claude("hi", cwd=alpha, home=memory.home, api=api, env=memory.env)

    assert_ran_cleanly(hi, "Noted.")
    report("small talk (alpha)", hi)
    injected = hi.injected("UserPromptSubmit")
    assert len(injected) <= SMALL_TALK_CHARACTERS, injected
    if injected:
        assert hi.conversation[0].contains(injected)


def test_a_planted_credential_is_never_stored(
    memory: Memory, projects: tuple[Path, Path], api: MessagesAPI
) -> None:
    alpha, _ = projects
    prompt = (
        "Staging deploy notes for the ledger-reconciler: run it with\n"
        f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
        f"and call the admin API with Authorization: Bearer {JWT}\n"
        "then check the ledger-reconciler dashboard."
    )
    run = run_claude(prompt, cwd=alpha, home=memory.home, api=api, env=memory.env)
    assert_ran_cleanly(run, "Noted.")
    report("planted credentials (alpha)", run)
    wait_until_stored(memory, "ledger-reconciler dashboard")
    stop_resident_servers(memory.data_dir)  # whatever it holds in memory is on disk now

    # The scan sees what the store keeps: the prompt's words are there in plain text.
    assert files_containing(memory.data_dir, ("ledger-reconciler dashboard",)), (
        "the scan found nothing at all"
    )
    assert files_containing(memory.data_dir, SECRET_PIECES) == {}


@pytest.mark.parametrize("damage", ["data_dir_is_a_file", "store_is_corrupt"])
def test_a_broken_store_never_makes_claude_fail(
    damage: str, memory: Memory, projects: tuple[Path, Path], api: MessagesAPI
) -> None:
    alpha, _ = projects
    if damage == "data_dir_is_a_file":
        if memory.data_dir.exists():
            subprocess.run(["rm", "-rf", str(memory.data_dir)], check=True)
        memory.data_dir.write_text("not a directory\n")
    else:
        memory.data_dir.mkdir(exist_ok=True)
        memory.database.write_bytes(b"this is not a SQLite database\n" * 200)

    first = run_claude(DECISION, cwd=alpha, home=memory.home, api=api, env=memory.env)
    second = run_claude(QUESTION, cwd=alpha, home=memory.home, api=api, env=memory.env)

    for run in (first, second):
        assert_ran_cleanly(run, "Noted.")
        report(f"broken store ({damage})", run)
        assert run.seconds < RUN_BOUND_SECONDS, run.describe()
        failed = [h for h in run.hooks() if h.exit_code not in (None, 0)]
        assert failed == [] and run.hook_errors() == [], run.describe()
