"""completion/complete: the caller's own thread and memory ids, and its spaces', for the arguments
that name them.

A client completing `memory://threads/{thread_id}`, `memory://threads/{thread_id}/summary`,
`memory://memories/{memory_id}` or the `recall` prompt's `thread_id` gets the ids of the principal's
own threads (newest first) or memories (in id order: its own and those of the spaces it is a member
of) that start with what was typed, at most 100 (the protocol's cap), with `has_more` when there are
more. A space's thread (`memory://spaces/{space}/threads/{thread_id}`, or `recall` with `space` given)
completes `space` to the names of the spaces the principal is a member of and `thread_id` to that
space's threads. Any other argument completes to nothing. The principal is the request's
(security/principals.py), never an argument, and ScopeGuard requires the read scope; a space the
principal is not a member of completes to nothing, as one that does not exist.
"""

from __future__ import annotations

from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.errors import completion_errors
from mcp_memory.mcp.tools.dependencies import access_of
from mcp_memory.models import Owner
from mcp_memory.service.memory_service import MemoryService

MAX_VALUES = 100  # completion/complete never returns more values than this
MAX_ID_CHARS = 256  # longer than any thread or memory id: nothing can start with it

THREAD_ARGUMENTS = frozenset(
    {
        ("ref/resource", "memory://threads/{thread_id}", "thread_id"),
        ("ref/resource", "memory://threads/{thread_id}/summary", "thread_id"),
        ("ref/prompt", "recall", "thread_id"),
    }
)
SPACE_THREADS = (
    "memory://spaces/{space}/threads/{thread_id}",
    "memory://spaces/{space}/threads/{thread_id}/summary",
)
SPACE_ARGUMENTS = frozenset(
    {*(("ref/resource", uri, "space") for uri in SPACE_THREADS), ("ref/prompt", "recall", "space")}
)
SPACE_THREAD_ARGUMENTS = frozenset(("ref/resource", uri, "thread_id") for uri in SPACE_THREADS)
MEMORY_ARGUMENTS = frozenset({("ref/resource", "memory://memories/{memory_id}", "memory_id")})
KNOWN = THREAD_ARGUMENTS | SPACE_ARGUMENTS | SPACE_THREAD_ARGUMENTS | MEMORY_ARGUMENTS
NOTHING = Completion(values=[], total=0, has_more=False)


async def _thread_ids(service: MemoryService, owner: Owner, prefix: str) -> Completion:
    threads = await service.list_threads(owner)
    return _listed([t.thread_id for t in threads if t.thread_id.startswith(prefix)])


async def _memory_ids(service: MemoryService, owners: list[Owner], prefix: str) -> Completion:
    # One more than returned tells whether there are more, without counting them all.
    found = await service.memory_ids(owners, prefix, MAX_VALUES + 1)
    if len(found) > MAX_VALUES:
        return Completion(values=found[:MAX_VALUES], total=None, has_more=True)
    return Completion(values=found, total=len(found), has_more=False)


def _chosen_space(context: CompletionContext | None) -> str | None:
    return (context.arguments or {}).get("space") if context is not None else None


async def complete(
    server: MemoryServer,
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    """completion/complete for one argument of a resource template or prompt."""
    target = ref.uri if isinstance(ref, ResourceTemplateReference) else ref.name
    key = (ref.type, target, argument.name)
    if len(argument.value) > MAX_ID_CHARS or key not in KNOWN:
        return NOTHING
    access = access_of(server)
    if key in SPACE_ARGUMENTS:
        return _listed(sorted(name for name in access.roles if name.startswith(argument.value)))
    if key in THREAD_ARGUMENTS | SPACE_THREAD_ARGUMENTS:
        space = _chosen_space(context) if key in SPACE_THREAD_ARGUMENTS or target == "recall" else None
        if space is not None and space not in access.roles:
            return NOTHING  # not a member, or no such space: the same nothing
        return await _thread_ids(server.service, access.owner(space), argument.value)
    return await _memory_ids(server.service, access.readable(), argument.value)


def register_completions(server: MemoryServer) -> None:
    @completion_errors
    async def completing(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        return await complete(server, ref, argument, context)

    # The SDK's completion() decorator is unannotated; registering through it keeps our signature.
    server.completion()(completing)  # type: ignore[no-untyped-call]


def _listed(matching: list[str]) -> Completion:
    return Completion(values=matching[:MAX_VALUES], total=len(matching), has_more=len(matching) > MAX_VALUES)
