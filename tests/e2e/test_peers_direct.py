"""The peers against each other with no bridge: proof that the test material itself works.

Must not involve the bridge. Each same-era pair from the compatibility matrix
(versioning.mdx §Compatibility Matrix) must work, and the two cross-era pairs without a
bridge must fail the way the spec says, which is what the bridge exists to fix.
"""

from __future__ import annotations

import checks

MODERN_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard", "patience")
LEGACY_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard")


# --- legacy client ------------------------------------------------------------------------


def test_legacy_client_basic_against_legacy_server(legacy_python, run_client):
    report = run_client(legacy_python, "basic", legacy_python.peer("legacy_server"))
    checks.check_legacy_basic(report)
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-legacy-server"
    # mcp 1.x answers a cancelled request with an error (code 0), which the spec discourages.
    assert report["cancel"]["outcome"] == "error"
    assert report["cancel:call"]["error"]["code"] == 0


def test_legacy_client_inputs_against_legacy_server(legacy_python, run_client):
    report = run_client(legacy_python, "inputs", legacy_python.peer("legacy_server"))
    checks.check_inputs(report, LEGACY_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)
    # Sequential server-to-client requests: the wizard asks twice inside one call.
    messages = [e["message"] for e in report["asked"]["elicitation"]]
    assert "Favourite colour?" in messages


def test_legacy_client_notify_against_legacy_server(legacy_python, run_client):
    report = run_client(legacy_python, "notify", legacy_python.peer("legacy_server"))
    checks.check_legacy_notify(report)
    assert report["initialize"]["capabilities"]["resources"]["subscribe"] is True
    assert report["initialize"]["capabilities"]["tools"]["listChanged"] is True


def test_legacy_client_basic_against_dual_server(legacy_python, modern_python, run_client):
    report = run_client(legacy_python, "basic", modern_python.peer("dual_server"))
    checks.check_legacy_basic(report)
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-dual-server"
    # mcp 2.x follows the spec: no response at all to a cancelled request.
    assert report["cancel"]["outcome"] == "no_response"


def test_legacy_client_inputs_against_dual_server(legacy_python, modern_python, run_client):
    report = run_client(legacy_python, "inputs", modern_python.peer("dual_server"))
    checks.check_inputs(report, ["ask_name"])


# --- modern client ------------------------------------------------------------------------


def test_modern_client_basic_against_modern_server(modern_python, run_client):
    report = run_client(modern_python, "basic", modern_python.peer("modern_server"))
    checks.check_modern_basic(report)
    checks.check_modern_logs(report)
    assert report["call:squares"]["structuredContent"] == [1, 4, 9]
    assert report["discover"]["capabilities"]["logging"] == {}
    assert report["discover"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
        "rosetta-modern-server"
    )


def test_modern_client_inputs_against_modern_server(modern_python, run_client):
    report = run_client(modern_python, "inputs", modern_python.peer("modern_server"))
    checks.check_inputs(report, MODERN_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)
    checks.check_manual_rounds(report)
    first = report["ask_name:rounds"][0]
    assert list(first["inputRequests"]) == ["name"]
    assert first["requestState"].startswith("tools/call:ask_name#")


def test_modern_client_notify_against_modern_server(modern_python, run_client):
    report = run_client(modern_python, "notify", modern_python.peer("modern_server"))
    checks.check_modern_notify(report)


def test_modern_client_basic_against_dual_server(modern_python, run_client):
    report = run_client(modern_python, "basic", modern_python.peer("dual_server"))
    checks.check_modern_basic(report)


def test_modern_client_inputs_against_dual_server(modern_python, run_client):
    report = run_client(modern_python, "inputs", modern_python.peer("dual_server"))
    checks.check_inputs(report, ["ask_name"])
    checks.check_manual_rounds(report)


# --- the cross-era pairs the bridge exists for ------------------------------------------------


def test_legacy_client_fails_against_modern_server(legacy_python, modern_python, run_client):
    report = run_client(legacy_python, "basic", modern_python.peer("modern_server"))
    assert report["exit_code"] == 1
    error = report["errors"]["initialize"]
    assert error["code"] == -32022
    # versioning.mdx: a modern-only server SHOULD name its versions when refusing initialize.
    assert error["data"]["supported"] == [checks.MODERN_VERSION]


def test_modern_client_fails_against_legacy_server(legacy_python, modern_python, run_client):
    report = run_client(modern_python, "basic", legacy_python.peer("legacy_server"))
    assert report["exit_code"] == 1
    assert report["errors"]["discover"]["code"] == -32602
