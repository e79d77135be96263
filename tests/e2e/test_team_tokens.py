"""A session in team mode outliving its access token (issue 57): refreshed without a new sign-in, and,
when the grant is revoked, nothing lost until the person signs in again.

All real: `mcp-memory serve --transport http` whose users sign in at the real oidc-provider
(tests/services/oidc_server.py) issuing access tokens that live ACCESS_TTL seconds, with no leeway at
the server (an expired token is refused at once); a person's machine signed in with `mcp-memory login URL
--no-browser` (PKCE) and installed with `mcp-memory install claude-code --server URL`
(tests/services/team.py). The session is Claude Code's hooks, run as Claude Code runs them: `mcp-memory
hook claude-code --event X --server URL` with the event's JSON on stdin and the session's transcript in
Claude Code's format; the courier they start delivers the outbox and refreshes the token.

Waiting for a token to expire is waiting on the clock: its lifetime is what is under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.remote import courier, outbox, places, wire
from mcp_memory.remote.credentials import Credential
from tests.helpers import HANG_SECONDS
from tests.security.bearer import UNMETERED
from tests.services.memory_user import git_project, mcp_memory
from tests.services.oidc_server import OidcServer, local_oidc_server
from tests.services.resident import stop_resident
from tests.services.server_process import NetworkServer, ServerStarter
from tests.services.team import Machine, log_in, sign_in, stored_turns
from tests.unit.test_hook_transcripts import Transcript

ACCESS_TTL = 30  # seconds an access token lives (a hook takes one with more than places.EXPIRY_MARGIN left)
SPACE = "acme-api"
REPOSITORY = "https://github.com/acme/api.git"
DECISION = "For acme-api we decided the invoices service runs on PostgreSQL 16 behind pgbouncer."
QUESTION = "which database did we pick for the invoices service?"
# The courier backs off up to a minute after a failure: one whole backoff, then a bound against a hang.
DELIVERY_SECONDS = courier.MAX_BACKOFF_SECONDS + HANG_SECONDS
# Until the token has expired and the courier that refreshed it has left (it idles this long first).
EXPIRY_SECONDS = ACCESS_TTL + courier.IDLE_EXIT_SECONDS + 120.0
HOOK_SECONDS = 60.0  # a hook process's own timeout here (the 3 s bound is tested elsewhere)


@pytest.fixture(scope="module")
def oidc() -> Iterator[OidcServer]:
    with local_oidc_server(OIDC_ACCESS_TTL=str(ACCESS_TTL)) as server:
        yield server


@dataclass(frozen=True)
class Server:
    url: str
    data_dir: Path
    process: NetworkServer


@pytest.fixture
def server(start_server: ServerStarter, tmp_path: Path, oidc: OidcServer) -> Server:
    """The memory server; alice owns the space acme-api; no leeway for an expired token."""
    spaces = tmp_path / "spaces.json"
    spaces.write_text(json.dumps({"spaces": [{"name": SPACE, "members": {"alice": "owner"}}]}))
    data_dir = tmp_path / "server-data"
    env = UNMETERED | {
        "MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER": oidc.issuer,
        "MCP_MEMORY_SECURITY__RESOURCE_URL": "http://127.0.0.1:{port}/mcp",
        "MCP_MEMORY_SECURITY__SPACES_FILE": str(spaces),
        "MCP_MEMORY_SECURITY__CLOCK_SKEW_SECONDS": "0",
    }
    process = start_server("http", data_dir, env)
    return Server(process.base_url, data_dir, process)


@pytest.fixture
def alice(server: Server, oidc: OidcServer, tmp_path: Path) -> Iterator[Machine]:
    machine = sign_in(server.url, oidc, tmp_path / "alice", "alice")
    try:
        yield machine
    finally:
        stop_resident(machine.data_dir, marker_arg=b"courier")


@dataclass
class Session:
    """One Claude Code session of `machine` in `cwd`: its transcript, and its hooks run as Claude Code runs
    them."""

    machine: Machine
    url: str
    cwd: Path
    transcript: Transcript
    id: str = "session-1"

    def fire(self, event: str, **fields: Any) -> str:
        """The hook for `event`; what it printed (it must exit 0 and say nothing on stderr)."""
        payload = {
            "session_id": self.id,
            "transcript_path": str(self.transcript.path),
            "cwd": str(self.cwd),
            "hook_event_name": event,
        } | fields
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcp_memory",
                "hook",
                "claude-code",
                "--event",
                event,
                "--server",
                self.url,
            ],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=self.machine.environment(),
            cwd=self.cwd,
            timeout=HOOK_SECONDS,
        )
        assert done.returncode == 0 and done.stderr == "", f"{event}: {done.returncode} {done.stderr}"
        return done.stdout

    def recall(self, prompt: str) -> str:
        """The prompt's hook: what it injected ("" for nothing)."""
        printed = self.fire("UserPromptSubmit", prompt=prompt)
        return str(json.loads(printed)["hookSpecificOutput"]["additionalContext"]) if printed else ""

    def turn(self, prompt: str, reply: str) -> str:
        """One exchange: the prompt (what its recall injected is returned), the transcript as Claude Code
        writes it, the Stop that captures it."""
        injected = self.recall(prompt)
        self.transcript.user(prompt)
        self.transcript.say(reply)
        self.fire("Stop", stop_hook_active=False, last_assistant_message=reply)
        return injected


def clone(root: Path) -> Path:
    """A clone of the team's repository, whose committed .mcp-memory.toml names the space."""
    checkout = git_project(root / "api", REPOSITORY)
    (checkout / ".mcp-memory.toml").write_text(f'[project]\nspace = "{SPACE}"\n')
    return checkout


def earlier_session(machine: Machine, server: Server, checkout: Path) -> None:
    """A session of the project that decided something, delivered (a prompt's recall leaves out the
    session's own turns: the client has them in context; later sessions are told)."""
    earlier = Session(machine, server.url, checkout, Transcript(checkout.parent / "earlier.jsonl"), "earlier")
    earlier.fire("SessionStart", source="startup")
    earlier.turn(DECISION, "Noted: PostgreSQL 16 behind pgbouncer for invoices.")
    earlier.fire("SessionEnd", reason="exit")
    delivered(server, machine, "PostgreSQL 16 behind pgbouncer", "Noted: PostgreSQL 16")


def new_session(machine: Machine, server: Server, checkout: Path) -> Session:
    work = Session(machine, server.url, checkout, Transcript(checkout.parent / "session.jsonl"))
    work.fire("SessionStart", source="startup")
    return work


def described(machine: Machine, url: str) -> str:
    log = machine.data_dir / "hooks" / "hooks.log"
    return (
        f"status {outbox.status(machine.data_dir, url)}; outbox {outbox.waiting(machine.data_dir, url)[0]}; "
        f"hooks.log: {log.read_text()[-3000:] if log.exists() else 'none'}"
    )


def until(what: str, done: Callable[[], bool], seconds: float, machine: Machine, url: str) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds:g} s; {described(machine, url)}")
        time.sleep(0.2)


def delivered(server: Server, machine: Machine, *texts: str) -> None:
    """Every one of `texts` stored on the server and nothing left waiting in the outbox (fails after a
    while)."""
    until(
        f"{texts} delivered",
        lambda: (
            all(stored_turns(server.data_dir, t) for t in texts)
            and outbox.waiting(machine.data_dir, server.url)[0] == 0
        ),
        DELIVERY_SECONDS,
        machine,
        server.url,
    )


def expired_and_idle(machine: Machine, url: str) -> places.CachedToken:
    """The token in token.json once it has expired and no courier runs (none refreshes it meanwhile)."""
    found: list[places.CachedToken] = []

    def expired() -> bool:
        token = places.cached_token(machine.data_dir, url)
        found[:] = [token] if token else []
        return bool(
            token
            and token.expires_at is not None
            and token.expires_at + 1 < time.time()
            and not outbox.courier_running(machine.data_dir, url)
        )

    until("the token expired, the courier gone", expired, EXPIRY_SECONDS, machine, url)
    return found[0]


def refused(url: str, token: str) -> bool:
    """Whether the server turns `token` away (401 to a recall request)."""
    body = {"client": "claude-code", "kind": "prompt", "session_id": "probe", "prompt": "x", "project": {}}
    return wire.post(url, "/hooks/recall", body, token, 30).status == 401


def credential(machine: Machine, url: str) -> Credential:
    """What `mcp-memory login` kept on this machine (credential.json: it has no OS keyring)."""
    kept = places.read_json(places.credential_file(machine.data_dir, url))
    assert kept is not None, "no credential.json"
    return Credential.model_validate(kept)


def test_a_token_that_expires_mid_session_is_refreshed_without_a_new_sign_in(
    server: Server, alice: Machine, tmp_path: Path
) -> None:
    checkout = clone(tmp_path / "alice")
    earlier_session(alice, server, checkout)
    work = new_session(alice, server, checkout)
    work.turn("The invoices service keeps 30 days of audit logs.", "Noted: 30 days of audit logs.")
    delivered(server, alice, "keeps 30 days of audit logs", "Noted: 30 days of audit logs")
    signed_in = credential(alice, server.url)

    old = expired_and_idle(alice, server.url)
    assert refused(server.url, old.access_token), "the server still takes the expired token"

    # The session goes on: its capture events reach the server, the courier having refreshed the token.
    work.turn("Staging is restored from production every Monday.", "Noted: staging restored on Mondays.")
    delivered(server, alice, "restored from production every Monday", "Noted: staging restored on Mondays")
    renewed = places.cached_token(alice.data_dir, server.url)
    assert renewed is not None and renewed.access_token != old.access_token, "token.json was not refreshed"
    assert renewed.user == "alice" and (renewed.expires_at or 0) > (old.expires_at or 0)
    now = credential(alice, server.url)
    assert now.client is not None and signed_in.client is not None
    assert now.client.client_id == signed_in.client.client_id, "a new sign-in, not a refresh"
    assert outbox.status(alice.data_dir, server.url).get("state") != "signed out"

    # The next prompt's recall injects what the server holds of the project's earlier session.
    injected = work.recall(QUESTION)
    assert "PostgreSQL 16" in injected, f"{injected!r}; {described(alice, server.url)}"


def test_a_revoked_grant_keeps_the_backlog_until_the_person_signs_in_again(
    server: Server, alice: Machine, oidc: OidcServer, tmp_path: Path
) -> None:
    checkout = clone(tmp_path / "alice")
    earlier_session(alice, server, checkout)
    work = new_session(alice, server, checkout)
    until(
        "the courier gone",
        lambda: not outbox.courier_running(alice.data_dir, server.url),
        courier.IDLE_EXIT_SECONDS + 120,
        alice,
        server.url,
    )

    # An administrator revokes the grant at the authorization server (as a client revokes a token).
    kept = credential(alice, server.url)
    assert kept.server_metadata is not None and kept.server_metadata.revocation_endpoint is not None
    assert kept.client is not None and kept.tokens.refresh_token
    form = {
        "token": kept.tokens.refresh_token,
        "token_type_hint": "refresh_token",
        "client_id": kept.client.client_id,
    }
    revocation = str(kept.server_metadata.revocation_endpoint)
    with urllib.request.urlopen(revocation, urllib.parse.urlencode(form).encode(), timeout=30) as answer:
        assert answer.status == 200
    expired_and_idle(alice, server.url)

    # Capture goes on: each hook exits 0 and the events wait in the outbox; the courier says why.
    backlog = [
        ("The invoices service keeps 30 days of audit logs.", "Noted: 30 days of audit logs."),
        ("Staging is restored from production every Monday.", "Noted: staging restored on Mondays."),
    ]
    for prompt, reply in backlog:
        work.turn(prompt, reply)
    until(
        "the courier's verdict",
        lambda: outbox.status(alice.data_dir, server.url).get("state") == "signed out",
        DELIVERY_SECONDS,
        alice,
        server.url,
    )
    status = outbox.status(alice.data_dir, server.url)
    assert f"run mcp-memory login {server.url}" in str(status.get("last_error")), status
    assert outbox.waiting(alice.data_dir, server.url)[0] >= len(backlog), described(alice, server.url)
    assert stored_turns(server.data_dir, "30 days of audit logs") == []

    doctor = mcp_memory(alice.home, alice.env, "doctor").stdout
    section = doctor[doctor.index(f"memory server {server.url}") :]
    assert (
        f"signed out: the sign-in as alice is no longer accepted; run `mcp-memory login {server.url}`"
        in section
    ), section
    assert f"outbox: {len(backlog)} events waiting" in section, section

    assert work.recall(QUESTION) == "", "recall injected something while signed out"

    # Signed in again: the courier delivers the backlog, each turn once.
    log_in(alice, server.url, oidc)
    texts = [text for turn in backlog for text in turn]
    delivered(server, alice, *texts)
    for text in ["decided the invoices service runs on", *texts]:
        assert len(stored_turns(server.data_dir, text)) == 1, (text, stored_turns(server.data_dir, text))
    assert outbox.status(alice.data_dir, server.url).get("state") != "signed out"
    assert "PostgreSQL 16" in work.recall(QUESTION), described(alice, server.url)
