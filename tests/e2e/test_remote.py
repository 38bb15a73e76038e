"""`mcp-rosetta --url`: a stdio client of either era uses a Streamable HTTP server of either era.

Must not fake either side: the servers are the official SDKs' own Streamable HTTP servers
(mcp 2.x's `streamable_http_app` for the modern-only one, mcp 1.x FastMCP's `streamable-http`
for the legacy one) on loopback ports, the clients the SDKs' stdio clients, and the bridge
the real `python -m bridge --url` between them. The checks are test_bridge.py's, so the
HTTP upstream must be as invisible as a child on pipes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import checks
import pytest
import venvs
from remote_peers import (
    INITIALIZE,
    INITIALIZED,
    READY_TIMEOUT,
    Bridge,
    free_port,
    http_server,
    serving,
)

MODERN_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard", "patience")
LEGACY_INPUT_TOOLS = ("ask_name", "ask_model", "list_roots", "ask_two", "wizard")
PARAM_REGIONS = ("eu-west1", "Zürich")  # plain, and sent in the Base64 sentinel form


@pytest.fixture(scope="module")
def modern_url(modern_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(modern_python, "modern_server")


@pytest.fixture(scope="module")
def legacy_url(legacy_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(legacy_python, "legacy_server")


@pytest.fixture
def unchanged_legacy_url(legacy_python: venvs.SdkPython) -> Iterator[str]:
    """A legacy server whose tools no other test changed (its added tools are global)."""
    yield from http_server(legacy_python, "legacy_server")


# Each restart test kills the server once; the loop starts another on the same port for the
# next test (which so begins with a fresh one).
@pytest.fixture(scope="module")
def restarted_modern_url(modern_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(modern_python, "modern_server", again=True)


@pytest.fixture(scope="module")
def restarted_legacy_url(legacy_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(legacy_python, "legacy_server", again=True)


@pytest.fixture(scope="module")
def everything_url(published_server) -> Iterator[str]:
    """server-everything (TypeScript SDK 1.x, legacy) in its Streamable HTTP mode."""
    port = free_port()
    yield from serving([*published_server("server-everything"), "streamableHttp"], port,
                       env={"PORT": str(port)})


def through(url: str) -> list[str]:
    return [sys.executable, "-m", "bridge", "--url", url]


# --- mode A: legacy client, modern-only HTTP server -------------------------------------------


def test_legacy_client_uses_a_modern_only_http_server(legacy_python, run_client, modern_url):
    report = run_client(legacy_python, "basic", through(modern_url))
    checks.check_legacy_basic(report)
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-modern-server"
    assert report["initialize"]["protocolVersion"] == "2025-11-25"
    # The client's notifications/cancelled closed the call's stream, and the server saw it.
    assert report["call:stats"]["structuredContent"]["slow_cancelled"] >= 1


def test_legacy_client_answers_a_modern_http_servers_input_requests(
    legacy_python, run_client, modern_url
):
    report = run_client(legacy_python, "inputs", through(modern_url))
    checks.check_inputs(report, MODERN_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)


def test_legacy_client_hears_changes_of_a_modern_http_server(
    legacy_python, run_client, modern_url
):
    report = run_client(legacy_python, "notify", through(modern_url))
    checks.check_legacy_notify(report)


def test_legacy_client_sets_the_log_level_of_a_modern_http_server(
    legacy_python, run_client, modern_url
):
    # logging/setLevel has no modern twin: the level rides on each later request's _meta.
    report = run_client(legacy_python, "logs", through(modern_url))
    checks.check_legacy_logs(report)


# --- mode B: modern client, legacy HTTP server ------------------------------------------------


def test_modern_client_uses_a_legacy_http_server(modern_python, run_client, legacy_url):
    report = run_client(modern_python, "basic", through(legacy_url))
    checks.check_modern_basic(report)
    checks.check_modern_logs(report)
    assert report["discover"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
        "rosetta-legacy-server"
    )
    assert report["discover"]["supportedVersions"] == [checks.MODERN_VERSION]


def test_modern_client_answers_a_legacy_http_servers_input_requests(
    modern_python, run_client, legacy_url
):
    # The legacy server asks mid-call on the POST's event stream; the bridge's answers are
    # POSTed back in the server's session.
    report = run_client(modern_python, "inputs", through(legacy_url))
    checks.check_inputs(report, LEGACY_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)
    checks.check_manual_rounds(report)


def test_modern_client_hears_changes_of_a_legacy_http_server(
    modern_python, run_client, legacy_url
):
    # list_changed and resources/updated come on the session's GET stream.
    report = run_client(modern_python, "notify", through(legacy_url))
    checks.check_modern_notify(report)


def test_modern_client_uses_server_everything_over_http(modern_python, run_client,
                                                        everything_url, tmp_path):
    # The TypeScript SDK's legacy HTTP server: roots, sampling and elicitation asked on the
    # call's stream, answered by POSTs in its session.
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    config = tmp_path / "roots.toml"
    config.write_text("roots_refresh = 0\n")  # every call asks: the roots change between two
    env = {"ROSETTA_E2E_ROOTS": os.pathsep.join((str(first.resolve()), str(second.resolve())))}
    report = run_client(modern_python, "everything",
                        [*through(everything_url), "--config", str(config)], env=env)
    checks.no_errors(report)
    listed = report["roots:first"]["content"][0]["text"]
    assert f"URI: {first.resolve().as_uri()}" in listed
    assert f"URI: {second.resolve().as_uri()}" in report["roots:second"]["content"][0]["text"]
    assert report["call:get-sum"]["content"][0]["text"] == "The sum of 2 and 3 is 5."
    assert [p["progress"] for p in report["progress"]] == [1, 2, 3]
    elicited = "\n".join(block.get("text", "") for block in report["call:elicitation"]["content"])
    assert f"Name: {checks.NAME}" in elicited
    assert report["asked"]["sampling"] and report["asked"]["elicitation"]


# --- pass-through: each era to its own ------------------------------------------------------


def test_modern_client_uses_a_modern_http_server(modern_python, run_client, modern_url):
    report = run_client(modern_python, "basic", through(modern_url))
    checks.check_modern_basic(report)
    checks.check_modern_logs(report)


def test_modern_client_answers_a_modern_http_servers_input_requests(
    modern_python, run_client, modern_url
):
    report = run_client(modern_python, "inputs", through(modern_url))
    checks.check_inputs(report, MODERN_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)
    checks.check_manual_rounds(report)


def test_modern_client_hears_changes_of_a_modern_http_server(
    modern_python, run_client, modern_url
):
    report = run_client(modern_python, "notify", through(modern_url))
    checks.check_modern_notify(report)


def test_legacy_client_uses_a_legacy_http_server(legacy_python, run_client, legacy_url):
    report = run_client(legacy_python, "basic", through(legacy_url))
    checks.check_legacy_basic(report)


def test_legacy_client_answers_a_legacy_http_servers_input_requests(
    legacy_python, run_client, legacy_url
):
    report = run_client(legacy_python, "inputs", through(legacy_url))
    checks.check_inputs(report, LEGACY_INPUT_TOOLS)
    checks.check_elicited_prompt_and_resource(report)


def test_legacy_client_hears_changes_of_a_legacy_http_server(
    legacy_python, run_client, unchanged_legacy_url
):
    # Subscriptions, list_changed and logs at the level set, on the session's GET stream.
    report = run_client(legacy_python, "notify", through(unchanged_legacy_url))
    checks.check_legacy_notify(report)


# --- the HTTP server restarted mid-session ------------------------------------------------------


def test_a_legacy_client_survives_a_modern_http_servers_restart(
    legacy_python, run_client, restarted_modern_url
):
    # The client kills the server during a call; it is started again on the same port. The
    # call gets one error, the bridge's new session replays the listen streams and the level,
    # and the client hears that the tools may have changed.
    report = run_client(legacy_python, "restart", through(restarted_modern_url))
    checks.check_legacy_restart(report)
    assert restarted_modern_url in report["kill:slow"]["error"]["message"]


def test_a_modern_client_survives_a_legacy_http_servers_restart(
    modern_python, run_client, restarted_legacy_url
):
    # The legacy server's session is gone with it: the bridge opens a new one with
    # `initialize`, subscriptions and log level replayed, as for a restarted child.
    report = run_client(modern_python, "restart", through(restarted_legacy_url))
    checks.check_modern_restart(report)


def test_a_modern_client_survives_a_modern_http_servers_restart(
    modern_python, run_client, restarted_modern_url
):
    # Pass-through: the client's listen streams are the bridge's to reopen on the new server.
    report = run_client(modern_python, "restart", through(restarted_modern_url))
    checks.check_modern_restart(report)


def test_a_legacy_client_survives_a_legacy_http_servers_restart(
    legacy_python, run_client, restarted_legacy_url
):
    # Pass-through: the bridge's new session replays the client's initialize, subscriptions
    # and level; the client hears only list_changed.
    report = run_client(legacy_python, "restart", through(restarted_legacy_url))
    checks.check_legacy_restart(report)


# --- request metadata headers ------------------------------------------------------------------


@pytest.mark.parametrize("listed", [True, False], ids=["listed", "never-listed"])
def test_a_tools_x_mcp_header_arguments_are_sent_as_param_headers(modern_url, listed):
    # The SDK's server refuses a tools/call whose Mcp-Param-Region is missing or differs
    # (HeaderMismatch). Never listed: the bridge lists the tools itself, then retries once.
    bridge = Bridge(modern_url)
    calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
              "params": {"name": "regional", "arguments": {"region": region}}}
             for i, region in enumerate(PARAM_REGIONS, 2)]
    try:
        bridge.send(INITIALIZE, INITIALIZED)
        if listed:
            bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        bridge.answers({0, 1} if listed else {0})
        bridge.send(*calls)
        got = bridge.answers({2, 3})
    finally:
        bridge.stop()
    texts = [got[i][0].get("result", got[i][0])["content"][0]["text"] if "result" in got[i][0]
             else got[i][0] for i in (2, 3)]
    assert texts == [f"weather in {region}" for region in PARAM_REGIONS]


# --- the TypeScript v2 SDK's modern-only HTTP server --------------------------------------------

TS_TOUR_OK = (
    "tools/list", "tools/call test_simple_text", "tools/call test_image_content",
    "tools/call test_audio_content", "tools/call test_embedded_resource",
    "tools/call test_tool_with_progress", "tools/call test_tool_with_logging",
    "tools/call test_sampling", "tools/call test_elicitation",
    "tools/call test_elicitation_sep1034_defaults", "tools/call test_elicitation_sep1330_enums",
    "tools/call test_input_required_result_sampling",
    "tools/call test_input_required_result_request_state",
    "tools/call test_input_required_result_multi_round", "tools/call test_x_mcp_header",
    "resources/read test://static-text", "resources/read test://static-binary",
    "prompts/get test_simple_prompt", "prompts/get test_prompt_with_arguments",
)


@pytest.fixture(scope="module")
def ts_modern_url() -> Iterator[str]:
    """The conformance suite's modern fixture: the TypeScript v2 SDK's everything server,
    modern-only, on its own Streamable HTTP entry."""
    import conformance_suite

    port = free_port()
    yield from serving(conformance_suite.fixture_command("modern", "--http", str(port)), port)


def test_legacy_client_tours_the_typescript_v2_sdks_http_server(legacy_python, ts_modern_url):
    # The tour (peers/conformance_client.py) calls every tool; sampling and elicitation come
    # as input_required rounds the bridge turns into the legacy client's own requests.
    bridge = json.dumps([sys.executable, "-m", "bridge"])
    proc = subprocess.run(legacy_python.peer("conformance_client", ts_modern_url),
                          capture_output=True, text=True, timeout=120, cwd=venvs.REPO_ROOT,
                          env={**os.environ, "ROSETTA_BRIDGE": bridge})
    report = json.loads(proc.stdout.splitlines()[-1])
    assert {step: report.get(step) for step in TS_TOUR_OK} == dict.fromkeys(TS_TOUR_OK, "ok")
    assert report["tools/call test_error_handling"] == {"isError": True}  # as the tool means


# --- the TypeScript SDK 1.x as a legacy stdio client -----------------------------------------

TS_ADDED_TOOL = "ts_zap"  # not "zap": the Python clients' notify runs expect a server without it


def run_ts_stdio(scenario: str, url: str) -> dict[str, Any]:
    """peers/ts_stdio_client.mjs (the SDK's own Client and StdioClientTransport) starting
    `python -m bridge --url URL` itself; its report."""
    import conformance_suite

    script = venvs.npm_peer("ts-clients", "ts_stdio_client.mjs")
    proc = subprocess.run([conformance_suite.node(), str(script), scenario, "--", *through(url)],
                          capture_output=True, text=True, timeout=120, cwd=venvs.REPO_ROOT,
                          stdin=subprocess.DEVNULL,
                          env={**os.environ, "ROSETTA_E2E_NEW_TOOL": TS_ADDED_TOOL})
    lines = proc.stdout.splitlines()
    assert lines, f"no report (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    report["_stderr"] = proc.stderr[-4000:]
    return report


def check_ts_progress(report: dict[str, Any], phase: str, sent: list[int]) -> None:
    """Every progress notification of the call in `phase` reached the client, in order (the
    tapped transport saw them). The SDK 1.x runs notification handlers a tick after it
    reads them but drops a call's progress handler as it reads the answer: what comes in one
    read with the answer (the last progress, or more on a loaded machine) misses the
    handler, which so sees a prefix."""
    arrived = [p["progress"] for p in report["wire"]["progress"] if p["phase"] == phase]
    assert arrived == sent
    handled = [p["progress"] for p in report["progress"] if p["phase"] == phase]
    assert handled == sent[:len(handled)]


def check_ts_tour_steps(report: dict[str, Any]) -> None:
    checks.no_errors(report)
    checks.check_one_answer_each(report)
    assert report["initialize"]["protocolVersion"] == "2025-11-25"
    assert "logging" in report["initialize"]["capabilities"]


def test_typescript_1x_stdio_client_uses_a_modern_only_http_server(modern_url):
    report = run_ts_stdio("tour", modern_url)
    check_ts_tour_steps(report)
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-modern-server"
    assert checks.text_of(report["call:echo"]) == "hi"
    check_ts_progress(report, "call:slow", [1, 2, 3])
    assert [log["level"] for log in report["logs"] if log["phase"] == "chatty"] == [
        "warning", "error"]
    for tool in ("ask_name", "ask_model"):
        assert checks.text_of(report[f"call:{tool}"]) == checks.INPUT_TOOL_TEXT[tool]
    assert report["call:list_roots"]["structuredContent"]["roots"] == [checks.ROOT_URI]
    assert [e["message"] for e in report["asked"]["elicitation"]] == ["What is your name?"]
    assert len(report["asked"]["sampling"]) == 1 and report["asked"]["roots"] >= 1
    updated = checks.notifications_in(report, "touch", "notifications/resources/updated")
    assert [note["params"]["uri"] for note in updated] == ["memo://greeting"]
    assert checks.notifications_in(report, "add_tool", "notifications/tools/list_changed")
    assert TS_ADDED_TOOL in report["tools:after:names"]
    assert checks.text_of(report["call:added"]) == f"{TS_ADDED_TOOL} says hi"


def test_typescript_1x_stdio_client_uses_the_typescript_v2_sdks_http_server(ts_modern_url):
    # Sampling, elicitation and roots come as input_required rounds of the v2 server, which
    # the bridge turns into the 1.x client's own requests.
    report = run_ts_stdio("fixture", ts_modern_url)
    check_ts_tour_steps(report)
    assert report["initialize"]["serverInfo"]["name"] == "mcp-conformance-test-server"
    assert checks.text_of(report["call:test_simple_text"]) == (
        "This is a simple text response for testing.")
    check_ts_progress(report, "call:test_tool_with_progress", [0, 50, 100])
    assert [log["data"] for log in report["logs"]
            if log["phase"] == "call:test_tool_with_logging"] == [
        "Tool execution started", "Tool processing data", "Tool execution completed"]
    assert checks.text_of(report["call:test_sampling"]) == f"LLM response: {checks.SAMPLING_TEXT}"
    assert "action=accept" in checks.text_of(report["call:test_elicitation"])
    assert checks.text_of(report["call:test_input_required_result_list_roots"]) == (
        f"Client exposed 1 root(s): {checks.ROOT_URI}")
    assert [e["message"] for e in report["asked"]["elicitation"]] == ["What is your name?"]
    assert len(report["asked"]["sampling"]) == 1 and report["asked"]["roots"] == 1
    assert report["subscribe"] == {}
    assert checks.notifications_in(report, "trigger", "notifications/tools/list_changed")


def test_typescript_1x_stdio_client_survives_a_modern_http_servers_restart(
    restarted_modern_url
):
    report = run_ts_stdio("restart", restarted_modern_url)
    checks.check_legacy_restart(report)
    assert restarted_modern_url in report["kill:slow"]["error"]["message"]


# --- the daemon in front of a remote server --------------------------------------------------


def test_the_daemon_serves_clients_of_both_eras_from_a_remote_server(
    legacy_python, modern_python, run_client, modern_url, tmp_path
):
    # `serve --url`: each connection is a session of its own with its own HTTP upstream.
    sock = tmp_path / "d.sock"
    daemon = subprocess.Popen([sys.executable, "-m", "bridge", "serve", "--listen",
                               f"unix:{sock}", "--url", modern_url],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True,
                              cwd=venvs.REPO_ROOT)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        connect = [sys.executable, "-m", "bridge", "connect", f"unix:{sock}"]
        checks.check_legacy_basic(run_client(legacy_python, "basic", connect))
        checks.check_modern_basic(run_client(modern_python, "basic", connect))
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=15)
