"""The official MCP conformance suite (@modelcontextprotocol/conformance, npm), pinned to one version:
installed once into <repo>/.cache/conformance-<version> (or $CONFORMANCE_DIR) and run as its CLI, one
server scenario per call, against a server URL.

Node.js missing (or older than 20.6, which lacks the loader hooks the Node 20 shim needs) fails the test
with the reason, as every Node service of the suite does (node_service.py): never a skip.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.services.node_service import cache_dir, node, npm_install

VERSION = "0.1.16"
PACKAGE = f"@modelcontextprotocol/conformance@{VERSION}"
RUN_SECONDS = 120.0
# The CLI imports fs.globSync (Node 22+); on Node 20 this preload gives it a stub (see the file).
GLOBSYNC_SHIM = Path(__file__).with_name("node20_globsync.mjs")
MIN_NODE = (20, 6)  # module.register, which the shim uses
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the CLI colours its report whatever NO_COLOR says


def _node() -> str:
    found_node = node("the MCP conformance suite")
    found = subprocess.run([found_node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    match = re.match(r"v(\d+)\.(\d+)", found.stdout.strip())
    if match is None or (int(match[1]), int(match[2])) < MIN_NODE:
        pytest.fail(
            f"the MCP conformance suite needs Node.js 20.6 or newer, not {found.stdout.strip() or '(unknown)'}"
        )
    return found_node


@dataclass(frozen=True)
class Check:
    id: str
    status: str  # SUCCESS, FAILURE, WARNING, INFO
    description: str
    error: str | None

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Check:
        return cls(raw["id"], raw["status"], raw.get("description", ""), raw.get("errorMessage"))


@dataclass(frozen=True)
class ScenarioRun:
    scenario: str
    exit_code: int
    checks: list[Check]
    output: str

    def problems(self) -> str | None:
        """Why the scenario fails (its failed checks, with the CLI's report), or None when it passes."""
        failed = [c for c in self.checks if c.status == "FAILURE"]
        if not failed and self.exit_code == 0 and any(c.status == "SUCCESS" for c in self.checks):
            return None
        lines = [f"  {c.status:<8} {c.id}: {c.error or c.description}" for c in self.checks]
        head = f"conformance scenario {self.scenario} failed (CLI exit code {self.exit_code}); its checks:"
        return "\n".join([head, *lines, "the CLI's output ends:", self.output])


class ConformanceSuite:
    """The installed CLI."""

    def __init__(self, node: str, entry: Path) -> None:
        self.node = node
        self.entry = entry

    @classmethod
    def installed(cls) -> ConformanceSuite:
        node = _node()
        override = os.environ.get("CONFORMANCE_DIR")
        install = Path(override) if override else cache_dir(f"conformance-{VERSION}")
        entry = install / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
        return cls(node, npm_install(PACKAGE, install, entry))

    def _run(self, *arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        command = [self.node, "--import", GLOBSYNC_SHIM.as_uri(), str(self.entry), *arguments]
        try:
            return subprocess.run(
                command, capture_output=True, text=True, timeout=RUN_SECONDS, cwd=cwd, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"`conformance {' '.join(arguments)}` took longer than {RUN_SECONDS:g}s")

    def server_scenarios(self, workdir: Path) -> list[str]:
        """The server scenarios this version has, from `conformance list --server`."""
        listed = self._run("list", "--server", cwd=workdir)
        if listed.returncode != 0:
            pytest.fail(f"`conformance list --server` failed:\n{(listed.stdout + listed.stderr)[-2000:]}")
        return re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE)

    def run_server_scenario(self, scenario: str, url: str, workdir: Path) -> ScenarioRun:
        """`conformance server --url URL --scenario NAME`; its checks from the checks.json it writes."""
        out = workdir / f"results-{scenario}"
        ran = self._run("server", "--url", url, "--scenario", scenario, "--output-dir", str(out), cwd=workdir)
        output = _ANSI.sub("", ran.stdout + ran.stderr)[-4000:]
        written = sorted(out.glob("*/checks.json"))
        if len(written) != 1:
            pytest.fail(
                f"conformance scenario {scenario} wrote no checks.json (exit code {ran.returncode}):\n{output}"
            )
        checks = [Check.of(raw) for raw in json.loads(written[0].read_text())]
        return ScenarioRun(scenario, ran.returncode, checks, output)
