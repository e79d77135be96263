"""A bounded load over streamable HTTP on loopback: 32 clients, each its own authenticated principal,
for about 10 s against the real server process. No call may fail; the latency percentiles are printed
(run with -s). The full 60 s form is `python bench/load.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.load import LOAD_ENV, load_principals, run_load
from tests.security.bearer import tokens_env
from tests.services.server_process import ServerStarter

pytestmark = pytest.mark.anyio
CLIENTS, SECONDS = 32, 10.0


async def test_32_clients_for_10_seconds_over_http_without_an_error(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    principals = load_principals(CLIENTS)
    # Reads wait up to 5 s for their turn rather than the default 1 s: on a 2-core machine shared with
    # other work, 32 clients flat out put the p99 near 1 s, and a read shed then (503, by design: tests/
    # e2e/test_admission.py) is not the failure this test looks for.
    env = tokens_env(
        principals, **LOAD_ENV, MCP_MEMORY_LOG_LEVEL="WARNING", MCP_MEMORY_ADMISSION__MAX_WAIT_SECONDS="5"
    )
    server = start_server("http", tmp_path / "data", env)
    report = await run_load(server, principals, SECONDS)
    print("\n" + report.summary())
    assert report.errors == [], report.summary()
    # Behaviour, not speed: every client made every kind of call at least once, however slow the machine
    # (run_load gives each client a whole round past the deadline when it needs one).
    calls = {name: len(latencies) for name, latencies in report.latencies.items()}
    assert calls.keys() == {"add_turn", "search_memory", "get_working_memory"}, calls
    assert calls["add_turn"] >= 3 * CLIENTS and min(calls.values()) >= CLIENTS, calls
