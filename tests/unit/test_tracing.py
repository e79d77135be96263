"""OpenTelemetry traces: one span per MCP request, named and labelled like the metrics, with nothing of
the caller or their memories; and what happens when an OTLP endpoint is set without the SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp import Client
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_memory.config import Settings
from mcp_memory.mcp.server import build_server
from mcp_memory.observability.tracing import open_tracing, with_exporter
from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio


async def test_each_request_is_a_span_with_its_name_and_outcome(fast_settings: Settings) -> None:
    exporter = InMemorySpanExporter()
    tracing = with_exporter(exporter)
    server = build_server(fast_settings)
    server.call_metrics.tracing = tracing
    secret = "Zanzibar-walrus"
    async with Client(server, raise_exceptions=False) as client:
        await call(client, "add_turn", thread_id="trace-thread", role="user", content=f"{secret} here")
        await call(client, "search_memory", query=secret)
        await call_error(client, "get_working_memory", thread_id="not a thread id!")
    tracing.close()  # flushes the batch
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"tool add_turn", "tool search_memory", "tool get_working_memory"} <= spans.keys()
    assert spans["tool add_turn"].attributes == {
        "mcp.kind": "tool",
        "mcp.name": "add_turn",
        "mcp_memory.outcome": "ok",
    }
    failed = spans["tool get_working_memory"]
    assert failed.attributes is not None and failed.attributes["mcp_memory.outcome"] == "error"
    assert not failed.status.is_ok
    for span in exporter.get_finished_spans():
        shown = repr(dict(span.attributes or {})) + span.name
        assert secret not in shown and "trace-thread" not in shown and fast_settings.user_id not in shown


def test_no_endpoint_no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert open_tracing(None) is None


def test_an_endpoint_without_the_sdk_is_a_clear_error() -> None:
    # A Python whose OpenTelemetry exporter cannot be imported, as without the otel extra.
    program = """
import sys
sys.modules["opentelemetry.exporter.otlp.proto.http.trace_exporter"] = None
from mcp_memory.errors import ConfigError
from mcp_memory.observability.tracing import open_tracing
try:
    open_tracing("http://127.0.0.1:4318/v1/traces")
except ConfigError as e:
    print(e)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'mcp-memory[otel]'" in done.stdout, done.stdout + done.stderr
