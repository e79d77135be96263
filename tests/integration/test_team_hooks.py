"""Team mode's client side, as the clients run it: real `mcp-memory hook ... --server URL` processes in a
private HOME and data dir, the courier they start in the background, and a real HTTP server speaking the
hooks' wire protocol (tests/fakes/team_server.py). Capture never waits for the network and loses nothing
while the server is down; the courier delivers in order, each event once, after an outage and a restart;
a rejected event is set aside; recall injects the server's context within its deadline, and nothing when
the server is late, down or the user signed out.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.auth import OAuthToken

from mcp_memory.remote import courier, credentials, outbox, places
from tests.fakes.team_server import TeamServer
from tests.helpers import HANG_SECONDS, eventually
from tests.integration.test_hooks_resident import repo
from tests.services.resident import stop_resident
from tests.services.server_process import mcp_memory_command, server_env
from tests.unit.test_hook_transcripts import Transcript

# The courier backs off while the server is down (up to a minute): one whole backoff, then a bound
# against a hang.
DELIVERY_SECONDS = courier.MAX_BACKOFF_SECONDS + HANG_SECONDS
# A hook never waits for a server that is down or late: its own deadlines are 1.5 s (a prompt) and 2 s (a
# session start). This bound catches a hook that waits on the network instead (on a server that never
# answers, it would wait until `fire`'s timeout); it is far above a hook's start on a loaded machine, so
# it says nothing about speed (the 3 s per hook is a figure for bench/, not a test).
HOOK_SECONDS = 20.0


class Team:
    def __init__(self, tmp_path: Path, server: TeamServer) -> None:
        self.data_dir = tmp_path / "data"
        self.server = server
        self.env = server_env(self.data_dir, {"HOME": str(tmp_path / "home")})

    def sign_in(self, token: str = "team-token", expires_at: float | None = None) -> None:
        """What `mcp-memory login URL --token-stdin` stores: an administrator's token (that command also
        checks it against the server, which this stand-in does not answer), and token.json for the hooks."""
        credential = credentials.Credential(
            url=places.normalized(self.server.url),
            tokens=OAuthToken(access_token=token),
            expires_at=expires_at,
            user="alice",
        )
        anyio.run(credentials.save_credential, self.data_dir, self.server.url, credential)

    def fire(
        self, client: str, event: str, payload: dict[str, Any]
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.monotonic()
        done = subprocess.run(
            [mcp_memory_command(), "hook", client, "--server", self.server.url, "--event", event],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )
        return done, time.monotonic() - started

    def waiting(self) -> int:
        return outbox.waiting(self.data_dir, self.server.url)[0]

    def status(self) -> dict[str, Any]:
        return outbox.status(self.data_dir, self.server.url)

    def log(self) -> str:
        path = self.data_dir / "hooks" / "hooks.log"
        return path.read_text() if path.exists() else "(no hooks.log)"

    def wait_until(self, what: str, done: Any) -> None:
        eventually(
            done,
            what=what,
            seconds=DELIVERY_SECONDS,
            every=0.1,
            detail=lambda: f"status {self.status()}\nlog:\n{self.log()}",
        )


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    server = TeamServer()
    t = Team(tmp_path, server)
    yield t
    stop_resident(t.data_dir, marker_arg=b"courier")
    server.stop()


def stop_payload(transcript: Path, cwd: Path, session: str = "s1") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": "Stop",
    }


def test_server_down_then_back_every_turn_delivered_once_in_order(team: Team, tmp_path: Path) -> None:
    project = repo(tmp_path / "api", "https://github.com/acme/api.git")
    team.sign_in()
    t = Transcript(tmp_path / "s1.jsonl")
    stop = stop_payload(t.path, project)
    prompt = stop | {"hook_event_name": "UserPromptSubmit"}

    # The server is down (nothing listens on its port) for a whole session: every hook exits 0 within
    # the bound, injects nothing, and the outbox keeps every capture event.
    fired = []
    for n in range(4):
        text = f"Decision {n}: the billing service keeps PostgreSQL {n + 12} with password=hunter{n}xyz"
        fired.append(team.fire("claude-code", "UserPromptSubmit", prompt | {"prompt": text}))
        t.user(text)
        t.say(f"Noted decision {n}.")
        fired.append(
            team.fire("claude-code", "Stop", stop | {"last_assistant_message": f"Noted decision {n}."})
        )
    for done, seconds in fired:
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        assert seconds < HOOK_SECONDS
    assert team.waiting() == 4
    assert "recall from" in team.log()
    team.wait_until(
        "the courier notices the outage", lambda: "cannot be reached" in str(team.status().get("last_error"))
    )

    # Back: delivered in order, each event once, each message once; nothing is left waiting.
    team.server.start()
    team.wait_until("delivery after the outage", lambda: team.waiting() == 0 and team.server.captures)
    sent = team.server.delivered_events()
    # Each event at most once; an event whose messages an earlier one already carried (the courier reads
    # the transcript when it delivers, and by then it may hold the whole session) is not sent at all.
    assert len(sent) == len(set(sent)) and 1 <= len(sent) <= 4, sent
    assert sent == sorted(sent), "an event was delivered before an older one"
    items = team.server.item_deliveries()
    assert len(items) == len(set(items)), "a message was sent twice"
    contents = [i["content"] for i in team.server.stored.values()]
    assert [c for c in contents if c.startswith("Decision")] == [
        f"Decision {n}: the billing service keeps PostgreSQL {n + 12} with password=[redacted:password]"
        for n in range(4)
    ], "a credential left the machine"
    assert sum(c.startswith("Noted decision") for c in contents) == 4
    assert not any("transcript_path" in e["entry"] for body in team.server.captures for e in body["events"])

    # Stopped and restarted mid-session: what was written meanwhile arrives once, nothing twice.
    team.server.stop()
    for n in range(4, 6):
        t.user(f"Decision {n}: Dana owns migration step {n}.")
        t.say(f"Noted decision {n}.")
        done, seconds = team.fire(
            "claude-code", "Stop", stop | {"last_assistant_message": f"Noted decision {n}."}
        )
        assert done.returncode == 0 and seconds < HOOK_SECONDS
    team.server.start()
    team.wait_until(
        "delivery after the restart", lambda: team.waiting() == 0 and len(team.server.stored) == 12
    )
    items = team.server.item_deliveries()
    assert len(items) == len(set(items)) == 12
    sent = team.server.delivered_events()
    assert len(sent) == len(set(sent)) and sent == sorted(sent)
    status = team.status()
    assert status["outbox"] == 0 and status["last_delivery_at"] and status["delivered_total"] == len(sent)


def test_a_real_claude_code_session_is_delivered_once(team: Team, tmp_path: Path) -> None:
    """A real transcript (tests/integration/claude_transcripts), its Stop fired thrice and a SessionEnd:
    every prompt and reply the local reader finds reaches the server once."""
    from mcp_memory.hooks.transcripts import read_transcript

    fixture = Path(__file__).parent / "claude_transcripts" / "fasthooks_main.jsonl"
    project = repo(tmp_path / "fasthooks", "https://github.com/acme/fasthooks.git")
    team.server.start()
    team.sign_in()
    stop = stop_payload(fixture, project, "real-1")
    for _ in range(3):
        done, _ = team.fire("claude-code", "Stop", stop)
        assert done.returncode == 0
    team.fire("claude-code", "SessionEnd", stop | {"hook_event_name": "SessionEnd"})
    expected = {i.key for i in read_transcript(fixture, complete=True) if i.content.strip()}
    team.wait_until(
        "the session delivered", lambda: team.waiting() == 0 and len(team.server.stored) >= len(expected)
    )
    assert {i["key"] for i in team.server.stored.values()} == expected
    items = team.server.item_deliveries()
    assert len(items) == len(set(items)), "a message was sent twice"


def test_a_rejected_event_is_set_aside_and_the_rest_delivered(team: Team, tmp_path: Path) -> None:
    team.server.reject_containing = "UNSTORABLE"
    team.server.start()
    team.sign_in()
    for n, text in enumerate(["first fine prompt", "an UNSTORABLE prompt", "third fine prompt"]):
        payload = {
            "session_id": "g1",
            "cwd": str(tmp_path),
            "prompt": text,
            "timestamp": f"2026-01-01T00:00:0{n}Z",
        }
        done, _ = team.fire("cursor", "beforeSubmitPrompt", payload)
        assert done.returncode == 0
    team.wait_until("the good events delivered", lambda: team.waiting() == 0 and len(team.server.stored) == 2)
    assert sorted(i["content"] for i in team.server.stored.values()) == [
        "first fine prompt",
        "third fine prompt",
    ]
    bad = list(places.outbox_dir(team.data_dir, team.server.url).glob("*.bad"))
    assert len(bad) == 1 and "UNSTORABLE" in bad[0].read_text()
    assert "rejected, set aside: the event names no usable project" in team.log()


def test_recall_injects_the_servers_context_and_nothing_when_it_is_late(team: Team, tmp_path: Path) -> None:
    project = repo(tmp_path / "api", "https://github.com/acme/api.git")
    (project / ".mcp-memory.toml").write_text('[project]\nspace = "acme-api"\n')
    team.server.context = (
        '<memory-recall source="team">alice, 3 days ago: we use PostgreSQL 16</memory-recall>'
    )
    team.server.start()
    team.sign_in("team-token")
    payload = {
        "session_id": "s9",
        "cwd": str(project),
        "prompt": "which database do we use?",
        "hook_event_name": "UserPromptSubmit",
    }

    done, _ = team.fire("claude-code", "UserPromptSubmit", payload)
    assert done.returncode == 0
    printed = json.loads(done.stdout)
    assert "alice, 3 days ago: we use PostgreSQL 16" in printed["hookSpecificOutput"]["additionalContext"]
    headers, body = team.server.recalls[-1]
    assert headers["authorization"] == "Bearer team-token"
    assert body["kind"] == "prompt" and body["prompt"] == "which database do we use?"
    assert body["project"]["space"] == "acme-api" and body["project"]["key"]
    assert set(body) == {"client", "kind", "session_id", "cwd", "prompt", "source", "project", "cap_chars"}

    # Late: a server that answers only long after the test is over. The hook gives up at its deadline
    # (1.5 s for a prompt), not the server's, and injects nothing.
    team.server.recall_delay = HANG_SECONDS
    done, seconds = team.fire("claude-code", "UserPromptSubmit", payload)
    assert done.returncode == 0 and done.stdout == ""
    assert seconds < HOOK_SECONDS
    assert "no answer within 1.5 s" in team.log()


def test_signed_out_or_down_recall_injects_nothing_and_says_why(team: Team, tmp_path: Path) -> None:
    payload = {
        "session_id": "s2",
        "cwd": str(tmp_path),
        "source": "startup",
        "hook_event_name": "SessionStart",
    }
    done, seconds = team.fire("claude-code", "SessionStart", payload)  # no token at all
    assert done.returncode == 0 and done.stdout == "" and seconds < HOOK_SECONDS
    assert "not signed in" in team.log()
    # The courier it started finds no credential either, and says what to do.
    team.wait_until("the courier's verdict", lambda: team.status().get("state") == "signed out")
    assert f"mcp-memory login {team.server.url}" in team.status()["last_error"]

    team.sign_in()  # the server still down: refused, nothing injected
    done, seconds = team.fire("claude-code", "SessionStart", payload)
    assert done.returncode == 0 and done.stdout == "" and seconds < HOOK_SECONDS
    assert "Connection refused" in team.log().splitlines()[-1]
