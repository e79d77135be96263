"""`mcp-memory eval` reading Codex CLI's session files (mcp_memory/service/self_eval/codex.py), on a real
history: two sessions of Codex CLI 0.171.0, the first resumed once, with the memory's hooks installed
(tests/unit/hook_payloads/captured/codex-0.171.0-sessions/, made by its make_sessions.py), and what those
hooks stored of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mcp_memory.service.capture import derived_id
from mcp_memory.service.self_eval.codex import read_rollout
from mcp_memory.service.self_eval.history import recorded_sessions

CAPTURED = Path(__file__).parent / "hook_payloads" / "captured" / "codex-0.171.0-sessions"
FIRST, SECOND = sorted((CAPTURED / "sessions").rglob("rollout-*.jsonl"))
STORED = json.loads((CAPTURED / "stored.json").read_text())


def test_the_prompts_typed_and_each_turns_final_reply_are_read_at_their_times() -> None:
    read = read_rollout(FIRST)
    assert read is not None
    assert read.session_id == "01a22506-f670-7ab0-8113-d4a69ffa401c"
    assert read.cwd == "/home/me/alpha"
    # Not on this machine: the project is the remote Codex recorded, as the hook found it in the checkout.
    assert read.project.id == "github.com/acme/alpha"
    assert [(i.kind, i.role, i.time, i.content) for i in read.items] == [
        (
            "prompt",
            "user",
            "2026-11-29T01:59:06.955Z",
            "Put a retry limit for the billing client in its own module, seven retries with a 250 ms backoff.",
        ),
        ("observation", "tool", "2026-11-29T01:59:07.124Z", "[tool] edited billing/retry_limits.py"),
        (
            "observation",
            "tool",
            "2026-11-29T01:59:07.346Z",
            "[tool] ran `python3 -c 'import billing.retry_limits as r; print(r.MAX_RETRIES)'` → ok",
        ),
        (
            "reply",
            "assistant",
            "2026-11-29T01:59:07.489Z",
            "Added billing/retry_limits.py: MAX_RETRIES = 7 and RETRY_BACKOFF_MS = 250 for the billing client.",
        ),
        # The same session resumed (`codex exec resume`): its second turn, appended to the same file.
        ("prompt", "user", "2026-11-29T01:59:11.134Z", "Is there a billing-missing folder too?"),
        (
            "observation",
            "tool",
            "2026-11-29T01:59:11.318Z",
            "[tool] ran `ls billing-missing` → exit 2: ls: cannot access 'billing-missing': No such file or directory",
        ),
        (
            "reply",
            "assistant",
            "2026-11-29T01:59:11.460Z",
            "The billing-missing folder does not exist; the limits stay in billing/retry_limits.py.",
        ),
    ]
    assert read.items[1].paths == ("billing/retry_limits.py",)


def test_what_codex_or_the_hooks_injected_is_never_read_as_a_prompt() -> None:
    for path in (FIRST, SECOND):
        raw = path.read_text()
        # Codex wrote AGENTS.md and its environment as user messages; the second session got the memory's
        # recall (a developer message).
        assert "# AGENTS.md instructions for /home/me/alpha" in raw and "<environment_context>" in raw
        assert ("<memory-recall" in raw) == (path == SECOND)
        read = read_rollout(path)
        assert read is not None
        for item in read.items:
            for injected in ("AGENTS.md", "environment_context", "memory-recall", "make billing-check"):
                assert injected not in item.content
    second = read_rollout(SECOND)
    assert second is not None
    assert [(i.kind, i.content) for i in second.items] == [
        ("prompt", "Where did we put the retry limit for billing?"),
        ("reply", "The retry limit lives in billing/retry_limits.py (MAX_RETRIES = 7)."),
    ]


def test_each_item_gets_the_id_the_hooks_stored_it_under() -> None:
    for path in (FIRST, SECOND):
        read = read_rollout(path)
        assert read is not None
        thread = read.project.thread_id(read.session_id)
        stored = [(row["id"], row["content"]) for row in STORED if row["thread_id"] == thread]
        assert stored, thread
        assert [(derived_id(thread, i.key), i.content) for i in read.items] == stored


def test_codex_sessions_are_found_under_the_home_and_a_subagents_rollout_is_not_one(tmp_path: Path) -> None:
    shutil.copytree(CAPTURED / "sessions", tmp_path / ".codex" / "sessions")
    day = FIRST.parent.relative_to(CAPTURED / "sessions")
    lines = SECOND.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["payload"] |= {"id": "01a22507-0000-7000-8000-000000000001", "thread_source": "subagent"}
    subagent = tmp_path / ".codex" / "sessions" / day / "rollout-2026-11-29T01-59-20-01a22507-0000.jsonl"
    subagent.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")

    sessions = recorded_sessions(tmp_path)

    assert [(s.client, s.session_id) for s in sessions] == [
        ("codex", "01a22506-f670-7ab0-8113-d4a69ffa401c"),
        ("codex", "01a22507-2443-7902-898b-2ea015f267f3"),
    ]
    first = sessions[0].first_prompt
    assert first is not None and first.content.startswith("Put a retry limit")
    assert str(sessions[0].started) == "2026-11-29 01:59:06.955000+00:00"
    assert {s.project.key for s in sessions} == {"alpha-95244674"}
    assert recorded_sessions(tmp_path, exclude=["github.com/acme/alpha"]) == []
