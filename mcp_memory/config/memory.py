"""How memory is kept and found: progressive summarization, search, learning and the knowledge graph."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SummarySettings(BaseModel):
    default_context_window: int = Field(default=8000, ge=256, description="Used when the client names none.")
    threshold: float = Field(
        default=0.7, gt=0.0, lt=1.0, description="Summarize past this fraction of the window."
    )
    keep_recent_fraction: float = Field(
        default=0.3, gt=0.0, lt=1.0, description="Share of the threshold kept as verbatim recent messages."
    )
    summary_fraction: float = Field(
        default=0.2, gt=0.0, lt=1.0, description="Largest summary, as a share of the threshold."
    )
    lease_seconds: float = Field(default=60.0, gt=0, description="How long one summarizer holds a thread.")
    inline_seconds: float = Field(
        default=0.01,
        ge=0,
        description="How long add_turn waits for the summary its turn started; a longer one finishes after "
        "the reply.",
    )


class SearchSettings(BaseModel):
    fusion: Literal["score", "rrf"] = Field(
        default="score",
        description="How hybrid search fuses BM25 and vectors: normalized score sum, or Reciprocal Rank Fusion.",
    )
    rrf_k: int = Field(default=60, ge=1, description="Reciprocal Rank Fusion constant k.")
    vector_wait_ms: int = Field(
        default=100,
        ge=0,
        description="How long a search by meaning waits for a backlog of the user's turns still being embedded "
        "(more than 8: an import; fewer are always waited for); then it answers, finding those by their words "
        "only, and says the meaning side was incomplete.",
    )
    text_weight: float = Field(default=1.0, ge=0, description="Fusion weight of the BM25 side.")
    vector_weight: float = Field(default=1.0, ge=0, description="Fusion weight of the vector side.")
    context_turns: int = Field(
        default=2, ge=0, le=10, description="Earlier turns of its thread indexed (for BM25) with each turn."
    )
    context_turns_after: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Later turns of its thread indexed (for BM25) with each turn, as they arrive.",
    )
    context_weight: float = Field(
        default=0.4,
        ge=0,
        description="BM25 weight of that context (both sides) relative to the turn's own words.",
    )
    max_limit: int = Field(default=100, ge=1, description="Largest `limit` search_memory accepts.")
    max_query_chars: int = Field(
        default=10_000, ge=1, description="Longest search query accepted, in characters."
    )
    cached_queries: int = Field(
        default=4096, ge=0, description="Recent search queries whose vectors are kept for reuse (0: none)."
    )


class LearningSettings(BaseModel):
    """Learning: facts extracted from turns, deduplicated, reconciled, profiled and revisioned."""

    extract_every_turns: int = Field(
        default=10, ge=0, description="Extract facts from a thread every N new turns; 0 = not by count."
    )
    extract_on_summary: bool = Field(
        default=True, description="Also extract facts whenever a thread is summarized."
    )
    max_turns_per_extraction: int = Field(
        default=30, ge=1, description="Newest not-yet-extracted turns one extraction reads, at most."
    )
    max_facts_per_extraction: int = Field(
        default=20, ge=1, description="Facts kept from one extraction answer, at most (the most confident)."
    )
    min_confidence: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Extracted facts below this confidence are not stored."
    )
    near_duplicate_similarity: float = Field(
        default=0.9,
        gt=0.0,
        le=1.0,
        description="A new fact this similar (cosine) to an active one updates it instead of adding one.",
    )
    reconcile_every_extractions: int = Field(
        default=5,
        ge=0,
        description="Reconcile facts and refresh the profile every K extractions; 0 = on demand only.",
    )
    reconcile_max_facts: int = Field(
        default=60, ge=2, description="Newest active facts one reconciliation pass reviews."
    )
    profile: bool = Field(default=True, description="Keep a cross-thread user profile (user_summary_<user>).")
    profile_max_tokens: int = Field(default=400, ge=32, description="Longest user profile, in tokens.")
    max_llm_calls_per_hour: int = Field(
        default=60,
        ge=0,
        description="Background share of security.llm_calls_per_hour (extract, reconcile, profile).",
    )
    sampling: bool = Field(
        default=True,
        description="With no LLM configured, ask the connected client's model (MCP sampling) if it can.",
    )
    max_answer_tokens: int = Field(
        default=1500, ge=64, description="max_tokens of one extraction, reconcile or profile request."
    )
    revision_retention_days: int = Field(
        default=365, ge=1, description="Revisions older than this are deleted (at start and daily)."
    )
    recall_min_similarity: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        description="Cosine floor for memories the recall prompt returns; default: per embedder.",
    )
    queue_size: int = Field(
        default=1000,
        ge=1,
        description="Background jobs waiting, at most; past it, work is deferred (once per thread), not dropped.",
    )
    concurrency: int = Field(
        default=4, ge=1, description="Background jobs running at once, each for a different user."
    )
    shutdown_grace_seconds: float = Field(
        default=10.0, ge=0, description="On shutdown, how long running background jobs may finish."
    )


class GraphSettings(BaseModel):
    """The knowledge graph: the reference MCP memory server's entities, relations and observations."""

    tools: bool = Field(
        default=True,
        description="Offer the nine knowledge-graph tools and the memory://knowledge-graph resource; false "
        "hides them (the graph stays stored).",
    )
    max_items_per_call: int = Field(
        default=1000,
        ge=1,
        description="Most entities, relations, observations or names one graph tool call takes; more is "
        "refused whole (the CLI's import has no limit).",
    )
    max_name_chars: int = Field(
        default=1000, ge=1, description="Longest entity name, entity type or relation type."
    )
    link_memories: bool = Field(
        default=True,
        description="Link each new turn and fact to the entities it names (by name, case-insensitive).",
    )
    link_weight: float = Field(
        default=0.5,
        ge=0,
        description="With follow_links: how much a link to an entity the query names lifts a hit's score.",
    )
    follow_links: bool = Field(
        default=False,
        description="search_memory also reaches the turns linked to an entity the query names and to its "
        "neighbours (measured in bench/locomo.py; see the README).",
    )
