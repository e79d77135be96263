"""Product errors as the MCP SDK reports them, shared by the modules that register resources."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from mcp_memory.errors import MemoryServerError, NotFoundError
from mcp_memory.observability.metrics import note_error


@contextmanager
def resource_errors() -> Iterator[None]:
    """A missing thing is the resource's "not found"; any other product error a resource error."""
    try:
        yield
    except NotFoundError as e:
        note_error(e)
        raise ResourceNotFoundError(str(e)) from e
    except MemoryServerError as e:
        note_error(e)
        raise ResourceError(str(e)) from e
