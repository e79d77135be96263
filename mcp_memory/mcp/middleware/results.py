"""What the middleware reads from and makes of a handler's result, in one place."""

from __future__ import annotations

from typing import Any

from mcp.server.context import HandlerResult
from mcp_types import CallToolResult, TextContent


def is_tool_error(result: HandlerResult) -> bool:
    """A tool's failure reported as its result (`is_error`), as a model or as the wire's dict."""
    if isinstance(result, CallToolResult):
        return result.is_error is True
    return isinstance(result, dict) and result.get("isError") is True


def structured_of(result: HandlerResult) -> dict[str, Any]:
    """A tool result's structured content, or {}."""
    if isinstance(result, CallToolResult):
        return result.structured_content or {}
    if isinstance(result, dict):
        found = result.get("structuredContent")
        return found if isinstance(found, dict) else {}
    return {}


def error_result(text: str) -> CallToolResult:
    """A tool's failure as a result: the message alone, `is_error` set."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
