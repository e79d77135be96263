"""The one error boundary of the MCP surface: product errors as the MCP SDK reports them.

Tools, resources and prompts just raise `MemoryServerError`s (errors.py); `build_server` registers each
through one of these wrappers, which counts the error (mcp_memory_errors_total) and hands the SDK the
exception it shows the client:
- a tool: `ToolError` (the SDK answers `is_error=true` with the message);
- a knowledge-graph tool: the reference server's own shape, the message alone with `is_error` set;
- a resource: `ResourceNotFoundError` for a missing thing, else `ResourceError`;
- a prompt: `MCPError(INVALID_PARAMS)` (the SDK hides any other exception from a prompt);
- a completion: `MCPError(INTERNAL_ERROR)`.
Anything else is a crash: the SDK logs it and tells the client only that the call failed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult

from mcp_memory.errors import MalformedAnswerError, MemoryServerError, NotFoundError
from mcp_memory.mcp.middleware.results import error_result
from mcp_memory.observability.metrics import note_error

P = ParamSpec("P")
R = TypeVar("R")


def message_of(error: MemoryServerError) -> str:
    """What the client reads: the product's own wording (errors carry no secrets)."""
    if isinstance(error, MalformedAnswerError):
        return f"the model's answer was not the JSON asked for ({error}); nothing was stored"
    return str(error)


def _translated(error: MemoryServerError, kind: str) -> Exception:
    note_error(error)
    match kind:
        case "tool":
            return ToolError(message_of(error))
        case "resource" if isinstance(error, NotFoundError):
            return ResourceNotFoundError(message_of(error))
        case "resource":
            return ResourceError(message_of(error))
        case "completion":
            return MCPError(INTERNAL_ERROR, message_of(error))
        case _:
            return MCPError(INVALID_PARAMS, message_of(error))


def _boundary(kind: str) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    def wrap(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        # functools.wraps keeps the signature and annotations the SDK reads to build the schema.
        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await fn(*args, **kwargs)
            except MemoryServerError as e:
                raise _translated(e, kind) from e

        return guarded

    return wrap


tool_errors = _boundary("tool")
resource_errors = _boundary("resource")
prompt_errors = _boundary("prompt")
completion_errors = _boundary("completion")


def reference_errors(fn: Callable[P, Awaitable[CallToolResult]]) -> Callable[P, Awaitable[CallToolResult]]:
    """The reference memory server's way: the error is the result (the message alone, is_error set)."""

    @functools.wraps(fn)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await fn(*args, **kwargs)
        except MemoryServerError as e:
            note_error(e)
            return error_result(message_of(e))

    return guarded


def resolver(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A `Resolve(...)` dependency under the tool boundary: the SDK runs resolvers before the tool."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except MemoryServerError as e:
                raise _translated(e, "tool") from e

        return guarded_async

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemoryServerError as e:
            raise _translated(e, "tool") from e

    return guarded
