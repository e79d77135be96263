"""A production backend configured without its extra installed stops `mcp-memory serve` at start with
one line naming the pip command, and no traceback.

The real console script runs with a `sitecustomize.py` on PYTHONPATH that blocks the extra's package
(`sys.modules[name] = None` makes `import name` raise ModuleNotFoundError), as on a machine where
`pip install mcp-memory` was run without `[redis]` or `[cosmos]`. No Redis or Cosmos DB is needed:
the import fails before any connection is tried.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.services.server_process import mcp_memory_command, server_env

DEADLINE_SECONDS = 60.0


def serve_without(
    tmp_path: Path, blocked: list[str], settings: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir()
    lines = ["import sys", *(f"sys.modules[{name!r}] = None" for name in blocked)]
    (site / "sitecustomize.py").write_text("\n".join(lines) + "\n")
    env = server_env(tmp_path / "data", settings) | {"PYTHONPATH": str(site)}
    return subprocess.run(
        [mcp_memory_command(), "serve"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]


def test_redis_without_the_redis_extra(tmp_path: Path) -> None:
    result = serve_without(tmp_path, ["redis"], {"MCP_MEMORY_WORKING__REDIS_URL": "redis://127.0.0.1:1/0"})
    assert last_line(result) == (
        "mcp-memory: working memory on Redis needs the redis extra: pip install 'mcp-memory[redis]'"
    )


@pytest.mark.parametrize("blocked", [["azure.cosmos"], ["aiohttp"], ["azure"]])
def test_cosmos_without_the_cosmos_extra(tmp_path: Path, blocked: list[str]) -> None:
    endpoint = {"MCP_MEMORY_LONG_TERM__COSMOS__ENDPOINT": "https://example.documents.azure.com:443/"}
    result = serve_without(tmp_path, blocked, endpoint)
    assert last_line(result) == (
        "mcp-memory: long-term memory on Azure Cosmos DB needs the cosmos extra: "
        "pip install 'mcp-memory[cosmos]'"
    )
