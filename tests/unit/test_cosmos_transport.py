"""The Cosmos DB client's HTTP transport reads the environment only when it names a proxy: otherwise
aiohttp would look up ~/.netrc and the proxy variables on a worker thread for every request."""

from __future__ import annotations

import pytest

from mcp_memory.storage.cosmos.setup import make_transport

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def test_without_a_proxy_the_transport_leaves_the_environment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    transport = make_transport()
    assert transport is not None
    assert transport._use_env_settings is False


def test_a_proxy_in_the_environment_keeps_the_sdk_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert make_transport() is None  # the SDK's own, which honours the proxy and NO_PROXY
