"""The legacy → modern cell through two relays in one run: `mcp-rosetta --url` and
`mcp-remote@0.15.1 --protocol auto --transport http-only`, each under the same legacy stdio
client (mcp 1.x), each against fresh copies of the same modern-only HTTP servers (the Python
2.x SDK's, and the TypeScript v2 SDK's: the conformance fixture).

Must not time anything (tests/benchmarks/bench_remote.py does, beside this table): it runs the
check table of relay_checks.py, asserts that mcp-rosetta passes every check, and that each of
mcp-remote's outcomes is the one recorded here (and in tests/e2e/conformance/README.md
§Client scenarios through `mcp-rosetta --url`, and tests/benchmarks/README.md), so a change
in either is seen.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import relay_checks
import venvs

# mcp-remote 0.15.1's outcome per check, as measured; why, for each one it fails. None: it
# varies from run to run (the test then only checks that the run did what the check needs).
MCP_REMOTE: dict[str, bool | None] = {check.name: True for check in relay_checks.CHECKS} | {
    # notifications/cancelled is POSTed to a 2026-07-28 server, which has no such message
    # (the call's stream must be closed): the server runs the call to its end.
    "basic: cancel reaches the server": False,
    # Results keep the modern `_meta` (io.modelcontextprotocol/serverInfo) on their way to
    # the 2025-11-25 client.
    "basic: no modern-only field reaches the client": False,
    # resources/updated for the subscribed resource comes only after the unsubscribe (the
    # listen stream is reopened on each change of the set), not when it was touched.
    "notify: resource subscriptions": False,
    # The server killed mid-call: the call under way is mostly never answered (the client's
    # session times out, so nothing after it happens); in 1 of 6 runs here it got an error.
    "restart: the call under way gets an error": None,
    "restart: the session goes on": False,
    "restart: the client is told list_changed": False,
    "restart: subscription and level replayed": False,
    "restart: one answer per request": False,
    # No Mcp-Param-{Name} headers for a tool's x-mcp-header annotations: the TypeScript v2
    # server refuses test_x_mcp_header's call with 400.
    "TypeScript v2 server: tools, resources, prompts": False,
}
CHECK_NAMES = [check.name for check in relay_checks.CHECKS]


@pytest.fixture(scope="module")
def reports(legacy_python: venvs.SdkPython, modern_python: venvs.SdkPython
            ) -> dict[str, dict[str, Any]]:
    """Each relay's runs, made on first use: the relays one after the other, in one run."""
    relays = {"mcp-rosetta": relay_checks.mcp_rosetta(sys.executable),
              "mcp-remote": relay_checks.mcp_remote()}

    class Lazy(dict[str, dict[str, Any]]):
        def __missing__(self, relay: str) -> dict[str, Any]:
            self[relay] = relay_checks.run_all(relays[relay], legacy_python, modern_python)
            return self[relay]

    return Lazy()


def test_the_table_records_every_check() -> None:
    assert set(MCP_REMOTE) == set(CHECK_NAMES)


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_mcp_rosetta_passes(reports, name):
    check = next(c for c in relay_checks.CHECKS if c.name == name)
    report = reports["mcp-rosetta"][check.run]
    check.holds(report)  # the assertion's own words, if it fails


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_mcp_remote_does_what_the_table_records(reports, name):
    check = next(c for c in relay_checks.CHECKS if c.name == name)
    report = reports["mcp-remote"][check.run]
    passed, why = relay_checks.outcome(check, report)
    if MCP_REMOTE[name] is None:
        assert report.get("killed") is True, "the server was never killed"
        return
    assert passed is MCP_REMOTE[name], why or f"{name} now passes through mcp-remote"
