"""Optional OpenTelemetry traces: a span per MCP request, sent to an OTLP/HTTP collector.

On when `observability.otlp_endpoint` or the standard OTEL_EXPORTER_OTLP_ENDPOINT is set. The SDK is
the `otel` extra: missing, a configured endpoint stops the start with a message saying what to install
(an endpoint only in the environment, which other programs may share, is a warning). The tracer
provider is the server's own, not the process-wide one. Spans carry the method, the tool, resource or
prompt name (as the metrics label it) and the outcome: never a user, an argument or memory text.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp_memory.errors import ConfigError

log = logging.getLogger(__name__)

ENV_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
INSTALL = "pip install 'mcp-memory[otel]'"


class Tracing:
    """Spans of one server, on a tracer provider of its own (closed, and flushed, by `close`)."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("mcp_memory")

    @contextmanager
    def span(self, name: str, attributes: dict[str, str]) -> Iterator[Any]:
        from opentelemetry.trace import SpanKind

        with self._tracer.start_as_current_span(name, kind=SpanKind.SERVER, attributes=attributes) as span:
            yield span

    @staticmethod
    def finish(span: Any, outcome: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("mcp_memory.outcome", outcome)
        if outcome != "ok":
            span.set_status(Status(StatusCode.ERROR, outcome))

    def close(self) -> None:
        self._provider.shutdown()


def with_exporter(exporter: Any) -> Tracing:
    """Tracing into this span exporter (the OTLP one, or a test's in-memory one), batched."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "mcp-memory"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing(provider)


def open_tracing(endpoint: str | None) -> Tracing | None:
    """Tracing to `endpoint` (a full OTLP/HTTP traces URL), else to OTEL_EXPORTER_OTLP_ENDPOINT; None
    when neither is set."""
    from_env = os.environ.get(ENV_ENDPOINT)
    if endpoint is None and not from_env:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as e:
        if endpoint is None:
            log.warning(
                "%s is set, but traces are off: the OpenTelemetry SDK is not installed (%s)",
                ENV_ENDPOINT,
                INSTALL,
            )
            return None
        raise ConfigError(
            f"observability.otlp_endpoint is set, but the OpenTelemetry SDK is not installed: {INSTALL}"
        ) from e
    # Given no endpoint, the exporter reads the environment itself (and adds /v1/traces to it).
    exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    log.info("sending traces to %s", endpoint or from_env)
    return with_exporter(exporter)
