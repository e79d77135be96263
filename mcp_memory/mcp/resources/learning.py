"""What learning knows and does, as resources: the user profile and the learning status."""

from __future__ import annotations

from mcp_memory.mcp.app import MemoryServer
from mcp_memory.mcp.resources.registry import ResourceFamily
from mcp_memory.mcp.tools.dependencies import learning_of, user_of

family = ResourceFamily("learning")


@family.resource("memory://profile", name="profile", mime_type="text/plain")
async def profile(server: MemoryServer) -> str:
    """What is known about the user across all threads (empty until facts are learned)."""
    found = learning_of(server)
    user = user_of(server)
    current = await found.profiles.current(user)
    if current is None:  # never built yet: the offline profile costs no model call
        current = await found.profiles.rebuild_offline(user)
    return current.content if current else ""


@family.resource("memory://learning/status", name="learning_status", mime_type="application/json")
async def learning_status(server: MemoryServer) -> str:
    """Your learning as this server sees it: which model learns (llm, sampling or none), the hourly
    LLM budget (limit, used, remaining, resets_at), which threads' turns wait (how many) and why,
    the last extraction and reconciliation, and the last background failures with their reason."""
    return (await learning_of(server).status_of(user_of(server))).model_dump_json()
