"""The OpenAI-compatible chat model against the stub server: real HTTP through the real SDK."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import numpy as np
import openai
import pytest

from mcp_memory.config import LLMSettings
from mcp_memory.errors import BackendUnavailableError, ConfigError, MemoryServerError
from mcp_memory.llm import open_chat_model
from mcp_memory.llm.chat import ChatModel
from mcp_memory.llm.hash_embedder import HashingEmbedder
from tests.fakes.openai_stub import OpenAIStub

pytestmark = pytest.mark.anyio

SECRET = "sk-test-do-not-leak-1234"


@pytest.fixture
def llm_settings(openai_stub: OpenAIStub) -> LLMSettings:
    return LLMSettings(
        provider="openai",
        base_url=openai_stub.base_url,
        api_key=SECRET,
        model="stub-chat",
        timeout_seconds=10.0,  # a test of a hung request sets its own short deadline
        max_retries=0,
    )


@pytest.fixture
async def chat(llm_settings: LLMSettings) -> AsyncIterator[ChatModel]:
    async with open_chat_model(llm_settings) as model:
        assert model is not None
        yield model


async def test_complete_sends_system_and_user_and_returns_the_reply(
    chat: ChatModel, openai_stub: OpenAIStub
) -> None:
    openai_stub.script("The user plans a trip to Oslo.")

    answer = await chat.complete("You summarize.", "user: I fly to Oslo {soon}", max_tokens=64)

    assert answer == "The user plans a trip to Oslo."
    assert chat.name == "stub-chat"
    [request] = openai_stub.requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "stub-chat"
    assert request.body["messages"] == [
        {"role": "system", "content": "You summarize."},
        {"role": "user", "content": "user: I fly to Oslo {soon}"},
    ]
    # A custom base_url means a compatible server, which knows max_tokens.
    assert request.body["max_tokens"] == 64
    assert "response_format" not in request.body


async def test_json_mode_asks_for_a_json_object(chat: ChatModel, openai_stub: OpenAIStub) -> None:
    answer = await chat.complete("", "hello", json_mode=True)

    [body] = openai_stub.chat_requests()
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["user"]  # no empty system message
    assert answer == '{"reply": "SUMMARY: hello"}'


@pytest.mark.parametrize(
    ("mode", "error", "words"),
    [
        ("timeout", BackendUnavailableError, "timed out"),
        ("500", BackendUnavailableError, "HTTP 500"),
        ("429", BackendUnavailableError, "HTTP 429"),
        ("401", ConfigError, "credentials"),
        ("404", ConfigError, "no model or deployment named 'stub-chat'"),
        ("malformed", ConfigError, "not valid JSON"),
        ("no_choices", ConfigError, "without any choices"),
        ("empty", BackendUnavailableError, "empty completion"),
    ],
)
async def test_failures_map_to_errors_that_name_the_provider_and_hide_the_key(
    llm_settings: LLMSettings, openai_stub: OpenAIStub, mode: Any, error: type[MemoryServerError], words: str
) -> None:
    openai_stub.set_mode(mode)
    # Only the hung request should time out: on a busy machine a 0.5 s deadline was once too short for
    # the connection to the stub itself (httpcore ConnectTimeout in a 404 case).
    if mode == "timeout":
        llm_settings = llm_settings.model_copy(update={"timeout_seconds": 0.5})

    async with open_chat_model(llm_settings) as chat:
        assert chat is not None
        with pytest.raises(error) as caught:
            await chat.complete("s", "u")

    message = str(caught.value)
    assert words in message
    assert message.startswith(
        f"the LLM provider (OpenAI-compatible at {openai_stub.base_url.removesuffix('/v1')}"
    )
    assert SECRET not in message and "sk-***" not in message


async def test_max_retries_from_settings_retries_a_server_error(
    llm_settings: LLMSettings, openai_stub: OpenAIStub
) -> None:
    openai_stub.set_mode("500", times=1)
    openai_stub.script("second time lucky")

    async with open_chat_model(llm_settings.model_copy(update={"max_retries": 1})) as model:
        assert model is not None
        answer = await model.complete("s", "u")

    assert answer == "second time lucky"
    assert len(openai_stub.chat_requests()) == 2


async def test_unreachable_server_is_backend_unavailable(llm_settings: LLMSettings) -> None:
    with anyio.fail_after(30):
        # Port 9 (discard) on localhost: nothing listens, the connection is refused.
        settings = llm_settings.model_copy(update={"base_url": "http://user:pw@127.0.0.1:9/v1?token=t"})
        async with open_chat_model(settings) as model:
            assert model is not None
            with pytest.raises(BackendUnavailableError, match="unreachable") as caught:
                await model.complete("s", "u")

    assert "pw" not in str(caught.value) and "token" not in str(caught.value)
    assert "http://127.0.0.1:9" in str(caught.value)


async def test_provider_none_opens_no_model() -> None:
    async with open_chat_model(LLMSettings(provider="none")) as model:
        assert model is None


async def test_azure_with_a_key_calls_the_deployment_path(openai_stub: OpenAIStub) -> None:
    settings = LLMSettings(
        provider="azure",
        azure_endpoint=openai_stub.base_url.removesuffix("/v1"),
        api_key=SECRET,
        model="my-deployment",
        api_version="2024-10-21",
        max_retries=0,
    )
    openai_stub.script("from azure")

    async with open_chat_model(settings) as model:
        assert model is not None
        answer = await model.complete("s", "u", max_tokens=10)

    assert answer == "from azure"
    [request] = openai_stub.requests
    assert request.path == "/openai/deployments/my-deployment/chat/completions"
    assert request.headers["api-key"] == SECRET
    assert request.body["max_completion_tokens"] == 10


async def test_azure_without_an_endpoint_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="azure_endpoint"):
        async with open_chat_model(LLMSettings(provider="azure")):
            pass


async def test_stub_takes_orders_over_http(openai_stub: OpenAIStub) -> None:
    root = openai_stub.base_url.removesuffix("/v1")
    async with httpx2.AsyncClient(base_url=root, timeout=10) as client:
        assert (await client.post("/_stub/mode", json={"mode": "500", "times": 1})).status_code == 200
        assert (await client.post("/_stub/mode", json={"mode": "teapot"})).status_code == 400
        assert (await client.post("/v1/chat/completions", json={"messages": []})).status_code == 500
        await client.post("/_stub/script", json={"replies": ["scripted"]})
        reply = await client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
        )
        recorded = (await client.get("/_stub/requests")).json()

    assert reply.json()["choices"][0]["message"]["content"] == "scripted"
    assert [r["path"] for r in recorded] == ["/v1/chat/completions", "/v1/chat/completions"]


async def test_stub_embeddings_are_the_hashing_embedders_vectors(openai_stub: OpenAIStub) -> None:
    async with openai.AsyncOpenAI(api_key="k", base_url=openai_stub.base_url, max_retries=0) as client:
        default = await client.embeddings.create(model="text-embedding-3-small", input=["budget is 5k", "x"])
        small = await client.embeddings.create(model="m", input="budget is 5k", dimensions=8)
        listed = await client.models.list()

    assert [len(d.embedding) for d in default.data] == [1536, 1536]
    expected = HashingEmbedder(8).embed_now(["budget is 5k"])[0]
    assert np.allclose(small.data[0].embedding, expected, atol=1e-6)
    assert {m.id for m in listed.data} == {"stub-chat", "stub-embed"}


async def test_stub_runs_as_a_process_and_stops_with_a_request_hanging() -> None:
    command = [sys.executable, "-m", "tests.fakes.openai_stub", "--port", "0"]
    async with await anyio.open_process(command, stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        with anyio.fail_after(30):
            line = b""
            async for chunk in process.stdout:
                line += chunk
                if b"\n" in line:
                    break
        base_url = line.decode().strip().removeprefix("listening on ")
        settings = LLMSettings(provider="openai", base_url=base_url, timeout_seconds=0.5, max_retries=0)
        async with httpx2.AsyncClient(timeout=10) as client:
            await client.post(base_url.removesuffix("/v1") + "/_stub/mode", json={"mode": "timeout"})
        async with open_chat_model(settings) as model:
            assert model is not None
            with pytest.raises(BackendUnavailableError, match="timed out"):
                await model.complete("s", "u")
        process.terminate()
        with anyio.fail_after(30):
            code = await process.wait()

    assert base_url.startswith("http://127.0.0.1:")
    assert code == -signal.SIGTERM  # uvicorn re-raises the signal after its graceful shutdown
