"""Team mode's pieces on this machine: the hook's arguments, the outbox's order, the acknowledged keys kept
per session (bounded), status.json, and the courier's batches, token refresh and verdicts, against a real
HTTP server speaking the wire protocol (tests/fakes/team_server.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_memory.cli import hook
from mcp_memory.hooks import spool
from mcp_memory.remote import courier, outbox, places
from mcp_memory.remote.credentials import SignedOut
from tests.fakes.team_server import TeamServer
from tests.helpers import HANG_SECONDS

URL = "https://memory.example.com"


@pytest.mark.parametrize(
    ("argv", "event", "server"),
    [
        (["claude-code"], None, None),
        (["claude-code", "--event", "Stop"], "Stop", None),
        (["claude-code", "--server", "https://Memory.Example.com/mcp/"], None, URL),
        (["codex", "--event", "Stop", "--server", URL], "Stop", URL),
        (["codex", "--server", URL, "--event", "Stop"], "Stop", URL),
    ],
)
def test_hook_arguments_in_any_order(argv: list[str], event: str | None, server: str | None) -> None:
    assert hook.malformed(argv) is None
    assert hook._parsed(argv)[1] == {k: v for k, v in (("--event", event), ("--server", server)) if v}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["claude-code", "--server"], "unexpected arguments '--server'"),
        (["claude-code", "--server", URL, "--server", URL], "unexpected arguments"),
        (["claude-code", "--event", "Stop", "--event", "Stop"], "unexpected arguments"),
        (["claude-code", "--server", "--event", "Stop"], "unexpected arguments"),
        (
            ["claude-code", "--server", "ftp://memory"],
            "--server: 'ftp://memory' is not a memory server's URL",
        ),
        (["claude-code", "--sever", URL], "unexpected arguments '--sever"),
    ],
)
def test_malformed_hook_arguments_say_why(argv: list[str], said: str) -> None:
    problem = hook.malformed(argv)
    assert problem is not None and said in problem and len(problem) <= 300


def entry(session: str, prompt: str, key: str = "api") -> dict[str, Any]:
    return {
        "client": "cursor",
        "event": "beforeSubmitPrompt",
        "kind": "prompt",
        "session_id": session,
        "cwd": "/work/api",
        "transcript_path": None,
        "prompt": prompt,
        "reply": None,
        "tool": None,
        "time": "2026-01-01T00:00:00Z",
        "project": {"id": f"github.com/acme/{key}", "key": key},
        "spooled_at": 0.0,
    }


def test_the_outbox_lists_oldest_first_and_counts_what_waits(tmp_path: Path) -> None:
    written = [outbox.write(tmp_path, URL, entry("s", f"prompt {n}")) for n in range(5)]
    assert [p for p, _ in outbox.pending(tmp_path, URL)] == written
    count, oldest = outbox.waiting(tmp_path, URL)
    assert count == 5 and oldest is not None and abs(oldest - int(written[0].name[:20]) / 1e9) < 1e-6
    assert oct(places.outbox_dir(tmp_path, URL).stat().st_mode & 0o777) == "0o700"
    outbox.set_aside(written[0])
    assert outbox.waiting(tmp_path, URL)[0] == 4 and outbox.set_aside_count(tmp_path, URL) == 1


def test_acknowledged_keys_are_kept_per_session_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox, "ACKED_KEYS_PER_SESSION", 5)
    monkeypatch.setattr(outbox, "ACKED_SESSIONS", 3)
    one = outbox.session_of(entry("s1", "x"))
    outbox.acknowledge(tmp_path, URL, one, [f"k{n}" for n in range(4)])
    outbox.acknowledge(tmp_path, URL, one, ["k3", "k4", "k5", "k6"])
    assert outbox.acked(tmp_path, URL, one) == {"k2", "k3", "k4", "k5", "k6"}  # the newest five
    assert outbox.acked(tmp_path, URL, outbox.session_of(entry("s1", "x", key="web"))) == set()
    for n in range(2, 6):  # more sessions than kept: the ones written longest ago go
        outbox.acknowledge(tmp_path, URL, outbox.session_of(entry(f"s{n}", "x")), ["k"])
    files = list((places.state_dir(tmp_path, URL) / "acked").glob("*.json"))
    assert len(files) == 3
    assert outbox.acked(tmp_path, URL, one) == set()


def test_status_records_the_outbox_with_each_change(tmp_path: Path) -> None:
    assert outbox.status(tmp_path, URL) == {}
    outbox.write(tmp_path, URL, entry("s", "p"))
    recorded = outbox.record_status(tmp_path, URL, last_error="boom", last_error_at=1.0)
    assert recorded["outbox"] == 1 and recorded["oldest_waiting_at"] is not None
    again = outbox.record_status(tmp_path, URL, state="delivering")
    assert again["last_error"] == "boom" and again["state"] == "delivering"
    assert json.loads(places.status_file(tmp_path, URL).read_text()) == again


@pytest.fixture
def server() -> Iterator[TeamServer]:
    found = TeamServer()
    found.start()
    yield found
    found.stop()


def run_courier(data_dir: Path, server: TeamServer, tokens: courier.TokenSource) -> courier.Courier:
    c = courier.Courier(data_dir, server.url, tokens, idle_exit=0.3, failing_exit=5.0)
    worker = threading.Thread(target=c.run)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the courier did not stop"
    return c


def test_batches_hold_at_most_64_events_in_order_and_skip_acknowledged_items(
    tmp_path: Path, server: TeamServer
) -> None:
    for n in range(70):
        outbox.write(tmp_path, server.url, entry("s", f"prompt number {n} password=hunter2abc"))
    run_courier(tmp_path, server, lambda margin: "team-token")
    assert [len(body["events"]) for body in server.captures] == [64, 6]
    sent = [e for body in server.captures for e in body["events"]]
    assert [e["items"][0]["content"] for e in sent] == [
        f"prompt number {n} password=[redacted:password]" for n in range(70)
    ]
    assert all(set(e["entry"]) == set(courier.ENTRY_FIELDS) for e in sent)
    assert outbox.waiting(tmp_path, server.url) == (0, None)
    # The same prompts again (a client that fires twice): acknowledged already, nothing sent, nothing left.
    for n in range(3):
        outbox.write(tmp_path, server.url, entry("s", f"prompt number {n} password=hunter2abc"))
    run_courier(tmp_path, server, lambda margin: "team-token")
    assert len(server.captures) == 2 and outbox.waiting(tmp_path, server.url)[0] == 0
    status = outbox.status(tmp_path, server.url)
    assert status["delivered_total"] == 70 and status["outbox"] == 0


def test_a_refused_token_is_refreshed_once_and_delivery_goes_on(tmp_path: Path, server: TeamServer) -> None:
    server.tokens = {"fresh"}
    asked: list[float] = []

    def tokens(margin: float) -> str:
        asked.append(margin)
        return "fresh" if margin >= courier.FORCE_REFRESH_MARGIN else "stale"

    places.cache_token(tmp_path, server.url, places.CachedToken("stale", None, "alice"))
    outbox.write(tmp_path, server.url, entry("s", "a prompt"))
    run_courier(tmp_path, server, tokens)
    assert server.statuses[:2] == [401, 200]
    assert asked.count(courier.FORCE_REFRESH_MARGIN) == 1
    assert outbox.waiting(tmp_path, server.url)[0] == 0


def test_a_token_refused_after_refresh_or_no_credential_stops_it_signed_out(
    tmp_path: Path, server: TeamServer
) -> None:
    server.tokens = set()
    places.cache_token(tmp_path, server.url, places.CachedToken("revoked", None, "alice"))
    outbox.write(tmp_path, server.url, entry("s", "a prompt"))
    run_courier(tmp_path, server, lambda margin: "revoked")
    status = outbox.status(tmp_path, server.url)
    assert status["state"] == "signed out" and f"run mcp-memory login {server.url}" in status["last_error"]
    assert outbox.waiting(tmp_path, server.url)[0] == 1  # kept for after the sign-in

    def signed_out(margin: float) -> str:
        raise SignedOut("no credential")

    places.forget_token(tmp_path, server.url)
    run_courier(tmp_path, server, signed_out)
    assert "no credential" in outbox.status(tmp_path, server.url)["last_error"]
    assert "signed out (no credential)" in spool.log_file(tmp_path).read_text()


def test_an_expiring_token_is_refreshed_ahead_while_idle(tmp_path: Path, server: TeamServer) -> None:
    import time

    places.cache_token(tmp_path, server.url, places.CachedToken("old", time.time() + 300, "alice"))
    asked: list[float] = []

    def tokens(margin: float) -> str:
        asked.append(margin)
        places.cache_token(tmp_path, server.url, places.CachedToken("new", time.time() + 3600, "alice"))
        return "new"

    run_courier(tmp_path, server, tokens)
    assert asked == [courier.REFRESH_AHEAD_SECONDS]
    cached = places.cached_token(tmp_path, server.url)
    assert cached is not None and cached.access_token == "new"


def test_an_outage_is_retried_and_logged_once(tmp_path: Path, server: TeamServer) -> None:
    server.outage = True
    outbox.write(tmp_path, server.url, entry("s", "a prompt"))
    c = courier.Courier(tmp_path, server.url, lambda margin: "team-token", idle_exit=0.3, failing_exit=2.5)
    c.run()  # gives up after failing_exit of failures
    assert server.statuses.count(503) >= 2
    log = spool.log_file(tmp_path).read_text()
    assert log.count("HTTP 503") == 1, log
    status = outbox.status(tmp_path, server.url)
    assert "HTTP 503" in status["last_error"] and status["outbox"] == 1
    server.outage = False
    run_courier(tmp_path, server, lambda margin: "team-token")
    assert outbox.waiting(tmp_path, server.url)[0] == 0 and len(server.stored) == 1


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and its key, as a small deployment's own CA would issue."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


def test_https_is_checked_against_the_certificates_ssl_cert_file_names(
    tmp_path: Path, server: TeamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssl

    from mcp_memory.remote import wire

    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    assert server._http is not None
    server._http.socket = context.wrap_socket(server._http.socket, server_side=True)
    url = f"https://localhost:{server.port}"
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(wire.Unreachable, match="CERTIFICATE_VERIFY_FAILED"):
        wire.post(url, "/hooks/recall", {}, "team-token", 5.0)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    answer = wire.post(url, "/hooks/recall", {"kind": "prompt"}, "team-token", 5.0)
    assert answer.status == 200 and answer.body == {"context": ""}


def test_a_request_with_no_answer_in_time_gives_up_at_its_deadline(server: TeamServer) -> None:
    import time

    from mcp_memory.remote import wire

    server.recall_delay = HANG_SECONDS  # answers only long after the test is over
    started = time.monotonic()
    with pytest.raises(wire.Unreachable, match=r"no answer within 0\.5 s"):
        wire.post(server.url, "/hooks/recall", {}, "team-token", 0.5)
    assert time.monotonic() - started < HANG_SECONDS / 4  # gave up at its deadline, not the server's


def test_a_hook_that_finds_the_courier_waiting_out_an_outage_wakes_it(tmp_path: Path) -> None:
    """The server came back (or the laptop woke): the next hook's event is a retry now, not after a backoff
    of up to a minute. The hook finds the courier running (its lock held) and touches the wake file."""
    url = "http://127.0.0.1:9"
    c = courier.Courier(tmp_path, url, lambda margin: "team-token")
    lock = outbox.hold_lock(tmp_path, url)
    assert lock is not None
    try:
        toucher = threading.Timer(1.5, lambda: outbox.start_courier(tmp_path, url))
        began = time.monotonic()
        toucher.start()
        c._wait(60.0)
        assert time.monotonic() - began < 30.0  # woken, not the whole minute
        assert not outbox.start_courier(tmp_path, url), "a second courier was started beside the first"
    finally:
        outbox.release_lock(lock)
