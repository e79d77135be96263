"""doctor's part for memory servers (team mode: `install <client> --server URL`): which servers the
installed entries point at, and for each what this machine holds: who is signed in, when the token
expires, the last delivery, what waits in the outbox and why, whether the courier runs. Standard library
only, like doctor.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp_memory.cli.install_clients import server_of, shell_words

Report = dict[str, Any]


def hook_servers(commands: Iterable[str]) -> list[str]:
    """The servers our hook commands name with `--server URL`."""
    return sorted({url for command in commands if (url := server_of(shell_words(command) or []))})


def servers_named(clients: Report) -> list[str]:
    """Every memory server an installed hook or MCP entry points at (`--server URL`), normalized."""
    from mcp_memory.remote import places

    named: set[str] = set()
    for client in clients.values():
        for scope in ("user", "project"):
            installed = client[scope]
            server = installed["server"]
            command = server.get("command") if server.get("installed") else None
            named.update(installed["hooks"].get("servers", []))
            if server.get("team_server"):
                named.add(server["team_server"])
            elif command and server_of(command):  # OpenCode's entry: one command list
                named.add(str(server_of(command)))
    found = set()
    for url in named:
        try:
            found.add(places.normalized(url))
        except places.UnusableUrl:
            continue
    return sorted(found)


def examine(data_dir: Path, url: str) -> Report:
    """What this machine holds for one memory server: token, outbox, the courier's last word."""
    import time

    from mcp_memory.remote import outbox, places

    token = places.cached_token(data_dir, url)
    status = outbox.status(data_dir, url)
    count, oldest = outbox.waiting(data_dir, url)
    return {
        "url": url,
        "folder": str(places.state_dir(data_dir, url)),
        "signed_in": token is not None,
        "user": token.user if token else None,
        "expires_at": token.expires_at if token else None,
        "expired": bool(token and not token.usable()),
        "outbox": count,
        "oldest_waiting_at": oldest,
        "set_aside": outbox.set_aside_count(data_dir, url),
        "courier_running": outbox.courier_running(data_dir, url),
        "status": status,
        "now": time.time(),
    }


def lines(server: Report) -> list[str]:
    now, status = server["now"], server["status"]
    url = server["url"]
    said = ["", f"memory server {url} (team mode; its outbox and token in {server['folder']})"]
    if not server["signed_in"]:
        said.append(
            f"  not signed in: run `mcp-memory login {url}`; until then nothing is delivered or recalled"
        )
    elif status.get("state") == "signed out":  # the courier's verdict: the sign-in was refused
        who = f" as {server['user']}" if server["user"] else ""
        said.append(
            f"  signed out: the sign-in{who} is no longer accepted; run `mcp-memory login {url}`; "
            "until then nothing is delivered or recalled"
        )
    else:
        who = f"signed in as {server['user']}" if server["user"] else "signed in"
        expires = server["expires_at"]
        if expires is None:
            when = "the token does not expire"
        elif server["expired"]:
            when = "the token expired, refreshed by the next delivery"
        else:
            when = f"the token expires {_moment(expires)} (in {_span(expires - now)})"
        said.append(f"  {who}; {when}")
    delivered = status.get("last_delivery_at")
    said.append(
        f"  last delivery: {_moment(delivered)} ({_span(now - delivered)} ago), "
        f"{status.get('last_delivery_count', 0)} events"
        if isinstance(delivered, (int, float))
        else "  last delivery: none yet"
    )
    if server["outbox"]:
        oldest = server["oldest_waiting_at"]
        age = f", the oldest {_span(now - oldest)} old" if isinstance(oldest, (int, float)) else ""
        said.append(f"  outbox: {_events(server['outbox'])} waiting{age}")
        error, error_at = status.get("last_error"), status.get("last_error_at")
        if error and isinstance(error_at, (int, float)) and error_at >= (delivered or 0):
            said.append(f"    why: {error} ({_span(now - error_at)} ago)")
        next_try = status.get("next_try_at")
        if isinstance(next_try, (int, float)) and next_try > now and server["courier_running"]:
            said.append(f"    next try in {_span(next_try - now)}")
    else:
        said.append("  outbox: empty")
    if server["set_aside"]:
        said.append(
            f"  set aside: {_events(server['set_aside'])} the server rejected (*.bad in the outbox; "
            f"last: {status.get('last_rejected', 'see hooks.log')})"
        )
    said.append(
        "  courier: running"
        if server["courier_running"]
        else "  courier: not running (the next hook starts it)"
    )
    return said


def _moment(epoch: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="seconds")


def _span(seconds: float) -> str:
    """A duration in plain words: 40 s, 12 min, 3 h, 2 days."""
    seconds = max(0.0, seconds)
    for size, unit in ((86400, "days"), (3600, "h"), (60, "min")):
        if seconds >= size * (2 if unit == "days" else 1):
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def _events(count: int) -> str:
    return f"{count} event" if count == 1 else f"{count} events"
