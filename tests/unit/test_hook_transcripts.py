"""What is kept of a Claude Code transcript: typed prompts, final replies, compact observations, the
client's compaction summaries and subagents' results; never thinking, file contents, tool output beyond an
error's first lines, or the memory's own injected context. Shapes as Claude Code writes them (entries per
content block, tool results as user entries, meta and command echoes, compaction boundaries, sidechains)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_memory.hooks.transcripts import read, read_transcript

FILE_BODY = "SECRET_FILE_BODY " * 500  # a whole file's content: never kept


class Transcript:
    """Writes entries the way Claude Code does: one per content block, chained by uuid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0

    def _write(self, entry: dict[str, Any]) -> str:
        self.n += 1
        uuid = f"00000000-0000-0000-0000-{self.n:012d}"
        entry = {
            "uuid": uuid,
            "timestamp": f"2026-11-20T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
        } | entry
        entry.setdefault("isSidechain", False)
        with self.path.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")
        return uuid

    def user(self, text: str, **extra: Any) -> str:
        return self._write({"type": "user", "message": {"role": "user", "content": text}} | extra)

    def blocks(self, role: str, *blocks: dict[str, Any], **extra: Any) -> str:
        return self._write({"type": role, "message": {"role": role, "content": list(blocks)}} | extra)

    def thinking(self, text: str) -> str:
        return self.blocks("assistant", {"type": "thinking", "thinking": text, "signature": "x"})

    def say(self, text: str) -> str:
        return self.blocks("assistant", {"type": "text", "text": text})

    def tool(
        self, tool_id: str, name: str, tool_input: dict[str, Any], result: str, error: bool = False
    ) -> None:
        self.blocks("assistant", {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": result}
        if error:
            block["is_error"] = True
        self.blocks("user", block, toolUseResult={"stdout": result})

    def bookkeeping(self) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps({"type": "file-history-snapshot", "snapshot": {}}) + "\n")
        self._write({"type": "system", "subtype": "stop_hook_summary"})


def session(path: Path) -> Transcript:
    t = Transcript(path)
    t.bookkeeping()
    t.user("Use Postgres 16 for billing; Dana owns the migration.")
    t.thinking("THINKING_NEVER_KEPT about the database")
    t.say("Let me look at the schema first.")
    t.tool("toolu_read", "Read", {"file_path": "/repo/schema.sql"}, FILE_BODY)
    t.tool("toolu_write", "Write", {"file_path": "/repo/db/migrate.py", "content": FILE_BODY}, "File created")
    t.tool(
        "toolu_edit", "Edit", {"file_path": "/repo/app.py", "old_string": FILE_BODY, "new_string": "x"}, "ok"
    )
    t.tool(
        "toolu_test",
        "Bash",
        {"command": "pytest -q tests/test_billing.py", "description": "run tests"},
        "Exit code 1\nFAILED tests/test_billing.py::test_rounding - assert 0.1 == 0.2\n1 failed in 0.3s\n"
        "E   assert 0.1 == 0.2\n" + FILE_BODY,
        error=True,
    )
    t.tool("toolu_ls", "Bash", {"command": "ls"}, FILE_BODY)
    t.blocks(
        "assistant",
        {
            "type": "tool_use",
            "id": "toolu_todo",
            "name": "TodoWrite",
            "input": {
                "todos": [
                    {"content": "fix rounding in invoices", "status": "pending"},
                    {"content": "write the migration", "status": "completed"},
                ]
            },
        },
    )
    t.say("Migration written; one test fails on rounding.")
    t.say("I will fix the rounding next.")
    t.bookkeeping()
    return t


def test_an_exchange_keeps_the_prompt_the_work_and_the_final_reply_in_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session(path)
    kept = read_transcript(path, complete=True)
    assert [c.kind for c in kept] == [
        "prompt",
        "observation",
        "observation",
        "observation",
        "observation",
        "observation",
        "reply",
    ]
    assert (
        kept[0].content == "Use Postgres 16 for billing; Dana owns the migration." and kept[0].role == "user"
    )
    texts = [c.content for c in kept]
    assert "[tool] wrote /repo/db/migrate.py" in texts and "[tool] edited /repo/app.py" in texts
    failing = next(t for t in texts if "pytest" in t)
    assert "exit 1" in failing and "test_rounding" in failing and len(failing) < 400
    assert "[tool] ran `ls` → ok" in texts
    assert any(t.startswith("[todo] pending: fix rounding in invoices") for t in texts)
    # The final reply: what came after the last tool call, not the narration before it.
    assert (
        kept[-1].content == "Migration written; one test fails on rounding.\n\nI will fix the rounding next."
    )
    whole = json.dumps([c.content for c in kept])
    assert "THINKING_NEVER_KEPT" not in whole and "SECRET_FILE_BODY" not in whole
    assert "Let me look at the schema" not in whole


def test_keys_are_the_same_on_every_read_and_an_unfinished_reply_waits(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    t = session(path)
    first = read_transcript(path, complete=True)
    t.user("And the invoices table?")
    t.say("Partial answer")
    unfinished = read_transcript(path, complete=False)
    assert [c.key for c in unfinished][: len(first)] == [c.key for c in first]
    assert unfinished[-1].kind == "prompt"  # its reply may still grow: not yet
    finished = read_transcript(path, complete=True)
    assert finished[-1].kind == "reply" and finished[-1].content == "Partial answer"


def test_compaction_summary_kept_commands_meta_sidechains_and_injected_recall_are_not(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    t = session(path)
    t._write({"type": "system", "subtype": "compact_boundary", "isMeta": False})
    t.user("This session is being continued... Summary: Postgres 16 chosen.", isCompactSummary=True)
    t.user("Caveat: local commands below.", isMeta=True)
    t.user("<command-name>/compact</command-name>\n<command-message>compact</command-message>")
    t.user("<local-command-stdout>Compacted</local-command-stdout>")
    t.user("Warmup", isSidechain=True, agentId="a1")
    t.say("sidechain text")  # written as main here, but the sidechain user entry above is skipped
    t.user(
        '<memory-recall source="mcp-memory" project="p">OLD RECALLED TEXT</memory-recall>\n'
        "What was the rounding bug?<system-reminder>REMINDER</system-reminder>"
    )
    t.tool(
        "toolu_task",
        "Task",
        {"description": "find rounding code", "prompt": "..."},
        "Found it in invoice.py:42",
    )
    t.say("It is in invoice.py line 42.")
    kept = read_transcript(path, complete=True)
    kinds = [c.kind for c in kept]
    assert "compaction" in kinds
    compaction = next(c for c in kept if c.kind == "compaction")
    assert compaction.content.startswith("[compaction summary]") and compaction.role == "system"
    prompts = [c.content for c in kept if c.kind == "prompt"]
    assert prompts[-1] == "What was the rounding bug?"
    whole = json.dumps([c.content for c in kept])
    for never in ("OLD RECALLED TEXT", "REMINDER", "/compact", "Compacted", "Warmup", "Caveat"):
        assert never not in whole
    subagent = next(c for c in kept if c.kind == "subagent")
    assert subagent.content == "[subagent] find rounding code: Found it in invoice.py:42"


def test_a_damaged_or_missing_transcript_gives_what_it_can(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session(path)
    with path.open("a") as handle:
        handle.write('{"type": "user", "message": {"content": "half a li')
    assert read_transcript(path, complete=True)[0].kind == "prompt"
    assert read_transcript(tmp_path / "missing.jsonl", complete=True) == []


NOTIFICATION = (
    "<task-notification>\n<task-id>b1x2</task-id>\n<tool-use-id>toolu_bg</tool-use-id>\n"
    "<output-file>/tmp/claude-0/-repo/tasks/b1x2.output</output-file>\n<status>completed</status>\n"
    '<summary>Background command "Run the build" completed (exit code 0)</summary>\n</task-notification>'
)


def test_a_notification_opens_an_exchange_and_is_kept_as_an_observation_in_every_shape(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    t = Transcript(path)
    t.user("Build it in the background.")
    t.say("Started.")
    t.user(NOTIFICATION, origin={"kind": "task-notification"}, promptSource="sdk")  # Claude Code 2.1.x
    t.say("The build passed.")
    t.blocks("user", {"type": "text", "text": NOTIFICATION.replace("b1x2", "c3")})  # older: no origin
    t.say("Second build passed too.")
    t.user("wake: queued", isMeta=True, origin={"kind": "task-notification"})  # written as meta
    t.say("Third.")
    kept = read_transcript(path, complete=True)
    assert [(c.kind, c.role) for c in kept] == [
        ("prompt", "user"),
        ("reply", "assistant"),
        ("observation", "tool"),
        ("reply", "assistant"),
        ("observation", "tool"),
        ("reply", "assistant"),
        ("observation", "tool"),
        ("reply", "assistant"),
    ]
    assert kept[2].content == '[background task] Background command "Run the build" completed (exit code 0)'
    assert kept[6].content == "[background task] wake: queued"
    assert [c.content for c in kept if c.kind == "reply"] == [
        "Started.",
        "The build passed.",
        "Second build passed too.",
        "Third.",
    ]
    assert len({c.key for c in kept}) == len(kept)
    assert not any("task-notification" in c.content for c in kept)


def test_a_compaction_inside_an_exchange_keeps_its_prompt_and_the_reply_key_is_stable(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    t = Transcript(path)
    t.user("Refactor the billing module.")
    t.tool("toolu_1", "Bash", {"command": "pytest -q"}, "ok")
    t._write({"type": "system", "subtype": "compact_boundary"})
    t.user("This session is being continued... Summary: refactoring billing.", isCompactSummary=True)
    t.tool("toolu_2", "Edit", {"file_path": "/repo/billing.py"}, "ok")
    before = read(path, complete=False)
    t.say("Refactored: billing is three modules now.")
    after = read(path, complete=True)
    assert [c.kind for c in after.items] == ["prompt", "observation", "compaction", "observation", "reply"]
    reply = after.items[-1]
    assert reply.key == before.reply_key == f"{after.items[0].key}:reply"  # the Stop's copy gets the same key


def test_an_entry_without_a_timestamp_takes_the_one_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    t = Transcript(path)
    t.user("Which database?")
    with path.open("a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": "a-1",
                    "message": {"content": [{"type": "text", "text": "Postgres."}]},
                }
            )
            + "\n"
        )
    reading = read(path, complete=True)
    assert reading.items[-1].time == reading.items[0].time == reading.latest


def test_a_message_marked_as_not_the_persons_is_no_prompt_but_its_answer_is_a_reply(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    t = Transcript(path)
    t.user("Ship it.", origin={"kind": "human"}, promptSource="typed")
    t.say("Shipped.")
    t.user("The coordinator asks: re-run pass 2", origin={"kind": "coordinator"})
    t.say("Pass 2 re-run: clean.")
    kept = read_transcript(path, complete=True)
    assert [(c.kind, c.content) for c in kept] == [
        ("prompt", "Ship it."),
        ("reply", "Shipped."),
        ("reply", "Pass 2 re-run: clean."),
    ]
