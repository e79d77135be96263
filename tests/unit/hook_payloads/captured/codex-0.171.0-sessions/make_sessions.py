"""How sessions/ and stored.json were made: the real Codex CLI 0.171.0 with mcp-memory's hooks installed and
trusted, against the suite's stand-in Responses API, in a private home. Run from the repository's root:
`.venv/bin/python tests/unit/hook_payloads/captured/codex-0.171.0-sessions/make_sessions.py OUT`. Then
the rollouts under OUT/home/.codex/sessions were copied here with long strings (Codex's base instructions,
its skills list, its world state) cut to 200 characters and the temporary paths rewritten to /home/me;
stored.json is what the hooks stored of them (OUT/data/memory.db, table messages).

Session 1 (two turns: `codex exec`, then `codex exec resume --last`) writes billing/retry_limits.py with
apply_patch, runs a command that succeeds and one that fails; session 2 asks where the limit went, and its
reply names the file. The repository has an AGENTS.md, which Codex injects as a user message.
"""

import json
import sqlite3
import sys
import time
from pathlib import Path

from tests.e2e.test_codex_hooks import mcp_memory
from tests.services import npm_cli
from tests.services.codex_cli import _KEY_VARIABLE, codex_args, codex_binary
from tests.services.memory_user import git_project
from tests.services.resident import stop_resident
from tests.services.responses_api import Reply, ResponsesAPI, ToolCall

PATCH = "*** Begin Patch\n*** Add File: billing/retry_limits.py\n+MAX_RETRIES = 7\n+RETRY_BACKOFF_MS = 250\n*** End Patch\n"
CHECK = "python3 -c 'import billing.retry_limits as r; print(r.MAX_RETRIES)'"
SESSIONS: list[tuple[list[str], str, list[Reply]]] = [
    (
        [],
        "Put a retry limit for the billing client in its own module, seven retries with a 250 ms backoff.",
        [
            ToolCall("apply_patch", PATCH, custom=True),
            ToolCall("exec_command", {"cmd": CHECK}),
            "Added billing/retry_limits.py: MAX_RETRIES = 7 and RETRY_BACKOFF_MS = 250 for the billing client.",
        ],
    ),
    (
        ["resume", "--last"],
        "Is there a billing-missing folder too?",
        [
            ToolCall("exec_command", {"cmd": "ls billing-missing"}),
            "The billing-missing folder does not exist; the limits stay in billing/retry_limits.py.",
        ],
    ),
    (
        [],
        "Where did we put the retry limit for billing?",
        ["The retry limit lives in billing/retry_limits.py (MAX_RETRIES = 7)."],
    ),
]


def main(root: Path) -> None:
    home, data_dir, tmp = root / "home", root / "data", root / "tmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    env = {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER_ID": "tester", "TMPDIR": str(tmp)}
    repo = git_project(root / "work" / "alpha", "https://github.com/acme/alpha.git")
    (repo / "AGENTS.md").write_text(
        "# Alpha\n\nRun the billing checks with `make billing-check` before a commit.\n"
    )
    mcp_memory(env, home, "install", "codex", "--trust")
    try:
        with ResponsesAPI.running(["Noted."]) as api:
            for args, prompt, replies in SESSIONS:
                api.reply_with(replies)
                command = [str(codex_binary()), "exec", "--skip-git-repo-check", "-s", "danger-full-access"]
                done, _ = npm_cli.run(
                    [*command, *codex_args(api), *args, prompt],
                    what=f"codex exec {prompt!r}",
                    cwd=repo,
                    env=npm_cli.private_env(home, {_KEY_VARIABLE: "sk-test-not-a-key"}, env),
                    timeout=180,
                )
                assert done.returncode == 0, done.stderr
                time.sleep(3)  # the resident server stores what the hooks spooled
    finally:
        stop_resident(data_dir)
    db = sqlite3.connect(data_dir / "memory.db")
    rows = db.execute("SELECT thread_id, id, role, content FROM messages ORDER BY seq").fetchall()
    keys = ("thread_id", "id", "role", "content")
    (root / "stored.json").write_text(json.dumps([dict(zip(keys, r, strict=True)) for r in rows], indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
