"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
tests/services/conformance.py) against the real `mcp-memory serve --transport http` process: every server
scenario that does not need the suite's own fixture tools, resources or prompts, one test each, so a
failing scenario fails CI with its name. The suite's client speaks the 2025-11-25 protocol.

A new version of the suite may add scenarios: test_every_server_scenario_is_run_or_excluded fails until
each is placed in SCENARIOS or EXCLUDED (with its reason), here and in docs/operations.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.conformance import ConformanceSuite
from tests.services.server_process import NetworkServer

# Scenarios that check the protocol itself, whatever tools, resources and prompts a server has.
SCENARIOS = (
    "server-initialize",
    "logging-set-level",  # logging/setLevel for 2025 clients (mcp/middleware/client_log.py)
    "ping",
    "completion-complete",  # asks about the suite's prompt; a well-formed (empty) answer is what it checks
    "tools-list",
    "resources-list",
    "resources-subscribe",  # any URI may be subscribed to; it checks the answer, not an update
    "resources-unsubscribe",
    "prompts-list",
    "server-sse-multiple-streams",  # concurrent POST streams of one session (tools/list)
    "dns-rebinding-protection",  # a foreign Host/Origin is refused on a loopback server
)

# Scenarios that call the suite's own fixtures, which a real server does not have (its reference
# "everything" server implements them). Run against mcp-memory they fail for that reason, or pass
# without testing anything (an unknown tool's error result reads as "text content").
_FIXTURE_TOOL = "calls the suite's fixture tool {} (not a tool of this server)"
EXCLUDED = {
    "tools-call-simple-text": _FIXTURE_TOOL.format("test_simple_text"),
    "tools-call-image": _FIXTURE_TOOL.format("test_image_content"),
    "tools-call-audio": _FIXTURE_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": _FIXTURE_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE_TOOL.format("test_tool_with_logging"),
    "tools-call-error": _FIXTURE_TOOL.format("test_error_handling"),
    "tools-call-with-progress": _FIXTURE_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": _FIXTURE_TOOL.format("test_sampling"),
    "tools-call-elicitation": _FIXTURE_TOOL.format("test_elicitation"),
    "elicitation-sep1034-defaults": _FIXTURE_TOOL.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _FIXTURE_TOOL.format("test_elicitation_sep1330_enums"),
    "json-schema-2020-12": _FIXTURE_TOOL.format("json_schema_2020_12_tool"),
    "server-sse-polling": _FIXTURE_TOOL.format("test_reconnection"),
    "resources-read-text": "reads the suite's fixture resource test://static-text",
    "resources-read-binary": "reads the suite's fixture resource test://static-binary",
    "resources-templates-read": "reads the suite's fixture template test://template/{id}/data",
    "prompts-get-simple": "gets the suite's fixture prompt test_simple_prompt",
    "prompts-get-with-args": "gets the suite's fixture prompt test_prompt_with_arguments",
    "prompts-get-embedded-resource": "gets the suite's fixture prompt test_prompt_with_embedded_resource",
    "prompts-get-with-image": "gets the suite's fixture prompt test_prompt_with_image",
}


@pytest.fixture(scope="module")
def suite() -> ConformanceSuite:
    return ConformanceSuite.installed()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("conformance")


def test_every_server_scenario_is_run_or_excluded(suite: ConformanceSuite, workdir: Path) -> None:
    listed = suite.server_scenarios(workdir)
    assert listed, "`conformance list --server` listed no scenarios"
    assert not set(SCENARIOS) & set(EXCLUDED)
    unplaced = sorted(set(listed) - set(SCENARIOS) - set(EXCLUDED))
    assert not unplaced, (
        f"new conformance scenarios: run them (SCENARIOS) or exclude them with a reason: {unplaced}"
    )
    gone = sorted((set(SCENARIOS) | set(EXCLUDED)) - set(listed))
    assert not gone, f"scenarios this version of the suite does not have: {gone}"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario(
    scenario: str, suite: ConformanceSuite, http_server: NetworkServer, workdir: Path
) -> None:
    problems = suite.run_server_scenario(scenario, http_server.url, workdir).problems()
    if problems is not None:
        pytest.fail(problems, pytrace=False)
