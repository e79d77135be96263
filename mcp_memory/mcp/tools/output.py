"""How a tool's answer is written for the client: compact JSON, fields at their default left out.

A client's model reads every token a tool returns, for the rest of the conversation. So the text block
is JSON without indentation or spaces (the SDK's own would indent it), and a field still at its default
(null, false, an empty list or object) is left out of both the text and `structuredContent`, which
carry the same object; the output schema marks such fields optional, so a client validating against it
is satisfied. The knowledge-graph tools keep the reference server's own text (graph.py).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

P = ParamSpec("P")


def compact(result: BaseModel) -> CallToolResult:
    """The result as a client reads it: one compact JSON text, the same object as structured content."""
    data = result.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def briefly(fn: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[Any]]:
    """The tool, answering compactly (its signature, and so its schemas, unchanged)."""

    @functools.wraps(fn)
    async def answered(*args: P.args, **kwargs: P.kwargs) -> Any:
        result = await fn(*args, **kwargs)
        return compact(result) if isinstance(result, BaseModel) else result

    return answered
