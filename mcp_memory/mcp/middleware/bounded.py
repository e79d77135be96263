"""The last boundary of every answer: no error a client reads is longer than ~300 characters.

Errors are worded where they are raised, echoing what the caller sent as a short prefix with its length
(errors.py `shown`; tools' argument errors: mcp/argument_errors.py). Some come from the SDK itself and
echo the request whole: `Method not found` with the method as its data, `Unknown tool: <name>`,
`Unknown resource: <uri>` (twice), `Unknown prompt: <name>`. `BoundedErrors`, the outermost server
middleware, cuts whatever the chain answers: a tool's `is_error` text, a JSON-RPC error's message and
data; and says malformed params (pydantic's error, before any handler) in words, naming the field.
"""

from __future__ import annotations

import re
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent
from pydantic import ValidationError

from mcp_memory.errors import MAX_ERROR_CHARS, bounded, shown
from mcp_memory.mcp.argument_errors import worded
from mcp_memory.mcp.middleware.results import is_tool_error


class BoundedErrors:
    """Server middleware (outermost): every error answered at most MAX_ERROR_CHARS long."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            result = await call_next(ctx)
        except MCPError as e:
            raise _bounded_error(e) from e
        except ValidationError as e:  # the request's params do not fit the method (no handler ran)
            raise MCPError(INVALID_PARAMS, worded(ctx.method, e)) from e
        except Exception as e:  # the SDK answers it code 0 with its text: the same, made short
            if len(str(e)) <= MAX_ERROR_CHARS:
                raise
            raise MCPError(0, _short(str(e))) from e
        if ctx.request_id is None or not is_tool_error(result):
            return result
        return _bounded_result(result)


# The SDK's own errors that echo what the client named, whole: the name shown as a prefix with its length.
_UNKNOWN = re.compile(r"(Unknown (?:tool|resource|prompt)): (.*)", re.DOTALL)


def _short(message: str) -> str:
    unknown = _UNKNOWN.fullmatch(message)
    if unknown is not None and len(message) > 80:
        message = f"{unknown.group(1)}: {shown(unknown.group(2))}"
    return bounded(message)


def _bounded_error(error: MCPError) -> MCPError:
    message, data = error.message, error.data
    if len(message) <= 80 and (data is None or len(repr(data)) <= 80):
        return error
    if isinstance(data, str):
        data = shown(data)
    elif data is not None and len(repr(data)) > 80:
        data = None  # structured data too long to keep: the message says what went wrong
    return MCPError(error.code, _short(message), data)


def _bounded_result(result: HandlerResult) -> HandlerResult:
    if isinstance(result, CallToolResult):
        shortened = [
            TextContent(type="text", text=_short(c.text)) if isinstance(c, TextContent) else c
            for c in result.content
        ]
        return result.model_copy(update={"content": shortened})
    if isinstance(result, dict):  # the wire's form
        on_wire = [
            {**c, "text": _short(c["text"])} if isinstance(c, dict) and isinstance(c.get("text"), str) else c
            for c in result.get("content", [])
        ]
        return {**result, "content": on_wire}
    return result
