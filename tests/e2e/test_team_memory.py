"""A team on one memory server, end to end (issue 57), with every part real.

The server: two `mcp-memory serve --transport http` replicas over one data directory, working memory in
Redis, behind nginx, accepting the access tokens of a real OAuth server (oidc-provider,
tests/services/oidc_server.py), with one space, acme-api: alice owns it, bob writes, dave reads; carol is
not a member. Each person (and each of alice's two machines) is a private HOME and data directory that
signs in with `mcp-memory login URL` (authorization code + PKCE through the loopback redirect, the browser
played by `OidcServer.authorize`) and runs `mcp-memory install claude-code --server URL`. The real Claude
Code CLI runs headless against the stand-in Messages API, so what the hooks inject is read where it
matters: in the request the model receives. The repository's committed `.mcp-memory.toml` names the space.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_memory.remote import courier
from tests.helpers import HANG_SECONDS
from tests.security.bearer import UNMETERED
from tests.services import team
from tests.services.claude_code import ClaudeRun, run_claude
from tests.services.memory_user import git_project
from tests.services.messages_api import MessagesAPI
from tests.services.nginx import balanced
from tests.services.oidc_server import OidcServer
from tests.services.server_process import NetworkServer, ServerStarter, free_port
from tests.services.team import Machine

SPACE = "acme-api"
REPOSITORY = "https://github.com/acme/api.git"
DOTFILES = "https://github.com/alice/dotfiles.git"
DECISION = (
    "For acme-api we decided to run the invoices service on PostgreSQL 16 behind pgbouncer; "
    "Priya owns the rollout."
)
QUESTION = "which database did we decide on for the invoices service, and who owns the rollout?"
PERSONAL = "Note to self: my dotfiles keep the zsh prompt theme in themes/kestrel.zsh, not in .zshrc."
PERSONAL_QUESTION = "where do my dotfiles keep the zsh prompt theme?"
# The courier backs off while the server is down (up to a minute): one whole backoff, then a bound
# against a hang.
DELIVERED_SECONDS = courier.MAX_BACKOFF_SECONDS + HANG_SECONDS


@dataclass
class Deployment:
    url: str  # what the team installs: http://127.0.0.1:<nginx port>
    replicas: list[NetworkServer]
    data_dir: Path  # the replicas' one data directory
    oidc: OidcServer


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI.running(["Noted."]) as running:
        yield running


@pytest.fixture
def deployment(
    start_server: ServerStarter, tmp_path: Path, redis_url: str, oidc_server: OidcServer
) -> Iterator[Deployment]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    spaces = tmp_path / "spaces.json"
    members = {"alice": "owner", "bob": "writer", "dave": "reader"}
    spaces.write_text(json.dumps({"spaces": [{"name": SPACE, "members": members}]}))
    env = UNMETERED | {
        "MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER": oidc_server.issuer,
        "MCP_MEMORY_SECURITY__RESOURCE_URL": f"{url}/mcp",
        "MCP_MEMORY_SECURITY__SPACES_FILE": str(spaces),
        "MCP_MEMORY_WORKING__REDIS_URL": redis_url,
        "MCP_MEMORY_WORKING__KEY_PREFIX": f"mmtest-{uuid.uuid4().hex[:12]}",
    }
    data_dir = tmp_path / "server-data"
    replicas = [start_server("http", data_dir, env, port=free_port()) for _ in range(2)]
    for _ in balanced(replicas, tmp_path, port=port):
        yield Deployment(url, replicas, data_dir, oidc_server)


def sign_in(deployment: Deployment, root: Path, user: str) -> Machine:
    """A new machine of `user`, signed in and installed (tests/services/team.py)."""
    return team.sign_in(deployment.url, deployment.oidc, root, user)


def clone(root: Path, remote: str, space: str | None = None) -> Path:
    """A checkout of `remote`; with `space`, holding the committed .mcp-memory.toml that names it."""
    path = git_project(root, remote)
    if space is not None:
        (path / ".mcp-memory.toml").write_text(f'[project]\nspace = "{space}"\n')
    return path


def session(machine: Machine, prompt: str, cwd: Path, api: MessagesAPI, reply: str = "Noted.") -> ClaudeRun:
    api.reply_with([reply])
    run = run_claude(prompt, cwd=cwd, home=machine.home, api=api, env=machine.env)
    assert run.exit_code == 0 and run.output is not None and run.output.get("is_error") is False, (
        run.describe()
    )
    assert run.hook_errors() == [], run.describe()
    return run


def rows(deployment: Deployment, text: str) -> list[tuple[str, str]]:
    """(owner key, content) of every stored turn holding `text`, read from the server's file."""
    return team.stored_turns(deployment.data_dir, text)


def delivered(deployment: Deployment, machine: Machine, text: str) -> list[tuple[str, str]]:
    """The rows holding `text` once this machine's outbox has been delivered (fails after a while)."""
    deadline = time.monotonic() + DELIVERED_SECONDS
    while time.monotonic() < deadline:
        waiting = list((machine.data_dir / "remote").glob("*/outbox/*.json"))
        found = rows(deployment, text)
        if found and not waiting:
            return found
        time.sleep(0.2)
    status = [p.read_text() for p in (machine.data_dir / "remote").glob("*/status.json")]
    log = machine.data_dir / "hooks" / "hooks.log"
    pytest.fail(
        f"{text!r} not delivered within {DELIVERED_SECONDS:g}s; courier status {status}; "
        f"hooks.log: {log.read_text()[-2000:] if log.exists() else 'none'}"
    )


def test_a_decision_reaches_a_teammate_attributed_and_no_one_outside_the_space(
    deployment: Deployment, tmp_path: Path, api: MessagesAPI
) -> None:
    alice = sign_in(deployment, tmp_path / "alice-laptop", "alice")
    bob = sign_in(deployment, tmp_path / "bob", "bob")
    carol = sign_in(deployment, tmp_path / "carol", "carol")
    dave = sign_in(deployment, tmp_path / "dave", "dave")

    session(alice, DECISION, clone(tmp_path / "alice-laptop" / "api", REPOSITORY, SPACE), api)
    stored = delivered(deployment, alice, "PostgreSQL 16 behind pgbouncer")
    assert {owner for owner, _ in stored} == {f"@{SPACE}"}, stored

    # Bob, in his own clone: the decision is in the model's request, and says who it came from.
    asked = session(bob, QUESTION, clone(tmp_path / "bob" / "api", REPOSITORY, SPACE), api, "From memory.")
    request = asked.conversation[0]
    assert request.contains("PostgreSQL 16") and request.contains("Priya"), asked.describe()
    # Its MCP entry (`serve --server URL`, bob's sign-in) reached the same server: the tools are offered.
    assert request.contains("mcp__memory__search_memory"), "the memory's tools did not reach the model"
    assert re.search(r"alice, (just now|\d+ (second|minute)s? ago)", asked.injected("UserPromptSubmit")), (
        asked.injected("UserPromptSubmit")
    )
    # bob's prompt is captured too (once the courier has delivered it):
    assert {o for o, _ in delivered(deployment, bob, "invoices service, and who owns")} == {f"@{SPACE}"}

    # Dave reads the space: he is told; what he types stays his own.
    told = session(dave, QUESTION + " (dave)", clone(tmp_path / "dave" / "api", REPOSITORY, SPACE), api)
    assert told.conversation[0].contains("PostgreSQL 16"), told.describe()
    assert {o for o, _ in delivered(deployment, dave, "rollout? (dave)")} == {"dave"}

    # Carol is no member: nothing of the space reaches her, and her session is her own.
    outside = session(carol, QUESTION + " (carol)", clone(tmp_path / "carol" / "api", REPOSITORY, SPACE), api)
    for word in ("PostgreSQL 16", "pgbouncer", "Priya"):
        assert not outside.mentions(word), f"{word!r} reached a non-member"
    assert {o for o, _ in delivered(deployment, carol, "rollout? (carol)")} == {"carol"}

    # One person, two machines: alice's personal project reaches her desktop and nobody else.
    session(alice, PERSONAL, clone(tmp_path / "alice-laptop" / "dotfiles", DOTFILES), api)
    assert {o for o, _ in delivered(deployment, alice, "themes/kestrel.zsh")} == {"alice"}
    desktop = sign_in(deployment, tmp_path / "alice-desktop", "alice")
    again = session(desktop, PERSONAL_QUESTION, clone(tmp_path / "alice-desktop" / "dotfiles", DOTFILES), api)
    assert again.conversation[0].contains("themes/kestrel.zsh"), again.describe()
    peeking = session(bob, PERSONAL_QUESTION, clone(tmp_path / "bob" / "dotfiles", DOTFILES), api)
    assert not peeking.mentions("kestrel"), "alice's personal memory reached bob"


def test_a_session_while_the_server_is_down_is_stored_once_when_it_is_back(
    deployment: Deployment, tmp_path: Path, api: MessagesAPI
) -> None:
    alice = sign_in(deployment, tmp_path / "alice", "alice")
    checkout = clone(tmp_path / "alice" / "api", REPOSITORY, SPACE)
    for replica in deployment.replicas:
        replica.stop()
    offline = session(alice, DECISION, checkout, api, "Noted while offline.")
    assert offline.injected("UserPromptSubmit") == "", offline.describe()
    assert {h.exit_code for h in offline.hooks()} <= {0, None}, offline.describe()
    print(
        "\nhooks with the server down: " + ", ".join(f"{h.event} {h.duration_ms} ms" for h in offline.hooks())
    )
    assert list((alice.data_dir / "remote").glob("*/outbox/*.json")), "nothing waits in the outbox"
    assert rows(deployment, "PostgreSQL 16 behind pgbouncer") == []

    for replica in deployment.replicas:
        replica.start()
    # The next session's hooks (or the courier still retrying) deliver the backlog, each turn once.
    session(alice, "and what about staging?", checkout, api)
    assert len(delivered(deployment, alice, "PostgreSQL 16 behind pgbouncer")) == 1
    assert len(delivered(deployment, alice, "Noted while offline.")) == 1
    assert len(delivered(deployment, alice, "and what about staging?")) == 1
