"""Model providers: embeddings (embedder.py), chat (chat.py), MCP sampling, the token counter and the
prompt templates. The factories below open the configured provider; each provider is imported only
when chosen, so the local model's onnxruntime and the openai SDK load only when used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from mcp_memory.config import EmbeddingSettings, LLMSettings
from mcp_memory.llm.chat import ChatModel
from mcp_memory.llm.embedder import Embedder


@asynccontextmanager
async def open_embedder(settings: EmbeddingSettings) -> AsyncIterator[Embedder]:
    """The configured embedder for the server's lifetime, closed after it."""
    embedder: Embedder
    match settings.provider:
        case "local":
            from mcp_memory.llm.onnx_minilm import LocalMiniLMEmbedder

            # Loading hashes and maps the model file: keep it off the event loop.
            embedder = await anyio.to_thread.run_sync(LocalMiniLMEmbedder.load, settings)
        case "hash":
            from mcp_memory.llm.hash_embedder import HashingEmbedder

            embedder = HashingEmbedder(settings.dimension or HashingEmbedder.DEFAULT_DIMENSION)
        case "openai" | "azure":
            from mcp_memory.llm.openai_embedder import OpenAIEmbedder

            embedder = await OpenAIEmbedder.open(settings)
    try:
        yield embedder
    finally:
        await embedder.aclose()


@asynccontextmanager
async def open_chat_model(settings: LLMSettings) -> AsyncIterator[ChatModel | None]:
    """The configured chat model for the server's lifetime; None when provider is "none"."""
    match settings.provider:
        case "none":
            yield None
        case "openai" | "azure":
            # The SDK loads only when an LLM is configured.
            from mcp_memory.llm.openai_chat import OpenAIChatModel

            async with OpenAIChatModel.open(settings) as model:
                yield model
