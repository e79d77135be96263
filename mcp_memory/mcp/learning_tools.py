"""The MCP surface of learning: explicit memories, revisions, on-demand extraction and
reconciliation, and the user profile and learning status resources.

`register_learning(server, host, settings)` adds them to the server build_server() made, and installs
the middleware that lets background work reach a client's model through MCP sampling.
"""

# No `from __future__ import annotations` here: the SDK evaluates tool annotations, and the
# Resolve(...) markers name resolvers local to register_learning, which only eager annotations see.

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_memory import validation as check
from mcp_memory.config import Settings
from mcp_memory.errors import MalformedAnswerError, MemoryServerError
from mcp_memory.learning import Learning
from mcp_memory.llm.metered import SAMPLING
from mcp_memory.llm.prompts import RenderedPrompt
from mcp_memory.llm.sampling import SamplingSessions, answer_text, sample_request, supports_sampling
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.models import Owner, SpaceRole
from mcp_memory.observability.metrics import note_error
from mcp_memory.security.principals import current_principal
from mcp_memory.security.spaces import current_access
from mcp_memory.views import (
    ExtractionReport,
    HistoryResult,
    MemoryView,
    ReconcileReport,
    WrittenMemory,
)

NO_MODEL = (
    "fact extraction is off: no LLM is configured (MCP_MEMORY_LLM__PROVIDER) and this client does not "
    "offer MCP sampling, so there is no model to read the conversation. Explicit memories (remember) "
    "and everything else still work."
)
MemoryId = Annotated[
    str, Field(description="The id of a long-term memory, e.g. fact_... from remember or search.")
]
Space = Annotated[
    str | None,
    Field(
        description="A shared space you are a member of (changing needs the writer role); omit for your own."
    ),
]


@contextmanager
def _tool_errors() -> Iterator[None]:
    try:
        yield
    except MalformedAnswerError as e:
        note_error(e)
        raise ToolError(f"the model's answer was not the JSON asked for ({e}); nothing was stored") from e
    except MemoryServerError as e:
        note_error(e)
        raise ToolError(str(e)) from e


def register_learning(server: MCPServer[Any], host: ServiceHost, settings: Settings) -> None:
    def user() -> str:
        return current_principal(settings).user_id

    def owner(space: str | None, need: SpaceRole, doing: str) -> Owner:
        return current_access(settings).owner(space, need, doing=doing)

    def user_of(_: ServerRequestContext[Any, Any]) -> str | None:
        try:
            return user()
        except MemoryServerError:  # a credential naming no user: nothing to sample for
            return None

    sessions = SamplingSessions(
        user_of, timeout_seconds=settings.llm.timeout_seconds, max_tokens=settings.learning.max_answer_tokens
    )
    server.middleware.append(sessions)
    host.sampling = sessions

    def learning() -> Learning:
        found = host.service.learning
        if not isinstance(found, Learning):
            raise ToolError("learning is off: the long-term store does not support it (see the server log)")
        return found

    def in_call_sampling(ctx: Context[Any, Any]) -> bool:
        """No configured LLM, sampling allowed, and this client offers it: the SDK samples in the call."""
        return (
            learning().chat is None
            and settings.learning.sampling
            and supports_sampling(ctx.client_capabilities)
        )

    async def answer(
        sampled: types.CreateMessageResult | None, prompt: RenderedPrompt, what: str, purpose: str
    ) -> tuple[str, str]:
        """(answer, model name) from the configured LLM (charged to the user's LLM budget), else from
        the client's sampled answer (its own model, asked within its own call: not charged)."""
        found = learning()
        if found.chat is not None:
            text = await found.ask(
                found.chat, user(), prompt, what, purpose=purpose, json_mode=True, background=False
            )
            return text, found.chat.name
        if sampled is not None:
            text = answer_text(sampled)  # the SDK asked the client within this call: counted here
            sent = found.count_tokens(prompt.system) + found.count_tokens(prompt.user)
            found.metrics.model_called(
                SAMPLING, purpose, ok=True, prompt_tokens=sent, answer_tokens=found.count_tokens(text)
            )
            return text, SAMPLING
        raise ToolError(NO_MODEL)

    # ---- explicit memories and revisions ---------------------------------------------------------

    @server.tool(annotations=ToolAnnotations(title="Remember", read_only_hint=False, destructive_hint=False))
    async def remember(
        content: Annotated[
            str, Field(description='One self-contained statement, e.g. "The user is vegetarian".')
        ],
        type: Annotated[
            str,
            Field(description="semantic (a fact), preference, procedural (how-to) or episodic (an event)."),
        ] = "semantic",
        thread_id: Annotated[str | None, Field(description="The conversation it belongs to, if any.")] = None,
        space: Space = None,
    ) -> WrittenMemory:
        """Store a long-term memory the user asked you to keep (in a shared space: for its members). An
        identical one is not duplicated; a nearly identical one is updated to this wording."""
        with _tool_errors():
            return await learning().editor.remember(
                owner(space, "writer", "remember"), content, type, thread_id
            )

    @server.tool(
        annotations=ToolAnnotations(title="Update a memory", read_only_hint=False, destructive_hint=True)
    )
    async def update_memory(
        memory_id: MemoryId,
        content: Annotated[str, Field(description="The corrected content.")],
        space: Space = None,
    ) -> MemoryView:
        """Correct a fact or the user profile. The previous content stays in memory_history and can be
        restored with rollback_memory."""
        with _tool_errors():
            return await learning().editor.update(owner(space, "writer", "update_memory"), memory_id, content)

    @server.tool(
        annotations=ToolAnnotations(title="Memory history", read_only_hint=True, idempotent_hint=True)
    )
    async def memory_history(memory_id: MemoryId, space: Space = None) -> HistoryResult:
        """Every revision of a memory, oldest first: its content after each change and what caused it."""
        with _tool_errors():
            return await learning().editor.history(owner(space, "reader", "memory_history"), memory_id)

    @server.tool(
        annotations=ToolAnnotations(title="Roll a memory back", read_only_hint=False, destructive_hint=True)
    )
    async def rollback_memory(
        memory_id: MemoryId,
        revision_id: Annotated[
            str, Field(description="The revision to restore (an id from memory_history).")
        ],
        space: Space = None,
    ) -> MemoryView:
        """Restore a memory's content (and superseded state) as of an earlier revision; the rollback is
        itself a new revision."""
        with _tool_errors():
            writer = owner(space, "writer", "rollback_memory")
            return await learning().editor.rollback(writer, memory_id, revision_id)

    # ---- on demand: extraction and reconciliation ------------------------------------------------

    def sample_of(batch: Any) -> Sample | None:
        """The sampling request that asks the client's model to answer a prepared batch's prompt."""
        if batch is None:
            return None
        return sample_request(
            batch.prompt.system,
            batch.prompt.user,
            max_tokens=settings.learning.max_answer_tokens,
            json_mode=True,
        )

    async def extraction_sample(
        thread_id: str, ctx: Context[Any, Any], space: str | None = None
    ) -> Sample | None:
        if not in_call_sampling(ctx):
            return None
        writer = owner(space, "writer", "extract_memories")
        return sample_of(await learning().prepare_extraction(writer, check.thread_id(thread_id)))

    @server.tool(
        annotations=ToolAnnotations(title="Extract memories", read_only_hint=False, destructive_hint=False)
    )
    async def extract_memories(
        thread_id: Annotated[str, Field(description="The conversation to learn from.")],
        sampled: Annotated[types.CreateMessageResult | None, Resolve(extraction_sample)],
        ctx: Context[Any, Any],
        space: Annotated[
            str | None,
            Field(description="The shared space the thread is in (writer role); omit for your own."),
        ] = None,
    ) -> ExtractionReport:
        """Learn facts from the thread's turns not yet learned from, now (it also happens by itself every
        few turns). Uses the configured LLM, or your own model through MCP sampling."""
        with _tool_errors():
            found = learning()
            writer = owner(space, "writer", "extract_memories")
            batch = await found.prepare_extraction(writer, check.thread_id(thread_id))
            if batch is None:
                if found.chat is None and not in_call_sampling(ctx):
                    raise ToolError(NO_MODEL)
                return ExtractionReport(thread_id=thread_id, model="none", turns_read=0, facts=[])
            text, model = await answer(
                sampled, batch.prompt, f"extraction of thread {thread_id}", "extraction"
            )
            return await found.finish_extraction(batch, text, model)

    async def reconcile_sample(ctx: Context[Any, Any], space: str | None = None) -> Sample | None:
        if not in_call_sampling(ctx):
            return None
        return sample_of(await learning().prepare_reconcile(owner(space, "writer", "reconcile_memories")))

    @server.tool(
        annotations=ToolAnnotations(title="Reconcile memories", read_only_hint=False, destructive_hint=False)
    )
    async def reconcile_memories(
        sampled: Annotated[types.CreateMessageResult | None, Resolve(reconcile_sample)],
        ctx: Context[Any, Any],
        space: Annotated[
            str | None,
            Field(description="Reconcile this shared space's facts (writer role); omit for your own."),
        ] = None,
    ) -> ReconcileReport:
        """Review the user's recent facts for duplicates (merged) and contradictions (the newer wins);
        losers are superseded, never deleted, and stay in memory_history. Also refreshes the profile."""
        with _tool_errors():
            found = learning()
            writer = owner(space, "writer", "reconcile_memories")
            batch = await found.prepare_reconcile(writer)
            if batch is None:
                if found.chat is None and not in_call_sampling(ctx):
                    raise ToolError(NO_MODEL)
                return ReconcileReport(model="none", facts_reviewed=0)
            text, model = await answer(sampled, batch.prompt, "reconciliation", "reconciliation")
            report = await found.finish_reconcile(batch, text, model)
            report.profile_updated = await found.refresh_profile(writer) is not None
            return report

    # ---- the profile and status ------------------------------------------------------------------

    @server.resource("memory://profile", name="profile", mime_type="text/plain")
    async def profile() -> str:
        """What is known about the user across all threads (empty until facts are learned)."""
        try:
            found = learning()
            current = await found.profiles.current(user())
            if current is None:  # never built yet: the offline profile costs no model call
                current = await found.profiles.rebuild_offline(user())
            return current.content if current else ""
        except (MemoryServerError, ToolError) as e:
            raise ResourceError(str(e)) from e

    @server.resource("memory://learning/status", name="learning_status", mime_type="application/json")
    async def learning_status() -> str:
        """Your learning as this server sees it: which model learns (llm, sampling or none), the hourly
        LLM budget (limit, used, remaining, resets_at), which threads' turns wait (how many) and why,
        the last extraction and reconciliation, and the last background failures with their reason."""
        try:
            return (await learning().status_of(user())).model_dump_json()
        except (MemoryServerError, ToolError) as e:
            raise ResourceError(str(e)) from e
