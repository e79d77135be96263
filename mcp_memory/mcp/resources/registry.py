"""How a resource module declares its resources: `family.resource(uri, ...)` marks a module-level
function; `register(server, specs)` adds them under the resource error boundary (mcp/errors.py).

A URI template's function takes the template's variables and the request's `Context`; a fixed URI's
function takes the server instead (the SDK gives fixed resources no Context), bound here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer

from mcp_memory.mcp.errors import resource_errors

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ResourceSpec:
    fn: Callable[..., Awaitable[str]]
    uri: str
    name: str
    mime_type: str
    title: str | None = None
    description: str | None = None

    @property
    def fixed(self) -> bool:
        return "{" not in self.uri


@dataclass
class ResourceFamily:
    name: str
    resources: list[ResourceSpec] = field(default_factory=list)

    def resource(
        self, uri: str, *, name: str, mime_type: str, title: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        def mark(fn: F) -> F:
            self.resources.append(ResourceSpec(fn, uri, name, mime_type, title, description))
            return fn

        return mark


def _bound(fn: Callable[[Any], Awaitable[str]], server: MCPServer[Any]) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        return await fn(server)

    read.__name__, read.__doc__ = fn.__name__, fn.__doc__
    return read


def register(server: MCPServer[Any], specs: Iterable[ResourceSpec]) -> None:
    for spec in specs:
        fn = _bound(spec.fn, server) if spec.fixed else spec.fn
        server.resource(
            spec.uri, name=spec.name, title=spec.title, description=spec.description, mime_type=spec.mime_type
        )(resource_errors(fn))
