"""Shared fixtures. Each real service the suite needs has its own plugin module in tests/services/:
it starts the service (or uses the one named by an environment variable) and fails clearly when it
cannot. No test skips for a missing local service; only live-Azure tests skip, and say so."""

from hypothesis import settings

# A property test asserts what holds, not how fast each example runs: Hypothesis's default deadline
# (200 ms an example) fails an example that a loaded machine happens to stall.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

pytest_plugins = [
    "tests.services.common",
    "tests.services.mcp_client",
    "tests.services.memory_service",
    "tests.services.openai_stub",
    "tests.services.redis_server",
    "tests.services.redis_cluster",
    "tests.services.cosmos_server",
    "tests.services.oidc_server",
    "tests.contract.conftest_long_term",
    "tests.services.server_process",
    "tests.services.browser",
]
