"""Chat through the official openai SDK: OpenAI, Azure OpenAI and OpenAI-compatible servers.

Every SDK failure is translated here, at one boundary, into mcp_memory.errors with a message that
names the provider and never a key or a provider's error text (401 bodies echo part of the key).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import openai

from ..config import LLMSettings
from ..errors import BackendUnavailableError, ConfigError, InvalidInputError

_AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
# Local servers (Ollama, vLLM) ignore the key, but the SDK insists on one.
_UNUSED_KEY = "unused"


def _where(url: str | None) -> str:
    """scheme://host:port only: a URL may carry credentials or tokens in its path or query."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f" at {parts.scheme}://{host}{port}" if host else ""


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
            client = await _make_client(settings, stack)
            stack.push_async_callback(client.close)
            # The SDK's timeout bounds each attempt (and each read); this bounds the whole call,
            # retries and their back-off included, with a margin so the SDK's own timeout fires first.
            deadline = (
                settings.timeout_seconds * (settings.max_retries + 1) + 10.0 * settings.max_retries + 1.0
            )
            yield cls(
                client,
                model=settings.model,
                label=_label(settings),
                deadline_seconds=deadline,
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
                f"{self._label} returned an empty completion (finish_reason={reason})"
            )
        return content

    @contextmanager
    def _errors(self) -> Iterator[None]:
        label = self._label
        try:
            yield
        except TimeoutError as e:  # our overall deadline (anyio.fail_after)
            raise BackendUnavailableError(f"{label} did not answer within {self._deadline:g}s") from e
        except openai.APITimeoutError as e:
            raise BackendUnavailableError(f"{label} timed out") from e
        except openai.APIConnectionError as e:
            raise BackendUnavailableError(f"{label} is unreachable") from e
        except openai.RateLimitError as e:
            raise BackendUnavailableError(f"{label} is rate limiting requests (HTTP 429)") from e
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise ConfigError(
                f"{label} refused the credentials (HTTP {e.status_code}); check the LLM API key "
                "or the Azure identity's role on the resource"
            ) from e
        except openai.NotFoundError as e:
            raise ConfigError(
                f"{label} has no model or deployment named {self._model!r} (HTTP 404), "
                "or the base URL / API version is wrong"
            ) from e
        except openai.APIStatusError as e:
            if e.status_code >= 500 or e.status_code in (408, 409):
                raise BackendUnavailableError(f"{label} failed with HTTP {e.status_code}") from e
            code = f", code {e.code}" if isinstance(getattr(e, "code", None), str) else ""
            raise InvalidInputError(f"{label} refused the request (HTTP {e.status_code}{code})") from e
        except openai.APIResponseValidationError as e:
            raise ConfigError(f"{label} sent a response that is not OpenAI-compatible") from e
        except json.JSONDecodeError as e:  # the SDK parses a 200 body with json() unguarded
            raise ConfigError(f"{label} sent a body that is not valid JSON; is it OpenAI-compatible?") from e
        except openai.OpenAIError as e:
            raise BackendUnavailableError(f"{label} failed: {type(e).__name__}") from e


def _label(settings: LLMSettings) -> str:
    if settings.provider == "azure":
        return (
            f"the LLM provider (Azure OpenAI{_where(settings.azure_endpoint)}, deployment {settings.model})"
        )
    where = _where(settings.base_url) or " at api.openai.com"
    return f"the LLM provider (OpenAI-compatible{where}, model {settings.model})"


async def _make_client(settings: LLMSettings, stack: AsyncExitStack) -> openai.AsyncOpenAI:
    key = settings.api_key.get_secret_value() if settings.api_key else None
    common: dict[str, Any] = {"timeout": settings.timeout_seconds, "max_retries": settings.max_retries}
    try:
        if settings.provider == "azure":
            if not settings.azure_endpoint:
                raise ConfigError("llm.provider is azure but llm.azure_endpoint is not set")
            if key is None:
                return openai.AsyncAzureOpenAI(
                    azure_endpoint=settings.azure_endpoint,
                    api_version=settings.api_version,
                    azure_ad_token_provider=await _entra_token_provider(stack),
                    **common,
                )
            return openai.AsyncAzureOpenAI(
                azure_endpoint=settings.azure_endpoint,
                api_version=settings.api_version,
                api_key=key,
                **common,
            )
        if key is None and settings.base_url is not None:
            key = _UNUSED_KEY
        # key None and no base_url: the SDK reads OPENAI_API_KEY, as users of OpenAI expect.
        return openai.AsyncOpenAI(api_key=key, base_url=settings.base_url, **common)
    except openai.OpenAIError as e:  # raised at construction when no credential is found
        raise ConfigError(
            f"{_label(settings)} has no API key: set MCP_MEMORY_LLM__API_KEY (or OPENAI_API_KEY)"
        ) from e


async def _entra_token_provider(stack: AsyncExitStack) -> Callable[[], Awaitable[str]]:
    try:
        from azure.identity.aio import DefaultAzureCredential, get_bearer_token_provider
    except ImportError as e:
        raise ConfigError(
            "Azure OpenAI without an API key uses Microsoft Entra ID, which needs the azure-identity "
            "package: pip install azure-identity, or set MCP_MEMORY_LLM__API_KEY"
        ) from e
    credential = DefaultAzureCredential()
    stack.push_async_callback(credential.close)
    provider: Callable[[], Awaitable[str]] = get_bearer_token_provider(credential, _AZURE_SCOPE)
    return provider
