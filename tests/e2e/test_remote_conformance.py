"""The conformance suite's client scenarios, with `mcp-rosetta --url` as the HTTP client under
test: a legacy stdio client (peers/conformance_client.py, mcp 1.x) whose server is the bridge
in front of the suite's scenario server.

Must not pick scenarios the tour cannot drive: the client does what a host does (initialize,
call every tool with arguments made from its schema or the calls the scenario's context
names, read every resource, get every prompt), so a scenario that wants a schema echoed back
(json-schema-2020-12-preservation) is not in the list; bridge/DESIGN.md §The HTTP upstream
records what each scenario gave.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import conformance_suite
import pytest
import venvs

SCENARIOS = (
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "sse-retry",
    "request-metadata",
)
SCENARIO_TIMEOUT = 120


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_client_scenario_passes_through_the_bridge(legacy_python, scenario, tmp_path):
    client = f"{legacy_python} {venvs.PEERS_DIR / 'conformance_client.py'}"
    bridge = json.dumps([sys.executable, "-m", "bridge"])
    proc = subprocess.run(
        conformance_suite.suite_command("client", "--command", client, "--scenario", scenario),
        capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, cwd=tmp_path,
        env={**os.environ, "ROSETTA_BRIDGE": bridge})
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    passed = re.search(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings", out)
    assert passed is not None, out[-3000:]
    assert passed[3] == "0" and passed[4] == "0" and int(passed[1]) > 0, out[-3000:]
    assert "OVERALL: PASSED" in out, out[-3000:]
