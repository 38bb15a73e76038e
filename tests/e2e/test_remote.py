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
def restarted_modern_url(modern_python: venvs.SdkPython) -> Iterator[str]:
    yield from http_server(modern_python, "modern_server", again=True)


@pytest.fixture
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


def test_legacy_client_uses_a_legacy_http_server(legacy_python, run_client, legacy_url):
    report = run_client(legacy_python, "basic", through(legacy_url))
    checks.check_legacy_basic(report)


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
