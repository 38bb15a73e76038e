"""The server's start under the real `mcp-rosetta`: a modern server too slow for the probe is
still served in its own era, and a server that dies before it ever answers ends the session at
once with its cause, instead of being restarted.

Must not depend on timing beyond generous bounds: the slow server sleeps well past the probe's
timeout, and nothing here waits for less than the bridge's own timers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import checks
import venvs

# The server sleeps past the probe timeout: the bridge takes it as legacy at first.
PROBE_TIMEOUT = "1"
SLEEP_S = "4"


def slow(server_cmd: list[str]) -> list[str]:
    """`server_cmd` started only after SLEEP_S seconds, as a server that loads slowly."""
    return ["sh", "-c", f'sleep {SLEEP_S}; exec "$@"', "slow", *server_cmd]


def warnings_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in report["_stderr"].splitlines()
            if line.startswith("{") and '"event"' in line]


def test_a_slow_modern_server_serves_a_legacy_client_in_mode_a(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(legacy_python, "basic", bridge_command(
        slow(modern_python.peer("modern_server")), "--probe-timeout", PROBE_TIMEOUT,
        "--log-format", "json", "--log-level", "warning"))
    checks.check_legacy_basic(report)
    # Answered by the bridge from the DiscoverResult (mode A), not by a legacy handshake.
    assert report["initialize"]["serverInfo"]["name"] == "rosetta-modern-server"
    assert report["call:squares"]["content"] == [{"type": "text", "text": "[1, 4, 9]"}]
    [corrected] = [log for log in warnings_of(report) if log["event"] == "era.corrected"]
    assert (corrected["was"], corrected["era"], corrected["mode"]) == ("legacy", "modern", "P")


def test_a_slow_modern_server_serves_a_modern_client_in_mode_p(
    modern_python, run_client, bridge_command
):
    report = run_client(modern_python, "basic", bridge_command(
        slow(modern_python.peer("modern_server")), "--probe-timeout", PROBE_TIMEOUT,
        "--log-format", "json", "--log-level", "warning"))
    checks.check_modern_basic(report)
    [corrected] = [log for log in warnings_of(report) if log["event"] == "era.corrected"]
    assert (corrected["was"], corrected["era"], corrected["mode"]) == ("legacy", "modern", "B")


MISSING_MODULE = [sys.executable, "-c", "import missing_module"]  # exits 1 at once
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "e2e", "version": "1"}}}


def run_failing(server_cmd: list[str]) -> tuple[int, list[dict[str, Any]],
                                                list[dict[str, Any]], float]:
    """The bridge in front of a server that dies at once, its client's initialize written
    first: exit status, answers, log lines, seconds from the initialize to the exit."""
    proc = subprocess.Popen(
        venvs.bridge_command(server_cmd, "--log-format", "json", "--probe-timeout", "30"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    started = time.monotonic()
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    try:
        code = proc.wait(timeout=60)  # the client's input stays open: the bridge ends it
    finally:
        proc.kill()
        proc.stdin.close()
    elapsed = time.monotonic() - started
    answers = [json.loads(line) for line in proc.stdout.read().splitlines()]
    logs = [json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith(b"{")]
    return code, answers, logs, elapsed


def test_a_server_that_exits_before_answering_is_not_restarted_and_says_why() -> None:
    code, answers, logs, elapsed = run_failing(MISSING_MODULE)
    assert code == 69, logs
    [answer] = answers
    assert answer["id"] == 0 and answer["error"]["code"] == -32603
    assert answer["error"]["message"].startswith(
        "mcp-rosetta: the server exited with status 1 before it answered anything")
    assert answer["error"]["data"]["exitStatus"] == 1
    assert [log for log in logs if log.get("event") == "child.restarted"] == []
    [failed] = [log for log in logs if log.get("event") == "child.failed"]
    assert failed["level"] == "error" and failed["code"] == 1
    # Within a second of the server's end, by the bridge's own clock: no wait for a restart's
    # back-off, the probe's 30 s or the exit status (it came); the rest is the start of two
    # interpreters.
    ended = min(at(log) for log in logs if log.get("event") in ("server.closed", "child.exited"))
    assert at(failed) - ended < 1.0, logs
    assert elapsed < 15, elapsed


def at(log: dict[str, Any]) -> float:
    return datetime.fromisoformat(log["timestamp"]).timestamp()


def test_the_error_of_a_server_that_never_answered_quotes_its_last_stderr_line() -> None:
    _, [answer], _, _ = run_failing(MISSING_MODULE)
    assert answer["error"]["message"].endswith(
        "Its stderr ended with: ModuleNotFoundError: No module named 'missing_module'")
    assert answer["error"]["data"]["stderrTail"][-1] == (
        "ModuleNotFoundError: No module named 'missing_module'")


def test_a_command_not_found_answers_the_initialize_with_the_path_searched() -> None:
    code, answers, logs, _ = run_failing(["no-such-mcp-server-xyz", "--stdio"])
    assert code == 69, logs
    [answer] = answers
    assert answer["id"] == 0 and answer["error"]["data"]["exitStatus"] == 127
    message = answer["error"]["message"]
    assert message.startswith("mcp-rosetta: the server could not be started: server command "
                              "not found: 'no-such-mcp-server-xyz' is in none of PATH=")
    assert message.endswith("give the absolute path of the program")
    assert [log for log in logs if log.get("event") == "child.restarted"] == []
    [failed] = [log for log in logs if log.get("event") == "child.failed"]
    assert at(failed) - at(logs[0]) < 1.0, logs  # from the first log line: no probe, no wait


def test_a_command_that_is_not_executable_answers_the_initialize_with_the_fix(
        tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\nexec cat\n")  # mode 0644: not executable
    code, answers, logs, _ = run_failing([str(script)])
    assert code == 69, logs
    [answer] = answers
    assert answer["error"]["data"]["exitStatus"] == 126
    assert "chmod +x" in answer["error"]["message"], answer
    assert [log for log in logs if log.get("event") == "child.restarted"] == []


def test_request_timeout_ends_a_legacy_servers_slow_tool_call_for_a_modern_client(
    legacy_python, modern_python, run_client, bridge_command
):
    """Mode B: a tools/call (a call the bridge parks if the server asks) is bounded by
    request_timeout like any request: the client gets the error when it passes, and the
    legacy server is told to stop (its handler counts the cancellation)."""
    report = run_client(modern_python, "timeout", bridge_command(
        legacy_python.peer("legacy_server"), "--request-timeout", "1s"))
    error = report["errors"]["call:slow"]
    assert "no answer from the server within 1 s" in error["message"], error
    assert 1.0 <= report["slow_s"] < 5.0, report["slow_s"]  # not the call's own 10 s
    stats = report["call:stats"]["structuredContent"]
    assert (stats["slow_started"], stats["slow_cancelled"], stats["slow_completed"]) == (1, 1, 0)


def test_request_timeout_ends_a_modern_servers_slow_input_round_for_a_legacy_client(
    modern_python,
):
    """Mode A: a call the server answers with input_required (a requestState-only round,
    which the bridge retries itself) is still bounded by request_timeout on its retry: the
    legacy client gets the error about a second after the server stopped answering, not
    after the input loop's 600 s."""
    proc = subprocess.Popen(
        venvs.bridge_command(modern_python.peer("modern_server"), "--request-timeout", "1s"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "dawdle", "arguments": {"seconds": 30}}}
    try:
        for message in (INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        started = time.monotonic()
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())  # the server's own 30 s would fail below
        elapsed = time.monotonic() - started
    finally:
        proc.kill()
        proc.wait()
    assert answer["id"] == 1, answer
    assert answer["error"]["message"] == "mcp-rosetta: no answer from the server within 1 s"
    assert 1.0 <= elapsed < 10.0, elapsed
