"""A model for benches that need one without the network: the local OpenAI-compatible stub the tests use
(tests/fakes/openai_stub.py), as the service's LLM settings.

    with OpenAIStub.running() as stub:
        settings = Settings(..., llm=llm.stub_settings(stub.base_url))
"""

from __future__ import annotations

from pydantic import SecretStr

from mcp_memory.config import LLMSettings


def stub_settings(base_url: str) -> LLMSettings:
    """LLM settings that send every chat to the stub at base_url (no retries: a failure shows at once)."""
    return LLMSettings(
        provider="openai", model="stub-chat", base_url=base_url, api_key=SecretStr("sk-bench"), max_retries=0
    )
