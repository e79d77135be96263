"""Chat through the official openai SDK: OpenAI, Azure OpenAI and OpenAI-compatible servers.

Every SDK failure is translated here, at one boundary, into mcp_memory.errors with a message that
names the provider and never a key or a provider's error text (401 bodies echo part of the key).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import openai

from mcp_memory.config import LLMSettings
from mcp_memory.errors import BackendUnavailableError, ConfigError
from mcp_memory.llm.openai_client import deadline, label, make_client, translated_errors


class OpenAIChatModel:
    """A ChatModel on one AsyncOpenAI or AsyncAzureOpenAI client."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        label: str,
        deadline_seconds: float,
        use_max_completion_tokens: bool,
    ) -> None:
        self._client = client
        self._model = model
        self._label = label
        self._deadline = deadline_seconds
        self._use_max_completion_tokens = use_max_completion_tokens

    @property
    def name(self) -> str:
        return self._model

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: LLMSettings) -> AsyncIterator[OpenAIChatModel]:
        async with AsyncExitStack() as stack:
            name = label(settings, "llm", settings.model)
            client = await make_client(settings, "llm", name, stack)
            yield cls(
                client,
                model=settings.model,
                label=name,
                deadline_seconds=deadline(settings),
                # OpenAI and Azure reject max_tokens for reasoning models; compatible servers
                # (Ollama, older vLLM) only know max_tokens.
                use_max_completion_tokens=settings.provider == "azure" or settings.base_url is None,
            )

    async def complete(
        self, system: str, user: str, *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": user})
        options: dict[str, Any] = {}
        if json_mode:
            options["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            key = "max_completion_tokens" if self._use_max_completion_tokens else "max_tokens"
            options[key] = max_tokens
        with self._errors():
            with anyio.fail_after(self._deadline):
                completion = await self._client.chat.completions.create(
                    model=self._model,
                    messages=messages,  # type: ignore[arg-type]
                    **options,
                )
        return self._text_of(completion)

    def _text_of(self, completion: Any) -> str:
        # The SDK builds response models leniently, so a compatible server's odd answer shows up
        # as missing attributes rather than a validation error.
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"{self._label} answered without any choices; is it OpenAI-compatible?")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            reason = getattr(choices[0], "finish_reason", None)
            raise BackendUnavailableError(
                f"{self._label} returned an empty completion (finish_reason={reason})", backend="llm"
            )
        return content

    def _errors(self) -> AbstractContextManager[None]:
        return translated_errors(self._label, "llm", self._deadline, self._model)
