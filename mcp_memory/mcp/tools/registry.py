"""How a tool module declares its tools: `family.tool(...)` marks a module-level function as a tool
(with its annotations) without registering it; `register(server, specs)` adds the chosen ones to a
server under the one error boundary (mcp/errors.py), each answering compactly (output.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from mcp_memory.mcp.errors import reference_errors, tool_errors
from mcp_memory.mcp.tools.output import briefly

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolSpec:
    fn: Callable[..., Any]
    annotations: ToolAnnotations
    title: str | None = None
    description: str | None = None
    reference: bool = False  # errors as the reference memory server reports them (a result, not a raise)

    @property
    def name(self) -> str:
        return self.fn.__name__


@dataclass
class Family:
    """The tools of one module, in the order they are listed to clients."""

    name: str
    tools: list[ToolSpec] = field(default_factory=list)

    def tool(
        self,
        annotations: ToolAnnotations,
        *,
        title: str | None = None,
        description: str | None = None,
        reference: bool = False,
    ) -> Callable[[F], F]:
        def mark(fn: F) -> F:
            self.tools.append(ToolSpec(fn, annotations, title, description, reference))
            return fn

        return mark


def register(server: MCPServer[Any], specs: Iterable[ToolSpec]) -> None:
    for spec in specs:
        guarded = reference_errors(spec.fn) if spec.reference else tool_errors(briefly(spec.fn))
        server.add_tool(
            guarded,
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=spec.annotations,
        )
