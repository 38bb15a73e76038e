"""The real `mcp-rosetta` between real SDK peers, over real pipes, in every pairing.

Must not fake either side: clients and servers are the official Python SDKs (mcp 1.x for the
legacy era, mcp 2.x for the modern one), each in its own virtual environment. The checks are
the same ones the direct (bridge-less) tests pass, so the bridge must be invisible.
"""

from __future__ import annotations

import json
from typing import Any

import checks
import venvs

MODERN_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard", "patience")
LEGACY_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard")
# What only a modern peer may see (basic/index.mdx §_meta, caching.mdx, mrtr.mdx).
MODERN_TRACES = (
    '"resultType"',
    '"ttlMs"',
    '"cacheScope"',
    "io.modelcontextprotocol/",
    '"inputRequests"',
    '"requestState"',
    "subscriptions/",
)


def assert_no_modern_traces(report: dict[str, Any]) -> None:
    """A legacy client saw nothing of the modern era in any result or notification."""
    seen = json.dumps({k: v for k, v in report.items() if k != "_stderr"})
    assert [trace for trace in MODERN_TRACES if trace in seen] == []


# --- mode A: legacy client, modern-only server ------------------------------------------------


def test_legacy_client_uses_a_modern_only_server(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(legacy_python, "basic", bridge_command(modern_python.peer("modern_server")))
    checks.check_legacy_basic(report)
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-modern-server"
    assert report["initialize"]["protocolVersion"] == "2025-11-25"
    # An array structuredContent is modern-only: the legacy client gets its text form only.
    assert report["call:squares"] == {
        "content": [{"type": "text", "text": "[1, 4, 9]"}],
        "isError": False,
    }
    assert report["call:stats"]["structuredContent"]["slow_cancelled"] >= 1
    assert_no_modern_traces(report)


def test_legacy_client_answers_a_modern_servers_input_requests(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(
        legacy_python, "inputs", bridge_command(modern_python.peer("modern_server"))
    )
    checks.check_inputs(report, MODERN_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)
    assert "read:memo://private" in report
    messages = [e["message"] for e in report["asked"]["elicitation"]]
    assert "Favourite colour?" in messages  # the wizard's second round reached the user
    assert_no_modern_traces(report)


def test_legacy_client_hears_changes_and_logs_of_a_modern_server(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(
        legacy_python, "notify", bridge_command(modern_python.peer("modern_server"))
    )
    checks.check_legacy_notify(report)
    caps = report["initialize"]["capabilities"]
    assert caps["tools"]["listChanged"] is True and caps["resources"]["subscribe"] is True
    assert_no_modern_traces(report)


def test_legacy_client_gets_the_logs_of_a_modern_server_that_does_not_declare_logging(
    legacy_python, modern_python, run_client, bridge_command
):
    # The official Python SDK 2.x sends per-request logs without declaring `logging`.
    server = modern_python.peer("modern_server", "--undeclared-logging")
    assert "logging" not in venvs.discover_directly(server)["result"]["capabilities"]
    report = run_client(legacy_python, "logs", bridge_command(server))
    checks.check_legacy_logs(report)
    assert_no_modern_traces(report)


def test_legacy_client_uses_a_dual_era_server_in_mode_a(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(legacy_python, "basic", bridge_command(modern_python.peer("dual_server")))
    checks.check_legacy_basic(report)
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-dual-server"
    assert_no_modern_traces(report)
    report = run_client(legacy_python, "inputs", bridge_command(modern_python.peer("dual_server")))
    checks.check_inputs(report, ["ask_name"])
    assert_no_modern_traces(report)


# --- pass-through -----------------------------------------------------------------------------


def test_legacy_pair_passes_through(legacy_python, run_client, bridge_command):
    server = bridge_command(legacy_python.peer("legacy_server"))
    checks.check_legacy_basic(run_client(legacy_python, "basic", server))
    report = run_client(legacy_python, "inputs", server)
    checks.check_inputs(report, LEGACY_INPUT_TOOLS)
    checks.check_legacy_notify(run_client(legacy_python, "notify", server))


def test_modern_pair_passes_through(modern_python, run_client, bridge_command):
    server = bridge_command(modern_python.peer("modern_server"))
    report = run_client(modern_python, "basic", server)
    checks.check_modern_basic(report)
    checks.check_modern_logs(report)
    assert report["call:squares"]["structuredContent"] == [1, 4, 9]
    report = run_client(modern_python, "inputs", server)
    checks.check_inputs(report, MODERN_INPUT_TOOLS)
    checks.check_manual_rounds(report)
    checks.check_modern_notify(run_client(modern_python, "notify", server))


# --- mode B: modern-only client, legacy server ------------------------------------------------


def test_modern_client_uses_a_legacy_server(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(modern_python, "basic", bridge_command(legacy_python.peer("legacy_server")))
    checks.check_modern_basic(report)
    checks.check_modern_logs(report)
    assert report["discover"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
        "rosetta-legacy-server"
    )
    assert report["discover"]["supportedVersions"] == [checks.MODERN_VERSION]


def test_modern_client_answers_a_legacy_servers_input_requests(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(
        modern_python, "inputs", bridge_command(legacy_python.peer("legacy_server"))
    )
    checks.check_inputs(report, LEGACY_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)
    checks.check_manual_rounds(report)


def test_modern_client_hears_changes_of_a_legacy_server(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(
        modern_python, "notify", bridge_command(legacy_python.peer("legacy_server"))
    )
    checks.check_modern_notify(report)
