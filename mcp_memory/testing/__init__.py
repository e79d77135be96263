"""Fakes shipped with the package for tests and demos: real components, deterministic answers.

`OpenAIStub` (mcp_memory.testing.openai_stub) is an OpenAI-compatible HTTP server; it is imported
on first use so `import mcp_memory.testing` does not load uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .openai_stub import OpenAIStub

__all__ = ["OpenAIStub"]


def __getattr__(name: str) -> Any:
    if name == "OpenAIStub":
        from .openai_stub import OpenAIStub

        return OpenAIStub
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
