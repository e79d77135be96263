"""A chat model whose calls and tokens are counted in the server's metrics (observability/metrics.py).

Tokens are counted with the server's own tokenizer on both sides, so the configured model and the
client's (MCP sampling, which reports no usage) are measured alike.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_memory.errors import MemoryServerError
from mcp_memory.llm.chat import ChatModel
from mcp_memory.observability.metrics import Metrics

SAMPLING = "sampling"


def provider_of(model: ChatModel) -> str:
    """llm for the configured model, sampling for the client's."""
    return SAMPLING if model.name == SAMPLING else "llm"


class MeteredChat:
    """The same ChatModel, each call counted by provider and purpose (summary, extraction, ...)."""

    def __init__(
        self, chat: ChatModel, metrics: Metrics, count_tokens: Callable[[str], int], *, purpose: str
    ) -> None:
        self._chat = chat
        self._metrics = metrics
        self._count = count_tokens
        self._purpose = purpose
        self._provider = provider_of(chat)

    @property
    def name(self) -> str:
        return self._chat.name

    async def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        sent = self._count(system) + self._count(user)
        try:
            answer = await self._chat.complete(system, user, json_mode=json_mode, max_tokens=max_tokens)
        except MemoryServerError:
            self._metrics.model_called(self._provider, self._purpose, ok=False, prompt_tokens=sent)
            raise
        self._metrics.model_called(
            self._provider, self._purpose, ok=True, prompt_tokens=sent, answer_tokens=self._count(answer)
        )
        return answer
