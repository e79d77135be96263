"""The OpenAI-compatible stub server (tests.fakes.openai_stub) as a pytest fixture.

One server per session in a background thread; each test gets it reset: mode ok, no script, no
recorded requests, no hung request left over.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_stub import OpenAIStub


@pytest.fixture(scope="session")
def _openai_stub_server() -> Iterator[OpenAIStub]:
    with OpenAIStub.running() as stub:
        yield stub


@pytest.fixture
def openai_stub(_openai_stub_server: OpenAIStub) -> Iterator[OpenAIStub]:
    """A running stub: point an OpenAI client at `openai_stub.base_url`."""
    _openai_stub_server.reset()
    yield _openai_stub_server
    _openai_stub_server.reset()
