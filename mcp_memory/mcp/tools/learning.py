"""Learning: explicit memories and their revisions (remember, update_memory, memory_history,
rollback_memory) and, on demand, extraction and reconciliation by a model: the configured LLM, or the
client's own model through MCP sampling asked within the call (the `sampled` arguments, filled by the
SDK's Resolve). The rules are in learning/."""

# No `from __future__ import annotations` here: the SDK evaluates the Resolve(...) markers of
# `sampled`, which name resolvers defined below them.

from typing import Annotated, Any

import mcp_types as types
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory import validation as check
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.learning import Learning
from mcp_memory.llm.metered import SAMPLING
from mcp_memory.llm.prompts import RenderedPrompt
from mcp_memory.llm.sampling import answer_text, sample_request, supports_sampling
from mcp_memory.mcp.errors import resolver
from mcp_memory.mcp.tools import dependencies
from mcp_memory.mcp.tools.dependencies import (
    access_of,
    audited,
    reader,
    server_of,
    service_of,
    user_of,
    writer,
)
from mcp_memory.mcp.tools.registry import Family
from mcp_memory.models import Owner
from mcp_memory.views import ExtractionReport, HistoryResult, MemoryView, ReconcileReport, WrittenMemory

family = Family("learning")

NO_MODEL = (
    "fact extraction is off: no LLM is configured (MCP_MEMORY_LLM__PROVIDER) and this client does not "
    "offer MCP sampling, so there is no model to read the conversation. Explicit memories (remember) "
    "and everything else still work."
)
MemoryId = Annotated[str, Field(description="Memory id (fact_...) from remember or search.")]
Space = Annotated[str | None, Field(description="Shared space (writer role to change); omit for yours.")]


def learning_of(ctx: Context[Any, Any]) -> Learning:
    return dependencies.learning_of(server_of(ctx))


def in_call_sampling(ctx: Context[Any, Any]) -> bool:
    """No configured LLM, sampling allowed, and this client offers it: the SDK samples in the call."""
    return (
        learning_of(ctx).chat is None
        and server_of(ctx).config.learning.sampling
        and supports_sampling(ctx.client_capabilities)
    )


async def answer(
    ctx: Context[Any, Any],
    sampled: types.CreateMessageResult | None,
    prompt: RenderedPrompt,
    what: str,
    purpose: str,
) -> tuple[str, str]:
    """(answer, model name) from the configured LLM (charged to the user's LLM budget), else from
    the client's sampled answer (its own model, asked within its own call: not charged)."""
    found = learning_of(ctx)
    if found.chat is not None:
        user = user_of(server_of(ctx))
        text = await found.ask(
            found.chat, user, prompt, what, purpose=purpose, json_mode=True, background=False
        )
        return text, found.chat.name
    if sampled is not None:
        text = answer_text(sampled)  # the SDK asked the client within this call: counted here
        sent = found.count_tokens(prompt.system) + found.count_tokens(prompt.user)
        found.metrics.model_called(
            SAMPLING, purpose, ok=True, prompt_tokens=sent, answer_tokens=found.count_tokens(text)
        )
        return text, SAMPLING
    raise BackendUnavailableError(NO_MODEL)


def _sample_of(ctx: Context[Any, Any], batch: Any) -> Sample | None:
    """The sampling request that asks the client's model to answer a prepared batch's prompt."""
    if batch is None:
        return None
    max_tokens = server_of(ctx).config.learning.max_answer_tokens
    return sample_request(batch.prompt.system, batch.prompt.user, max_tokens=max_tokens, json_mode=True)


@resolver
async def extraction_sample(
    thread_id: str, ctx: Context[Any, Any], space: str | None = None
) -> Sample | None:
    if not in_call_sampling(ctx):
        return None
    owner = access_of(server_of(ctx)).owner(space, "writer", doing="extract_memories")
    return _sample_of(ctx, await learning_of(ctx).prepare_extraction(owner, check.thread_id(thread_id)))


@resolver
async def reconcile_sample(ctx: Context[Any, Any], space: str | None = None) -> Sample | None:
    if not in_call_sampling(ctx):
        return None
    owner = access_of(server_of(ctx)).owner(space, "writer", doing="reconcile_memories")
    return _sample_of(ctx, await learning_of(ctx).prepare_reconcile(owner))


# ---- explicit memories and revisions -------------------------------------------------------------


@family.tool(ToolAnnotations(destructive_hint=False))
async def remember(
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("remember")],
    content: Annotated[
        str, Field(description='One self-contained statement, e.g. "The user is vegetarian".')
    ],
    type: Annotated[
        str,
        Field(description="semantic (fact), preference, procedural (how-to), episodic (event)."),
    ] = "semantic",
    thread_id: Annotated[str | None, Field(description="The conversation it came from.")] = None,
    space: Space = None,
) -> WrittenMemory:
    """Store a fact the user asked you to keep; a near-identical one is updated, not duplicated."""
    async with audited(ctx, owner, "add") as record:
        written = await learning_of(ctx).editor.remember(owner, content, type, thread_id)
        record.note([written.id])
    return written.model_copy(update={"content": None})  # the text you sent


@family.tool(ToolAnnotations(destructive_hint=True))
async def update_memory(
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("update_memory")],
    memory_id: MemoryId,
    content: Annotated[str, Field(description="The corrected content.")],
    space: Space = None,
) -> MemoryView:
    """Correct a fact or the user profile (the old content stays in memory_history)."""
    async with audited(ctx, owner, "update", ids=[memory_id]):
        updated = await learning_of(ctx).editor.update(owner, memory_id, content)
    return updated.model_copy(update={"content": None})  # the text you sent


@family.tool(ToolAnnotations(read_only_hint=True))
async def memory_history(
    ctx: Context[Any, Any],
    owner: Annotated[Owner, reader("memory_history")],
    memory_id: MemoryId,
    space: Space = None,
) -> HistoryResult:
    """A memory's revisions, oldest first: its content after each change and what caused it."""
    history = await learning_of(ctx).editor.history(owner, memory_id)
    await service_of(ctx).audit.read(owner, [memory_id])  # a space's memory read, in its trail
    if history.revisions and history.revisions[-1].content == history.memory.content:
        history.memory.content = None  # said once, by the last revision
    return history


@family.tool(ToolAnnotations(destructive_hint=True))
async def rollback_memory(
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("rollback_memory")],
    memory_id: MemoryId,
    revision_id: Annotated[str, Field(description="A revision id (memory_history).")],
    space: Space = None,
) -> MemoryView:
    """Restore a memory as of an earlier revision (itself a new revision)."""
    async with audited(ctx, owner, "rollback", ids=[memory_id]):
        return await learning_of(ctx).editor.rollback(owner, memory_id, revision_id)


# ---- on demand: extraction and reconciliation ----------------------------------------------------


@family.tool(ToolAnnotations(destructive_hint=False))
async def extract_memories(
    thread_id: Annotated[str, Field(description="The conversation to learn from.")],
    sampled: Annotated[types.CreateMessageResult | None, Resolve(extraction_sample)],
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("extract_memories")],
    space: Annotated[
        str | None,
        Field(description="The thread's shared space (writer role); omit for yours."),
    ] = None,
) -> ExtractionReport:
    """Learn facts from the thread's new turns now (also automatic every few turns), with the
    configured LLM or your model via sampling."""
    found = learning_of(ctx)
    batch = await found.prepare_extraction(owner, check.thread_id(thread_id))
    if batch is None:
        if found.chat is None and not in_call_sampling(ctx):
            raise BackendUnavailableError(NO_MODEL)
        return ExtractionReport(thread_id=thread_id, model="none", turns_read=0, facts=[])
    text, model = await answer(ctx, sampled, batch.prompt, f"extraction of thread {thread_id}", "extraction")
    async with audited(ctx, owner, "learn", at_end=True):  # one record of every fact it writes
        return await found.finish_extraction(batch, text, model)


@family.tool(ToolAnnotations(destructive_hint=False))
async def reconcile_memories(
    sampled: Annotated[types.CreateMessageResult | None, Resolve(reconcile_sample)],
    ctx: Context[Any, Any],
    owner: Annotated[Owner, writer("reconcile_memories")],
    space: Annotated[
        str | None,
        Field(description="This shared space's facts (writer role); omit for yours."),
    ] = None,
) -> ReconcileReport:
    """Merge duplicate facts, resolve contradictions (the newer wins; the loser is superseded, not
    deleted) and refresh the profile."""
    found = learning_of(ctx)
    batch = await found.prepare_reconcile(owner)
    if batch is None:
        if found.chat is None and not in_call_sampling(ctx):
            raise BackendUnavailableError(NO_MODEL)
        return ReconcileReport(model="none", facts_reviewed=0)
    text, model = await answer(ctx, sampled, batch.prompt, "reconciliation", "reconciliation")
    async with audited(ctx, owner, "learn", at_end=True):  # one record of every fact it changes
        report = await found.finish_reconcile(batch, text, model)
        report.profile_updated = await found.refresh_profile(owner) is not None
    return report
