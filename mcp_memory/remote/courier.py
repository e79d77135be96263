"""The courier: `python -m mcp_memory courier --server URL`, which the hooks start in the background to
deliver a memory server's outbox (outbox.py), one per server (it holds `courier.lock` for its life).

What it does, over and over: reads the oldest waiting events' items here, where the session ran (the
transcript, with the Stop's wait: hooks/captured.py), leaves out what the server already acknowledged for
that session, redacts what is left (the fast patterns; <private> spans never leave the machine), and POSTs
them in batches to `URL/hooks/capture` (docs/team.md has the wire format). Per event the server answers
`stored` (the file is deleted, its keys remembered) or `rejected` (bad input, never retried: the file is
set aside as .bad, the reason logged). An outage (503, 5xx, no network) is retried, 1 s doubling to a
minute; a 401 gets one fresh token and one retry; no credential stops it ("run mcp-memory login URL").

Order is strict: a batch is the oldest events, and the next one goes only once every event of this one is
stored or rejected, so no event is delivered before an older one. The transcript path never leaves the
machine. It exits after IDLE_EXIT_SECONDS with nothing to deliver, or after FAILING_EXIT_SECONDS of
failures in a row (the next hook starts it again); status.json says what it did last, for doctor.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_memory.hooks import captured, spool
from mcp_memory.hooks.transcripts import Captured
from mcp_memory.remote import outbox, places, wire
from mcp_memory.remote.credentials import SignedOut, sign_in_hint

IDLE_EXIT_SECONDS = 30.0
FAILING_EXIT_SECONDS = 600.0
FIRST_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS = 1.0, 60.0
BATCH_EVENTS = 64
BATCH_BYTES = 1_000_000  # a batch closes before an event that would take it past this (never empty)
REQUEST_SECONDS = 30.0
REFRESH_AHEAD_SECONDS = outbox.REFRESH_AHEAD_SECONDS
REFRESH_EVERY_SECONDS = 60.0  # and asked for at most this often (a refresh that gave the same expiry)
FORCE_REFRESH_MARGIN = 10.0**9  # "expires within a margin this long": always refreshed
POLL_SECONDS = 0.2
WAKE_LOOK_SECONDS = 0.2  # how often a backoff looks whether a hook asked for a retry
MIN_RETRY_SECONDS = (
    5.0  # a woken courier tries again at most this often (each try costs the machine a little)
)
LOCK_WAIT_SECONDS = 1.0  # a hook's probe holds the lock for an instant: the new courier waits that long
ENTRY_FIELDS = ("client", "event", "kind", "session_id", "cwd", "time", "project")  # no transcript path

TokenSource = Callable[[float], str]  # margin in seconds -> a valid access token; raises SignedOut


class Failure(Exception):
    """This batch was not delivered and is tried again later (an outage, a network, an odd answer)."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


@dataclass
class Event:
    """One outbox file as it goes on the wire."""

    path: Path
    session: str
    keys: list[str]
    wire: dict[str, Any]


@dataclass
class Batch:
    events: list[Event] = field(default_factory=list)
    nothing_new: list[Path] = field(default_factory=list)  # read, all acknowledged: deleted once delivered
    size: int = 0


def credential_tokens(data_dir: Path, url: str) -> TokenSource:
    """Tokens from the stored credential (remote/credentials.py), refreshed when due."""

    def token(margin: float) -> str:
        import functools

        import anyio

        from mcp_memory.remote import credentials

        return anyio.run(functools.partial(credentials.access_token, data_dir, url, margin=margin))

    return token


class Courier:
    def __init__(
        self,
        data_dir: Path,
        url: str,
        tokens: TokenSource | None = None,
        *,
        idle_exit: float = IDLE_EXIT_SECONDS,
        failing_exit: float = FAILING_EXIT_SECONDS,
    ) -> None:
        self.data_dir, self.url = data_dir, places.normalized(url)
        self.tokens = tokens or credential_tokens(data_dir, self.url)
        self.idle_exit, self.failing_exit = idle_exit, failing_exit
        self.read: dict[str, list[Captured]] = {}  # items read per event id, kept while it waits
        self.logged: str | None = None  # the problem last written to hooks.log
        self.last_refresh = 0.0
        self.one_at_a_time = False  # a batch the server refused whole is retried event by event

    def run(self) -> int:
        """Deliver until idle, failing too long, or signed out; 0 (its outcome is in status.json)."""
        while True:
            lock = self._lock()
            if lock is None:
                return 0  # another courier delivers this outbox
            try:
                stopped = self._deliver_all()
            finally:
                outbox.release_lock(lock)
            # A hook that wrote an event while this one was leaving found the lock still held: look again.
            if stopped != "idle" or outbox.waiting(self.data_dir, self.url)[0] == 0:
                return 0

    def _lock(self) -> int | None:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while (lock := outbox.hold_lock(self.data_dir, self.url)) is None:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
        return lock

    def _deliver_all(self) -> str:
        """The loop; why it stopped: "idle", "failing" or "signed out"."""
        idle_since, failing_since, backoff = time.monotonic(), None, FIRST_BACKOFF_SECONDS
        outbox.record_status(self.data_dir, self.url, pid=os.getpid(), state="delivering", next_try_at=None)
        while True:
            try:
                self._refresh_ahead()
                batch = self._batch()
                if not batch.events:
                    if time.monotonic() - idle_since > self.idle_exit:
                        outbox.record_status(self.data_dir, self.url, state="stopped (nothing to deliver)")
                        return "idle"
                    time.sleep(POLL_SECONDS)
                    continue
                self._deliver(batch)
            except SignedOut as e:
                reason = str(e).removesuffix(f": {sign_in_hint(self.url)}")  # said once, below
                problem = f"signed out ({reason}): run mcp-memory login {self.url}"
                self._problem(problem, state="signed out", next_try_at=None)
                return "signed out"
            except Failure as e:
                now = time.monotonic()
                failing_since = failing_since if failing_since is not None else now
                if now - failing_since > self.failing_exit:
                    self._problem(str(e), state="stopped after failing; the next hook starts it again")
                    return "failing"
                wait = min(max(backoff, e.retry_after or 0.0), MAX_BACKOFF_SECONDS)
                self._problem(str(e), state="waiting to retry", next_try_at=time.time() + wait)
                self._wait(wait)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                continue
            idle_since, failing_since, backoff = time.monotonic(), None, FIRST_BACKOFF_SECONDS

    def _wait(self, seconds: float) -> None:
        """Sleep out a backoff, or less: a hook that fires meanwhile (a capture: the network may be back,
        the laptop woke; a recall the server answered: it is back) wakes the courier for one more try, at
        most one every MIN_RETRY_SECONDS."""
        began = time.time()
        while time.time() - began < seconds:
            time.sleep(min(WAKE_LOOK_SECONDS, seconds))
            if time.time() - began >= MIN_RETRY_SECONDS and outbox.woken_since(
                self.data_dir, self.url, began
            ):
                return

    def _problem(self, problem: str, **status: Any) -> None:
        """A problem in status.json, and once in hooks.log (not once per retry)."""
        outbox.record_status(self.data_dir, self.url, last_error=problem, last_error_at=time.time(), **status)
        if problem != self.logged:
            spool.log(self.data_dir, f"courier {self.url}: {problem}")
            self.logged = problem

    # Reading the outbox ---------------------------------------------------------------------------

    def _batch(self) -> Batch:
        """The oldest waiting events, read and filtered, up to BATCH_EVENTS and about BATCH_BYTES."""
        batch = Batch()
        known: dict[str, set[str]] = {}  # per session: acknowledged, or carried by an earlier event here
        limit = 1 if self.one_at_a_time else BATCH_EVENTS
        for path, entry in outbox.pending(self.data_dir, self.url):
            if len(batch.events) >= limit:
                break
            session = outbox.session_of(entry)
            if session not in known:
                known[session] = outbox.acked(self.data_dir, self.url, session)
            event_id = str(entry.get("id") or path.stem)
            if event_id not in self.read:
                self.read[event_id] = captured.items_of(entry)  # may wait a moment for a Stop's reply
            fresh = [i for i in self.read[event_id] if i.key not in known[session] and i.content.strip()]
            if not fresh:
                if batch.events:
                    batch.nothing_new.append(path)  # deleted with the batch, never before an older event
                else:
                    self._done(path, event_id)
                continue
            event = Event(path, session, [i.key for i in fresh], _wire_event(event_id, entry, fresh))
            size = outbox.dumps_size(event.wire)
            if batch.events and batch.size + size > BATCH_BYTES:
                break
            known[session].update(event.keys)
            batch.events.append(event)
            batch.size += size
        return batch

    def _done(self, path: Path, event_id: str) -> None:
        spool.done(path)
        self.read.pop(event_id, None)

    # Delivering -----------------------------------------------------------------------------------

    def _refresh_ahead(self) -> None:
        """Refresh the token before it expires (the hooks read token.json and never refresh it)."""
        cached = places.cached_token(self.data_dir, self.url)
        due = cached is None or (
            cached.expires_at is not None and cached.expires_at - time.time() < REFRESH_AHEAD_SECONDS
        )
        if due and time.monotonic() - self.last_refresh > REFRESH_EVERY_SECONDS:
            self.last_refresh = time.monotonic()
            self._token(REFRESH_AHEAD_SECONDS)

    def _token(self, margin: float) -> str:
        try:
            return self.tokens(margin)
        except SignedOut:
            raise
        except Exception as e:  # the credential's own exchange with the identity provider: retried later
            raise Failure(f"the token could not be refreshed: {type(e).__name__}: {e}"[:300]) from e

    def _deliver(self, batch: Batch) -> None:
        body = {"events": [e.wire for e in batch.events]}
        answer = self._post(body, self._token(120))
        if answer.status == 401:  # revoked or rotated early: one fresh token, one more try
            answer = self._post(body, self._token(FORCE_REFRESH_MARGIN))
            if answer.status == 401:
                raise SignedOut("the server refuses the token")
        if answer.status == 200:
            self._settle(batch, answer.body)
            return
        said = _said(answer)
        if answer.status in (400, 413, 422):
            if len(batch.events) > 1:
                self.one_at_a_time = True  # find the event it cannot take; the others go on
                raise Failure(
                    f"the server refused a batch (HTTP {answer.status}{said}); sending one by one", 0
                )
            self._reject(batch.events[0], f"HTTP {answer.status}{said}")
            return
        if answer.status == 403:
            raise Failure(f"the server forbids capture (HTTP 403{said}): the token needs the write scope")
        raise Failure(f"the server answered HTTP {answer.status}{said}", answer.retry_after)

    def _post(self, body: dict[str, Any], token: str) -> wire.Answer:
        try:
            return wire.post(self.url, "/hooks/capture", body, token, REQUEST_SECONDS)
        except wire.Unreachable as e:
            raise Failure(f"the server cannot be reached: {e}") from e

    def _settle(self, batch: Batch, body: dict[str, Any] | None) -> None:
        """Apply the server's per-event results (checked whole before anything is changed)."""
        results = body.get("results") if body else None
        if not isinstance(results, list) or len(results) != len(batch.events):
            raise Failure("the server's answer to /hooks/capture has no result per event")
        for event, result in zip(batch.events, results, strict=True):
            if not isinstance(result, dict) or result.get("id") != event.wire["id"]:
                raise Failure("the server's results are not in the order of the events sent")
            if "stored" not in result and not isinstance(result.get("rejected"), str):
                raise Failure(f"the server's result for {event.wire['id']} is neither stored nor rejected")
        for event, result in zip(batch.events, results, strict=True):
            if "stored" in result:
                outbox.acknowledge(self.data_dir, self.url, event.session, event.keys)
                self._done(event.path, event.wire["id"])
            else:
                self._reject(event, str(result["rejected"]))
        for path in batch.nothing_new:
            self._done(path, path.stem)
        delivered = sum(1 for r in results if "stored" in r)
        previous = outbox.status(self.data_dir, self.url).get("delivered_total")
        outbox.record_status(
            self.data_dir,
            self.url,
            state="delivering",
            last_delivery_at=time.time(),
            last_delivery_count=delivered,
            delivered_total=(previous if isinstance(previous, int) else 0) + delivered,
            next_try_at=None,
        )
        self.one_at_a_time, self.logged = False, None

    def _reject(self, event: Event, why: str) -> None:
        outbox.set_aside(event.path)
        self.read.pop(event.wire["id"], None)
        spool.log(
            self.data_dir, f"courier {self.url}: event {event.wire['id']} rejected, set aside: {why[:300]}"
        )
        outbox.record_status(self.data_dir, self.url, last_rejected=why[:300], last_rejected_at=time.time())
        self.one_at_a_time = False


def _wire_event(event_id: str, entry: dict[str, Any], items: list[Captured]) -> dict[str, Any]:
    from mcp_memory.redaction import redact_fast

    return {
        "id": event_id,
        "entry": {name: entry.get(name) for name in ENTRY_FIELDS},
        "items": [
            {
                "key": item.key,
                "kind": item.kind,
                "role": item.role,
                "content": redact_fast(item.content).text,
                "time": item.time,
                "paths": list(item.paths),
            }
            for item in items
        ],
    }


def _said(answer: wire.Answer) -> str:
    detail = answer.body.get("error") or answer.body.get("detail") if answer.body else None
    return f": {str(detail)[:200]}" if detail else ""


def data_dir() -> Path:
    configured = os.environ.get("MCP_MEMORY_DATA_DIR")
    if configured:
        return Path(configured)  # as config/settings.py reads it
    import platformdirs

    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


USAGE = "usage: mcp-memory courier --server URL  (started by the hooks; docs/team.md)"


def main(argv: list[str]) -> None:
    """`mcp-memory courier --server URL`: not in --help's list; the hooks start it."""
    if len(argv) == 1 and argv[0].startswith("--server="):
        argv = ["--server", argv[0].removeprefix("--server=")]
    if len(argv) != 2 or argv[0] != "--server":
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    try:
        url = places.normalized(argv[1])
    except places.UnusableUrl as e:
        print(f"mcp-memory courier: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    import logging

    # The SDK warns of a refused refresh on stderr (hooks.log); status.json and one line there say it.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    raise SystemExit(Courier(data_dir(), url).run())
