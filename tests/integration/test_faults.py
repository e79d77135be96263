"""Fault injection on the whole service: Redis killed mid-run and restarted empty, the local Cosmos-protocol
server stopped and resumed, the LLM hanging or answering 429/500. Every acknowledged turn survives, errors while a backend is down name it, and the
service resumes by itself (the same open service, nothing reopened by hand).

Figures (turns acknowledged, refused while down, recovered) are printed: run with -s to see them.
"""

from __future__ import annotations

import os
import signal

import pytest
from pydantic import SecretStr

from mcp_memory.config import LongTermSettings, Settings
from mcp_memory.errors import BackendUnavailableError
from mcp_memory.service.assembly import open_service
from tests.contract.conftest_long_term import local_cosmos_settings
from tests.fakes.openai_stub import OpenAIStub
from tests.services.cosmos_server import CosmosServer
from tests.services.redis_server import RedisServer, redis_settings

pytestmark = pytest.mark.anyio
USER = "fault"


async def test_redis_killed_mid_run_and_restarted_loses_no_acknowledged_turn(
    fast_settings: Settings, private_redis: RedisServer
) -> None:
    settings = fast_settings.model_copy(
        update={"working": redis_settings(private_redis.url, timeout_seconds=1.0, retries=1)}
    )
    acknowledged: list[str] = []
    refused: list[str] = []
    async with open_service(settings) as service:

        async def write(n: int) -> None:
            content = f"Turn {n}: the measured value is {n * 3} units."
            try:
                out = await service.add_turn(USER, "run", "user", content, None, 100_000)
            except BackendUnavailableError as e:
                assert "Redis" in str(e) and "retry later" in str(e), str(e)
                refused.append(content)
                return
            acknowledged.append(out.turn.id)

        for n in range(20):
            await write(n)
        private_redis.stop()  # killed mid-run: every key is gone with it (no persistence)
        for n in range(20, 25):
            await write(n)
        with pytest.raises(BackendUnavailableError, match="Redis"):
            await service.get_working_memory(USER, "run")
        private_redis.start()  # same port, empty
        for n in range(25, 45):
            await write(n)

        assert len(refused) == 5 and len(acknowledged) == 40
        working = await service.get_working_memory(USER, "run")
        in_working = {m.id for m in working.messages}
        stored = {m.id for m in await service.stores.long_term.memories_of(USER)}
        assert set(acknowledged) <= stored, "an acknowledged turn was lost"
        # Working memory was rebuilt from long term after the restart: the newest turns are all there.
        assert set(acknowledged[-20:]) <= in_working
        print(f"\nredis fault: acknowledged={len(acknowledged)} refused_while_down={len(refused)} lost=0")


@pytest.mark.parametrize("mode", ["timeout", "429", "500"])
async def test_llm_hanging_or_failing_never_loses_a_turn_and_llm_summaries_resume(
    fast_settings: Settings, openai_stub: OpenAIStub, mode: str
) -> None:
    llm = fast_settings.llm.model_copy(
        update={
            "provider": "openai",
            "base_url": openai_stub.base_url,
            "api_key": SecretStr("test-key"),
            # Only the hung requests need a short timeout; a failing stub answers at once, late on a
            # loaded machine, and so does the stub that recovered.
            "timeout_seconds": 1.0 if mode == "timeout" else 10.0,
            "max_retries": 0,
        }
    )
    settings = fast_settings.model_copy(update={"llm": llm})
    openai_stub.set_mode(mode)  # type: ignore[arg-type]
    acknowledged: list[str] = []
    async with open_service(settings) as service:
        for n in range(25):  # about 19 tokens each: past the 280-token threshold of a 400 window
            content = f"Point {n}: the river crossing {n} needs {n * 7} metres of rope and a guide."
            out = await service.add_turn(USER, "llm", "user", content, None, 400)
            acknowledged.append(out.turn.id)
        during = await service.get_working_memory(USER, "llm")
        assert during.summary, "summaries continue offline while the LLM is down"
        assert openai_stub.chat_requests(), "the LLM was tried"
        openai_stub.release_hung()

        openai_stub.set_mode("ok")
        openai_stub.reply_with(lambda body: "RECOVERED: the rope and guide plan.")
        out = await service.summarize_thread(USER, "llm", keep_recent=1)
        assert out.summary.startswith("RECOVERED"), "LLM summaries resume by themselves"
        stored = {m.id for m in await service.stores.long_term.memories_of(USER)}
        assert set(acknowledged) <= stored
        print(f"\nllm fault {mode}: acknowledged={len(acknowledged)} lost=0 resumed=yes")


async def test_cosmos_server_stopped_and_resumed_loses_no_acknowledged_turn(
    fast_settings: Settings, private_cosmos_server: CosmosServer
) -> None:
    """The local Cosmos-protocol server keeps its data in memory, so a restart would erase it; the outage
    is a stop (SIGSTOP: connections hang, like a partitioned or overloaded account) and a resume."""
    process = private_cosmos_server.process
    assert process is not None
    long_term = LongTermSettings(
        backend="cosmos", cosmos=local_cosmos_settings(private_cosmos_server, timeout_seconds=2.0)
    )
    acknowledged: list[str] = []
    refused = 0
    async with open_service(fast_settings.model_copy(update={"long_term": long_term})) as service:
        for n in range(10):
            acknowledged.append(
                (await service.add_turn(USER, "run", "user", f"before {n}", None, None)).turn.id
            )
        os.kill(process.pid, signal.SIGSTOP)
        try:
            for n in range(3):
                with pytest.raises(BackendUnavailableError, match="Cosmos") as caught:
                    await service.add_turn(USER, "run", "user", f"during {n}", None, None)
                assert "Traceback" not in str(caught.value)
                refused += 1
            # Working memory (SQLite here) still answers while long term is down.
            working = await service.get_working_memory(USER, "run")
            assert [m.id for m in working.messages] == acknowledged
        finally:
            os.kill(process.pid, signal.SIGCONT)
        for n in range(10):
            acknowledged.append(
                (await service.add_turn(USER, "run", "user", f"after {n}", None, None)).turn.id
            )
        for turn_id in acknowledged:
            assert (await service.get_memory(USER, turn_id)).type == "turn", "an acknowledged turn was lost"
        working = await service.get_working_memory(USER, "run")
        assert [m.id for m in working.messages] == acknowledged, "refused turns never reached working memory"
        print(f"\ncosmos fault: acknowledged={len(acknowledged)} refused_while_down={refused} lost=0")
