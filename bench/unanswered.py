"""Requests without an answer, per transport: the corpus of malformed messages of
tests/services/raw_wire.py (lines that are not JSON, truncated JSON, arrays of garbage, lone surrogates in
the method, params, arguments, keys and id, bytes that are not UTF-8, a huge line, an empty line, a byte
order mark, NUL) sent as raw bytes to the real `mcp-memory` process over stdio (relayed to the resident
server, and in its own process), SSE and streamable HTTP. The target is 0 everywhere.

    .venv/bin/python bench/unanswered.py            # prints a markdown table
    .venv/bin/python bench/unanswered.py --json bench/results/unanswered.json
    .venv/bin/python bench/unanswered.py --wait 5   # a server that drops messages: 5 s lost per drop

For each transport: messages sent, without an answer (none within 60 s), answers over 300 characters,
and the seconds the corpus took. tests/e2e/test_every_message_answered.py asserts the same (and what each
answer says); this prints the figure. Runs in about a minute (hashing embedder, a private data dir).
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import cli, table
from tests.services import raw_wire
from tests.services.resident import stop_resident
from tests.services.server_process import NetworkServer, mcp_memory_command, server_env


@contextmanager
def wire_for(transport: str, workdir: Path) -> Iterator[raw_wire.Wire]:
    env = server_env(workdir / "data")
    if transport.startswith("stdio"):
        command = [mcp_memory_command(), "serve", *(["--in-process"] if "in process" in transport else [])]
        with (
            (workdir / "stderr").open("ab") as stderr,
            raw_wire.stdio_wire(command, env, str(workdir), stderr) as wire,
        ):
            try:
                yield wire
            finally:
                stop_resident(workdir / "data")
        return
    server = NetworkServer("sse" if transport == "sse" else "http", workdir, env)
    server.start()
    try:
        if transport == "sse":
            sse = raw_wire.SseWire(server.base_url)
            try:
                yield sse
            finally:
                sse.close()
        else:
            yield raw_wire.HttpWire(server.base_url)
    finally:
        server.stop()


def words_of(answer: dict[str, Any]) -> str:
    """A JSON-RPC error's message, or a tool error's text."""
    if "error" in answer:
        return str(answer["error"].get("message", ""))
    content = answer.get("result", {}).get("content") or [{}]
    return str(content[0].get("text", ""))


def measure(transport: str, workdir: Path) -> dict[str, Any]:
    with wire_for(transport, workdir) as wire:
        raw_wire.initialize(wire)
        started = time.perf_counter()
        answered = raw_wire.answers(wire)
        seconds = time.perf_counter() - started
    long = sum(len(words_of(found)) > 300 for _, found in answered if found is not None)
    return {
        "transport": transport,
        "sent": len(answered),
        "unanswered": [case.name for case, found in answered if found is None],
        "over_300_characters": long,
        "seconds": round(seconds, 2),
    }


def main() -> None:
    parser = cli.parser(__doc__, json=True)
    parser.add_argument(
        "--wait", type=float, default=raw_wire.ANSWER_SECONDS, help="seconds to wait for an answer"
    )
    arguments = parser.parse_args()
    raw_wire.ANSWER_SECONDS = arguments.wait
    rows = []
    with tempfile.TemporaryDirectory(prefix="unanswered-") as scratch:
        for transport in ("stdio (relayed)", "stdio (in process)", "sse", "http"):
            workdir = Path(scratch) / re.sub(r"\W+", "-", transport).strip("-")
            workdir.mkdir()
            rows.append(measure(transport, workdir))
    shown = [
        {
            "transport": row["transport"],
            "messages sent": row["sent"],
            "without an answer": len(row["unanswered"]),
            "answers over 300 characters": row["over_300_characters"],
            "seconds": row["seconds"],
        }
        for row in rows
    ]
    printed = table.markdown(shown, digits=2)
    print(printed)
    for row in rows:
        if row["unanswered"]:
            print(f"{row['transport']}: no answer to {', '.join(row['unanswered'])}")
    table.save(arguments.json, rows, printed)


if __name__ == "__main__":
    main()
