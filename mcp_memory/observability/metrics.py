"""The server's Prometheus metrics, in a registry of its own (not the process-wide default), so two
servers in one process, or two tests, never count into each other.

Labels never carry a user, thread, space, memory id or any text: only names from small fixed sets
(tool, resource and prompt names the server registered, outcomes, search modes, backends). A value
from a request that is not in its set is recorded as "other", so a client cannot grow the series.

Events are recorded where they happen, through the methods below; figures that are cheaper to read
than to track (the embedding backlog, the search indexes' memory) are read when Prometheus scrapes,
as the `Figures` the server passes to `exposition`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from mcp_memory.errors import BackendUnavailableError, LimitExceededError, MemoryServerError

PREFIX = "mcp_memory"
OTHER = "other"

# Outcomes of a tool call, resource read or prompt: ok, or why not.
OK, ERROR, REFUSED, RATE_LIMITED, LIMIT, UNAVAILABLE = (
    "ok",
    "error",
    "refused",
    "rate_limited",
    "limit",
    "unavailable",
)
LLM_CALLS = "llm_calls"  # the hourly model-call budget's limit (learning/budget.py), which counts itself
SEARCH_MODES = frozenset({"hybrid", "vector", "text"})
# Request latencies: a cached search takes a millisecond or two, a summary by a remote model seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Figures:
    """What the server reads when scraped: zero where the deployment has no such thing."""

    embedding_backlog: int = 0  # turns stored and waiting for their vector
    index_memory_bytes: int = 0  # the embedded store's in-memory search indexes
    index_memory_budget_bytes: int = 0  # long_term.index_memory_mb
    index_users: int = 0  # users whose indexes are in memory
    index_memories: int = 0  # memories in those indexes
    index_events: dict[str, int] = field(default_factory=dict)  # build, load, save, eviction: counts
    ready: dict[tuple[str, str], bool] = field(default_factory=dict)  # (store, backend) -> answers


@dataclass
class CallNote:
    """The outcome of the call under way, as the layers that decide it say (a refusal, an error)."""

    outcome: str = OK
    limit: str | None = None  # the limit that refused it (LimitExceededError.limit)
    backend: str | None = None  # the backend that failed it (BackendUnavailableError.backend)
    error: MemoryServerError | None = None  # the product error it failed with, if any (a 2025 client's log)


# What each metric counts (its HELP line), by name (after the prefix).
_DESCRIPTIONS = {
    "calls": (
        "Tool calls, resource reads and prompts, by name and outcome "
        "(ok, error, refused, rate_limited, limit, unavailable)."
    ),
    "call_duration_seconds": "Time to answer a tool call, resource read or prompt, by name.",
    "search_duration_seconds": "Time to answer search_memory, by search mode (hybrid, vector, text).",
    "refusals": (
        "Requests refused by a limit: requests (rate limit), stored_bytes (storage quota), "
        "llm_calls (hourly model-call budget), scope (the token may not), overload (a read shed: 503)."
    ),
    "backend_errors": (
        "Calls that failed because a backend could not answer (sqlite, redis, cosmos, llm, "
        "embeddings, sampling)."
    ),
    "embedding_wait_seconds": (
        "Time from a turn's acknowledgement to its vector being written (background embedding)."
    ),
    "admission_wait_seconds": (
        "Time a streamable-HTTP request waited for its turn before the server worked on it."
    ),
    "query_vectors": (
        "Search queries' vectors, by source (reused: kept from the same query before; embedded)."
    ),
    "summarizations": "Threads summarized, by summarizer (model or extractive).",
    "facts_learned": "Facts written by extraction, by action (created, updated, unchanged).",
    "model_calls": (
        "Model calls, by provider (llm: the configured model; sampling: the client's), purpose "
        "(summary, extraction, reconciliation, profile) and outcome (ok, error)."
    ),
    "audit_records": (
        "Audit records written (audit/), by action (add, update, forget, read, ...) and outcome "
        "(ok, refused)."
    ),
    "audit_verifications": "Audit chain verifications (mcp-memory audit verify), by result (ok, broken).",
    "audit_chain_retries": (
        "Audit appends that found another writer's record where they meant to put their own (a chain "
        "conflict: another replica appended to the same ledger first) and tried again."
    ),
    "client_answers": (
        "2025 clients' answers to server requests (sampling, elicitation), by route: here (this replica "
        "asked), relayed (passed to the other replicas through Redis), fed (relayed here, where it was asked)."
    ),
    "stream_messages": (
        "Server messages outside a request (background sampling, log notifications) for a 2025 session "
        "whose stream (GET) is open on another replica, by route: relayed (passed to the other replicas "
        "through Redis), fed (relayed here and written to the stream open on this replica)."
    ),
    "model_tokens": (
        "Tokens sent to and received from models (counted with the server's tokenizer), by provider "
        "and direction (prompt, answer)."
    ),
}


def _counter(registry: CollectorRegistry, name: str, labels: Sequence[str] = ()) -> Counter:
    return Counter(f"{PREFIX}_{name}", _DESCRIPTIONS[name], labels, registry=registry)


def _latency(registry: CollectorRegistry, name: str, labels: Sequence[str] = ()) -> Histogram:
    """A histogram of seconds, in LATENCY_BUCKETS."""
    return Histogram(
        f"{PREFIX}_{name}", _DESCRIPTIONS[name], labels, buckets=LATENCY_BUCKETS, registry=registry
    )


_call: contextvars.ContextVar[CallNote | None] = contextvars.ContextVar("mcp_memory_call", default=None)


class Metrics:
    """Every metric of one server, and the methods the layers record through."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # kind (tool, resource, prompt) -> the names the server registered: the only ones used as labels
        self.names: dict[str, frozenset[str]] = {}
        self.figures = Figures()  # what the scrape-time collector reports; set by exposition()
        r = self.registry
        self.calls = _counter(r, "calls", ["kind", "name", "outcome"])
        self.call_seconds = _latency(r, "call_duration_seconds", ["kind", "name"])
        self.search_seconds = _latency(r, "search_duration_seconds", ["mode"])
        self.refusals = _counter(r, "refusals", ["limit"])
        self.backend_errors = _counter(r, "backend_errors", ["backend"])
        self.embedding_wait = _latency(r, "embedding_wait_seconds")
        self.admission_wait = _latency(r, "admission_wait_seconds")
        self.query_vectors = _counter(r, "query_vectors", ["source"])
        self.summarizations = _counter(r, "summarizations", ["summarizer"])
        self.facts = _counter(r, "facts_learned", ["action"])
        self.model_calls = _counter(r, "model_calls", ["provider", "purpose", "outcome"])
        self.model_tokens = _counter(r, "model_tokens", ["provider", "direction"])
        self.audit_records = _counter(r, "audit_records", ["action", "outcome"])
        self.audit_verifications = _counter(r, "audit_verifications", ["result"])
        self.audit_chain_retries = _counter(r, "audit_chain_retries")
        self.client_answers = _counter(r, "client_answers", ["route"])
        self.stream_messages = _counter(r, "stream_messages", ["route"])
        self._audit_children: dict[tuple[str, str], Counter] = {}
        r.register(_FigureCollector(self))
        ProcessCollector(registry=r)  # process_* : CPU seconds, resident memory, open files (Linux)

    # ---- the MCP surface ------------------------------------------------------------------------

    def register_names(self, tools: Iterable[str], resources: Iterable[str], prompts: Iterable[str]) -> None:
        """The names calls may be labelled with; anything else is counted as "other"."""
        self.names = {
            "tool": frozenset(tools),
            "resource": frozenset(resources),
            "prompt": frozenset(prompts),
        }

    def label_of(self, kind: str, name: str) -> str:
        return name if name in self.names.get(kind, ()) else OTHER

    def call_done(self, kind: str, name: str, outcome: str, seconds: float, mode: str | None = None) -> None:
        """One call answered: `name` as label_of gave it; `mode` for search_memory."""
        self.calls.labels(kind, name, outcome).inc()
        self.call_seconds.labels(kind, name).observe(seconds)
        if mode is not None:
            self.search_seconds.labels(mode if mode in SEARCH_MODES else OTHER).observe(seconds)

    def refused(self, limit: str) -> None:
        self.refusals.labels(limit).inc()

    def backend_failed(self, backend: str) -> None:
        self.backend_errors.labels(backend).inc()

    def audit_recorded(self, action: str, outcome: str) -> None:
        key = (action, "ok" if outcome == "ok" else "refused")
        child = self._audit_children.get(key)
        if child is None:  # labels() takes a lock and builds a tuple: once per pair, not per record
            child = self._audit_children[key] = self.audit_records.labels(*key)
        child.inc()

    def audit_chain_retried(self) -> None:
        self.audit_chain_retries.inc()

    def audit_verified(self, ok: bool) -> None:
        self.audit_verifications.labels("ok" if ok else "broken").inc()

    # ---- the service and learning ---------------------------------------------------------------

    def embedded_after(self, seconds: float) -> None:
        self.embedding_wait.observe(seconds)

    def admitted_after(self, seconds: float) -> None:
        self.admission_wait.observe(seconds)

    def query_vector(self, reused: bool) -> None:
        self.query_vectors.labels("reused" if reused else "embedded").inc()

    def summarized(self, summarizer: str) -> None:
        self.summarizations.labels(summarizer).inc()

    def fact_written(self, action: str) -> None:
        self.facts.labels(action).inc()

    def model_called(
        self, provider: str, purpose: str, *, ok: bool, prompt_tokens: int = 0, answer_tokens: int = 0
    ) -> None:
        self.model_calls.labels(provider, purpose, OK if ok else ERROR).inc()
        self.model_tokens.labels(provider, "prompt").inc(prompt_tokens)
        self.model_tokens.labels(provider, "answer").inc(answer_tokens)

    def client_answer(self, route: str) -> None:
        """A 2025 client's answer to a server request: "here" (this replica asked), "relayed" (passed
        on to the replicas through Redis), "fed" (relayed to this replica, which asked)."""
        self.client_answers.labels(route).inc()

    def stream_message(self, route: str) -> None:
        """A server message for a 2025 session's stream open on another replica: "relayed" (passed on
        through Redis), "fed" (relayed to this replica, which wrote it to the stream open here)."""
        self.stream_messages.labels(route).inc()

    # ---- exposition -------------------------------------------------------------------------------

    def exposition(self, figures: Figures | None = None, accept: str = "") -> tuple[bytes, str]:
        """Every metric, and its content type: the Prometheus text format, or OpenMetrics when the
        scraper's Accept header asks for it (negotiated by the client library, as its own server does).
        The gauges come from `figures`, read just before."""
        self.figures = figures or Figures()
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type


class _FigureCollector(Collector):
    """Gauges (and the index's event counts) read from the server when scraped."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def describe(self) -> Iterable[Metric]:
        return []  # the families are only known once read; nothing to check for duplicates

    def collect(self) -> Iterator[Metric]:
        figures = self._metrics.figures
        yield _gauge(
            "embedding_backlog", "Turns stored and waiting for their vector.", figures.embedding_backlog
        )
        yield _gauge(
            "index_memory_bytes",
            "Memory the embedded store's in-memory search indexes take (estimate).",
            figures.index_memory_bytes,
        )
        yield _gauge(
            "index_memory_budget_bytes",
            "The indexes' memory budget (long_term.index_memory_mb).",
            figures.index_memory_budget_bytes,
        )
        yield _gauge("index_users", "Users whose search indexes are in memory.", figures.index_users)
        yield _gauge("index_memories", "Memories in the in-memory search indexes.", figures.index_memories)
        events = CounterMetricFamily(
            f"{PREFIX}_index_events",
            "Search-index builds (from the file), loads (from a snapshot), saves and evictions.",
            labels=["event"],
        )
        for event in ("build", "load", "save", "eviction"):
            events.add_metric([event], figures.index_events.get(event, 0))
        yield events
        ready = GaugeMetricFamily(
            f"{PREFIX}_backend_ready",
            "1 when the backend answered a probe at this scrape, 0 when not.",
            labels=["store", "backend"],
        )
        for (store, backend), answers in sorted(figures.ready.items()):
            ready.add_metric([store, backend], 1.0 if answers else 0.0)
        yield ready


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, value=value)


# ---- the outcome of the call under way ------------------------------------------------------------


def start_call() -> tuple[CallNote, contextvars.Token[CallNote | None]]:
    """A note the layers below can mark (note_outcome) until end_call."""
    note = CallNote()
    return note, _call.set(note)


def end_call(token: contextvars.Token[CallNote | None]) -> None:
    _call.reset(token)


def current_call() -> CallNote | None:
    """The note of the call under way (read by the middleware inside the metrics one: client_log.py)."""
    return _call.get()


def note_outcome(outcome: str, error: MemoryServerError | None = None) -> None:
    """Say why the call under way did not succeed (refused, rate_limited, ...), and with which error;
    the first word stands."""
    note = _call.get()
    if note is not None and note.outcome == OK:
        note.outcome, note.error = outcome, error


def note_error(error: MemoryServerError) -> None:
    """The call under way fails with this product error (called where errors become MCP errors)."""
    note = _call.get()
    if note is None or note.outcome != OK:
        return
    note.error = error
    if isinstance(error, LimitExceededError):
        note.outcome, note.limit = LIMIT, error.limit
    elif isinstance(error, BackendUnavailableError):
        note.outcome, note.backend = UNAVAILABLE, error.backend or None  # None: not a backend's fault
    else:
        note.outcome = ERROR
