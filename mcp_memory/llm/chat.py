"""The chat model that writes summaries: one small protocol, chosen by settings.

Implementations: an OpenAI-compatible API (OpenAI, Azure OpenAI, Ollama, vLLM) and, later, MCP
sampling (the connected client's own model). Each maps its failures to mcp_memory.errors.
`mcp_memory.llm.open_chat_model` opens the configured one.
"""

from __future__ import annotations

import re
from typing import Protocol

_FENCE_LINE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*(\n|$)", re.MULTILINE)
_LABEL = re.compile(r"^(updated\s+)?summary\s*:\s*", re.IGNORECASE)


class ChatModel(Protocol):
    @property
    def name(self) -> str:
        """The model's name as the user configured it, e.g. "gpt-4o-mini"."""
        ...

    async def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        """One completion: a system and a user message in, the answer's text out.

        Raises BackendUnavailableError (unreachable, timeout, rate limit, server error),
        ConfigError (bad credentials, unknown model) or InvalidInputError (request refused);
        never returns an empty string.
        """
        ...


def clean_answer(text: str) -> str:
    """The summary inside a model's answer: no code fences, no "Summary:" label, no edge spaces."""
    text = _FENCE_LINE.sub("", text).strip()
    return _LABEL.sub("", text).strip()
