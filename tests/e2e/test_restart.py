"""The server killed mid-session, by pid, under the real `mcp-rosetta` between real SDK peers:
the client keeps its session in every pairing; a server that keeps dying ends it in budget.

Must not depend on timing beyond generous bounds: the peers wait for what the bridge says
(the slow call's error, then the list_changed of the new server), never for a fixed time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import checks
import venvs


def test_mode_a_keeps_a_legacy_clients_session_when_its_modern_server_dies(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(legacy_python, "restart",
                        bridge_command(modern_python.peer("modern_server")))
    checks.check_legacy_restart(report)


def test_mode_b_keeps_a_modern_clients_session_when_its_legacy_server_dies(
    legacy_python, modern_python, run_client, bridge_command
):
    report = run_client(modern_python, "restart",
                        bridge_command(legacy_python.peer("legacy_server")))
    checks.check_modern_restart(report)


def test_a_legacy_pair_keeps_its_session_when_the_server_dies(
    legacy_python, run_client, bridge_command
):
    report = run_client(legacy_python, "restart",
                        bridge_command(legacy_python.peer("legacy_server")))
    checks.check_legacy_restart(report)


def test_a_modern_pair_keeps_its_session_when_the_server_dies(
    modern_python, run_client, bridge_command
):
    report = run_client(modern_python, "restart",
                        bridge_command(modern_python.peer("modern_server")))
    checks.check_modern_restart(report)


# Serves (one well-formed message: a log notification), then exits: a server that never
# served is not restarted at all, one that did is restarted within the budget.
FLAPPING = [sys.executable, "-c", "import sys; print('{\"jsonrpc\": \"2.0\", \"method\": "
            "\"notifications/message\", \"params\": {\"level\": \"info\", \"data\": 1}}', "
            "flush=True); sys.exit(3)"]
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "e2e", "version": "1"}}}


def test_a_flapping_server_ends_the_session_within_its_budget(tmp_path: Path) -> None:
    config = tmp_path / "flapping.toml"
    config.write_text('restart_backoff = [0.05, 0.2]\nmax_restarts = 3\nrestart_window = 600\n'
                      'log_format = "json"\n')
    proc = subprocess.Popen(venvs.bridge_command(FLAPPING, "--config", str(config)),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    # The client stays: its input open, the bridge ends the session because of the server.
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    try:
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.stdin.close()
    answers = [json.loads(line) for line in proc.stdout.read().splitlines()]
    logs = [json.loads(line) for line in proc.stderr.read().splitlines()]
    assert code == 69, logs
    replies = [answer for answer in answers if "id" in answer]  # not the servers' logs
    assert [reply["id"] for reply in replies] == [0]
    assert replies[0]["error"]["code"] == -32603
    assert len(events(logs, "child.restarted")) == 3
    gave_up = events(logs, "child.gave_up")
    assert len(gave_up) == 1
    assert gave_up[0]["level"] == "error" and gave_up[0]["max_restarts"] == 3
    assert gave_up[0]["reason"] in ("exited with status 3", "closed its output")


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [log for log in logs if log.get("event") == name]
