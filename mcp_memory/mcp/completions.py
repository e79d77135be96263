"""completion/complete: the caller's own thread and memory ids, for the arguments that name them.

A client completing `memory://threads/{thread_id}`, `memory://threads/{thread_id}/summary`,
`memory://memories/{memory_id}` or the `recall` prompt's `thread_id` gets the ids of the principal's
own threads (newest first) or memories (in id order) that start with what was typed, at most 100 (the
protocol's cap), with `has_more` when there are more. Any other argument completes to nothing. The
principal is the request's (mcp/auth.py), never an argument, and ScopeGuard requires the read scope.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.mcp.auth import current_principal
from mcp_memory.mcp.host import ServiceHost

MAX_VALUES = 100  # completion/complete never returns more values than this
MAX_ID_CHARS = 256  # longer than any thread or memory id: nothing can start with it

THREAD_ARGUMENTS = frozenset(
    {
        ("ref/resource", "memory://threads/{thread_id}", "thread_id"),
        ("ref/resource", "memory://threads/{thread_id}/summary", "thread_id"),
        ("ref/prompt", "recall", "thread_id"),
    }
)
MEMORY_ARGUMENTS = frozenset({("ref/resource", "memory://memories/{memory_id}", "memory_id")})
NOTHING = Completion(values=[], total=0, has_more=False)


def register_completions(server: MCPServer[Any], host: ServiceHost, settings: Settings) -> None:
    async def thread_ids(user_id: str, prefix: str) -> Completion:
        threads = await host.service.list_threads(user_id)
        matching = [t.thread_id for t in threads if t.thread_id.startswith(prefix)]
        return Completion(
            values=matching[:MAX_VALUES], total=len(matching), has_more=len(matching) > MAX_VALUES
        )

    async def memory_ids(user_id: str, prefix: str) -> Completion:
        # One more than returned tells whether there are more, without counting them all.
        found = await host.service.stores.long_term.memory_ids(user_id, prefix, MAX_VALUES + 1)
        if len(found) > MAX_VALUES:
            return Completion(values=found[:MAX_VALUES], total=None, has_more=True)
        return Completion(values=found, total=len(found), has_more=False)

    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        target = ref.uri if isinstance(ref, ResourceTemplateReference) else ref.name
        key = (ref.type, target, argument.name)
        if len(argument.value) > MAX_ID_CHARS or key not in THREAD_ARGUMENTS | MEMORY_ARGUMENTS:
            return NOTHING
        try:
            user_id = current_principal(settings).user_id
            if key in THREAD_ARGUMENTS:
                return await thread_ids(user_id, argument.value)
            return await memory_ids(user_id, argument.value)
        except MemoryServerError as e:
            raise MCPError(code=INTERNAL_ERROR, message=str(e)) from e

    # The SDK's completion() decorator is unannotated; registering through it keeps our signature.
    server.completion()(complete)  # type: ignore[no-untyped-call]
