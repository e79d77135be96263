"""Real Claude Code transcripts replayed through the hook command as Claude Code fires it, into a real
resident server: every typed prompt and final reply stored exactly once, no notification stored as a
prompt, every turn dated with the transcript's own time, and no planted credential in any file the
server writes.

The transcripts are real (claude_transcripts/README.md says whose); the replay adds an exchange with a
background command and the two notification shapes Claude Code writes when such a task ends. Events:
UserPromptSubmit per prompt; Stop wherever the real session ran its Stop hooks (its stop_hook_summary
entries), with the transcript cut at that point and last_assistant_message; every other Stop fires before
Claude Code has written the turn's last entries (as it can: the hook may run before the transcript is
flushed), which are written right after; PreCompact, PostCompact and SessionStart (compact) around the
real /compact; then SubagentStop, SessionStart (resume) and SessionEnd, which see the whole file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_hooks_resident import STORE_SECONDS, Hooks, repo
from tests.services.server_process import server_env

FIXTURES = Path(__file__).parent / "claude_transcripts"
SESSION = "c45af7b1-cb7c-4e51-93db-8cbb250a877a"  # the real session's id
# Credentials planted in what the session says and runs: none may reach any file under the data directory.
PLANTED = {
    "postgres://app:Abc#123xyz@db.internal/billing": "Abc#123xyz",
    "redis://:S3cr3t?Pass@cache.internal:6379": "S3cr3t?Pass",
    "mongodb+srv://ops:Pa/ss123word@cluster0.example.net/audit": "Pa/ss123word",
}
URLS = list(PLANTED)


def entries() -> list[dict[str, Any]]:
    """The real session, then an exchange that starts a background command, the notifications Claude Code
    writes when its tasks end (2.1.x's shape, with `origin`; and the older one, a text block), and the
    replies that answer them. Each turn ends with a stop_hook_summary, where Claude Code ran Stop."""
    real = [json.loads(line) for line in (FIXTURES / "fasthooks_main.jsonl").read_text().splitlines()]
    common = {k: real[1][k] for k in ("cwd", "sessionId", "version", "gitBranch", "userType")}
    added: list[dict[str, Any]] = []

    def add(kind: str, content: object, **extra: Any) -> None:
        n = len(added) + 1
        entry = common | {
            "type": kind,
            "uuid": f"7e57ab1e-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-01-02T19:2{3 + n // 60}:{n % 60:02d}.{n:03d}Z",
            "isSidechain": False,
            "message": {"role": kind, "content": content},
        }
        added.append(entry | extra)

    def stop() -> None:
        add("system", None, subtype="stop_hook_summary")

    add("user", f"Run the billing migration in the background against {URLS[0]} please")
    add("assistant", [{"type": "text", "text": "Starting the migration in the background."}])
    add(
        "assistant",
        [
            {
                "type": "tool_use",
                "id": "toolu_bg1",
                "name": "Bash",
                "input": {
                    "command": f"DATABASE_URL={URLS[0]} ./migrate.sh && redis-cli -u {URLS[1]} flushdb",
                    "description": "Run the migration",
                    "run_in_background": True,
                },
            }
        ],
    )
    add(
        "user",
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_bg1",
                "content": "Command running in background with ID: b1x2",
            }
        ],
    )
    add(
        "assistant",
        [{"type": "text", "text": "The migration runs in the background; I will report when it ends."}],
    )
    stop()
    add(
        "user",
        "<task-notification>\n<task-id>b1x2</task-id>\n<tool-use-id>toolu_bg1</tool-use-id>\n"
        "<output-file>/tmp/claude-0/-workspace/tasks/b1x2.output</output-file>\n<status>completed</status>\n"
        '<summary>Background command "Run the migration" completed (exit code 0)</summary>\n</task-notification>',
        origin={"kind": "task-notification"},
        promptSource="sdk",
    )
    add("assistant", [{"type": "text", "text": "The migration finished: 14 tables migrated, exit code 0."}])
    stop()
    add(
        "user",
        [
            {
                "type": "text",
                "text": "<task-notification>\n<task-id>c7d8</task-id>\n<status>failed</status>\n"
                '<summary>Background command "Archive the audit log" failed (exit code 2)</summary>\n'
                "</task-notification>",
            }
        ],
    )
    add(
        "assistant",
        [{"type": "text", "text": f"The audit archive failed (exit 2): {URLS[2]} refused the login."}],
    )
    stop()
    return real + added


def typed_prompts(all_entries: list[dict[str, Any]]) -> list[str]:
    """What the person typed: user entries of plain text that are not meta, echoes, summaries or notes."""
    out = []
    for e in all_entries:
        content = (e.get("message") or {}).get("content")
        if (
            e.get("type") != "user"
            or not isinstance(content, str)
            or e.get("isMeta")
            or e.get("isCompactSummary")
        ):
            continue
        if content.lstrip().startswith("<") or e.get("origin"):
            continue
        out.append(content.strip())
    return out


def final_text(turn: list[dict[str, Any]]) -> str:
    """The turn's last text block: what Stop's last_assistant_message carries."""
    texts = [
        b["text"]
        for e in turn
        if e.get("type") == "assistant"
        for b in (e["message"]["content"] if isinstance(e["message"]["content"], list) else [])
        if b.get("type") == "text"
    ]
    return texts[-1]


def flush_cut(turn: list[dict[str, Any]]) -> int:
    """Where a Stop that runs before the transcript is flushed sees it end, within the turn: before its last
    tool call (the narration before it then looks like the reply), else before its last text."""
    calls = [i for i, e in enumerate(turn) if e.get("type") == "assistant" and '"tool_use"' in json.dumps(e)]
    texts = [i for i, e in enumerate(turn) if e.get("type") == "assistant" and '"text"' in json.dumps(e)]
    return calls[-1] if calls else texts[-1]


class Replay:
    def __init__(self, hooks: Hooks, transcript: Path, cwd: Path) -> None:
        self.hooks, self.transcript = hooks, transcript
        self.base = {
            "session_id": SESSION,
            "transcript_path": str(transcript),
            "cwd": str(cwd),
            "permission_mode": "default",
        }
        transcript.write_text("")

    def write(self, *written: dict[str, Any]) -> None:
        with self.transcript.open("a") as handle:
            for entry in written:
                handle.write(json.dumps(entry) + "\n")

    def fire(self, event: str, **fields: Any) -> None:
        done, _ = self.hooks.fire("claude-code", event, self.base | {"hook_event_name": event} | fields)
        assert done.returncode == 0, done.stderr
        if event not in ("SessionStart", "UserPromptSubmit"):
            assert done.stdout == ""  # a hook prints only the client's valid output


def replay(hooks: Hooks, all_entries: list[dict[str, Any]], work: Path) -> list[str]:
    """The session through the hooks; the final replies its Stops carried."""
    r = Replay(hooks, work / f"{SESSION}.jsonl", repo(work / "repo", "https://github.com/acme/billing.git"))
    r.fire("SessionStart", source="startup")
    replies: list[str] = []
    turn: list[dict[str, Any]] = []
    for entry in all_entries:
        content = (entry.get("message") or {}).get("content")
        if (
            entry.get("type") == "user"
            and isinstance(content, str)
            and content.strip() in typed_prompts([entry])
        ):
            r.fire("UserPromptSubmit", prompt=content)
        if entry.get("subtype") == "compact_boundary":
            r.fire("PreCompact", trigger="manual", custom_instructions="")
        if entry.get("subtype") == "stop_hook_summary":
            reply = final_text(turn)
            replies.append(reply)
            if len(replies) % 2 == 0:  # the hook runs before the turn's last entries are written
                cut = flush_cut(turn)
                r.write(*turn[:cut])
                r.fire("Stop", last_assistant_message=reply, stop_hook_active=False)
                r.write(*turn[cut:])
            else:
                r.write(*turn)
                r.fire("Stop", last_assistant_message=reply, stop_hook_active=False)
            turn = []
        elif entry.get("isCompactSummary"):
            r.write(*turn, entry)
            turn = []
            r.fire("PostCompact", trigger="manual", compact_summary=content)
            r.fire("SessionStart", source="compact")
            continue
        turn.append(entry)
    r.write(*turn)
    side = FIXTURES / "fasthooks_sidechain.jsonl"
    r.fire("SubagentStop", agent_id="af1ff21", agent_transcript_path=str(side), stop_hook_active=False)
    r.fire("SessionStart", source="resume")
    r.fire("SessionEnd", reason="other")
    return replies


def stored_turns(data_dir: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{data_dir / 'memory.db'}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute(
            "SELECT id, role, content, created_at, metadata FROM memories WHERE type = 'turn' ORDER BY created_at"
        ).fetchall()
    return [dict(r) | {"captured": json.loads(r["metadata"]).get("captured")} for r in rows]


def settle(hooks: Hooks) -> list[dict[str, Any]]:
    """The turns once the spool is empty and nothing more arrives for a while."""
    deadline = time.monotonic() + STORE_SECONDS
    seen = -1
    while time.monotonic() < deadline:
        spooled = list((hooks.data_dir / "hooks" / "spool").glob("*.json"))
        rows = stored_turns(hooks.data_dir) if (hooks.data_dir / "memory.db").exists() else []
        if not spooled and len(rows) == seen:
            return rows
        seen = len(rows)
        time.sleep(1.0)
    pytest.fail(f"the spool was not stored; log:\n{hooks.log()}")


def instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[Hooks]:
    data_dir = tmp_path / "data"
    h = Hooks(data_dir, server_env(data_dir, {"MCP_MEMORY_EMBEDDING__PROVIDER": "local"}))
    yield h
    h.stop()


def test_a_real_session_is_stored_exactly_once_with_its_own_times(hooks: Hooks, tmp_path: Path) -> None:
    all_entries = entries()
    replies = replay(hooks, all_entries, tmp_path)
    turns = settle(hooks)

    prompts = typed_prompts(all_entries)
    assert len(prompts) == 6 and len(replies) == 8
    users = [t for t in turns if t["role"] == "user"]
    assert [t["captured"] for t in users] == ["prompt"] * len(prompts), "only typed prompts are the user's"
    for prompt in prompts:
        head = prompt[:30]
        assert sum(t["content"].startswith(head) for t in users) == 1, f"prompt not stored once: {prompt!r}"
    answers = [t for t in turns if t["role"] == "assistant"]
    assert len(answers) == len(replies), [a["content"][:60] for a in answers]
    for reply in replies:
        head = reply[:40]
        assert sum(head in a["content"] for a in answers) == 1, f"reply not stored once: {reply!r}"

    # The notifications: never prompts; each a short observation of what ended.
    assert not any("task-notification" in t["content"] for t in turns)
    notes = [t["content"] for t in turns if t["content"].startswith("[background task]")]
    assert notes == [
        '[background task] Background command "Run the migration" completed (exit code 0)',
        '[background task] Background command "Archive the audit log" failed (exit code 2)',
    ]
    assert sum(t["captured"] == "compaction" for t in turns) == 1

    # Every turn carries the transcript's own time, never the time of capture.
    said = {instant(e["timestamp"]) for e in all_entries if e.get("timestamp")}
    off = [(t["content"][:50], t["created_at"]) for t in turns if instant(t["created_at"]) not in said]
    assert off == []

    # Planted credentials: redacted before anything reached the disk (database, WAL, spool, logs, indexes).
    secrets = [s.encode() for s in PLANTED.values()]
    files = [p for p in hooks.data_dir.rglob("*") if p.is_file()]
    assert any(p.name == "memory.db" for p in files) and any(p.name.endswith(".log") for p in files)
    leaks = [(str(p.relative_to(hooks.data_dir)), s) for p in files for s in secrets if s in p.read_bytes()]
    assert leaks == []
    assert any("[redacted:url_password]" in t["content"] for t in users)


def test_the_real_transcript_holds_what_the_replay_relies_on() -> None:
    """Where the real session ran Stop (5 exchanges) and its one /compact."""
    real = [json.loads(line) for line in (FIXTURES / "fasthooks_main.jsonl").read_text().splitlines()]
    subtypes = [e.get("subtype") for e in real]
    assert subtypes.count("stop_hook_summary") == 5 and subtypes.count("compact_boundary") == 1
    assert sum(bool(e.get("isCompactSummary")) for e in real) == 1
