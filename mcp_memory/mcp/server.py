"""`build_server(settings)`: the MCP server, assembled.

The tools (mcp/tools/, one module per family), resources (mcp/resources/) and the recall prompt
(mcp/prompts.py) are module-level functions; this module only puts them together with the request
middleware (mcp/middleware/) and the change notifications. Tool names, parameters and result fields are
a public contract; which tools a client sees is the `tools` profile (MCP_MEMORY_TOOLS), plus the knowledge
graph's when MEMORY_FILE_PATH is set and the profile is not (mcp/tools/__init__.py `listed_tools`).
"""

from __future__ import annotations

import logging

from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated

from mcp_memory.config import Settings
from mcp_memory.errors import MemoryServerError
from mcp_memory.llm.sampling import SamplingSessions
from mcp_memory.mcp.app import MemoryServer, instructions_for
from mcp_memory.mcp.completions import register_completions
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.mcp.middleware.audit_actor import AuditActor
from mcp_memory.mcp.middleware.bounded import BoundedErrors
from mcp_memory.mcp.middleware.rate_limit import RateLimit
from mcp_memory.mcp.middleware.request_log import RequestLog
from mcp_memory.mcp.middleware.scopes import ScopeGuard
from mcp_memory.mcp.middleware.session_instructions import SessionInstructions
from mcp_memory.mcp.prompts import register_prompts
from mcp_memory.mcp.resources import register_resources
from mcp_memory.mcp.subscriptions import ReplicaBus
from mcp_memory.mcp.tools import graph_for_reference, register_tools
from mcp_memory.mcp.uris import graph_change_uri, thread_uri
from mcp_memory.models import GRAPH_CHANGE, space_of
from mcp_memory.security.principals import current_principal
from mcp_memory.security.spaces import SPACES_FILE

__all__ = ["MemoryServer", "build_server", "thread_uri"]

log = logging.getLogger(__name__)


def build_server(settings: Settings) -> MemoryServer:
    """The MCP server for these settings; its backends open when the first session starts."""
    SPACES_FILE.spaces(settings.security)  # a bad spaces file stops the start, naming the problem
    bus = ReplicaBus(settings)

    async def publish_change(owner: str, thread_id: str | None) -> None:
        # Thread URIs do not name their owner, so every event carries it: only the owner's sessions hear
        # (a space's: its members' sessions).
        if thread_id == GRAPH_CHANGE:
            await bus.publish_for(owner, ResourceUpdated(uri=graph_change_uri(owner)))
        elif thread_id is None:
            await bus.publish_for(owner, ResourcesListChanged())
        else:
            uri = thread_uri(thread_id, space_of(owner))
            await bus.publish_for(owner, ResourceUpdated(uri=uri))
            await bus.publish_for(owner, ResourceUpdated(uri=f"{uri}/summary"))

    host = ServiceHost(settings, on_change=publish_change, bus=bus)
    server = MemoryServer(settings, host, bus)
    install_chain(server)
    register_tools(server, settings)
    if graph_for_reference(settings):
        log.info(
            "tools: the %s profile plus the knowledge graph's nine, because MEMORY_FILE_PATH is set (the "
            "reference memory server's setting) and MCP_MEMORY_TOOLS is not",
            settings.tools,
        )
    register_resources(server, graph_resources=settings.graph.tools)
    register_prompts(server)
    register_completions(server)
    return server


def install_chain(server: MemoryServer) -> None:
    """The request middleware, outermost first (mcp/middleware/__init__.py says why in this order)."""
    settings, host = server.config, server.host

    def user_of(_: object) -> str | None:
        try:
            return current_principal(settings).user_id
        except MemoryServerError:  # a credential naming no user: nothing to sample for
            return None

    sessions = SamplingSessions(
        user_of, timeout_seconds=settings.llm.timeout_seconds, max_tokens=settings.learning.max_answer_tokens
    )
    host.sampling = sessions  # background learning reaches a client's model through it
    server.middleware.extend(
        [
            BoundedErrors(),
            server.call_metrics,
            RequestLog(settings),
            server.client_log,
            ScopeGuard(settings, server.tool_scopes),
            AuditActor(settings, lambda: host.service.notice_memberships()),
            RateLimit(settings, shared=lambda: host.request_buckets),
            sessions,
            SessionInstructions(lambda captured: instructions_for(captured=captured)),
        ]
    )
