"""`mcp-memory hook <client> [--event NAME]`: one lifecycle event of a coding agent, handled in
milliseconds, never in the way.

The client runs this once per event with the event as JSON on stdin (how each client's hooks work:
docs/hooks.md). What it does:
- capture events (a reply finished, a tool ran, compaction, a subagent, the session's end): the event is
  written to the spool (mcp_memory/hooks/spool.py) and the resident server is told to store it;
- session start and each prompt: the resident server is asked what to recall, and the answer is
  printed in the client's format (mcp_memory/hooks/clients.py), within hooks.budget_tokens.

Standard library only, and only what the event needs (a bare Python start is ~20 ms; the MCP SDK alone
would cost a second). It always exits 0 and prints nothing but the client's valid output: a missing,
locked or corrupt store, a full disk or a server that is down costs the user a line in
<data dir>/hooks/hooks.log, nothing more. What cannot be stored now stays spooled for later.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp_memory.hooks import clients, daemon, spool
from mcp_memory.hooks.events import HookEvent
from mcp_memory.hooks.projects import Project, excluded, project_of

RECALL_KINDS = frozenset({"session_start", "prompt"})
# Claude Code's transcript holds everything: the events that end an exchange (or may rewrite the
# transcript) store it; its prompts and tool calls are read from the transcript then.
TRANSCRIPT_EVENTS = frozenset({"reply", "compact", "subagent", "session_end"})
OTHER_CAPTURE = frozenset({"prompt", "reply", "tool", "compact", "subagent", "session_end"})
ASK_TIMEOUT = {"session_start": 2.0, "prompt": 1.5}  # seconds the resident server has to answer
START_WAIT = 2.5  # at session start, how long to wait for a resident server just started
POKE_TIMEOUT = 0.5
COPILOT_REPLY_WAIT = 2.0  # seconds Copilot CLI's Stop hook waits for the reply to reach the session log


def data_dir() -> Path:
    configured = os.environ.get("MCP_MEMORY_DATA_DIR")
    if configured:
        return Path(configured)  # as config/settings.py reads it
    import platformdirs

    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


def run(client: str, event_name: str | None, stdin: bytes, out: Any = None, server: str | None = None) -> int:
    """Handle one event; always 0. What the client must read goes to `out` (stdout). `server`: a memory
    server's URL (team mode): events go to its outbox and recall is asked of it."""
    out = out or sys.stdout
    root = data_dir()
    output, error = "", None
    event: HookEvent | None = None
    payload = _payload(stdin)
    if payload is None:  # never a real event: logged, and recorded as a failure, not as the hooks firing
        error = f"the payload on stdin is not a JSON object ({len(stdin)} bytes)"
        _log(root, f"{client} {event_name or '?'}: {error}")
        _fired(root, client, event_name or "?", error)
        return 0
    try:
        event = clients.parse(client, payload, event_name)
        output = clients.render_nothing(event)
        output = _handle(root, event, server) or output
    except Exception as e:  # the boundary: a hook must never fail its client (module docstring)
        error = f"{type(e).__name__}: {e}"
        import traceback  # only when something failed

        _log(root, f"{client} {event_name or '?'}: {error}\n{traceback.format_exc()}")
    _fired(root, client, event.event if event else (event_name or "?"), error)
    if output:
        out.write(output)
        out.flush()
    return 0


def _payload(stdin: bytes) -> dict[str, Any] | None:
    try:
        payload = json.loads(stdin)
    except ValueError:  # not JSON, or not UTF-8
        return None
    return payload if isinstance(payload, dict) else None


def _handle(root: Path, event: HookEvent, server: str | None = None) -> str:
    if event.kind == "other":
        return ""
    project = project_of(event.cwd or os.getcwd())
    if _excluded(project):
        return ""
    if event.client == "copilot" and event.kind == "reply" and not event.reply and event.transcript_path:
        from mcp_memory.hooks.copilot_events import last_reply  # its Stop carries no text

        event = event._replace(reply=last_reply(event.transcript_path, wait=COPILOT_REPLY_WAIT))
        if not event.reply:
            _log(root, f"copilot Stop: no reply found in {event.transcript_path}")
    if _captures(event):
        if server is None:
            spool.write(spool.spool_dir(root), spool.entry(event, project))
            _poke(root)
        else:  # team mode: the courier delivers it (mcp_memory/remote/courier.py); never the network here
            from mcp_memory.remote import outbox

            outbox.write(root, server, spool.entry(event, project))
            outbox.start_courier(root, server)
    if event.kind not in RECALL_KINDS or not clients.can_inject(event.client):
        return ""  # Copilot CLI drops what these hooks print: no recall to compute for it
    context = _recall(root, event, project, server)
    return clients.render(event, context) if context else ""


def _captures(event: HookEvent) -> bool:
    if event.client == "gemini" and event.transcript_path:
        from mcp_memory.hooks import gemini  # only Gemini's hooks pay for its import

        return gemini.captures(event)
    if event.client == "claude-code" and event.transcript_path:
        # A resumed or compacted session: what the transcript holds so far is stored first.
        return event.kind in TRANSCRIPT_EVENTS or (
            event.kind == "session_start" and event.source in ("resume", "compact")
        )
    if event.kind == "tool":
        return event.tool is not None and bool(event.tool.paths or event.tool.command)
    return event.kind in OTHER_CAPTURE


def _poke(root: Path) -> None:
    """Tell the resident server the spool has something; start it when it is not running."""
    try:
        daemon.notify(root, "/hooks/capture", POKE_TIMEOUT)
    except daemon.Unreachable:
        daemon.start(root, _log_file(root))


def _recall(root: Path, event: HookEvent, project: Project, server: str | None = None) -> str:
    request = {
        "client": event.client,
        "kind": event.kind,
        "session_id": event.session_id,
        "cwd": event.cwd,
        "prompt": event.prompt,
        "source": event.source,
        "project": project.as_dict(),
        "cap_chars": clients.CAP_CHARS.get(event.client, 10_000),
    }
    timeout = ASK_TIMEOUT[event.kind]
    if server is not None:
        return _remote_recall(root, server, request, timeout, event.kind)
    try:
        answer = daemon.ask(root, "/hooks/recall", request, timeout)
    except daemon.Unreachable:
        daemon.start(root, _log_file(root))
        if event.kind != "session_start":
            return ""  # a prompt never waits for a server to start; the next one will find it
        deadline = time.monotonic() + START_WAIT
        while not daemon.running(root):
            if time.monotonic() > deadline:
                return ""
            time.sleep(0.05)
        try:
            answer = daemon.ask(root, "/hooks/recall", request, max(0.1, deadline - time.monotonic()))
        except daemon.Unreachable:
            return ""
    context = answer.get("context")
    return context if isinstance(context, str) else ""


def _remote_recall(root: Path, url: str, request: dict[str, Any], timeout: float, kind: str) -> str:
    """Recall asked of a memory server with the cached token. No usable token, no answer in time, or a
    refusal: nothing injected, a line in hooks.log, and the courier started (it refreshes the token)."""
    from mcp_memory.remote import outbox, places, wire

    token = places.cached_token(root, url)
    if token is None or not token.usable():
        why = "not signed in" if token is None else "the token expired"
        _log(
            root,
            f"recall from {url}: {why}, nothing injected (the courier refreshes it; else: mcp-memory login {url})",
        )
        outbox.start_courier(root, url)
        return ""
    expires_in = None if token.expires_at is None else token.expires_at - time.time()
    if kind == "session_start" and expires_in is not None and expires_in < outbox.REFRESH_AHEAD_SECONDS:
        outbox.start_courier(root, url)  # refreshed before this session needs it
    try:
        answer = wire.post(url, "/hooks/recall", request, token.access_token, timeout)
    except wire.Unreachable as e:
        _log(root, f"recall from {url}: {e}, nothing injected")
        outbox.start_courier(root, url)
        return ""
    context = answer.body.get("context") if answer.status == 200 and answer.body else None
    if not isinstance(context, str):
        _log(root, f"recall from {url}: HTTP {answer.status}, nothing injected")
        if answer.status == 401:
            outbox.start_courier(root, url)
        return ""
    if outbox.waiting(root, url)[0]:  # the server answers again: a courier waiting out an outage, try now
        outbox.start_courier(root, url)
    return context


def _excluded(project: Project) -> bool:
    raw = os.environ.get("MCP_MEMORY_HOOKS__EXCLUDE", "").strip()
    if not raw:
        return False
    try:
        listed = json.loads(raw)
    except ValueError:
        listed = raw.split(",")
    return isinstance(listed, list) and excluded(project, [str(i) for i in listed])


def _fired(root: Path, client: str, event_name: str, error: str | None) -> None:
    """When this client's hooks last fired, and how it went (read by `mcp-memory doctor`)."""
    record = {"event": event_name, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "ok": error is None}
    if error is not None:
        record["error"] = error[:300]
    try:
        directory = spool.private_dir(spool.hooks_dir(root) / "fired")
        temporary = directory / f".{client}.{os.getpid()}.tmp"
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(json.dumps(record))
        os.replace(temporary, directory / f"{client}.json")
    except OSError:
        pass


def _log_file(root: Path) -> Path:
    return spool.log_file(root)


def _log(root: Path, line: str) -> None:
    spool.log(root, line)


USAGE = """usage: mcp-memory hook CLIENT [--event NAME] [--server URL]  (JSON payload on stdin)

Handle one lifecycle event of a coding agent: the client runs this command with the event as JSON on
stdin, and reads what to inject from stdout. `mcp-memory install CLIENT` writes these commands into the
client's hooks; there is no need to run it by hand.

  CLIENT        {clients}
  --event NAME  the client's own event name (default: the payload's hook_event_name)
  --server URL  a memory server (team mode: `mcp-memory install CLIENT --server URL`): events wait in
                its outbox for the courier, recall is asked of it

It always exits 0, so a broken store or a wrong call never fails the client: problems go to
<data dir>/hooks/hooks.log, and `mcp-memory doctor` shows when each client's hooks last fired.
"""
SHAPE = "mcp-memory hook CLIENT [--event NAME] [--server URL]"
OPTIONS = ("--event", "--server")


def malformed(argv: list[str]) -> str | None:
    """Why a command line is not a hook call (None when it is one): then nothing is read or written."""
    return _parsed(argv)[0]


def _parsed(argv: list[str]) -> tuple[str | None, dict[str, str]]:
    """(why the call is malformed or None, its options: --event, --server as normalized)."""
    from mcp_memory.hooks.events import CLIENTS

    if not argv or argv[0].startswith("-"):
        return f"no client named ({SHAPE})", {}
    if argv[0] not in CLIENTS:
        return f"unknown client {argv[0][:40]!r}: expected one of {', '.join(CLIENTS)}", {}
    rest = argv[1:]
    unexpected = f"unexpected arguments {' '.join(rest)[:80]!r} ({SHAPE})"
    if len(rest) % 2:
        return unexpected, {}
    options: dict[str, str] = {}
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        if flag not in OPTIONS or flag in options or not value or value.startswith("-"):
            return unexpected, {}
        options[flag] = value
    if "--server" in options:
        from mcp_memory.remote import places

        try:
            options["--server"] = places.normalized(options["--server"])
        except places.UnusableUrl as e:
            return f"--server: {e}", {}
    return None, options


def refuse(problem: str) -> None:
    """A malformed call: said on stderr, and in hooks.log when there is one; nothing is created, and it
    is not recorded as an event (doctor never counts it as the hooks firing)."""
    print(f"mcp-memory hook: {problem}", file=sys.stderr)
    log_file = _log_file(data_dir())
    if log_file.parent.is_dir():
        _log(data_dir(), f"malformed call: {problem}")


def main(argv: list[str]) -> None:
    """`mcp-memory hook <client> [--event NAME] [--server URL]`, parsed by hand: argparse's help machinery
    is not needed on this path, and every millisecond counts."""
    if "-h" in argv or "--help" in argv:
        from mcp_memory.hooks.events import CLIENTS

        print(USAGE.format(clients=", ".join(CLIENTS)), end="")
        raise SystemExit(0)
    problem, options = _parsed(argv)
    if problem is not None:
        refuse(problem)
        raise SystemExit(0)
    try:
        stdin = sys.stdin.buffer.read()
    except (OSError, ValueError):
        stdin = b""
    raise SystemExit(run(argv[0], options.get("--event"), stdin, server=options.get("--server")))
