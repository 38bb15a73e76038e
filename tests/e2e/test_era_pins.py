"""The bridge with a wrong `--server-era` in front of a real server: the client's error names
the pin as the cause and how to fix it, not only what the server said.

Must not judge by the bridge's logs alone: the client's answer is what a user sees.
"""

from __future__ import annotations

import json
import subprocess

import venvs

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "pin-test", "version": "1"}}}


def first_answer(command: list[str]) -> dict[str, object]:
    """The bridge's answer to a legacy client's `initialize`, the client's input then closed."""
    done = subprocess.run(command, input=json.dumps(INITIALIZE) + "\n", capture_output=True,
                          text=True, timeout=120)
    answer: dict[str, object] = json.loads(done.stdout.splitlines()[0])
    return answer


def test_a_pin_to_legacy_before_a_modern_only_server_is_named_to_the_client(
        modern_python: venvs.SdkPython) -> None:
    answer = first_answer(venvs.bridge_command(modern_python.peer("modern_server"),
                                               "--server-era", "legacy"))
    error = answer["error"]
    assert isinstance(error, dict) and answer["id"] == 1
    assert error["code"] == -32022
    assert error["message"] == (
        "server_era is pinned to legacy, but the server is modern-only: it refused initialize "
        "(-32022: 'this server speaks only 2026-07-28; initialize is not accepted') and "
        'supports 2026-07-28; remove --server-era legacy (or set server_era = "auto") to let '
        "mcp-rosetta detect the era")


def test_without_the_pin_the_same_server_is_served(modern_python: venvs.SdkPython) -> None:
    answer = first_answer(venvs.bridge_command(modern_python.peer("modern_server")))
    result = answer["result"]
    assert isinstance(result, dict) and result["protocolVersion"] == "2025-11-25"
